"""System tables (``db.t$snapshots`` ...): metadata exposed as read-only Arrow tables.

``$audit_log`` and ``$binlog`` read the latest snapshot as inserts; the changes between snapshots come from
``Table.read_changes`` (``binlog=True`` for the binlog layout), which reads the changelog when the table has one.

Paimon: table.system.SnapshotsTable, SchemasTable, OptionsTable, FilesTable (``$files``: metadata_tables.py),
AuditLogTable, BinlogTable
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from laketide.exceptions import NoSuchTableError, UnsupportedFeatureError
from laketide.expr import Predicate, bind, filter_table, parse_where
from laketide.table.binlog import to_binlog
from laketide.table.table import Table

__all__ = ["SystemTable", "system_table"]


class SystemTable:
    def __init__(self, table: Table, name: str, reader: Callable[[Table], pa.Table]) -> None:
        self.base = table
        self.name = f"{table.name}${name}"
        self._reader = reader

    def read(self, columns: Sequence[str] | None = None, where: str | Predicate | None = None) -> pa.Table:
        table = self._reader(self.base)
        if where is not None:
            types = {f.name: f.type for f in table.schema}
            table = filter_table(table, parse_where(where, types) if isinstance(where, str) else bind(where, types))
        return table.select(list(columns)) if columns is not None else table

    to_arrow = read

    def __repr__(self) -> str:
        return f"<SystemTable {self.name}>"

    def copy(self, options: Mapping[str, object]) -> SystemTable:
        """This system table over the table with dynamic read ``options``, e.g. ``{"scan.snapshot-id": "3"}`` for
        ``$files`` / ``$manifests`` / ``$partitions`` / ``$buckets`` / ``$table_indexes`` at snapshot 3."""
        return SystemTable(self.base.copy(options), self.name.rsplit("$", 1)[-1], self._reader)


def _snapshots(t: Table) -> pa.Table:
    rows = [
        {
            "snapshot_id": s.id,
            "schema_id": s.schema_id,
            "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier,
            "commit_kind": s.commit_kind.value,
            "commit_time": pa.scalar(s.time_millis, pa.timestamp("ms")).as_py(),
            "base_manifest_list": s.base_manifest_list,
            "delta_manifest_list": s.delta_manifest_list,
            "changelog_manifest_list": s.changelog_manifest_list,
            "total_record_count": s.total_record_count,
            "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count,
            "watermark": s.watermark,
        }
        for s in t.snapshot_manager.snapshots()
    ]
    schema = pa.schema([
        ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
        ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", pa.timestamp("ms")),
        ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
        ("changelog_manifest_list", pa.string()), ("total_record_count", pa.int64()),
        ("delta_record_count", pa.int64()), ("changelog_record_count", pa.int64()), ("watermark", pa.int64()),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def _schemas(t: Table) -> pa.Table:
    import json

    from laketide.types import field_to_json

    rows = []
    for sid in t.schema_manager.list_ids():
        s = t.schema_manager.schema(sid)
        rows.append({
            "schema_id": s.id,
            "fields": json.dumps([field_to_json(f) for f in s.fields]),
            "partition_keys": json.dumps(list(s.partition_keys)),
            "primary_keys": json.dumps(list(s.primary_keys)),
            "options": json.dumps(s.options),
            "comment": s.comment,
            "update_time": pa.scalar(s.time_millis, pa.timestamp("ms")).as_py(),
        })
    schema = pa.schema([
        ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", pa.string()),
        ("primary_keys", pa.string()), ("options", pa.string()), ("comment", pa.string()),
        ("update_time", pa.timestamp("ms")),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def _options(t: Table) -> pa.Table:
    items = sorted(t.schema.options.items())
    return pa.table({"key": [k for k, _ in items], "value": [v for _, v in items]})


def _read_optimized(t: Table) -> pa.Table:
    return t.read(read_optimized=True)


def _audit_log(t: Table) -> pa.Table:
    # A batch read: the latest snapshot's rows, each an insert (change reads carry the other kinds).
    rows = t.read()
    return rows.add_column(0, "rowkind", pa.array(np.full(rows.num_rows, "+I", dtype=object), pa.string()))


def _binlog(t: Table) -> pa.Table:
    return to_binlog(_audit_log(t), t.primary_keys)


def _row_tracking(t: Table) -> pa.Table:
    # Paimon: RowTrackingTable: the table's columns, then _ROW_ID and _SEQUENCE_NUMBER.
    if not t.options.row_tracking_enabled or t.primary_keys:
        raise UnsupportedFeatureError(
            f"Table {t.name} does not support row tracking; the $row_tracking system table needs "
            f"'row-tracking.enabled' = 'true' (an append table)")
    return t.read(columns=[*t.schema.field_names, "_ROW_ID", "_SEQUENCE_NUMBER"])


_SYSTEM_TABLES: dict[str, Callable[[Table], pa.Table]] = {
    "ro": _read_optimized,
    "row_tracking": _row_tracking,
    "audit_log": _audit_log,
    "binlog": _binlog,
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
}


def _metadata_tables() -> dict[str, Callable[[Table], pa.Table]]:
    from laketide.table.metadata_tables import METADATA_TABLES

    return METADATA_TABLES


def system_table(table: Table, name: str) -> SystemTable:
    every = {**_metadata_tables(), **_SYSTEM_TABLES}
    reader = every.get(name.lower())
    if reader is None:
        raise NoSuchTableError(
            f"System table {table.name}${name} does not exist; available: {sorted(every)}"
        )
    return SystemTable(table, name.lower(), reader)
