"""A large first batch of a partition that fits one bucket (hash_index.PartitionIndex) is routed at once, its hashes
sorted on a background thread: the buckets, the index's next state, the buckets' fill and the index file's hashes
are exactly what Java's row-at-a-time assigner and maintainer give, repeated hashes included."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from laketide.fs import LocalFileIO
from laketide.index.hash_index import Assigned, PartitionIndex, read_hash_index
from laketide.index.parallel_sort import Later, distinct_sorted, distinct_sorted_later, sort_each
from laketide.write.bucket_assigner import DynamicBucketIndex
from tests.unit.test_hash_index import _java_assign

ROWS = 70_000  # above hash_index._LATER_MIN


def _batch(seed: int, rows: int, repeats: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    batch = rng.integers(-(2**31), 2**31, rows, dtype=np.int64).astype(np.int32)
    if repeats:  # some hashes twice (colliding keys, or the same key written twice), far apart
        at = rng.choice(rows // 2, repeats, replace=False)
        batch[rows // 2 + at] = batch[at]
    return batch


@pytest.mark.parametrize(("target", "repeats"), [(ROWS, 0), (ROWS, 500), (ROWS + 10, 3), (10**6, 1000)])
def test_one_bucket_first_batch_matches_java_then_goes_on(target: int, repeats: int) -> None:
    batch = _batch(target + repeats, ROWS, repeats)
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    got = ours.assign_new(batch)
    assert got.buckets.dtype == np.int32
    assert got.buckets.tolist() == _java_assign(index, non_full, total, batch.tolist(), target, -1)
    assert len(got.new_hashes) == 0 and [b for b, _ in got.later] == [0]  # handed over while being sorted
    fresh = sorted(set(batch.tolist()))
    assert got.later[0][1].result().tolist() == fresh
    # the index joins the sorted batch in at its next use: same hashes, buckets and fill as Java's
    assert ours.hashes.tolist() == fresh and set(ours.buckets.tolist()) == {0}
    assert ours.non_full == {0: len(fresh)} == non_full
    # the next batch (known hashes, then enough new ones to fill bucket 0 and open bucket 1) goes on the same
    more = np.concatenate([batch[:100], _batch(7, target - len(fresh) + 50, 0)])
    assert ours.assign(more).tolist() == _java_assign(index, non_full, total, more.tolist(), target, -1)
    assert ours.hashes.tolist() == sorted(index) and ours.buckets.tolist() == [index[h] for h in sorted(index)]


def test_one_bucket_batch_into_a_loaded_partition_with_room() -> None:
    """A partition whose index files are empty but whose fill says where the room is."""
    ours = PartitionIndex.load([(3, np.zeros(0, np.int32))], target_row_num=ROWS + 5)
    batch = _batch(5, ROWS, 20)
    got = ours.assign_new(batch)
    assert set(got.buckets.tolist()) == {3} and [b for b, _ in got.later] == [3]
    assert ours.non_full == {3: len(set(batch.tolist()))}


def test_not_one_bucket_or_bounded_takes_the_general_path() -> None:
    batch = _batch(9, ROWS, 0)
    spread = PartitionIndex(target_row_num=ROWS // 2).assign_new(batch)  # two buckets
    assert spread.later == () and len(spread.new_hashes) == ROWS
    bounded = PartitionIndex(target_row_num=ROWS).assign_new(batch, max_buckets=4)  # max-buckets: never deferred
    assert bounded.later == () and len(bounded.new_hashes) == ROWS


def test_index_file_of_a_deferred_batch_is_sorted_and_distinct(tmp_path) -> None:
    io = LocalFileIO()
    index = DynamicBucketIndex(file_io=io, table_path=str(tmp_path), files={})
    batch = _batch(3, ROWS, 40)
    index.notify_later(b"p", 0, distinct_sorted_later(batch))
    index.notify(b"p", 0, np.array([5, 5, -1], np.int32))  # and hashes notified row by row, in the same bucket
    (new, old), = index.prepare_commit().values()
    assert old is None
    got = read_hash_index(io, index.path((b"p", 0), new))
    assert got.tolist() == sorted(set(batch.tolist()) | {5, -1})


def test_background_sort_hands_over_its_failure() -> None:
    with pytest.raises(ValueError):
        distinct_sorted_later(np.array(["not", "ints"])).result()  # type: ignore[arg-type]


def test_sort_each_and_distinct_sorted() -> None:
    rng = np.random.default_rng(1)
    arrays = [rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32) for n in (200_000, 0, 150_000, 1)]
    assert [a.tolist() for a in sort_each(arrays)] == [sorted(a.tolist()) for a in arrays]
    assert distinct_sorted(np.array([3, -1, 3, 7, -1], np.int32)).tolist() == [-1, 3, 7]
    assert distinct_sorted(np.zeros(0, np.int32)).tolist() == []


def test_large_first_batch_over_several_buckets_matches_java() -> None:
    """Each bucket's share sorted on its own thread, the merged hashes' buckets worked out in the background."""
    target, rows = 80_000, 300_000  # above parallel_sort._PARALLEL_MIN: four buckets, the last one part full
    rng = np.random.default_rng(11)
    batch = rng.permutation(np.arange(-(2**31), 2**31, 7919, dtype=np.int64))[:rows].astype(np.int32)  # distinct
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    got = ours.assign_new(batch)
    assert got.buckets.tolist() == _java_assign(index, non_full, total, batch.tolist(), target, -1)
    fresh = sorted(index)
    assert got.new_hashes.tolist() == fresh and got.new_buckets.tolist() == [index[h] for h in fresh]
    assert [(b, part.tolist()) for b, part in got.by_bucket or ()] == [
        (b, sorted(h for h in fresh if index[h] == b)) for b in range(4)]
    assert ours.hashes.tolist() == fresh and ours.buckets.tolist() == [index[h] for h in fresh]
    assert {b: n for b, n in ours.non_full.items() if n < target} == non_full  # full ones are dropped lazily
    more = np.concatenate([batch[::1000], _batch(12, 30_000, 0)])
    assert ours.assign(more).tolist() == _java_assign(index, non_full, total, more.tolist(), target, -1)


def test_later_runs_a_call_in_the_background() -> None:
    assert Later(sorted, [3, 1, 2]).result() == [1, 2, 3]


def test_later_on_demand_runs_once_when_asked() -> None:
    calls: list[int] = []

    def work(x: int) -> int:
        calls.append(x)
        return x * 2

    later = Later(work, 21, background=False)
    assert calls == []  # nothing done until asked
    assert later.result() == 42 and later.result() == 42 and calls == [21]
    failing = Later(int, "x", background=False)
    for _ in range(2):
        with pytest.raises(ValueError):
            failing.result()


def test_index_files_never_ask_for_buckets_split_by_bucket_already(tmp_path) -> None:
    """A first batch over several buckets hands each bucket's hashes over: the merged hashes' buckets (worked out
    on demand) are not needed for the index files."""
    def never(*_: object) -> np.ndarray:
        raise AssertionError("asked for the buckets of the merged hashes")

    runs = ((0, np.array([-5, 7], np.int32)), (1, np.array([-9, 3], np.int32)))
    got = Assigned(np.array([0, 0, 1, 1], np.int32), np.array([-9, -5, 3, 7], np.int32),
                   Later(never, background=False), runs)
    io = LocalFileIO()
    index = DynamicBucketIndex(file_io=io, table_path=str(tmp_path), files={})
    index.notify_assigned(b"p", got)
    files = {key[1]: read_hash_index(io, index.path(key, meta)).tolist()
             for key, (meta, _) in index.prepare_commit().items()}
    assert files == {0: [-5, 7], 1: [-9, 3]}


def test_a_failed_background_sort_keeps_failing_never_looks_settled() -> None:
    ours = PartitionIndex(target_row_num=10**6)
    batch = _batch(21, ROWS, 0)
    ours.assign_new(batch)
    assert ours._pending is not None
    # the sort of the pending batch failed (e.g. out of memory): every use raises, none sees an empty index
    ours._pending = replace(ours._pending, hashes=Later(_raise_memory_error, background=False))
    for _ in range(2):
        with pytest.raises(MemoryError):
            ours.assign_new(batch[:10])
        with pytest.raises(MemoryError):
            len(ours)


def _raise_memory_error() -> np.ndarray:
    raise MemoryError("sorting the batch's hashes")
