"""The metadata system tables with Paimon's columns: ``$tags``, ``$branches``, ``$consumers``, ``$manifests``,
``$files``, ``$partitions``, ``$buckets``, ``$statistics``, ``$table_indexes``, ``$aggregation_fields``.

Each reads the branch's metadata through ``table.store``; ``$files``, ``$manifests``, ``$partitions``, ``$buckets`` and
``$table_indexes`` show the snapshot the table's time-travel options select (``t.copy({"scan.snapshot-id": ..})``),
else the latest. Values are rendered as Java renders them: partitions of ``$partitions`` as ``k=v/k2=v2``, of the
other tables as the partition row cast to a string (``{v, v2}``); keys as ``Arrays.toString`` of the internal values
(``[1, a]``); statistics as a ``TreeMap`` (``{a=1, b=x}``).

Paimon: table.system.TagsTable, BranchesTable, ConsumersTable, ManifestsTable, FilesTable, PartitionsTable,
BucketsTable, StatisticTable, TableIndexesTable, AggregationFieldsTable
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import NotFoundError
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import DataFileMeta, ManifestEntry, SimpleStats
from laketide.meta.paths import PartitionCodec, java_to_string
from laketide.meta.snapshot import Snapshot
from laketide.table.file_stats import DECODE_ERRORS, decode_key_range, decode_value_stats
from laketide.table.files_table import file_index_columns

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["METADATA_TABLES"]

_TS = pa.timestamp("ms")
# A stats or key blob that does not decode with its schema shows as null, never fails the whole system table.


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


def _millis(ms: int | None) -> _dt.datetime | None:
    return None if ms is None else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)


def _snapshot(t: Table) -> Snapshot | None:
    from laketide.table.time_travel import options_snapshot

    chosen = options_snapshot(t)
    return chosen if chosen is not None else t.snapshot_manager.latest_snapshot()


def _live(t: Table) -> list[ManifestEntry]:
    s = _snapshot(t)
    return t.file_scan().plan(s) if s is not None else []


# -- value rendering ---------------------------------------------------------------------------------------------
def _cast_string(value: object) -> str:
    """Paimon's CAST(x AS STRING) of a partition value (dates and timestamps as SQL text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=" ", timespec="milliseconds" if value.microsecond else "seconds")
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return java_to_string(value, legacy=False)


class _Partitions:
    def __init__(self, t: Table) -> None:
        self.keys = list(t.schema.partition_keys)
        self.default = t.options.partition_default_name
        self._codec = PartitionCodec(self.keys, [f.type for f in t.schema.partition_fields])
        self.types = self._codec.types

    def values(self, partition: bytes) -> tuple[object, ...]:
        return self._codec.values(partition)

    def as_row_string(self, partition: bytes) -> str:
        """The partition row cast to STRING: ``{a, 1}`` (null fields as ``null``)."""
        return "{" + ", ".join("null" if v is None else _cast_string(v) for v in self.values(partition)) + "}"

    def as_path(self, partition: bytes) -> str:
        """``$partitions``' spelling: ``k=v/k2=v2``, nulls as the default partition name."""
        return "/".join(f"{k}={self.default if v is None else _cast_string(v)}"
                        for k, v in zip(self.keys, self.values(partition)))


def _java_value(value: object) -> str:
    return "null" if value is None else java_to_string(value, legacy=True)


def _tree_map(items: dict[str, object]) -> str:
    return "{" + ", ".join(f"{k}={_java_value(items[k])}" for k in sorted(items)) + "}"


# -- tables ------------------------------------------------------------------------------------------------------
_TAGS = pa.schema([_f("tag_name", pa.string(), False), _f("snapshot_id", pa.int64(), False),
                   _f("schema_id", pa.int64(), False), _f("commit_time", _TS, False), _f("record_count", pa.int64()),
                   _f("create_time", _TS), _f("time_retained", pa.string())])


def _duration_string(td: _dt.timedelta) -> str:
    """Java's Duration#toString: PT24H, PT30M, PT1.5S."""
    total = decimal.Decimal(td.days * 86400 + td.seconds) + decimal.Decimal(td.microseconds) / 1_000_000
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "PT" + (f"{int(hours)}H" if hours else "") + (f"{int(minutes)}M" if minutes else "")
    if seconds or out == "PT":
        text = format(seconds.normalize(), "f")
        out += f"{text}S"
    return out


