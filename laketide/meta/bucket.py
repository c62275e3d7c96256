"""Fixed-bucket assignment: the bucket of a row is ``abs(hash(bucket key BinaryRow) % num_buckets)``.

Paimon: org.apache.paimon.table.sink.FixedBucketRowKeyExtractor, org.apache.paimon.bucket.DefaultBucketFunction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from laketide.exceptions import InvalidOptionError
from laketide.meta.binary_row import hash_bytes_by_words, hash_rows, serialize_row
from laketide.types import DataType

__all__ = ["bucket_ids", "bucket_of_hash", "bucket_of_values"]


def bucket_of_hash(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java's ``Math.abs(hash % numBuckets)`` (truncated remainder) over int32 hashes."""
    if num_buckets <= 0:
        raise InvalidOptionError(f"A fixed bucket count must be positive, got {num_buckets}")
    hashes = np.asarray(hashes)
    if hashes.dtype == np.int32 and num_buckets <= 2**31 - 1:
        if num_buckets & (num_buckets - 1) == 0:
            # abs(h % 2^k) == |h| & (2^k - 1); |h| as uint32 is exact even for -2^31 (abs wraps to itself).
            masked: np.ndarray = np.abs(hashes).view(np.uint32) & np.uint32(num_buckets - 1)
            return masked.view(np.int32)
        # |remainder| < num_buckets: no overflow in int32, and no int64 temporaries of the whole column.
        out: np.ndarray = np.abs(np.fmod(hashes, np.int32(num_buckets)))
        return out
    remainder = np.fmod(np.asarray(hashes, dtype=np.int64), num_buckets)
    return np.abs(remainder).astype(np.int32)


def bucket_ids(
    batch: pa.RecordBatch | pa.Table,
    bucket_key: Sequence[str],
    key_types: Sequence[DataType],
    num_buckets: int,
) -> np.ndarray:
    """Bucket id (int32) of every row, as Java's DefaultBucketFunction computes it for a fixed-bucket table."""
    if num_buckets <= 0:
        raise InvalidOptionError(f"A fixed bucket count must be positive, got {num_buckets}")
    return bucket_of_hash(hash_rows(batch, bucket_key, key_types), num_buckets)


def bucket_of_values(values: Sequence[object], key_types: Sequence[DataType], *, num_buckets: int) -> int:
    """Bucket id of one bucket key given as Python values (for tests and small paths)."""
    h = hash_bytes_by_words(serialize_row(values, key_types))
    return int(bucket_of_hash(np.array([h]), num_buckets)[0])
