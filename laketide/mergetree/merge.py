"""Merging sorted runs by key and sequence number, vectorized and memory-bounded.

Every run (a data file, or a chain of non-overlapping files) is sorted by key with unique keys. The streaming
merge keeps one batch per run in memory: everything up to the smallest "last key" among the runs' current batches
can be merged now (no run can still produce a smaller key), so that prefix is concatenated, sorted by (key,
sequence) and reduced to the newest row per key in one pass of Arrow kernels.

Paimon: mergetree.MergeSorter, compact.SortMergeReader, mergetree.compact.DeduplicateMergeFunction,
mergetree.compact.IntervalPartition
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.format.ascending_take import take_rows
from laketide.meta.stable_sort import stable_argsort
from laketide.mergetree.key_order import needs_rank, order_column, order_table, py_key
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, is_retract

__all__ = [
    "MergeSpec",
    "MergeFunction",
    "DeduplicateMergeFunction",
    "dedupe",
    "key_order",
    "merge_order",
    "merge_streams",
    "partition_runs",
    "drop_retracts",
    "sort_for_merge",
    "last_of_groups",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """How rows of one key are ordered: key columns, then ``sequence.field`` columns, then arrival order."""

    key_names: tuple[str, ...]
    sequence_fields: tuple[str, ...] = ()
    sequence_descending: bool = False  # sequence.field.sort-order = descending: the smallest value wins

    def sort_keys(self) -> list[tuple[str, str, str]]:
        # A null sequence field counts as the oldest value, whatever the sort order.
        # Rows sort oldest first (the last row of a key wins), so nulls go first in either order.
        order = "descending" if self.sequence_descending else "ascending"
        return (
            [(k, "ascending", "at_start") for k in self.key_names]
            + [(f, order, "at_start") for f in self.sequence_fields]
            + [(SEQUENCE_NUMBER, "ascending", "at_start")]
        )

    @property
    def columns(self) -> list[str]:
        """Columns the merge itself needs besides what the caller reads."""
        return [*self.key_names, *self.sequence_fields, SEQUENCE_NUMBER, VALUE_KIND]


def last_of_groups(table: pa.Table, key_names: Sequence[str]) -> pa.Array:
    """Mask of the last row of each run of equal keys in a key-sorted table (keys equal as Java compares them)."""
    n = table.num_rows
    if n <= 1:
        return pa.array(np.ones(n, dtype=bool))
    changed: pa.Array | None = None
    for name in key_names:
        col = order_column(table.column(name))
        diff = pc.not_equal(col.slice(0, n - 1), col.slice(1))
        changed = diff if changed is None else pc.or_(changed, diff)
    assert changed is not None
    return pa.concat_arrays([pc.fill_null(changed, True).combine_chunks(), pa.array([True])])


def dedupe(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Sort by (key, sequence) and keep the newest row of each key (retractions included)."""
    if table.num_rows == 0:
        return table
    fast = _dedupe_indices_single_int_key(table, spec)
    if fast is not None:
        return take_run(table, fast)
    order = merge_order(table, spec)
    keys = table.select(list(spec.key_names)).take(order)
    return table.take(order.filter(last_of_groups(keys, spec.key_names)))


def merge_order(table: pa.Table, spec: MergeSpec) -> pa.Array:
    """Indices that sort ``table`` by key, then oldest to newest version, in Java's comparator order."""
    if not needs_rank(table, (*spec.key_names, *spec.sequence_fields)):
        return pc.sort_indices(table, sort_keys=spec.sort_keys())
    names = [*spec.key_names, *spec.sequence_fields]
    ranked, cols = order_table(table, names, extra=[SEQUENCE_NUMBER])
    renamed = MergeSpec(key_names=tuple(cols[: len(spec.key_names)]),
                        sequence_fields=tuple(cols[len(spec.key_names): len(names)]),
                        sequence_descending=spec.sequence_descending)
    keys = renamed.sort_keys()
    keys[-1] = (cols[-1], "ascending", "at_start")  # the sequence number column under its positional name
    return pc.sort_indices(ranked, sort_keys=keys)


def key_order(table: pa.Table, key_names: Sequence[str]) -> pa.Array:
    """Indices that sort ``table`` by key alone, in Java's comparator order."""
    ranked, cols = order_table(table, key_names)
    return pc.sort_indices(ranked, sort_keys=[(c, "ascending") for c in cols])