def _tags(t: Table) -> pa.Table:
    rows = [{
        "tag_name": tag.name, "snapshot_id": tag.snapshot.id, "schema_id": tag.snapshot.schema_id,
        "commit_time": _millis(tag.snapshot.time_millis), "record_count": tag.snapshot.total_record_count,
        "create_time": tag.create_time,
        "time_retained": None if tag.time_retained is None else _duration_string(tag.time_retained),
    } for tag in sorted(t.tags.list(), key=lambda x: x.name)]
    return pa.Table.from_pylist(rows, schema=_TAGS)


_BRANCHES = pa.schema([_f("branch_name", pa.string(), False), _f("create_time", _TS, False)])


def _branches(t: Table) -> pa.Table:
    rows = [{"branch_name": b.name, "create_time": b.create_time} for b in t.branches.list()]
    return pa.Table.from_pylist(rows, schema=_BRANCHES)


_CONSUMERS = pa.schema([_f("consumer_id", pa.string(), False), _f("next_snapshot_id", pa.int64(), False)])


def _consumers(t: Table) -> pa.Table:
    rows = [{"consumer_id": k, "next_snapshot_id": v} for k, v in sorted(t.consumers.list().items())]
    return pa.Table.from_pylist(rows, schema=_CONSUMERS)


_MANIFESTS = pa.schema([_f("file_name", pa.string(), False), _f("file_size", pa.int64(), False),
                        _f("num_added_files", pa.int64(), False), _f("num_deleted_files", pa.int64(), False),
                        _f("schema_id", pa.int64(), False), _f("min_partition_stats", pa.string()),
                        _f("max_partition_stats", pa.string()), _f("min_row_id", pa.int64()),
                        _f("max_row_id", pa.int64())])


def _stats_row(parts: _Partitions, stats: SimpleStats, which: str) -> str | None:
    if not parts.types:
        return "{}"
    try:
        values = deserialize_binary_row(stats.min_values if which == "min" else stats.max_values, parts.types)
    except DECODE_ERRORS:
        return None
    return "{" + ", ".join("null" if v is None else _cast_string(v) for v in values) + "}"


def _manifests(t: Table) -> pa.Table:
    s = _snapshot(t)
    parts = _Partitions(t)
    rows = []
    for m in t.file_scan().data_manifests(s) if s is not None else []:
        rows.append({
            "file_name": m.file_name, "file_size": m.file_size, "num_added_files": m.num_added_files,
            "num_deleted_files": m.num_deleted_files, "schema_id": m.schema_id,
            "min_partition_stats": _stats_row(parts, m.partition_stats, "min"),
            "max_partition_stats": _stats_row(parts, m.partition_stats, "max"),
            "min_row_id": m.min_row_id, "max_row_id": m.max_row_id,
        })
    return pa.Table.from_pylist(rows, schema=_MANIFESTS)


_FILES = pa.schema([
    _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("file_path", pa.string(), False),
    _f("file_format", pa.string(), False), _f("schema_id", pa.int64(), False), _f("level", pa.int32(), False),
    _f("record_count", pa.int64(), False), _f("file_size_in_bytes", pa.int64(), False),
    _f("min_key", pa.string()), _f("max_key", pa.string()), _f("null_value_counts", pa.string(), False),
    _f("min_value_stats", pa.string(), False), _f("max_value_stats", pa.string(), False),
    _f("min_sequence_number", pa.int64()), _f("max_sequence_number", pa.int64()), _f("creation_time", _TS),
    _f("deleteRowCount", pa.int64()), _f("file_source", pa.string()), _f("first_row_id", pa.int64()),
    _f("write_cols", pa.list_(pa.string())),
    # laketide's additions (table/files_table.py): where the file index is, its sidecar, its column:type pairs
    _f("file_index", pa.string()), _f("file_index_path", pa.string()), _f("file_indexes", pa.string()),
])


class _FileStats:
    """Key and value statistics of data files, decoded with their own schema and named by the table's fields
    (matched by field id, as Paimon's SimpleStatsEvolution does)."""

    def __init__(self, t: Table) -> None:
        self.t = t
        self.current = {f.id: f.name for f in t.schema.fields}
        self._schemas: dict[int, Any] = {}

    def _schema(self, schema_id: int) -> Any:
        s = self._schemas.get(schema_id)
        if s is None:
            s = self._schemas[schema_id] = self.t.schema_manager.schema(schema_id)
        return s

    def keys(self, file: DataFileMeta) -> tuple[str | None, str | None]:
        decoded = decode_key_range(file, self._schema(file.schema_id))
        if decoded is None:
            return None, None
        lo, hi = decoded
        return ("[" + ", ".join(_java_value(v) for v in lo) + "]", "[" + ", ".join(_java_value(v) for v in hi) + "]")

    def values(self, file: DataFileMeta) -> tuple[str, str, str]:
        # Every current field appears; one the file has no stats for shows null (Paimon: SimpleStatsEvolution).
        nulls: dict[str, object] = dict.fromkeys(self.current.values())
        mins: dict[str, object] = dict.fromkeys(self.current.values())
        maxs: dict[str, object] = dict.fromkeys(self.current.values())
        decoded = decode_value_stats(file, self._schema(file.schema_id), self.current)
        for found, into in zip(decoded, (nulls, mins, maxs)):
            into.update(found)
        return _tree_map(nulls), _tree_map(mins), _tree_map(maxs)


