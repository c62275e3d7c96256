"""Row-level changes on a table: ``delete(where)``, ``update(set, where)``, ``upsert(data)``, each one commit.

Primary-key tables change rows by key: a delete writes -D records for the keys that match (reading only the key
and predicate columns), an update or upsert writes the new rows (+I), and the merge engine does the rest.
Append tables have no keys: the files holding matching rows are rewritten copy-on-write, and one commit replaces
exactly those files (an OVERWRITE snapshot, as Java's; it fails with CommitConflictError, changing nothing, when a
concurrent commit compacted or deleted one of them). A predicate on partition columns only drops whole
partitions, from metadata alone.

Paimon: spark DeleteFromPaimonTableCommand, UpdatePaimonTableCommand (copy-on-write), PaimonSparkWriter
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from laketide.exceptions import (
    CommitStateUnknownError,
    PredicateError,
    SchemaError,
    UnsupportedFeatureError,
    WriteConflictError,
)
from laketide.expr import Predicate, bind, parse_where, referenced_fields, to_arrow_expression
from laketide.expr.values import parse_value_expression
from laketide.io.kv import RowKind
from laketide.meta.commit_message import CommitMessage
from laketide.meta.manifest import ManifestEntry
from laketide.table.row_tracking_guard import refuse_row_tracking_rewrite

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = [
    "ChangeResult", "PendingChange", "check_engine", "check_rewritable", "delete_rows", "evaluate_values",
    "plan_delete", "plan_update", "row_mask", "update_rows", "upsert_rows", "with_deleted_files", "with_retries",
]

_LOG = logging.getLogger(__name__)

# What a SET value may be: a Python value (a literal), a SQL-like expression string, or an Arrow expression.
SetValue = Any


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What one row-level change did. ``rows_deleted`` is None where counting would mean reading data the change
    did not need (whole partitions dropped from a primary-key table). ``snapshot_id`` is None: nothing changed."""

    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int | None = 0
    files_added: int = 0
    files_removed: int = 0
    snapshot_id: int | None = None


@dataclass(slots=True)
class PendingChange:
    """A change whose files are written but not committed: ``commit()`` publishes it, ``abort()`` drops it."""

    table: Table
    messages: list[CommitMessage] = field(default_factory=list)
    drop_partitions: Predicate | None = None  # an overwrite of these partitions with nothing
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int | None = 0

    @property
    def is_empty(self) -> bool:
        return self.drop_partitions is None and not any(not m.is_empty() for m in self.messages)

    def commit(self) -> ChangeResult:
        """Publish the change as one snapshot (none when nothing matched); on failure its files are removed."""
        if self.is_empty:
            return ChangeResult()
        try:
            if self.drop_partitions is not None:
                sid = self.table.commit(self.messages, overwrite=True, overwrite_where=self.drop_partitions)
            else:
                sid = self.table.commit(self.messages)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: only orphan cleanup may remove them
        except BaseException:
            self.abort()
            raise
        if sid is None:
            return ChangeResult()
        removed = sum(len(m.deleted_files) + len(m.compact_before) for m in self.messages)
        if self.drop_partitions is not None:
            removed = self._files_dropped(sid)
        return ChangeResult(
            rows_inserted=self.rows_inserted, rows_updated=self.rows_updated, rows_deleted=self.rows_deleted,
            files_added=sum(len(m.new_files) + len(m.compact_after) for m in self.messages),
            files_removed=removed, snapshot_id=sid,
        )

    def abort(self) -> None:
        self.table.abort(self.messages)
        if any(m.new_index_files for m in self.messages):
            from laketide.table.dv_delete import drop_unreferenced_index_files

            drop_unreferenced_index_files(self.table, self.messages)

    def _files_dropped(self, sid: int) -> int:
        snapshot = self.table.snapshot(sid)
        scan = self.table.store.new_scan()
        metas = scan.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)
        entries = [e for m in metas for e in scan.manifest(m.file_name, m.file_size)]
        return sum(1 for e in entries if e.kind.name == "DELETE")


