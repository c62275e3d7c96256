"""The rows of a routed write handed to the buffers piece by piece (dynamic-bucket and cross-partition tables).

Routing decides every row's (partition, bucket) over the whole ``write()`` call with integer arrays (codes,
hashes, row positions: a few bytes a row); the rows themselves are copied from the input only when a bucket's
buffer takes them, at most ``max_rows`` at a time, so ``TableWrite`` can bound the buffers after each piece as it
does for fixed buckets (write/write_budget.py). Before, routing copied the whole input into partition order and
again into bucket order before anything was buffered: a second full copy whatever ``write-buffer-size`` said.

Paimon: the write buffers are bounded per record (memory.MemoryPoolFactory); here per piece.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from laketide.write.bucketing import Group, GroupRows, partition_codes

__all__ = ["bucket_runs", "group_at", "group_pieces", "partition_runs", "position_pieces"]


def partition_runs(table: pa.Table, partition_keys: Sequence[str]) -> Iterator[tuple[tuple[object, ...],
                                                                                     np.ndarray | None]]:
    """(partition values, ascending row positions) of each distinct partition of ``table`` (None: every row).

    Partitions come in the order ``bucketing.split_by_partition_and_bucket`` yields them (dictionary codes of the
    partition columns, mixed radix, ascending), so assigners meet them in the same order as before.
    """
    n = table.num_rows
    if n == 0:
        return
    if not partition_keys:
        yield (), None
        return
    code = np.zeros(n, dtype=np.int64)
    radix = 1
    dictionaries, part_codes = partition_codes(table, partition_keys)
    for d, idx in zip(dictionaries, part_codes):
        code += idx * radix
        radix *= len(d) or 1
    if radix == 1:
        yield tuple(d[0].as_py() for d in dictionaries), None
        return
    # numpy's stable sort of 8 / 16-bit integers is a radix sort
    narrow = code.astype(np.uint8) if radix <= 1 << 8 else code.astype(np.uint16) if radix <= 1 << 16 else code
    order = np.argsort(narrow, kind="stable")
    sorted_code = narrow[order]
    bounds = (np.flatnonzero(np.diff(sorted_code)) + 1).tolist()
    for s, e in zip([0, *bounds], [*bounds, n]):
        first = int(order[s])
        yield tuple(d[int(c[first])].as_py() for d, c in zip(dictionaries, part_codes)), order[s:e]


def bucket_runs(buckets: np.ndarray) -> Iterator[tuple[int, np.ndarray | slice | None]]:
    """(bucket, ascending positions in ``buckets``) of each bucket, buckets ascending (None: every position; a
    slice: one run of consecutive positions)."""
    if len(buckets) == 0:
        return
    first = int(buckets[0])
    if bool((buckets == first).all()):
        yield first, None
        return
    if bool((buckets[1:] >= buckets[:-1]).all()):  # already grouped (new keys fill buckets in arrival order)
        bounds = (np.flatnonzero(buckets[1:] != buckets[:-1]) + 1).tolist()
        for s, e in zip([0, *bounds], [*bounds, len(buckets)]):
            yield int(buckets[s]), slice(s, e)
        return
    order = np.argsort(buckets.astype(np.int16), kind="stable")  # bucket ids fit 16 bits: a radix sort
    sorted_b = buckets[order]
    bounds = (np.flatnonzero(np.diff(sorted_b)) + 1).tolist()
    for s, e in zip([0, *bounds], [*bounds, len(order)]):
        yield int(sorted_b[s]), order[s:e]


def position_pieces(positions: np.ndarray, max_rows: int | None) -> Iterator[np.ndarray]:
    """``positions`` in consecutive slices of at most ``max_rows`` (None: in one go); nothing when empty."""
    step = len(positions) if max_rows is None else max(max_rows, 1)
    for start in range(0, len(positions), max(step, 1)):
        yield positions[start:start + step]


def group_at(partition: tuple[object, ...], bucket: int, table: pa.Table,
             positions: np.ndarray | slice | None) -> GroupRows:
    """The rows of ``table`` at ``positions`` (None: all; a slice: a run; else ascending) as a group not copied
    yet: a one-shot write copies it on a flush worker (write/flush_pipeline.py)."""
    if positions is None:
        return GroupRows(partition, bucket, table)
    if isinstance(positions, slice):
        return GroupRows(partition, bucket, table.slice(positions.start, positions.stop - positions.start))
    return GroupRows(partition, bucket, table, indices=positions)


def group_pieces(groups: Iterator[GroupRows], max_rows: int | None) -> Iterator[Group]:
    """Each group's rows copied out, at most ``max_rows`` at a time (None: a group in one go)."""
    for g in groups:
        step = g.num_rows if max_rows is None else max(max_rows, 1)
        for start in range(0, g.num_rows, max(step, 1)):
            yield Group(g.partition, g.bucket, g.take(start, start + step))
