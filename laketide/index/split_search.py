"""Looking a large batch of hashes up in a sorted hash index on two cores: negative and non-negative hashes apart.

The batch is sorted once; every negative hash sorts before every non-negative one, in the batch as in the index,
so the two halves are then searched independently (a merge against their part of the index, the hits' buckets
scattered, the misses gathered), one on a worker thread (numpy's searches and gathers release the GIL), and their
results line up end to end: the unknown hashes of the negative half, then those of the other, are the unknown
hashes sorted.

A dynamic-bucket upsert of 2M rows into an 8M-key index spent ~0.2 s of one core here before its rows were routed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from laketide.meta.stable_sort import stable_argsort

__all__ = ["KnownSplit", "search_by_halves"]


@dataclass(frozen=True, slots=True)
class KnownSplit:
    buckets: np.ndarray  # int32 per row, -1 where the hash is unknown
    sorted_new: np.ndarray  # the unknown rows' hashes, sorted (ties in arrival order)
    rows_new: np.ndarray  # the row of each of ``sorted_new``
    insert_at: np.ndarray  # each of ``sorted_new``'s insertion point in the index


def search_by_halves(index_hashes: np.ndarray, index_buckets: np.ndarray, hashes: np.ndarray, *,
                     sorted_search: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> KnownSplit:
    """The bucket of each of ``hashes`` (int32) in the index (sorted distinct ``index_hashes``, ``index_buckets``
    aligned), -1 where unknown, and the unknown ones sorted. ``sorted_search(values, sorted_queries)`` is
    ``np.searchsorted`` for sorted queries."""
    out = np.full(len(hashes), -1, dtype=np.int32)
    order = stable_argsort(hashes)  # one sort of the whole batch (numpy's radix passes), then split at 0
    sorted_q = hashes[order]
    q_split = int(np.searchsorted(sorted_q, 0))
    split = int(np.searchsorted(index_hashes, 0))
    halves = [(slice(0, q_split), 0, split), (slice(q_split, len(hashes)), split, len(index_hashes))]

    def search(half: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        queries, lo, hi = halves[half]
        sorted_h = sorted_q[queries]
        rows = order[queries]  # the row of each sorted query
        values = index_hashes[lo:hi]
        if len(values) == 0:
            return sorted_h, rows, np.full(len(rows), lo, dtype=np.intp)
        at = sorted_search(values, sorted_h)
        pos = np.minimum(at, len(values) - 1)
        hit = values[pos] == sorted_h
        out[rows[hit]] = index_buckets[lo:hi][pos[hit]]  # the halves' rows are disjoint
        miss = ~hit
        return sorted_h[miss], rows[miss], at[miss] + lo

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="laketide-hash-search") as pool:
        upper = pool.submit(search, 1)
        lower = search(0)
        high = upper.result()
    return KnownSplit(out, np.concatenate([lower[0], high[0]]), np.concatenate([lower[1], high[1]]),
                      np.concatenate([lower[2], high[2]]))


def merge_first_kept(hashes: np.ndarray, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``hashes`` (int32) sorted with ``buckets`` aligned, a hash held more than once kept at its first position
    (a stable sort: the runs of laketide's sorted index files merge in about one pass)."""
    order = stable_argsort(hashes)
    merged = hashes[order]
    first = np.ones(len(merged), dtype=bool)
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return merged[first], buckets[order[first]]


def merge_by_halves(files: Sequence[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """``merge_first_kept`` of index files each sorted (laketide's: ``(bucket, hashes)`` in file order), the
    negative and the non-negative hashes merged on two cores: each file is cut at 0 (no copy), and each half keeps
    the files' order (the first copy of a hash stays first)."""
    cuts = [int(np.searchsorted(hashes, 0)) for _, hashes in files]

    def merge(half: int) -> tuple[np.ndarray, np.ndarray]:
        parts = [(b, h[:cut] if half == 0 else h[cut:]) for (b, h), cut in zip(files, cuts)]
        hashes = np.concatenate([np.zeros(0, np.int32), *(h for _, h in parts)]).astype(np.int32, copy=False)
        buckets = np.concatenate([np.zeros(0, np.int16), *(np.full(len(h), b, dtype=np.int16) for b, h in parts)])
        return merge_first_kept(hashes, buckets)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="laketide-hash-search") as pool:
        upper = pool.submit(merge, 1)
        lower = merge(0)
        high = upper.result()
    return np.concatenate([lower[0], high[0]]), np.concatenate([lower[1], high[1]])