def take_run(table: pa.Table, indices: np.ndarray) -> pa.Table:
    """``table.take(indices)``, or a zero-copy slice when the indices are one ascending run (rows that arrived
    already sorted by key, e.g. increasing ids, need no gather); ascending ones are taken chunk by chunk."""
    n = len(indices)
    if n and int(indices[-1]) - int(indices[0]) == n - 1 and bool((np.diff(indices) == 1).all()):
        return table.slice(int(indices[0]), n)
    return take_rows(table, indices)


def _dedupe_indices_single_int_key(table: pa.Table, spec: MergeSpec) -> np.ndarray | None:
    """The common case (one integer key, arrival order only) with a stable integer sort (meta/stable_sort.py).

    Rows of one key must end up oldest first; a stable sort keeps their input order, which is checked against
    the sequence numbers (and the general Arrow sort is used if it does not hold).
    """
    if len(spec.key_names) != 1 or spec.sequence_fields:
        return None
    col = order_column(table.column(spec.key_names[0]))  # a float key sorts as its integer rank
    if not pa.types.is_integer(col.type) or col.null_count:
        return None
    key = col.to_numpy()
    order = stable_argsort(key)
    k = key[order]
    same = k[1:] == k[:-1]
    if same.any():
        seq = table.column(SEQUENCE_NUMBER).to_numpy()[order]
        if (same & (seq[1:] < seq[:-1])).any():
            return None
    last = np.empty(len(k), dtype=bool)
    last[:-1] = ~same
    last[-1] = True
    return order[last]


def drop_retracts(table: pa.Table) -> pa.Table:
    """What a reader sees: -U / -D rows removed."""
    if table.num_rows == 0:
        return table
    mask = is_retract(table.column(VALUE_KIND))
    return table.filter(pc.invert(mask)) if pc.any(mask).as_py() else table


