"""Java's ``Math.abs(hash % numBuckets)`` over int32 hashes: the int32 path equals the int64 one at the edges."""

from __future__ import annotations

import numpy as np
import pytest

from laketide.meta.bucket import bucket_of_hash


@pytest.mark.parametrize("num_buckets", [1, 2, 3, 4, 7, 16, 1000, 1024, 2**30, 2**31 - 1, 2**31])
def test_int32_hashes_give_javas_bucket(num_buckets: int) -> None:
    rng = np.random.default_rng(num_buckets % 1000)
    edges = np.array([-(2**31), 2**31 - 1, -1, 0, 1, -7, 7], dtype=np.int32)
    hashes = np.concatenate([edges, rng.integers(-(2**31), 2**31, 10_000).astype(np.int32)])
    # Java: the remainder truncates toward zero, then abs (never overflows: |r| < numBuckets).
    expected = [abs(int(np.fmod(np.int64(h), np.int64(num_buckets)))) for h in hashes]
    got = bucket_of_hash(hashes, num_buckets)
    assert got.dtype == np.int32
    assert got.tolist() == expected
    assert bucket_of_hash(hashes.astype(np.int64), num_buckets).tolist() == expected
