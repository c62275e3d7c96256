"""A large first batch of a partition over several buckets (hash_index.PartitionIndex: each bucket's run sorted
on its own, then merged) decides exactly what Java's row-at-a-time assigner decides; a batch with a repeated
hash falls back to the general path with nothing changed by the attempt."""

from __future__ import annotations

import numpy as np
import pytest

from laketide.index.hash_index import PartitionIndex
from tests.unit.test_hash_index import _java_assign


@pytest.mark.parametrize(("target", "size", "repeat"), [(700, 20_000, False), (2000, 4096, False),
                                                       (3000, 9000, True), (4096, 4096 * 3, False)])
def test_first_batch_matches_java_row_loop(target: int, size: int, repeat: bool) -> None:
    rng = np.random.default_rng(target + size)
    batch = rng.choice(np.arange(-(2**31), 2**31, 7919, dtype=np.int64), size, replace=False).astype(np.int32)
    if repeat:
        batch[-1] = batch[size // 2]  # one hash twice, far apart
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    got = ours.assign_new(batch)
    assert got.buckets.tolist() == _java_assign(index, non_full, total, batch.tolist(), target, -1)
    assert len(set(got.buckets.tolist())) > 1  # several buckets: the run-by-run path (or its fallback)
    fresh = sorted(set(batch.tolist()))
    assert got.new_hashes.dtype == np.int32 and got.new_hashes.tolist() == fresh
    assert got.new_buckets.dtype == np.int16 and got.new_buckets.tolist() == [index[h] for h in fresh]
    assert ours.hashes.tolist() == fresh and ours.buckets.tolist() == [index[h] for h in fresh]
    assert (got.by_bucket is None) == repeat  # the run-by-run path hands each bucket's hashes over, sorted
    for bucket, part in got.by_bucket or ():
        assert part.tolist() == sorted(h for h in fresh if index[h] == bucket)
    # the next batch (known and new hashes) goes on from the same state as Java's
    more = np.concatenate([batch[:100], rng.integers(-(2**31), 2**31, 5000, dtype=np.int64).astype(np.int32)])
    assert ours.assign_new(more).buckets.tolist() == _java_assign(index, non_full, total, more.tolist(), target, -1)
    assert ours.hashes.tolist() == sorted(index)