def _files(t: Table) -> pa.Table:
    entries = _live(t)
    parts = _Partitions(t)
    stats = _FileStats(t)
    paths = t.store.path_factory
    rows = []
    for e in sorted(entries, key=lambda e: (parts.as_row_string(e.partition), e.bucket, e.file.file_name)):
        f = e.file
        min_key, max_key = stats.keys(f)
        nulls, mins, maxs = stats.values(f)
        where, index_path, indexes = file_index_columns(t, e)
        rows.append({
            "partition": parts.as_row_string(e.partition), "bucket": e.bucket,
            "file_path": paths.data_file_paths(e.partition, e.bucket, f)[0],
            "file_format": f.file_name.rsplit(".", 1)[-1], "schema_id": f.schema_id, "level": f.level,
            "record_count": f.row_count, "file_size_in_bytes": f.file_size, "min_key": min_key, "max_key": max_key,
            "null_value_counts": nulls, "min_value_stats": mins, "max_value_stats": maxs,
            "min_sequence_number": f.min_sequence_number, "max_sequence_number": f.max_sequence_number,
            "creation_time": _millis(f.creation_time_ms), "deleteRowCount": f.delete_row_count,
            "file_source": None if f.file_source is None else f.file_source.name,
            "first_row_id": f.first_row_id, "write_cols": None if f.write_cols is None else list(f.write_cols),
            "file_index": where, "file_index_path": index_path, "file_indexes": indexes,
        })
    return pa.Table.from_pylist(rows, schema=_FILES)


_PARTITIONS = pa.schema([
    _f("partition", pa.string()), _f("record_count", pa.int64(), False), _f("file_size_in_bytes", pa.int64(), False),
    _f("file_count", pa.int64(), False), _f("last_update_time", _TS), _f("created_at", _TS),
    _f("created_by", pa.string()), _f("updated_by", pa.string()), _f("options", pa.string()),
    _f("total_buckets", pa.int32(), False),
    _f("done", pa.bool_(), False), _f("deleted_record_count", pa.int64()),
])


def _deleted_rows(t: Table) -> dict[tuple[bytes, int], int]:
    """Rows deletion vectors mark deleted, per (partition, bucket)."""
    s = _snapshot(t)
    out: dict[tuple[bytes, int], int] = {}
    if s is None or not t.options.deletion_vectors_enabled:
        return out
    for e in t.file_scan().index_entries(s):
        if e.index_file.index_type == "DELETION_VECTORS":
            n = sum(m.cardinality or 0 for m in e.index_file.dv_ranges or ())
            out[(e.partition, e.bucket)] = out.get((e.partition, e.bucket), 0) + n
    return out


def _group(entries: list[ManifestEntry], key: Callable[[ManifestEntry], Any]) -> dict[Any, list[ManifestEntry]]:
    out: dict[Any, list[ManifestEntry]] = {}
    for e in entries:
        out.setdefault(key(e), []).append(e)
    return out


def _partitions(t: Table) -> pa.Table:
    parts = _Partitions(t)
    deleted = _deleted_rows(t)
    rows: list[dict[str, Any]] = []
    for partition, group in _group(_live(t), lambda e: e.partition).items():
        rows.append({
            "partition": parts.as_path(partition), "record_count": sum(e.file.row_count for e in group),
            "file_size_in_bytes": sum(e.file.file_size for e in group), "file_count": len(group),
            "last_update_time": _millis(max((e.file.creation_time_ms or 0) for e in group) or None),
            "created_at": None, "created_by": None, "updated_by": None, "options": None,
            "total_buckets": max(e.total_buckets for e in group), "done": False,
            "deleted_record_count": sum(n for (p, _), n in deleted.items() if p == partition),
        })
    rows.sort(key=lambda r: str(r["partition"]))
    return pa.Table.from_pylist(rows, schema=_PARTITIONS)


_BUCKETS = pa.schema([
    _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("record_count", pa.int64(), False),
    _f("file_size_in_bytes", pa.int64(), False), _f("file_count", pa.int64(), False), _f("last_update_time", _TS),
])


