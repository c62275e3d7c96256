"""index/split_search.py: a batch looked up by halves (negative / non-negative hashes on two threads) gives what
one stable sort and one search over the whole batch give; PartitionIndex takes it for large batches."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.index.hash_index import PartitionIndex, _sorted_search
from laketide.index.split_search import merge_by_halves, merge_first_kept, search_by_halves
from tests.unit.test_hash_index import _java_assign

INT32 = st.integers(-(2**31), 2**31 - 1)
EDGES = st.sampled_from([-(2**31), -1, 0, 1, 2**31 - 1])


def _plain(index: np.ndarray, buckets: np.ndarray, hashes: np.ndarray):
    order = np.argsort(hashes, kind="stable")
    sorted_q = hashes[order]
    at = np.searchsorted(index, sorted_q)
    hit = (at < len(index)) & (index[np.minimum(at, max(len(index) - 1, 0))] == sorted_q) if len(index) else \
        np.zeros(len(hashes), dtype=bool)
    out = np.full(len(hashes), -1, dtype=np.int32)
    out[order[hit]] = buckets[at[hit]]
    return out, sorted_q[~hit], order[~hit], at[~hit]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(INT32, EDGES), max_size=60, unique=True),
       st.lists(st.one_of(INT32, EDGES, st.integers(-3, 3)), max_size=80))
def test_halves_equal_one_search(index_values: list[int], batch: list[int]) -> None:
    index = np.array(sorted(index_values), dtype=np.int32)
    buckets = (np.arange(len(index)) % 7).astype(np.int16)
    hashes = np.array(batch + index_values[:5], dtype=np.int32)  # some known, some repeated
    got = search_by_halves(index, buckets, hashes, sorted_search=_sorted_search)
    out, sorted_new, rows_new, insert_at = _plain(index, buckets, hashes)
    assert got.buckets.tolist() == out.tolist()
    assert got.sorted_new.tolist() == sorted_new.tolist()
    assert got.rows_new.tolist() == rows_new.tolist()  # ties in arrival order
    assert got.insert_at.tolist() == insert_at.tolist()


def test_large_batch_against_an_index_matches_java() -> None:
    """A 300k-row batch (above hash_index._SPLIT_MIN) of known, new and repeated hashes into a 200k-key index."""
    rng = np.random.default_rng(4)
    target = 150_000
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    first = rng.integers(-(2**31), 2**31, 200_000, dtype=np.int64).astype(np.int32)
    assert ours.assign(first).tolist() == _java_assign(index, non_full, total, first.tolist(), target, -1)
    known = rng.choice(first, 120_000)
    new = rng.integers(-(2**31), 2**31, 180_000, dtype=np.int64).astype(np.int32)
    batch = rng.permutation(np.concatenate([known, new, new[:5000]]))
    got = ours.assign_new(batch)
    assert got.buckets.tolist() == _java_assign(index, non_full, total, batch.tolist(), target, -1)
    fresh = sorted(set(new.tolist()) - set(first.tolist()))
    assert got.new_hashes.tolist() == fresh and got.new_buckets.tolist() == [index[h] for h in fresh]
    assert ours.hashes.tolist() == sorted(index) and ours.buckets.tolist() == [index[h] for h in sorted(index)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.one_of(INT32, EDGES, st.integers(-3, 3)), max_size=40)),
                max_size=5), st.booleans())
def test_merge_by_halves_equals_one_merge(files: list[tuple[int, list[int]]], sort_each: bool) -> None:
    """Index files (laketide's sorted, Java's in any order) merged, the first file's copy of a shared hash kept;
    sorted ones also by halves."""
    files = [(b, sorted(hs) if sort_each else hs) for b, hs in files]
    hashes = np.array([h for _, hs in files for h in hs], dtype=np.int32)
    buckets = np.array([b for b, hs in files for _ in hs], dtype=np.int16)
    whole = merge_first_kept(hashes, buckets)
    assert whole[0].tolist() == sorted(set(hashes.tolist()))
    if sort_each:
        halves = merge_by_halves([(b, np.array(hs, dtype=np.int32)) for b, hs in files])
        assert halves[0].tolist() == whole[0].tolist() and halves[1].tolist() == whole[1].tolist()
    first: dict[int, int] = {}
    for h, b in zip(hashes.tolist(), buckets.tolist()):
        first.setdefault(h, b)
    assert whole[1].tolist() == [first[h] for h in sorted(first)]


def test_load_of_large_files_by_halves() -> None:
    rng = np.random.default_rng(8)
    parts = np.array_split(rng.permutation(np.arange(-(2**31), 2**31, 4099, dtype=np.int64))[:400_000], 3)
    files = [(b, np.sort(p).astype(np.int32)) for b, p in enumerate(parts)]
    files.append((3, files[0][1][:10]))  # a hash in two files: the first file's bucket is kept
    ix = PartitionIndex.load(files, target_row_num=10**6)
    expect = sorted((h, b) for b, hs in files[:3] for h in hs.tolist())
    assert ix.hashes.tolist() == [h for h, _ in expect] and ix.buckets.tolist() == [b for _, b in expect]
    assert ix.non_full == {0: len(parts[0]), 1: len(parts[1]), 2: len(parts[2]), 3: 10}
