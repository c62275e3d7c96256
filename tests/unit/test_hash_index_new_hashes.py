"""PartitionIndex.assign_new: the hashes a batch adds (sorted, distinct) come from the one sort of the assignment.

Batches of both sizes run: small ones search unsorted, large ones (>= 4096 hashes) sort the whole batch once for
the searches and take the new hashes from it; the buckets must match Java's row loop either way.
"""

from __future__ import annotations

import numpy as np
import pytest

from laketide.index.hash_index import PartitionIndex
from tests.unit.test_hash_index import _java_assign

SIZES = [1, 37, 4095, 4096, 6000]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("target", [700, 5000, 2_000_000])
def test_new_hashes_and_buckets_match_java_row_loop(seed: int, target: int) -> None:
    rng = np.random.default_rng(seed)
    # a small pool: batches repeat hashes within themselves and hit hashes of earlier batches
    pool = rng.integers(-(2**31), 2**31, 9000, dtype=np.int64).astype(np.int32)
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    for size in rng.permutation(SIZES).tolist() + [6000, 5]:
        batch = pool[rng.integers(0, len(pool) if seed % 2 else 4000, size)]
        known_before = set(index)
        got = ours.assign_new(batch)
        expected = _java_assign(index, non_full, total, batch.tolist(), target, -1)
        assert got.buckets.tolist() == expected
        fresh = sorted(set(batch.tolist()) - known_before)
        assert got.new_hashes.dtype == np.int32 and got.new_hashes.tolist() == fresh
        assert got.new_buckets.tolist() == [index[h] for h in fresh]
        assert ours.hashes.tolist() == sorted(index) and ours.buckets.tolist() == [index[h] for h in sorted(index)]


def test_all_distinct_batch_spilling_over_buckets_keeps_arrival_order() -> None:
    """Distinct new hashes that do not fit one bucket: buckets follow arrival order, not hash order."""
    ix = PartitionIndex(target_row_num=5000)
    batch = np.arange(9000, 0, -1, dtype=np.int32)  # descending: arrival order is the reverse of hash order
    got = ix.assign_new(batch)
    assert got.buckets.tolist() == [0] * 5000 + [1] * 4000
    assert got.new_hashes.tolist() == list(range(1, 9001))
    assert got.new_buckets.tolist() == [1] * 4000 + [0] * 5000


def test_one_bucket_guess_that_fails_at_the_bucket_bound() -> None:
    """Room for all in a new bucket, but no bucket id is left: random existing buckets, reported per hash."""
    ix = PartitionIndex(target_row_num=100)
    ix.assign(np.arange(100, dtype=np.int32), max_buckets=1)  # bucket 0 full; max one bucket
    batch = np.arange(1000, 1050, dtype=np.int32)
    got = ix.assign_new(batch, max_buckets=1, rng=np.random.default_rng(3))
    assert got.buckets.tolist() == [0] * 50 and got.new_buckets.tolist() == [0] * 50
    ix2 = PartitionIndex(target_row_num=100)
    ix2.assign(np.arange(200, dtype=np.int32), max_buckets=2)  # buckets 0 and 1 full
    got = ix2.assign_new(batch[::-1].copy(), max_buckets=2, rng=np.random.default_rng(5))
    by_hash = dict(zip(batch[::-1].tolist(), got.buckets.tolist()))
    assert got.new_hashes.tolist() == batch.tolist()
    assert got.new_buckets.tolist() == [by_hash[h] for h in batch.tolist()]
    assert set(got.buckets.tolist()) == {0, 1}


def test_known_batch_reports_no_new_hashes() -> None:
    ix = PartitionIndex(target_row_num=10)
    ix.assign(np.arange(5000, dtype=np.int32))
    got = ix.assign_new(np.arange(4999, -1, -1, dtype=np.int32))
    assert len(got.new_hashes) == 0 and len(got.new_buckets) == 0
    assert got.buckets.tolist() == [h // 10 for h in range(4999, -1, -1)]
    assert ix.assign_new(np.zeros(0, np.int32)).buckets.tolist() == []


def test_load_sorted_and_interleaved_files() -> None:
    """One sorted file is taken as is; files whose hashes interleave (or a Java file in hash-set order) are merged."""
    one = PartitionIndex.load([(0, np.array([-5, 1, 9], np.int32))], target_row_num=10)
    assert one.hashes.tolist() == [-5, 1, 9] and one.buckets.tolist() == [0, 0, 0]
    two = PartitionIndex.load([(0, np.array([1, 9], np.int32)), (1, np.array([-5, 4], np.int32))], target_row_num=10)
    assert two.hashes.tolist() == [-5, 1, 4, 9] and two.buckets.tolist() == [1, 0, 1, 0]
    java = PartitionIndex.load([(3, np.array([9, -5, 1], np.int32))], target_row_num=10)
    assert java.hashes.tolist() == [-5, 1, 9] and java.buckets.tolist() == [3, 3, 3]
    assert java.lookup(np.array([1, 2], np.int32)).tolist() == [3, -1]


@pytest.mark.parametrize(("values", "queries"), [(200_000, 40_000), (200_000, 1_000), (5, 4_000), (0, 10)])
def test_hash_index_sorted_search_equals_searchsorted(values: int, queries: int) -> None:
    from laketide.index.hash_index import _sorted_search

    rng = np.random.default_rng(values + queries)
    index = np.unique(rng.integers(-(2**31), 2**31, values, dtype=np.int64).astype(np.int32))
    known = rng.choice(index, queries // 2) if len(index) else np.zeros(0, np.int32)
    q = np.sort(np.concatenate([known, rng.integers(-(2**31), 2**31, queries - len(known)).astype(np.int32),
                                index[:3], index[-2:]]))  # repeats, and the ends of the index
    np.testing.assert_array_equal(_sorted_search(index, q), np.searchsorted(index, q))