def _buckets(t: Table) -> pa.Table:
    parts = _Partitions(t)
    rows: list[dict[str, Any]] = []
    for (partition, bucket), group in _group(_live(t), lambda e: (e.partition, e.bucket)).items():
        rows.append({
            "partition": parts.as_row_string(partition), "bucket": bucket,
            "record_count": sum(e.file.row_count for e in group),
            "file_size_in_bytes": sum(e.file.file_size for e in group), "file_count": len(group),
            "last_update_time": _millis(max((e.file.creation_time_ms or 0) for e in group) or None),
        })
    rows.sort(key=lambda r: (str(r["partition"]), int(r["bucket"])))
    return pa.Table.from_pylist(rows, schema=_BUCKETS)


_STATISTICS = pa.schema([_f("snapshot_id", pa.int64(), False), _f("schema_id", pa.int64(), False),
                         _f("mergedRecordCount", pa.int64()), _f("mergedRecordSize", pa.int64()),
                         _f("colstat", pa.string())])


def _statistics(t: Table) -> pa.Table:
    s = _snapshot(t)
    rows = []
    if s is not None and s.statistics:
        try:
            d = json.loads(t.file_io.read_bytes(t.store.path_factory.statistics_path(s.statistics)))
        except NotFoundError:
            d = None
        if isinstance(d, dict):
            rows.append({"snapshot_id": d.get("snapshotId", s.id), "schema_id": d.get("schemaId", s.schema_id),
                         "mergedRecordCount": d.get("mergedRecordCount"),
                         "mergedRecordSize": d.get("mergedRecordSize"),
                         "colstat": json.dumps(d.get("colStats", {}))})
    return pa.Table.from_pylist(rows, schema=_STATISTICS)


_DV_RANGE = pa.struct([_f("f0", pa.string(), False), _f("f1", pa.int32(), False), _f("f2", pa.int32(), False),
                       _f("_CARDINALITY", pa.int64())])
_TABLE_INDEXES = pa.schema([
    _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("index_type", pa.string(), False),
    _f("file_name", pa.string(), False), _f("file_size", pa.int64(), False), _f("row_count", pa.int64(), False),
    _f("dv_ranges", pa.list_(_DV_RANGE)), _f("row_range_start", pa.int64()), _f("row_range_end", pa.int64()),
    _f("index_field_id", pa.int32()), _f("index_field_name", pa.string()),
])


def _table_indexes(t: Table) -> pa.Table:
    s = _snapshot(t)
    parts = _Partitions(t)
    rows = []
    for e in t.file_scan().index_entries(s) if s is not None else []:
        f = e.index_file
        rows.append({
            "partition": parts.as_row_string(e.partition), "bucket": e.bucket, "index_type": f.index_type,
            "file_name": f.file_name, "file_size": f.file_size, "row_count": f.row_count,
            "dv_ranges": None if f.dv_ranges is None else [
                {"f0": m.data_file_name, "f1": m.offset, "f2": m.length, "_CARDINALITY": m.cardinality}
                for m in f.dv_ranges],
            "row_range_start": None, "row_range_end": None, "index_field_id": None, "index_field_name": None,
        })
    return pa.Table.from_pylist(rows, schema=_TABLE_INDEXES)


_AGGREGATION_FIELDS = pa.schema([_f("field_name", pa.string(), False), _f("field_type", pa.string(), False),
                                 _f("function", pa.string()), _f("function_options", pa.string()),
                                 _f("comment", pa.string())])


def _java_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _aggregation_fields(t: Table) -> pa.Table:
    schema = t.schema_manager.latest() or t.schema
    per_field: dict[str, list[tuple[str, str]]] = {}
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            per_field.setdefault(parts[1], []).append((key, value))
    rows = [{
        "field_name": f.name, "field_type": str(f.type),
        "function": _java_list([v for _, v in per_field.get(f.name, [])]),
        "function_options": _java_list([k for k, _ in per_field.get(f.name, [])]),
        "comment": f.description,
    } for f in schema.fields]
    return pa.Table.from_pylist(rows, schema=_AGGREGATION_FIELDS)


METADATA_TABLES: dict[str, Callable[[Table], pa.Table]] = {
    "tags": _tags,
    "branches": _branches,
    "consumers": _consumers,
    "manifests": _manifests,
    "files": _files,
    "partitions": _partitions,
    "buckets": _buckets,
    "statistics": _statistics,
    "table_indexes": _table_indexes,
    "aggregation_fields": _aggregation_fields,
}
