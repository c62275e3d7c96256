"""A table's live files, partitions and buckets as Arrow tables (metadata only).

Paimon: table.system.FilesTable, PartitionsTable, BucketsTable
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import java_to_string
from laketide.meta.snapshot import Snapshot
from laketide.table.table import Table

__all__ = ["FileRow", "buckets_table", "describe", "files_table", "live_files", "partitions_table"]

FILES_SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("level", pa.int32()), ("file_name", pa.string()),
    ("file_size", pa.int64()), ("row_count", pa.int64()), ("delete_row_count", pa.int64()),
    ("min_key", pa.string()), ("max_key", pa.string()), ("min_sequence_number", pa.int64()),
    ("max_sequence_number", pa.int64()), ("schema_id", pa.int64()), ("creation_time", pa.timestamp("ms")),
    ("deleted_rows_dv", pa.int64()),
])


@dataclass(frozen=True, slots=True)
class FileRow:
    """One live data file with its partition spelled ``k=v/...`` and its keys decoded."""

    partition: str
    entry: ManifestEntry
    min_key: str
    max_key: str
    dv_deleted: int | None  # rows a deletion vector marks deleted, None when no vector covers the file
    min_key_values: tuple[Any, ...] = ()
    max_key_values: tuple[Any, ...] = ()


def partition_label(table: Table, partition: bytes) -> str:
    keys = table.partition_keys
    if not keys:
        return ""
    values = deserialize_binary_row(partition, [f.type for f in table.schema.partition_fields])
    return "/".join(f"{k}={java_to_string(v) if v is not None else 'null'}" for k, v in zip(keys, values))


def _key(raw: bytes, types: list[Any]) -> tuple[str, tuple[Any, ...]]:
    """The key as text and as values (values empty when there is no key or its layout is unknown)."""
    if not types or not raw:
        return "", ()
    try:
        values = deserialize_binary_row(raw, types)
    except Exception:  # a key layout this reader does not know: show the bytes rather than fail
        return raw.hex(), ()
    return ", ".join("null" if v is None else java_to_string(v) for v in values), tuple(values)


def resolve_snapshot(table: Table, snapshot_id: int | None) -> Snapshot | None:
    return table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()


def live_files(table: Table, snapshot: Snapshot | None) -> list[FileRow]:
    """The live files of ``snapshot`` sorted by partition, bucket, level and min key."""
    if snapshot is None:
        return []
    scan = table.file_scan()
    key_types = [table.schema.field(k).type for k in table.schema.trimmed_primary_keys] \
        if table.primary_keys else []
    dv_deleted: dict[tuple[bytes, int, str], int] = {}
    for ie in scan.index_entries(snapshot):
        for m in ie.index_file.dv_ranges or ():
            if m.cardinality is not None:
                dv_deleted[(ie.partition, ie.bucket, m.data_file_name)] = m.cardinality
    labels: dict[bytes, str] = {}
    rows = []
    for e in scan.plan(snapshot):
        label = labels.get(e.partition)
        if label is None:
            label = labels[e.partition] = partition_label(table, e.partition)
        min_text, min_values = _key(e.file.min_key, key_types)
        max_text, max_values = _key(e.file.max_key, key_types)
        rows.append(FileRow(
            partition=label, entry=e, min_key=min_text, max_key=max_text,
            dv_deleted=dv_deleted.get((e.partition, e.bucket, e.file.file_name)),
            min_key_values=min_values, max_key_values=max_values,
        ))
    rows.sort(key=lambda r: (r.partition, r.entry.bucket, -r.entry.file.level, r.entry.file.min_sequence_number,
                             r.entry.file.file_name))
    return rows


def files_table(rows: list[FileRow]) -> pa.Table:
    def created(ms: int | None) -> _dt.datetime | None:
        return None if ms is None else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)

    return pa.Table.from_pylist([
        {
            "partition": r.partition, "bucket": r.entry.bucket, "level": r.entry.file.level,
            "file_name": r.entry.file.file_name, "file_size": r.entry.file.file_size,
            "row_count": r.entry.file.row_count, "delete_row_count": r.entry.file.delete_row_count,
            "min_key": r.min_key, "max_key": r.max_key,
            "min_sequence_number": r.entry.file.min_sequence_number,
            "max_sequence_number": r.entry.file.max_sequence_number, "schema_id": r.entry.file.schema_id,
            "creation_time": created(r.entry.file.creation_time_ms), "deleted_rows_dv": r.dv_deleted,
        }
        for r in rows
    ], schema=FILES_SCHEMA)


def buckets_table(files: pa.Table) -> pa.Table:
    """Per (partition, bucket): files, rows, bytes, levels and sorted runs (each level-0 file is a run)."""
    grouped = files.group_by(["partition", "bucket"]).aggregate([
        ("file_name", "count"), ("row_count", "sum"), ("file_size", "sum"), ("file_size", "min"),
        ("file_size", "max"), ("level", "count_distinct"),
    ])
    level0 = files.filter(pc.equal(files["level"], 0)).group_by(["partition", "bucket"]).aggregate(
        [("file_name", "count")]).rename_columns(["partition", "bucket", "level0_files"])
    upper = files.filter(pc.greater(files["level"], 0)).group_by(["partition", "bucket"]).aggregate(
        [("level", "count_distinct")]).rename_columns(["partition", "bucket", "upper_levels"])
    out = grouped.rename_columns(["partition", "bucket", "file_count", "record_count", "total_size",
                                  "min_file_size", "max_file_size", "levels"])
    out = out.join(level0, ["partition", "bucket"]).join(upper, ["partition", "bucket"])
    runs = pc.add(pc.fill_null(out["level0_files"], 0), pc.fill_null(out["upper_levels"], 0))
    out = out.drop_columns(["level0_files", "upper_levels"]).append_column("sorted_runs", runs)
    return out.sort_by([("partition", "ascending"), ("bucket", "ascending")])


def partitions_table(files: pa.Table) -> pa.Table:
    grouped = files.group_by(["partition"]).aggregate([
        ("file_name", "count"), ("row_count", "sum"), ("file_size", "sum"), ("bucket", "count_distinct"),
        ("creation_time", "max"),
    ])
    out = grouped.rename_columns(["partition", "file_count", "record_count", "total_size", "bucket_count",
                                  "last_file_creation_time"])
    return out.sort_by([("partition", "ascending")])


def bucket_mode(table: Table) -> str:
    bucket = table.options.bucket
    if bucket == -1:
        return "dynamic" if table.primary_keys else "unaware"
    if bucket == -2:
        return "postpone"
    return f"fixed ({bucket})"


def describe(table: Table) -> dict[str, Any]:
    """What ``laketide describe`` shows: schema, keys, options, bucket mode, size and counts."""
    snapshot = table.latest_snapshot()
    files = files_table(live_files(table, snapshot))
    sm = table.snapshot_manager
    return {
        "name": table.name,
        "path": table.path,
        "schema_id": table.schema.id,
        "columns": [
            {"id": f.id, "name": f.name, "type": str(f.type), "comment": f.description} for f in table.schema.fields
        ],
        "primary_keys": list(table.primary_keys),
        "partition_keys": list(table.partition_keys),
        "bucket_mode": bucket_mode(table),
        "options": dict(sorted(table.schema.options.items())),
        "comment": table.schema.comment,
        "latest_snapshot_id": snapshot.id if snapshot else None,
        "snapshot_count": len(sm.snapshot_ids()),
        "record_count": snapshot.total_record_count if snapshot else 0,
        "file_count": files.num_rows,
        "total_size": int(pc.sum(files["file_size"]).as_py() or 0),
        "partition_count": len(set(files["partition"].to_pylist())) if table.partition_keys else None,
    }
