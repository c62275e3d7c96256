"""Sorting hash arrays off the caller's critical path: on a background thread, or several at once.

A dynamic-bucket write whose new keys all go to one bucket knows every row's bucket without sorting their hashes;
the sorted hash set is only needed later (the bucket's index file at ``prepare_commit``, the assigner's next
batch). Sorting 2M hashes takes ~70 ms of one core: on a thread of its own it overlaps the bucket's flush instead
of delaying it (numpy's sort and compare release the GIL). A large first batch spread over several buckets sorts
each bucket's share on its own (hash_index.PartitionIndex): those sorts run on all cores, and which bucket each
hash of the merged index belongs to is worked out only if a next batch asks (a one-shot write never does).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import numpy as np

__all__ = ["Later", "distinct_sorted", "distinct_sorted_later", "positions_bucket", "sort_each"]

T = TypeVar("T")

# Below this many values in all, one thread sorts them (a pool's start-up costs more than it saves).
_PARALLEL_MIN = 1 << 18


def sort_each(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``[np.sort(a) for a in arrays]``, the sorts spread over the cores when there is enough to sort."""
    workers = min(len(arrays), os.cpu_count() or 1)
    if workers < 2 or sum(len(a) for a in arrays) < _PARALLEL_MIN:
        return [np.sort(a) for a in arrays]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="laketide-hash-sort") as pool:
        return list(pool.map(np.sort, arrays))


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """Sorted distinct int32s: a sort and a neighbour compare (numpy's hash-based unique is slower here)."""
    a = np.sort(np.asarray(values, dtype=np.int32))
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    out: np.ndarray = a[keep]
    return out


class Later(Generic[T]):
    """``fn(*args)``, started now on a thread of its own (``background=False``: run by the first ``result()``
    call instead, so work nobody asks for costs nothing); ``result()`` waits for it (and raises what it raised).
    The arguments must not change meanwhile."""

    __slots__ = ("_future", "_call")

    def __init__(self, fn: Callable[..., T], *args: object, background: bool = True) -> None:
        self._future: Future[T] = Future()
        self._call: tuple[Callable[..., T], tuple[object, ...]] | None = None
        if not background:
            self._call = (fn, args)
            return

        def run() -> None:
            try:
                self._future.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to whoever asks for the result
                self._future.set_exception(e)

        # A thread per call (not a pool): a forked worker process (Spark's) inherits no dead pool threads.
        threading.Thread(target=run, name="laketide-hash-sort", daemon=True).start()

    def result(self) -> T:
        call, self._call = self._call, None
        if call is not None:
            fn, args = call
            try:
                self._future.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - raised below, and to every later caller
                self._future.set_exception(e)
        return self._future.result()


def distinct_sorted_later(values: np.ndarray) -> Later[np.ndarray]:
    """``distinct_sorted(values)`` on a background thread."""
    return Later(distinct_sorted, values)


def positions_bucket(merged: np.ndarray, runs: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
    """The bucket of each of ``merged`` (sorted, distinct), given each bucket's hashes (``runs``, each sorted,
    together exactly ``merged``): int16."""
    out = np.empty(len(merged), dtype=np.int16)
    for bucket, run in runs:
        out[np.searchsorted(merged, run)] = bucket
    return out