# -- predicates and values -------------------------------------------------------------------------------------
def resolve_predicate(table: Table, where: str | Predicate, *, verb: str) -> Predicate:
    types = {f.name: f.type for f in table.arrow_schema}
    if isinstance(where, str):
        if not where.strip():
            raise PredicateError(f"{verb} on table {table.name}: where= is empty; to change every row say so: "
                                 f"where='TRUE'")
        if where.strip().upper() == "TRUE":
            return _always_true(table)
        return parse_where(where, types)
    return bind(where, types)


def _always_true(table: Table) -> Predicate:
    from laketide.expr import Leaf, Op, or_

    first = table.arrow_schema.names[0]
    return or_(Leaf(Op.IS_NULL, first, ()), Leaf(Op.IS_NOT_NULL, first, ()))


def row_mask(rows: pa.Table, predicate: Predicate) -> np.ndarray:
    """Where ``predicate`` is true on ``rows`` (null counts as false, as in SQL), as a numpy bool array."""
    marked = rows.select(sorted(referenced_fields(predicate))).append_column(
        "__row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    hits = marked.filter(to_arrow_expression(predicate, schema=marked.schema)).column("__row")
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[hits.to_numpy()] = True
    return mask


def evaluate_values(
    table: Table, rows: pa.Table, values: Mapping[str, SetValue], *, verb: str, scope: Mapping[str, pa.DataType]
    | None = None,
) -> dict[str, pa.ChunkedArray]:
    """Each SET value computed over ``rows`` and cast to its column's type (a typed error names the column)."""
    schema = table.arrow_schema
    columns = dict(scope) if scope is not None else {f.name: f.type for f in rows.schema}
    exprs: dict[str, pc.Expression] = {}
    for name, value in values.items():
        if name not in schema.names:
            raise SchemaError(f"{verb} on table {table.name}: unknown column {name!r}; columns are {schema.names}")
        context = f"{verb} on table {table.name}, column {name!r}"
        if isinstance(value, pc.Expression):
            exprs[name] = value
        elif isinstance(value, str):
            exprs[name] = parse_value_expression(value, columns, context=context)
        else:
            exprs[name] = pc.scalar(value)
    if not exprs:
        return {}
    try:
        projected = ds.dataset(rows).to_table(columns=exprs) if rows.num_rows else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise PredicateError(f"{verb} on table {table.name}: cannot compute the SET values: {e}") from e
    out: dict[str, pa.ChunkedArray] = {}
    for name in exprs:
        target = schema.field(name).type
        if projected is None:
            out[name] = pa.chunked_array([], type=target)
            continue
        column = projected.column(name)
        try:
            out[name] = column if column.type.equals(target) else column.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(f"{verb} on table {table.name}: the value for column {name!r} ({column.type}) does "
                              f"not fit its type {target}: {e}") from e
        if not schema.field(name).nullable and out[name].null_count:
            raise SchemaError(f"{verb} on table {table.name}: column {name!r} is NOT NULL; the SET value gives null")
    return out


def _set_where(rows: pa.Table, mask: np.ndarray, values: Mapping[str, pa.ChunkedArray]) -> pa.Table:
    """``rows`` with ``values`` in the rows where ``mask`` holds (vectorized if_else per column)."""
    condition = pa.array(mask)
    for name, new in values.items():
        i = rows.schema.get_field_index(name)
        merged = pc.if_else(condition, new.combine_chunks(), rows.column(name).combine_chunks())
        rows = rows.set_column(i, rows.schema.field(name), merged)
    return rows


# -- planning ----------------------------------------------------------------------------------------------------
def plan_delete(table: Table, where: str | Predicate) -> PendingChange:
    """Write (but do not commit) the deletion of the rows matching ``where``."""
    predicate = resolve_predicate(table, where, verb="delete")
    check_engine(table, verb="delete", deletes_only=True)
    if table.latest_snapshot() is None:
        return PendingChange(table)
    partition_keys = set(table.partition_keys)
    if partition_keys and referenced_fields(predicate) <= partition_keys:
        return _plan_partition_drop(table, predicate)
    if table.primary_keys:
        keys = _key_columns(table)
        matched = table.scan(columns=keys, where=predicate).to_arrow()
        return _write_pk(table, matched, RowKind.DELETE, rows_deleted=matched.num_rows)
    if table.store.options.deletion_vectors_enabled:
        from laketide.table.dv_delete import plan_vector_change

        pending, deleted = plan_vector_change(table, predicate, row_mask=row_mask)
        pending.rows_deleted = deleted
        return pending
    return _rewrite_append(table, predicate, lambda rows, mask: (rows.filter(pa.array(~mask)), int(mask.sum())),
                           verb="delete", count_as="deleted")


def plan_update(table: Table, values: Mapping[str, SetValue], where: str | Predicate | None) -> PendingChange:
    """Write (but do not commit) the update of the rows matching ``where`` (all rows when None)."""
    if not values:
        raise SchemaError(f"update on table {table.name}: set= names no column")
    predicate = resolve_predicate(table, "TRUE" if where is None else where, verb="update")
    check_engine(table, verb="update", deletes_only=False)
    keys = set(table.primary_keys)
    for name in values:
        if name in keys:
            raise SchemaError(f"update on table {table.name}: column {name!r} is part of the primary key; delete the "
                              f"row and write the new one instead")
    evaluate_values(table, table.arrow_schema.empty_table(), values, verb="update")  # bad names fail before reading
    if table.latest_snapshot() is None:
        return PendingChange(table)
    if table.store.options.data_evolution_enabled and not table.primary_keys:
        return _plan_evolution_update(table, values, predicate)
    if table.primary_keys:
        matched = table.scan(where=predicate).to_arrow()
        updated = _set_where(matched, np.ones(matched.num_rows, dtype=bool),
                             evaluate_values(table, matched, values, verb="update"))
        return _write_pk(table, updated, RowKind.INSERT, rows_updated=matched.num_rows, rows_deleted=0)

    if table.store.options.deletion_vectors_enabled:
        # The old rows are deleted by vector, the new ones appended (in the same commit).
        from laketide.table.dv_delete import plan_vector_change

        def replaced(chosen: pa.Table) -> pa.Table:
            return _set_where(chosen, np.ones(chosen.num_rows, dtype=bool),
                              evaluate_values(table, chosen, values, verb="update"))

        pending, updated = plan_vector_change(table, predicate, row_mask=row_mask, replace_rows=replaced)
        pending.rows_updated = updated
        return pending

    def transform(rows: pa.Table, mask: np.ndarray) -> tuple[pa.Table, int]:
        chosen = rows.filter(pa.array(mask))
        new = evaluate_values(table, chosen, values, verb="update")
        # Values are computed on the matching rows only (a division by zero elsewhere must not fail the update).
        full = {name: _scatter(rows.column(name), mask, arr) for name, arr in new.items()}
        return _set_where(rows, mask, full), int(mask.sum())

    return _rewrite_append(table, predicate, transform, verb="update", count_as="updated")


def _plan_evolution_update(table: Table, values: Mapping[str, SetValue], predicate: Predicate) -> PendingChange:
    # Data evolution: the set columns of the matching rows go to partial-column files by row id; no file is
    # rewritten and row ids stay (pypaimon's update_by_predicate). BLOB columns are not read (nor settable).
    from laketide.scan.blob_read import blob_columns
    from laketide.scan.row_tracking import ROW_ID
    from laketide.table.update_by_row_id import write_update_by_row_id

    blobs = set(blob_columns(table.schema.fields))
    names = [n for n in table.schema.field_names if n not in blobs]
    matched = table.scan(where=predicate, columns=[*names, ROW_ID]).to_arrow()
    if matched.num_rows == 0:
        return PendingChange(table)
    new = evaluate_values(table, matched.drop_columns([ROW_ID]), values, verb="update")
    data = pa.table({ROW_ID: matched.column(ROW_ID), **new})
    return PendingChange(table, write_update_by_row_id(table, data, list(new)), rows_updated=matched.num_rows)


def _scatter(original: pa.ChunkedArray, mask: np.ndarray, values: pa.ChunkedArray) -> pa.ChunkedArray:
    """An array the length of ``original`` holding ``values`` at the positions of ``mask`` (others: original)."""
    positions = np.cumsum(mask) - 1
    taken = values.combine_chunks().take(pa.array(np.where(mask, positions, 0)))
    return pa.chunked_array([pc.if_else(pa.array(mask), taken, original.combine_chunks())])


def _key_columns(table: Table) -> list[str]:
    """What a delete record needs: the key, the partition, and the NOT NULL columns (a -D row may not null them)."""
    keys = set(table.primary_keys) | set(table.partition_keys)
    return [f.name for f in table.arrow_schema if f.name in keys or not f.nullable]


def _plan_partition_drop(table: Table, predicate: Predicate) -> PendingChange:
    live = table.store.new_scan().plan(table.latest_snapshot(), predicate=predicate)  # type: ignore[arg-type]
    if not live:
        return PendingChange(table)
    # Append files hold each row once; primary-key files may hold old versions too, so their count is unknown.
    rows = None if table.primary_keys else sum(e.file.row_count for e in live)
    return PendingChange(table, drop_partitions=predicate, rows_deleted=rows)


def write_row_kinds(table: Table, parts: Sequence[tuple[pa.Table, RowKind | None]]) -> list[CommitMessage]:
    """Write each non-empty ``(rows, kind)`` in order with one writer (kind None: the table's own, e.g. appends);
    its commit messages (a failure leaves no file behind)."""
    w = table.new_write()
    try:
        try:
            for rows, kind in parts:
                if rows.num_rows:
                    w.write(rows, row_kind=kind)
            return w.prepare_commit()
        except BaseException:
            w.abort()
            raise
    finally:
        w.close()


def _write_pk(table: Table, rows: pa.Table, kind: RowKind, *, rows_inserted: int = 0, rows_updated: int = 0,
              rows_deleted: int = 0) -> PendingChange:
    pending = PendingChange(table, rows_inserted=rows_inserted, rows_updated=rows_updated, rows_deleted=rows_deleted)
    if rows.num_rows:
        pending.messages = write_row_kinds(table, [(rows, kind)])
    return pending


def _rewrite_append(
    table: Table,
    predicate: Predicate,
    transform: Callable[[pa.Table, np.ndarray], tuple[pa.Table, int]],
    *,
    verb: str,
    count_as: str,
) -> PendingChange:
    """Rewrite the files holding rows that match: each file's rows go through ``transform`` (kept / changed rows,
    how many changed) into new files, and the commit replaces exactly the old ones."""
    store = table.store
    check_rewritable(table, verb=verb)
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    entries = store.new_scan().plan(snapshot, predicate=predicate)
    reader = store.new_read()
    paths = store.path_factory
    touched: list[ManifestEntry] = []
    changed = 0
    w = table.new_write()
    try:
        try:
            for e in entries:
                path = e.file.external_path or f"{paths.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}"
                rows = pa.Table.from_batches(list(reader.read_file(e.file, path)), schema=reader.output_schema)
                mask = row_mask(rows, predicate)
                if not mask.any():
                    continue
                new_rows, n = transform(rows, mask)
                changed += n
                touched.append(e)
                if new_rows.num_rows:
                    w.write(new_rows)
            messages = w.prepare_commit() if touched else []
        except BaseException:
            w.abort()
            raise
    finally:
        w.close()
    pending = PendingChange(table, messages=with_deleted_files(messages, touched), rows_deleted=0)
    setattr(pending, f"rows_{count_as}", changed)
    return pending


def check_engine(table: Table, *, verb: str, deletes_only: bool) -> None:
    """Row-level changes say "this row is now X": only a deduplicating table stores that as written. An aggregation
    would add an updated value to the old one, partial-update ignore a SET to NULL, first-row keep the old row;
    deletes are honoured where the engine removes the row on -D. Refused before anything is read or written."""
    if not table.primary_keys:
        return
    from laketide.mergetree.engines.agg_functions import bool_option
    from laketide.mergetree.engines.config import AGG_REMOVE_ON_DELETE, PU_REMOVE_ON_DELETE
    from laketide.options import MergeEngine

    engine = table.options.merge_engine
    if engine is MergeEngine.DEDUPLICATE:
        return
    removal = {MergeEngine.PARTIAL_UPDATE: PU_REMOVE_ON_DELETE, MergeEngine.AGGREGATE: AGG_REMOVE_ON_DELETE}.get(engine)
    if deletes_only and removal is not None and bool_option(table.options, removal):
        return
    hint = f" (deletes work with '{removal}' = 'true')" if removal is not None else ""
    raise UnsupportedFeatureError(
        f"{verb} on table {table.name}: its merge engine '{engine.value}' would not store the changed rows as "
        f"written; row-level {verb} needs 'merge-engine' = 'deduplicate'{hint}"
    )


def check_rewritable(table: Table, *, verb: str) -> None:
    """Copy-on-write needs files that are the rows: refuse tables whose files carry deletion vectors."""
    refuse_row_tracking_rewrite(table, verb)
    if table.store.options.deletion_vectors_enabled:
        raise UnsupportedFeatureError(
            f"{verb} on append table {table.name} with 'deletion-vectors.enabled': rewriting its files would leave "
            f"their deletion vectors behind; not supported yet"
        )


def with_deleted_files(messages: Sequence[CommitMessage], touched: Sequence[ManifestEntry]) -> list[CommitMessage]:
    gone: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in touched:
        gone.setdefault((e.partition, e.bucket), []).append(e)
    out = []
    for m in messages:
        mine = gone.pop((m.partition, m.bucket), [])
        out.append(replace(m, deleted_files=m.deleted_files + tuple(e.file for e in mine)))
    for (partition, bucket), entries in gone.items():
        out.append(CommitMessage(partition=partition, bucket=bucket, total_buckets=entries[0].total_buckets,
                                 deleted_files=tuple(e.file for e in entries)))
    return out


# -- the verbs ----------------------------------------------------------------------------------------------------
def with_retries(table: Table, plan: Callable[[], PendingChange]) -> ChangeResult:
    """Plan and commit; a primary-key write built on a table state a concurrent commit changed is planned again
    from the latest snapshot (as ``Table.write`` does). Copy-on-write conflicts are not retried: they raise."""
    attempt = 0
    while True:
        try:
            return plan().commit()
        except WriteConflictError as e:
            attempt += 1
            if attempt > table.options.commit_max_retries:
                raise
            _LOG.info("Table %s: change attempt %d conflicted with a concurrent commit (%s); planning again",
                      table.name, attempt, type(e).__name__)


def delete_rows(table: Table, where: str | Predicate) -> ChangeResult:
    return with_retries(table, lambda: plan_delete(table, where))


def update_rows(table: Table, values: Mapping[str, SetValue], where: str | Predicate | None) -> ChangeResult:
    return with_retries(table, lambda: plan_update(table, values, where))


def upsert_rows(table: Table, data: Any) -> ChangeResult:
    """Write rows by primary key (what ``write`` does), counting inserted and updated keys."""
    if not table.primary_keys:
        raise SchemaError(f"upsert on table {table.name}: it has no primary key; use write() to append rows")
    from laketide.write.conform import to_arrow

    rows = to_arrow(data)

    def plan() -> PendingChange:
        existing = _existing_keys(table, rows)
        return _write_pk(table, rows, RowKind.INSERT, rows_inserted=rows.num_rows - existing, rows_updated=existing)

    return with_retries(table, plan)


def _existing_keys(table: Table, rows: pa.Table) -> int:
    """How many of ``rows``' keys the table holds (reads only key columns, pruned to the keys' range)."""
    keys = list(table.primary_keys)
    missing = [k for k in keys if k not in rows.column_names]
    if missing:
        raise SchemaError(f"upsert on table {table.name}: the data lacks primary-key columns {missing}")
    if rows.num_rows == 0 or table.latest_snapshot() is None:
        return 0
    from laketide.expr import Leaf, Op, and_

    first = rows.column(keys[0])
    lo, hi = pc.min(first).as_py(), pc.max(first).as_py()
    where = and_(Leaf(Op.GE, keys[0], (lo,)), Leaf(Op.LE, keys[0], (hi,))) if lo is not None else None
    current = table.scan(columns=keys, where=where).to_arrow()
    types = table.arrow_schema
    incoming = pa.table({k: rows.column(k).cast(types.field(k).type) for k in keys})
    return int(incoming.join(current, keys=keys, join_type="left semi").num_rows)
