"""merge-engine = partial-update: each key's row is built field by field from its versions.

Without sequence groups a field takes its newest non-null value. A sequence group (``fields.<s1,s2>.sequence-group
= a,b``) updates its fields - nulls included - only from rows whose ordering fields are not older than the newest
accepted so far, and runs per-field aggregate functions over its rows. "Accepted" is a running maximum, so it is
vectorized: rank the ordering tuples, offset the ranks by key segment and take one ``maximum.accumulate``.

Keys that need Paimon's row-by-row semantics - retractions through sequence groups, or out-of-order rows for an
order-sensitive function (first_value, listagg, ...) - are folded one by one in Python; they are the rare case.

Paimon: mergetree.compact.PartialUpdateMergeFunction
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import RowKindError
from laketide.mergetree.engines._kernels import (
    Segments,
    keep_single_versions,
    row_kinds,
  sorted_segments,
    take_or_null,
    valid_mask,
)
from laketide.mergetree.engines.agg_functions import FieldAggregator
from laketide.mergetree.engines.config import PartialUpdateConfig, SequenceGroup
from laketide.io.kv import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, RowKind
from laketide.mergetree.key_order import order_column, py_key
from laketide.mergetree.merge import MergeFunction, MergeSpec, key_order

__all__ = ["PartialUpdateMergeFunction", "DELETE_HELP"]

DELETE_HELP = (
    "By default, partial-update can not accept delete records; choose one of: "
    "1. 'ignore-delete' = 'true' to ignore them; "
    "2. 'partial-update.remove-record-on-delete' = 'true' to remove the whole row; "
    "3. sequence groups ('fields.<seq>.sequence-group') to retract the group's columns"
)


def _sort_key_ranks(columns: list[pa.ChunkedArray | pa.Array]) -> np.ndarray:
    """Dense ranks of the tuples formed by ``columns`` (nulls lowest), compared in order."""
    rank: np.ndarray | None = None
    for col in columns:
        r = np.asarray(
            pc.rank(order_column(col), sort_keys=[("", "ascending", "at_start")], tiebreaker="dense").to_numpy(),
            dtype=np.int64,
        )
        if rank is None:
            rank = r
        else:
            rank = np.unique(rank * (len(r) + 1) + r, return_inverse=True)[1].astype(np.int64)
    assert rank is not None
    return rank


class PartialUpdateMergeFunction(MergeFunction):
    def __init__(
        self, spec: MergeSpec, *, config: PartialUpdateConfig, aggregators: dict[str, FieldAggregator]
    ) -> None:
        super().__init__(spec)
        self.config = config
        self.aggregators = aggregators

    def input_columns(self, all_columns: set[str]) -> set[str]:
        # A group's fields are merged by its ordering fields, whichever of them the query reads.
        return {f for g in self.config.groups for f in g.ordering} & all_columns

    def merge(self, rows: pa.Table) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        kinds = row_kinds(rows)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        if retract.any() and self.config.ignore_delete:
            rows = rows.filter(pa.array(~retract))
            if rows.num_rows == 0:
                return rows
        ordered, segs = sorted_segments(rows, self.spec)
        if not self.config.groups:
            return keep_single_versions(ordered, segs, self._merge_plain(ordered, segs))
        return keep_single_versions(ordered, segs, self._merge_grouped(ordered, segs))

    # -- no sequence groups ------------------------------------------------------------------------------------
    def _merge_plain(self, ordered: pa.Table, segs: Segments) -> pa.Table:
        kinds = row_kinds(ordered)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        insert = ~retract
        base = np.full(segs.count, -1, dtype=np.int64)
        ends = segs.ends
        out_kind = np.zeros(segs.count, dtype=np.int8)
        if retract.any():
            if not self.config.remove_record_on_delete:
                raise RowKindError(DELETE_HELP)
            # A -D resets the row to its own values; -U rows are skipped.
            base = segs.last_index(kinds == RowKind.DELETE)
            insert &= np.arange(ordered.num_rows) > segs.broadcast(base)
            gone = (kinds[ends] == RowKind.DELETE) | ~segs.any(~retract)
            out_kind[gone] = RowKind.DELETE
        columns: dict[str, pa.Array] = {}
        for name in ordered.column_names:
            if name in (SEQUENCE_NUMBER, VALUE_KIND) or name in self.spec.key_names or name.startswith(KEY_PREFIX):
                columns[name] = take_or_null(ordered.column(name), ends)
                continue
            col = ordered.column(name)
            idx = segs.last_index(insert & valid_mask(col))
            columns[name] = take_or_null(col, np.where(idx >= 0, idx, base))
        columns[VALUE_KIND] = pa.array(out_kind, pa.int8())
        return pa.Table.from_arrays([columns[n] for n in ordered.column_names], schema=ordered.schema)

    # -- sequence groups ---------------------------------------------------------------------------------------
    def _merge_grouped(self, ordered: pa.Table, segs: Segments) -> pa.Table:
        kinds = row_kinds(ordered)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        slow = segs.any(retract)
        acceptance = {id(g): self._acceptance(ordered, segs, g) for g in self._present_groups(ordered)}
        for g in self._present_groups(ordered):
            skip, accepted = acceptance[id(g)]
            older = ~skip & ~accepted
            for f in g.fields:
                agg = self.aggregators.get(f)
                if f in ordered.column_names and agg is not None and not agg.reversed_is_forward:
                    slow |= segs.any(older)
        if not slow.any():
            return self._grouped_fast(ordered, segs, acceptance)
        slow_rows = segs.broadcast(slow)
        fast_part = ordered.filter(pa.array(~slow_rows))
        parts = [self._sequential(ordered.filter(pa.array(slow_rows)))]
        if fast_part.num_rows:
            fast_ordered, fast_segs = sorted_segments(fast_part, self.spec)
            fast_acc = {id(g): self._acceptance(fast_ordered, fast_segs, g) for g in self._present_groups(fast_part)}
            parts.append(self._grouped_fast(fast_ordered, fast_segs, fast_acc))
        merged = pa.concat_tables(parts)
        return merged.take(key_order(merged, self.spec.key_names))

    def _present_groups(self, table: pa.Table) -> list[SequenceGroup]:
        names = set(table.column_names)
        return [g for g in self.config.groups if set(g.ordering) <= names]

    def _acceptance(self, ordered: pa.Table, segs: Segments, group: SequenceGroup) -> tuple[np.ndarray, np.ndarray]:
        """(skip, accepted): rows whose ordering fields are all null, rows not older than any before them."""
        cols = [ordered.column(f) for f in group.ordering]
        skip = np.ones(ordered.num_rows, dtype=bool)
        for c in cols:
            skip &= ~valid_mask(c)
        rank = _sort_key_ranks(cols)
        width = ordered.num_rows + 2
        floor = segs.ids * width - 1
        key = np.where(skip, floor, floor + 1 + rank)
        running = np.maximum.accumulate(key)
        before = np.empty_like(running)
        before[1:] = running[:-1]
        before[segs.starts] = floor[segs.starts]
        return skip, ~skip & (key >= before)

    def _grouped_fast(
        self, ordered: pa.Table, segs: Segments, acceptance: dict[int, tuple[np.ndarray, np.ndarray]]
    ) -> pa.Table:
        ends = segs.ends
        columns: dict[str, pa.Array] = {}
        handled: set[str] = set()
        no_retract = np.zeros(ordered.num_rows, dtype=bool)
        for g in self._present_groups(ordered):
            skip, accepted = acceptance[id(g)]
            newest = segs.last_index(accepted)
            for f in (*g.ordering, *g.fields):
                if f not in ordered.column_names:
                    continue
                handled.add(f)
                agg = self.aggregators.get(f) if f in g.fields else None
                if agg is None:
                    columns[f] = take_or_null(ordered.column(f), newest)
                else:
                    columns[f] = agg.aggregate(ordered.column(f).combine_chunks(), segs, active=~skip,
                                               retract=no_retract)
        for name in ordered.column_names:
            if name in handled:
                continue
            if name in (SEQUENCE_NUMBER, VALUE_KIND) or name in self.spec.key_names or name.startswith(KEY_PREFIX):
                columns[name] = take_or_null(ordered.column(name), ends)
            elif self.config.group_of(name) is not None:
                # a group field whose ordering fields were not read: nothing can update it reliably
                columns[name] = pa.nulls(segs.count, ordered.schema.field(name).type)
            else:
                col = ordered.column(name)
                columns[name] = take_or_null(col, segs.last_index(valid_mask(col)))
        columns[VALUE_KIND] = pa.array(np.zeros(segs.count, dtype=np.int8))
        return pa.Table.from_arrays([columns[n] for n in ordered.column_names], schema=ordered.schema)

    # -- row by row (Paimon's algorithm) -----------------------------------------------------------------------
    def _sequential(self, ordered: pa.Table) -> pa.Table:
        names = ordered.column_names
        out: list[dict[str, Any]] = []
        current: list[dict[str, Any]] = []
        keys = self.spec.key_names
        for row in ordered.to_pylist():
            if current and py_key([row[k] for k in keys]) != py_key([current[0][k] for k in keys]):
                out.append(self._fold_key(current, names))
                current = []
            current.append(row)
        if current:
            out.append(self._fold_key(current, names))
        return pa.Table.from_pylist(out, schema=ordered.schema)

    def _fold_key(self, rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
        groups = self._present_groups_names(names)
        aggs = {f: a for f, a in self.aggregators.items() if f in names}
        for a in aggs.values():
            a.reset()
        row: dict[str, Any] = dict.fromkeys(names)
        filled = meet_insert = delete_row = False
        for kv in rows:
            kind = kv[VALUE_KIND]
            delete_row = False
            if kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE):
                if not filled:
                    row = dict(kv)
                    filled = True
                row[SEQUENCE_NUMBER] = kv[SEQUENCE_NUMBER]
                if self._retract_groups(row, kv, groups, aggs):
                    row = dict(kv)
                    delete_row = True
                continue
            row[SEQUENCE_NUMBER] = kv[SEQUENCE_NUMBER]
            for k in self.spec.key_names:
                row[k] = kv[k]
            self._update_groups(row, kv, groups, aggs, names)
            meet_insert = filled = True
        row[VALUE_KIND] = int(RowKind.DELETE if delete_row or not meet_insert else RowKind.INSERT)
        return row

    def _present_groups_names(self, names: list[str]) -> list[SequenceGroup]:
        present = set(names)
        return [g for g in self.config.groups if set(g.ordering) <= present]

    def _update_groups(
        self, row: dict[str, Any], kv: dict[str, Any], groups: list[SequenceGroup],
        aggs: dict[str, FieldAggregator], names: list[str],
    ) -> None:
        grouped = {f for g in groups for f in (*g.ordering, *g.fields)}
        for name in names:
            if name in grouped or name in (SEQUENCE_NUMBER, VALUE_KIND) or name in self.spec.key_names \
                    or name.startswith(KEY_PREFIX):
                continue
            if kv[name] is not None:
                row[name] = kv[name]
        for g in groups:
            new = tuple(kv[f] for f in g.ordering)
            if all(v is None for v in new):
                continue
            newer = _compare(new, tuple(row[f] for f in g.ordering)) >= 0
            for f in g.fields:
                if f not in row:
                    continue
                agg = aggs.get(f)
                if newer:
                    row[f] = kv[f] if agg is None else agg.agg(row[f], kv[f])
                elif agg is not None:
                    row[f] = agg.agg_reversed(row[f], kv[f])
            if newer:
                for f in g.ordering:
                    row[f] = kv[f]

    def _retract_groups(
        self, row: dict[str, Any], kv: dict[str, Any], groups: list[SequenceGroup], aggs: dict[str, FieldAggregator]
    ) -> bool:
        """Retract the fields of the groups ``kv`` is not older for; True when the whole row goes."""
        for g in groups:
            new = tuple(kv[f] for f in g.ordering)
            if all(v is None for v in new):
                continue
            newer = _compare(new, tuple(row[f] for f in g.ordering)) >= 0
            if newer and kv[VALUE_KIND] == RowKind.DELETE and set(g.ordering) & self.config.remove_on_sequence_group:
                return True
            for f in g.fields:
                if f not in row:
                    continue
                agg = aggs.get(f)
                if agg is not None:
                    row[f] = agg.apply_retract(row[f], kv[f])
                elif newer:
                    row[f] = None
            if newer:
                for f in g.ordering:
                    row[f] = kv[f]
        return False


def _compare(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    for x, y in zip(a, b):
        if x == y:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        return -1 if x < y else 1
    return 0
