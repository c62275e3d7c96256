"""Splitting a batch into (partition, bucket) groups, vectorized.

Paimon: table.sink.FixedBucketRowKeyExtractor, RowPartitionKeyExtractor
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.meta.bucket import bucket_ids
from laketide.types import DataType

__all__ = ["Group", "split_by_partition_and_bucket"]


@dataclass(frozen=True, slots=True)
class Group:
    partition: tuple[object, ...]  # Python values of the partition columns, in partition-key order
    bucket: int
    rows: pa.Table


def split_by_partition_and_bucket(
    table: pa.Table,
    *,
    partition_keys: Sequence[str],
    bucket_keys: Sequence[str],
    bucket_key_types: Sequence[DataType],
    num_buckets: int,
    max_rows: int | None = None,
) -> Iterator[Group]:
    """Group rows by partition values and bucket; ``num_buckets`` <= 0 puts every row in bucket 0.

    With ``max_rows`` a group comes as several consecutive pieces of at most that many rows (in input order), each
    copied from ``table`` only when the caller asks for it: the caller bounds the memory of the copies.
    """
    n = table.num_rows
    if n == 0:
        return
    if num_buckets <= 0 and not partition_keys:  # an unpartitioned unaware-bucket table: one group, no codes
        yield from _pieces((), 0, table, max_rows)
        return
    if num_buckets > 0:
        buckets = np.asarray(bucket_ids(table, bucket_keys, bucket_key_types, num_buckets), dtype=np.int64)
    else:
        buckets = np.zeros(n, dtype=np.int64)

    # One integer code per row: dictionary indices of each partition column, combined mixed-radix with the
    # bucket. Nulls get their own code (the default partition).
    code = buckets.copy()
    radix = int(buckets.max()) + 1
    dictionaries: list[pa.Array] = []
    part_codes: list[np.ndarray] = []
    for name in partition_keys:
        encoded = pc.dictionary_encode(table.column(name), null_encoding="encode").combine_chunks()
        idx = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        dictionaries.append(encoded.dictionary)
        part_codes.append(idx)
        code = code + idx * radix
        radix *= len(encoded.dictionary) or 1

    if radix == 1:  # single group: no shuffle needed
        yield from _pieces(tuple(d[0].as_py() for d in dictionaries), int(buckets[0]), table, max_rows)
        return
    # numpy's stable sort is a radix sort for integers of 16 bits or less: use the narrowest type that fits.
    if radix <= 1 << 8:
        code = code.astype(np.uint8)
    elif radix <= 1 << 16:
        code = code.astype(np.uint16)
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    boundaries = np.flatnonzero(np.diff(sorted_code)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [n]))
    if max_rows is None:
        taken = table.take(pa.array(order))
    for s, e in zip(starts.tolist(), ends.tolist()):
        first = int(order[s])
        values = tuple(d[int(c[first])].as_py() for d, c in zip(dictionaries, part_codes))
        if max_rows is None:
            yield Group(values, int(buckets[first]), taken.slice(s, e - s))
            continue
        for start in range(s, e, max_rows):  # taken piece by piece: no copy of the whole input at once
            yield Group(values, int(buckets[first]), table.take(pa.array(order[start:min(e, start + max_rows)])))


def _pieces(partition: tuple[object, ...], bucket: int, table: pa.Table, max_rows: int | None) -> Iterator[Group]:
    if max_rows is None or table.num_rows <= max_rows:
        yield Group(partition, bucket, table)
        return
    for start in range(0, table.num_rows, max_rows):
        yield Group(partition, bucket, table.slice(start, max_rows))