def sort_for_merge(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """``table`` ordered by key, then oldest to newest version (what engines reduce group by group)."""
    return table.take(merge_order(table, spec))


class MergeFunction(ABC):
    """A merge engine: reduces all versions of each key to one row (Paimon: mergetree.compact.MergeFunction).

    ``merge`` gets rows in any order, several per key, with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``; it returns
    one row per key, sorted by key, whose ``_VALUE_KIND`` says whether the key still exists (+I / +U) or is gone
    (-D), and whose ``_SEQUENCE_NUMBER`` is the newest of its inputs. Kernels must be vectorized.
    """

    #: A key that appears once stays as it is (lets a merge skip runs that overlap nothing).
    single_row_is_result: bool = False
    #: A key's newest row is its result whatever the older rows hold: they need not be read to merge.
    newest_row_wins: bool = False

    def __init__(self, spec: MergeSpec) -> None:
        self.spec = spec

    @abstractmethod
    def merge(self, rows: pa.Table) -> pa.Table: ...

    def input_columns(self, all_columns: set[str]) -> set[str]:
        """Value columns a read must fetch so the merge is right, besides what the query asks for."""
        return set()


class DeduplicateMergeFunction(MergeFunction):
    """merge-engine = deduplicate: the newest version wins, a retraction as newest removes the key.

    With ``ignore_delete`` retractions are skipped, as Java's DeduplicateMergeFunction skips them: files may hold
    deletes written before the option was set (an older writer, or ``ignore-delete`` given only to a read).
    """

    def __init__(self, spec: MergeSpec, *, ignore_delete: bool = False) -> None:
        super().__init__(spec)
        self.ignore_delete = ignore_delete
        # A lone retraction must be dropped, not kept as the key's result.
        self.single_row_is_result = not ignore_delete
        # A skipped retraction lets an older row win; so does a sequence field.
        self.newest_row_wins = not ignore_delete and not spec.sequence_fields

    def merge(self, rows: pa.Table) -> pa.Table:
        if self.ignore_delete and rows.num_rows:
            mask = is_retract(rows.column(VALUE_KIND))
            if pc.any(mask).as_py():
                rows = rows.filter(pc.invert(mask))
        return dedupe(rows, self.spec)


def _key_at(table: pa.Table, names: Sequence[str], i: int) -> tuple[Any, ...]:
    return py_key([table.column(n)[i].as_py() for n in names])


def _prefix_len(table: pa.Table, names: Sequence[str], bound: tuple[Any, ...]) -> int:
    """Number of leading rows with key <= bound (the table is sorted by key): a binary search."""
    lo, hi = 0, table.num_rows
    while lo < hi:
        mid = (lo + hi) // 2
        if _key_at(table, names, mid) <= bound:
            lo = mid + 1
        else:
            hi = mid
    return lo


def merge_streams(
    runs: Sequence[Iterator[pa.Table]], merge: MergeFunction, *, max_bytes: int | None = None
) -> Iterator[pa.Table]:
    """Merge key-sorted runs into key-sorted tables with one row per key, holding one batch per run at a time.

    Each step merges every row up to a bound key that no run can still undercut. ``max_bytes`` caps the rows of
    one step (rows as wide as the widest batch seen): the bound is then also at most each run's key that many
    rows / runs in, so a merge of many runs proceeds in key-range chunks whose size does not grow with the
    number of runs.
    """
    names = merge.spec.key_names
    iters = list(runs)
    buffers: list[pa.Table | None] = [None] * len(iters)
    done = [False] * len(iters)
    row_bytes = 1.0

    def refill(i: int) -> None:
        nonlocal row_bytes
        while not done[i] and (buffers[i] is None or buffers[i].num_rows == 0):  # type: ignore[union-attr]
            nxt = next(iters[i], None)
            if nxt is None:
                done[i] = True
            else:
                buffers[i] = nxt
                if max_bytes is not None and nxt.num_rows:
                    row_bytes = max(row_bytes, nxt.nbytes / nxt.num_rows)

    for i in range(len(iters)):
        refill(i)
    if len(iters) == 1 and merge.single_row_is_result:
        # One run is already sorted and unique: no merge, just pass it through.
        while buffers[0] is not None and buffers[0].num_rows:
            yield buffers[0]
            buffers[0] = None
            refill(0)
        return
    while True:
        live = [i for i, b in enumerate(buffers) if b is not None and b.num_rows]
        if not live:
            return
        per_run = None if max_bytes is None else max(1, int(max_bytes / row_bytes) // len(live))
        limits = []
        for i in live:
            b = buffers[i]
            assert b is not None
            n = b.num_rows
            if per_run is not None and n > per_run:
                limits.append(_key_at(b, names, per_run - 1))
            elif not done[i]:
                limits.append(_key_at(b, names, n - 1))  # the run may go on with keys above its last one
        bound = min(limits) if limits else None
        parts = []
        for i in live:
            b = buffers[i]
            assert b is not None
            cut = b.num_rows if bound is None else _prefix_len(b, names, bound)
            if cut:
                parts.append(b.slice(0, cut))
                buffers[i] = b.slice(cut)
        for i in live:
            refill(i)
        if len(parts) == 1 and merge.single_row_is_result:
            yield parts[0]  # one run's rows: already sorted and unique
        elif parts:
            yield merge.merge(pa.concat_tables(parts))


def partition_runs(
    items: Iterable[T], key_range: Callable[[T], tuple[tuple[Any, ...], tuple[Any, ...]]]
) -> list[list[list[T]]]:
    """Group files into sections of overlapping key ranges, and each section into sorted runs.

    Sections never overlap each other, so each merges on its own; inside a section, files of one run do not
    overlap and are read one after another (Paimon: IntervalPartition#partition).
    """
    ordered = sorted(items, key=lambda it: key_range(it))
    sections: list[list[T]] = []
    section_max: tuple[Any, ...] | None = None
    for it in ordered:
        lo, hi = key_range(it)
        if sections and section_max is not None and lo <= section_max:
            sections[-1].append(it)
            section_max = max(section_max, hi)
        else:
            sections.append([it])
            section_max = hi
    result = []
    for section in sections:
        runs: list[list[T]] = []
        heap: list[tuple[tuple[Any, ...], int]] = []  # (max key of the run's last file, run index)
        for it in section:
            lo, hi = key_range(it)
            if heap and heap[0][0] < lo:
                _, idx = heapq.heappop(heap)
                runs[idx].append(it)
            else:
                idx = len(runs)
                runs.append([it])
            heapq.heappush(heap, (hi, idx))
        result.append(runs)
    return result
