"""MERGE INTO, in the style of delta-rs: ``t.merge(source, on=[...]).when_matched_update(...)...execute()``.

The source is joined to the target with one Arrow hash join (full outer), each joined row gets the action of the
first clause of its kind whose condition holds (SQL order), and the result is one commit: primary-key tables
write the new rows (+I) and the deleted keys (-D); append tables rewrite, copy-on-write, exactly the files holding
a row that was updated or deleted (an OVERWRITE snapshot, conflict-checked) and add the inserted rows.

Expressions name columns as ``source.col`` / ``target.col`` (the aliases are configurable); SET keys are target
column names. Conditions use the WHERE syntax, values the SET syntax of ``Table.update``.

Paimon: spark MergeIntoPaimonTable
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import MergeSourceError, PredicateError, SchemaError
from laketide.expr import Leaf, Op, Predicate, and_, bind, parse_where
from laketide.io.kv import RowKind
from laketide.meta.manifest import ManifestEntry
from laketide.table.dml import (
    ChangeResult,
    PendingChange,
    check_engine,
    check_rewritable,
    evaluate_values,
    row_mask,
    with_deleted_files,
    with_retries,
    write_row_kinds,
)

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["MergeBuilder"]

_T_ROW = "__target_row"
_S_ROW = "__source_row"
_FILE = "__target_file"

Kind = Literal["matched", "not_matched", "not_matched_by_source"]


@dataclass(frozen=True, slots=True)
class _Clause:
    kind: Kind
    action: Literal["update", "delete", "insert"]
    condition: str | None
    values: Mapping[str, Any] | None  # None: "all" (update_all / insert_all)


class MergeBuilder:
    """Collects WHEN clauses; ``execute()`` runs the merge as one commit and returns its ChangeResult."""

    def __init__(
        self,
        table: Table,
        source: Any,
        *,
        on: Sequence[str] | str | None = None,
        predicate: str | None = None,
        source_alias: str = "source",
        target_alias: str = "target",
    ) -> None:
        from laketide.write.conform import to_arrow

        self.table = table
        self.source = to_arrow(source)  # once: a reader would be drained by a retry
        self.source_alias = source_alias
        self.target_alias = target_alias
        if source_alias == target_alias:
            raise MergeSourceError(f"merge into table {table.name}: source_alias and target_alias are both "
                                   f"{source_alias!r}")
        self.target_keys, self.source_keys = self._join_keys(on, predicate)
        self.clauses: list[_Clause] = []

    # -- the clauses --------------------------------------------------------------------------------------------
    def when_matched_update(self, set: Mapping[str, Any], condition: str | None = None) -> MergeBuilder:  # noqa: A002
        """Update matched target rows: ``set`` maps target columns to values / expressions over both sides."""
        return self._add("matched", "update", condition, self._strip_target(set))

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        """Update every target column from the source column of the same name."""
        return self._add("matched", "update", condition, None)

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        return self._add("matched", "delete", condition, None)

    def when_not_matched_insert(self, values: Mapping[str, Any], condition: str | None = None) -> MergeBuilder:
        """Insert a row for a source row without a match: ``values`` over the source's columns (others: null)."""
        return self._add("not_matched", "insert", condition, self._strip_target(values))

    def when_not_matched_insert_all(self, condition: str | None = None) -> MergeBuilder:
        return self._add("not_matched", "insert", condition, None)

    def when_not_matched_by_source_update(self, set: Mapping[str, Any],  # noqa: A002
                                          condition: str | None = None) -> MergeBuilder:
        return self._add("not_matched_by_source", "update", condition, self._strip_target(set))

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete target rows no source row matches."""
        return self._add("not_matched_by_source", "delete", condition, None)

    def _add(self, kind: Kind, action: Literal["update", "delete", "insert"], condition: str | None,
             values: Mapping[str, Any] | None) -> MergeBuilder:
        self.clauses.append(_Clause(kind, action, condition, values))
        return self

    def _strip_target(self, values: Mapping[str, Any]) -> dict[str, Any]:
        prefix = f"{self.target_alias}."
        return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in values.items()}

    # -- validation ---------------------------------------------------------------------------------------------
    def _join_keys(self, on: Sequence[str] | str | None, predicate: str | None) -> tuple[list[str], list[str]]:
        name = self.table.name
        if (on is None) == (predicate is None):
            raise MergeSourceError(f"merge into table {name}: give on=[columns] or predicate='target.a = source.a'")
        if on is not None:
            cols = [on] if isinstance(on, str) else list(on)
            target, source = cols, cols
        else:
            assert predicate is not None
            target, source = [], []
            for part in re.split(r"\s+(?i:and)\s+", predicate.strip()):
                m = re.fullmatch(r"(\w+)\.(\w+)\s*=\s*(\w+)\.(\w+)", part.strip())
                sides = {m.group(1): m.group(2), m.group(3): m.group(4)} if m else {}
                if set(sides) != {self.source_alias, self.target_alias}:
                    raise MergeSourceError(
                        f"merge into table {name}: the predicate must be equalities "
                        f"'{self.target_alias}.col = {self.source_alias}.col' joined by AND; got {part!r}")
                target.append(sides[self.target_alias])
                source.append(sides[self.source_alias])
        if not target:
            raise MergeSourceError(f"merge into table {name}: on= names no column")
        unknown_t = [c for c in target if c not in self.table.arrow_schema.names]
        unknown_s = [c for c in source if c not in self.source.column_names]
        if unknown_t or unknown_s:
            raise MergeSourceError(
                f"merge into table {name}: join columns missing: {unknown_t} in the table "
                f"(columns {self.table.arrow_schema.names}), {unknown_s} in the source (columns "
                f"{self.source.column_names})")
        return target, source

    def _check_clauses(self) -> None:
        name = self.table.name
        if not self.clauses:
            raise MergeSourceError(f"merge into table {name}: no WHEN clause; add when_matched_update(...) etc.")
        keys = set(self.table.primary_keys)
        for c in self.clauses:
            if c.values is None:
                if c.action == "insert" or (c.kind == "matched" and c.action == "update"):  # not deletes
                    missing = [f.name for f in self.table.arrow_schema if f.name not in self.source.column_names
                               and (c.action == "insert" or f.name not in keys)]
                    if missing:
                        raise SchemaError(f"merge into table {name}: *_all clauses take every column from the source, "
                                          f"which lacks {missing}")
                continue
            if c.action == "update" and keys & set(c.values):
                raise SchemaError(f"merge into table {name}: cannot update primary-key columns "
                                  f"{sorted(keys & set(c.values))}")

    # -- execution ----------------------------------------------------------------------------------------------
    def execute(self) -> ChangeResult:
        """Run the merge as one commit (primary-key tables retry from the latest snapshot on a write conflict)."""
        self._check_clauses()
        if any(c.action != "insert" for c in self.clauses):  # inserts of new keys suit every engine
            check_engine(self.table, verb="merge", deletes_only=all(c.action != "update" for c in self.clauses))
        return with_retries(self.table, self._plan)

    def _qualified(self, rows: pa.Table, alias: str) -> pa.Table:
        return rows.rename_columns([f"{alias}.{n}" if not n.startswith("__") else n for n in rows.column_names])

    def _condition(self, text: str, types: Mapping[str, pa.DataType]) -> Predicate:
        # Quote alias.column as `alias.column` (outside string literals) so the WHERE parser takes it as one name.
        pattern = re.compile(rf"\b({re.escape(self.source_alias)}|{re.escape(self.target_alias)})\.(\w+)")
        parts = text.split("'")
        parts[::2] = [pattern.sub(lambda m: f"`{m.group(1)}.{m.group(2)}`", p) for p in parts[::2]]
        return parse_where("'".join(parts), types)

    def _plan(self) -> PendingChange:
        table = self.table
        schema = table.arrow_schema
        snapshot = table.latest_snapshot()
        by_source = any(c.kind == "not_matched_by_source" for c in self.clauses)
        prune = None if by_source else self._key_range()
        entries: list[ManifestEntry] = []
        if snapshot is None:
            target = schema.empty_table()
        elif table.primary_keys:
            target = table.scan(where=prune).to_arrow()
        else:
            target, entries = self._read_append_target(prune)
        if not table.primary_keys and _FILE not in target.column_names:
            target = target.append_column(_FILE, pa.array([], pa.int64()))
        target = target.append_column(_T_ROW, pa.array(np.arange(target.num_rows, dtype=np.int64)))
        source = self.source.append_column(_S_ROW, pa.array(np.arange(self.source.num_rows, dtype=np.int64)))
        source = self._cast_keys(source)
        # Join only the keys and row numbers (the payload is taken afterwards, once); without a "not matched by
        # source" clause, target rows whose first key is not in the source cannot take part: leave them out.
        left = target.select([*self.target_keys, _T_ROW])
        if not by_source and target.num_rows:
            first = self.target_keys[0]
            left = left.filter(pc.is_in(left.column(first), value_set=source.column(self.source_keys[0])))
        right = source.select([*self.source_keys, _S_ROW]).rename_columns(
            [*(f"__source_key_{i}" for i in range(len(self.source_keys))), _S_ROW])
        try:
            ids = left.join(right, keys=self.target_keys, right_keys=right.column_names[:-1],
                            join_type="full outer", coalesce_keys=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise MergeSourceError(f"merge into table {table.name}: cannot join the source on {self.source_keys}: "
                                   f"{e}") from e
        t_rows, s_rows = ids.column(_T_ROW), ids.column(_S_ROW)
        sides = [self._qualified(target.drop_columns([_T_ROW]), self.target_alias).take(t_rows),
                 self._qualified(source.drop_columns([_S_ROW]), self.source_alias).take(s_rows)]
        joined = pa.Table.from_arrays(
            [c for side in sides for c in side.columns] + [t_rows, s_rows],
            names=[n for side in sides for n in side.column_names] + [_T_ROW, _S_ROW])
        t_present = joined.column(_T_ROW).is_valid().to_numpy(zero_copy_only=False)
        s_present = joined.column(_S_ROW).is_valid().to_numpy(zero_copy_only=False)
        kinds: dict[Kind, np.ndarray] = {
            "matched": t_present & s_present, "not_matched": s_present & ~t_present,
            "not_matched_by_source": t_present & ~s_present,
        }
        self._refuse_duplicates(joined, kinds["matched"])
        types = {f.name: f.type for f in joined.schema}
        # Each row takes the first clause of its kind whose condition holds (SQL MERGE order).
        chosen = np.full(joined.num_rows, -1, dtype=np.int64)
        for i, clause in enumerate(self.clauses):
            candidates = kinds[clause.kind] & (chosen < 0)
            if not candidates.any():
                continue
            if clause.condition is not None:
                candidates &= row_mask(joined, self._condition(clause.condition, types))
            chosen[candidates] = i
        return self._apply(joined, chosen, target, entries)

    def _apply(self, joined: pa.Table, chosen: np.ndarray, target: pa.Table,
               entries: list[ManifestEntry]) -> PendingChange:
        table = self.table
        updated: list[pa.Table] = []
        inserted: list[pa.Table] = []
        deleted_rows: list[np.ndarray] = []
        counts = {"update": 0, "delete": 0, "insert": 0}
        for i, clause in enumerate(self.clauses):
            mask = chosen == i
            if not mask.any():
                continue
            rows = joined.filter(pa.array(mask))
            counts[clause.action] += rows.num_rows
            if clause.action == "delete":
                deleted_rows.append(rows.column(_T_ROW).to_numpy())
            elif clause.action == "update":
                updated.append(self._updated(rows, clause))
            else:
                inserted.append(self._inserted(rows, clause))
        if not any(counts.values()):
            return PendingChange(table)
        if table.primary_keys:
            return self._pk_change(target, updated, inserted, deleted_rows, counts)
        touched_rows = np.concatenate(
            [r.column(_T_ROW).to_numpy() for r in updated] + deleted_rows + [np.zeros(0, np.int64)])
        files = target.column(_FILE).to_numpy()
        touched_files = np.unique(files[touched_rows])
        # Rows of the touched files that no clause changed are copied into the new files.
        changed = np.zeros(target.num_rows, dtype=bool)
        changed[touched_rows] = True
        copied = self._conformed(target.filter(pa.array(np.isin(files, touched_files) & ~changed)))
        new_rows = pa.concat_tables([copied, *[self._conformed(u) for u in updated], *inserted])
        pending = PendingChange(table, rows_inserted=counts["insert"], rows_updated=counts["update"],
                                rows_deleted=counts["delete"])
        messages = write_row_kinds(table, [(new_rows, None)])
        pending.messages = with_deleted_files(messages, [entries[int(k)] for k in touched_files])
        return pending

    def _pk_change(self, target: pa.Table, updated: list[pa.Table], inserted: list[pa.Table],
                   deleted_rows: list[np.ndarray], counts: dict[str, int]) -> PendingChange:
        table = self.table
        names = table.arrow_schema.names
        upserts = pa.concat_tables([self._conformed(u) for u in updated] + inserted
                                   + [table.arrow_schema.empty_table()])
        gone = target.take(pa.array(np.concatenate(deleted_rows + [np.zeros(0, np.int64)]))).select(names)
        pending = PendingChange(table, rows_inserted=counts["insert"], rows_updated=counts["update"],
                                rows_deleted=counts["delete"])
        pending.messages = write_row_kinds(table, [(gone, RowKind.DELETE), (upserts, RowKind.INSERT)])
        return pending

    def _updated(self, rows: pa.Table, clause: _Clause) -> pa.Table:
        """Target rows (plain names, plus the target row index) with the clause's SET applied."""
        schema = self.table.arrow_schema
        out = rows.select([f"{self.target_alias}.{n}" for n in schema.names] + [_T_ROW]).rename_columns(
            [*schema.names, _T_ROW])
        if clause.values is None:
            keys = set(self.table.primary_keys)
            values: Mapping[str, Any] = {n: pc.field(f"{self.source_alias}.{n}") for n in schema.names
                                         if n not in keys and f"{self.source_alias}.{n}" in rows.column_names}
        else:
            values = clause.values
        for name, arr in evaluate_values(self.table, rows, values, verb="merge").items():
            out = out.set_column(out.schema.get_field_index(name), schema.field(name), arr)
        return out

    def _inserted(self, rows: pa.Table, clause: _Clause) -> pa.Table:
        schema = self.table.arrow_schema
        source_cols = {f"{self.source_alias}.{n}" for n in self.source.column_names}
        if clause.values is None:
            values: Mapping[str, Any] = {n: pc.field(f"{self.source_alias}.{n}") for n in schema.names}
        else:
            values = clause.values
        scope = {n: rows.schema.field(n).type for n in rows.column_names if n in source_cols}
        computed = evaluate_values(self.table, rows, values, verb="merge", scope=scope)
        arrays = []
        for f in schema:
            if f.name in computed:
                arrays.append(computed[f.name])
            elif f.nullable:
                arrays.append(pa.chunked_array([pa.nulls(rows.num_rows, f.type)]))
            else:
                raise SchemaError(f"merge into table {self.table.name}: the insert gives no value for NOT NULL "
                                  f"column {f.name!r}")
        return pa.Table.from_arrays(arrays, schema=schema)

    # -- helpers ------------------------------------------------------------------------------------------------
    def _conformed(self, rows: pa.Table) -> pa.Table:
        """``rows`` in the table's schema (a join drops NOT NULL flags; the writer checks the values again)."""
        schema = self.table.arrow_schema
        return pa.Table.from_arrays([rows.column(n) for n in schema.names], schema=schema)

    def _cast_keys(self, source: pa.Table) -> pa.Table:
        """Source join columns in the target's types (an int32 source key joins an int64 column)."""
        schema = self.table.arrow_schema
        for t, s in zip(self.target_keys, self.source_keys, strict=True):
            want = schema.field(t).type
            i = source.schema.get_field_index(s)
            if not source.schema.field(i).type.equals(want):
                try:
                    source = source.set_column(i, pa.field(s, want), source.column(i).cast(want))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise MergeSourceError(f"merge into table {self.table.name}: source column {s!r} does not "
                                           f"fit join column {t!r} ({want}): {e}") from e
        return source

    def _refuse_duplicates(self, joined: pa.Table, matched: np.ndarray) -> None:
        rows = joined.column(_T_ROW).filter(pa.array(matched)).to_numpy()
        unique, counts = np.unique(rows, return_counts=True)
        if (counts > 1).any():
            n = int((counts > 1).sum())
            raise MergeSourceError(
                f"merge into table {self.table.name}: {n} target rows are matched by more than one source row "
                f"(join on {self.source_keys}); deduplicate the source first. Nothing was changed.")

    def _key_range(self) -> Predicate | None:
        """Prune the target to the range of the source's first join key (files outside cannot match)."""
        column = self.source.column(self.source_keys[0])
        if self.source.num_rows == 0 or column.null_count == len(column):
            return None
        key = self.target_keys[0]
        try:
            lo, hi = pc.min(column).as_py(), pc.max(column).as_py()
            return bind(and_(Leaf(Op.GE, key, (lo,)), Leaf(Op.LE, key, (hi,))),
                        {f.name: f.type for f in self.table.arrow_schema})
        except (PredicateError, pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError):
            return None  # pruning is an optimisation

    def _read_append_target(self, prune: Predicate | None) -> tuple[pa.Table, list[ManifestEntry]]:
        store = self.table.store
        snapshot = self.table.latest_snapshot()
        assert snapshot is not None
        check_rewritable(self.table, verb="merge")
        entries = store.new_scan().plan(snapshot, predicate=prune)
        reader = store.new_read()
        paths = store.path_factory
        parts = []
        for i, e in enumerate(entries):
            path = e.file.external_path or f"{paths.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}"
            rows = pa.Table.from_batches(list(reader.read_file(e.file, path)), schema=reader.output_schema)
            parts.append(rows.append_column(_FILE, pa.array(np.full(rows.num_rows, i, dtype=np.int64))))
        schema = reader.output_schema.append(pa.field(_FILE, pa.int64()))
        return (pa.concat_tables(parts) if parts else schema.empty_table()), entries
