"""``t.inspect``: the table's metadata as Arrow tables with Python-typed values.

The system tables (``t.system_table("files")``, ``db.t$files``) keep Paimon's columns and Java's string renderings
so Java users and Spark SQL see what they know. ``t.inspect`` is the same metadata for a Python user: partitions,
keys and min/max statistics as struct columns of the table's own types (never BinaryRow bytes or ``{a, 1}``
strings), instants (``commit_time``, ``update_time``) as time-zone aware UTC timestamps. Wall-clock fields that
Java writes without a zone (``creation_time`` of a file, a tag's ``create_time``) stay naive.

Each method takes ``snapshot_id=`` (default: the snapshot the table's time-travel options select, else the
latest) where the metadata belongs to a snapshot.

Compare: pyiceberg's ``table.inspect``, deltalake's ``get_add_actions``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import DataFileMeta, ManifestEntry
from laketide.meta.paths import PartitionCodec
from laketide.table.file_stats import DECODE_ERRORS, decode_key_range, decode_value_stats

if TYPE_CHECKING:
    from laketide.meta.snapshot import Snapshot
    from laketide.schema.table_schema import TableSchema
    from laketide.table.table import Table

__all__ = ["TableInspector"]

_UTC_MS = pa.timestamp("ms", tz="UTC")
# A stats blob that does not decode with its schema shows as nulls, never fails the whole listing.


class TableInspector:
    """Metadata of one table as Arrow tables (``t.inspect.files()``, ``.partitions()``, ...)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def __repr__(self) -> str:
        return f"<TableInspector of {self._table.name}>"

    # -- per snapshot --------------------------------------------------------------------------------------------
    def files(self, *, snapshot_id: int | None = None) -> pa.Table:
        """One row per live data file: ``partition`` (struct), ``bucket``, ``file_path``, ``file_format``,
        ``schema_id``, ``level``, ``record_count``, ``file_size_in_bytes``, ``min_key`` / ``max_key`` (structs of the
        primary-key columns; primary-key tables only), ``null_value_counts`` / ``min_values`` / ``max_values``
        (structs over the current columns; a column the file has no statistics for is null), sequence numbers,
        ``creation_time``, ``delete_row_count``, ``file_source``."""
        t = self._at(snapshot_id)
        entries = sorted(_live(t), key=lambda e: (e.partition, e.bucket, e.file.file_name))
        decoder = _StatsDecoder(t)
        paths = t.store.path_factory
        columns: dict[str, Any] = {
            "partition": _partition_array(t, [e.partition for e in entries]),
            "bucket": pa.array([e.bucket for e in entries], pa.int32()),
            "file_path": pa.array([paths.data_file_paths(e.partition, e.bucket, e.file)[0] for e in entries],
                                  pa.string()),
            "file_format": pa.array([e.file.file_name.rsplit(".", 1)[-1] for e in entries], pa.string()),
            "schema_id": pa.array([e.file.schema_id for e in entries], pa.int64()),
            "level": pa.array([e.file.level for e in entries], pa.int32()),
            "record_count": pa.array([e.file.row_count for e in entries], pa.int64()),
            "file_size_in_bytes": pa.array([e.file.file_size for e in entries], pa.int64()),
        }
        files = [e.file for e in entries]
        if t.primary_keys:
            keys = [decoder.keys(f) for f in files]
            columns["min_key"] = decoder.key_struct([k[0] for k in keys])
            columns["max_key"] = decoder.key_struct([k[1] for k in keys])
        stats = [decoder.values(f) for f in files]
        columns["null_value_counts"] = decoder.value_struct([s[0] for s in stats], counts=True)
        columns["min_values"] = decoder.value_struct([s[1] for s in stats])
        columns["max_values"] = decoder.value_struct([s[2] for s in stats])
        columns.update({
            "min_sequence_number": pa.array([f.min_sequence_number for f in files], pa.int64()),
            "max_sequence_number": pa.array([f.max_sequence_number for f in files], pa.int64()),
            "creation_time": pa.array([_wall_clock(f.creation_time_ms) for f in files], pa.timestamp("ms")),
            "delete_row_count": pa.array([f.delete_row_count for f in files], pa.int64()),
            "file_source": pa.array([None if f.file_source is None else f.file_source.name for f in files],
                                    pa.string()),
        })
        return pa.table(columns)

    def partitions(self, *, snapshot_id: int | None = None) -> pa.Table:
        """One row per partition: ``partition`` (struct), ``record_count``, ``file_size_in_bytes``,
        ``file_count``, ``last_update_time`` (wall clock of the newest file), ``total_buckets``."""
        return self._grouped(snapshot_id, by_bucket=False)

    def buckets(self, *, snapshot_id: int | None = None) -> pa.Table:
        """One row per (partition, bucket): ``partition`` (struct), ``bucket``, ``record_count``,
        ``file_size_in_bytes``, ``file_count``, ``last_update_time``."""
        return self._grouped(snapshot_id, by_bucket=True)

    def manifests(self, *, snapshot_id: int | None = None) -> pa.Table:
        """One row per data manifest of the snapshot: ``file_name``, ``file_size``, ``num_added_files``,
        ``num_deleted_files``, ``schema_id``, ``min_partition`` / ``max_partition`` (structs)."""
        t = self._at(snapshot_id)
        s = _snapshot(t)
        manifests = list(t.file_scan().data_manifests(s)) if s is not None else []
        types = [f.type for f in t.schema.partition_fields]

        def bound(blob: bytes) -> tuple[object, ...] | None:
            if not types:
                return ()
            try:
                return tuple(deserialize_binary_row(blob, types))
            except DECODE_ERRORS:
                return None

        return pa.table({
            "file_name": pa.array([m.file_name for m in manifests], pa.string()),
            "file_size": pa.array([m.file_size for m in manifests], pa.int64()),
            "num_added_files": pa.array([m.num_added_files for m in manifests], pa.int64()),
            "num_deleted_files": pa.array([m.num_deleted_files for m in manifests], pa.int64()),
            "schema_id": pa.array([m.schema_id for m in manifests], pa.int64()),
            "min_partition": _struct_of(t, list(t.partition_keys),
                                        [bound(m.partition_stats.min_values) for m in manifests]),
            "max_partition": _struct_of(t, list(t.partition_keys),
                                        [bound(m.partition_stats.max_values) for m in manifests]),
        })

    # -- table-wide ----------------------------------------------------------------------------------------------
    def snapshots(self) -> pa.Table:
        """``$snapshots`` with ``commit_time`` as a UTC instant."""
        return _utc(self._system("snapshots"), ("commit_time",))

    def history(self, limit: int | None = None) -> pa.Table:
        """``t.history()`` (newest first) with time-zone aware timestamps."""
        out = self._table.history(limit)
        return _utc(out, [f.name for f in out.schema if pa.types.is_timestamp(f.type) and f.type.tz is None])

    def schemas(self) -> pa.Table:
        """One row per schema: ``schema_id``, ``fields`` (list of struct id / name / type / nullable / comment),
        ``partition_keys``, ``primary_keys`` (lists), ``options`` (map), ``comment``, ``update_time`` (UTC)."""
        t = self._table
        schemas = [t.schema_manager.schema(sid) for sid in t.schema_manager.list_ids()]
        field_type = pa.struct([("id", pa.int32()), ("name", pa.string()), ("type", pa.string()),
                                ("nullable", pa.bool_()), ("comment", pa.string())])
        return pa.table({
            "schema_id": pa.array([s.id for s in schemas], pa.int64()),
            "fields": pa.array([[{"id": f.id, "name": f.name, "type": str(f.type.copy(nullable=True)),
                                  "nullable": f.type.nullable, "comment": f.description} for f in s.fields]
                                for s in schemas], pa.list_(field_type)),
            "partition_keys": pa.array([list(s.partition_keys) for s in schemas], pa.list_(pa.string())),
            "primary_keys": pa.array([list(s.primary_keys) for s in schemas], pa.list_(pa.string())),
            "options": pa.array([sorted(s.options.items()) for s in schemas], pa.map_(pa.string(), pa.string())),
            "comment": pa.array([s.comment for s in schemas], pa.string()),
            "update_time": pa.array([s.time_millis for s in schemas], pa.int64()).cast(_UTC_MS),
        })

    def tags(self) -> pa.Table:
        """``$tags`` with ``commit_time`` as a UTC instant (``create_time`` is Java's zone-less wall clock)."""
        return _utc(self._system("tags"), ("commit_time",))

    def branches(self) -> pa.Table:
        """``$branches``: ``branch_name``, ``create_time``."""
        return self._system("branches")

    def consumers(self) -> pa.Table:
        """``$consumers``: ``consumer_id``, ``next_snapshot_id``."""
        return self._system("consumers")

    def options(self) -> pa.Table:
        """``$options``: the table's options as ``key`` / ``value`` rows."""
        return self._system("options")

    # -- helpers -------------------------------------------------------------------------------------------------
    def _at(self, snapshot_id: int | None) -> Table:
        if snapshot_id is None:
            return self._table
        self._table.snapshot(snapshot_id)  # NoSuchSnapshotError naming the table, before any copy
        return self._table.copy({"scan.snapshot-id": str(snapshot_id)})

    def _system(self, name: str) -> pa.Table:
        from laketide.table.system import system_table

        return system_table(self._table, name).read()

    def _grouped(self, snapshot_id: int | None, *, by_bucket: bool) -> pa.Table:
        t = self._at(snapshot_id)
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in _live(t):
            groups.setdefault((e.partition, e.bucket if by_bucket else 0), []).append(e)
        keys = sorted(groups)
        rows = [groups[k] for k in keys]
        newest = [max((e.file.creation_time_ms or 0) for e in g) or None for g in rows]
        columns: dict[str, Any] = {"partition": _partition_array(t, [k[0] for k in keys])}
        if by_bucket:
            columns["bucket"] = pa.array([k[1] for k in keys], pa.int32())
        columns.update({
            "record_count": pa.array([sum(e.file.row_count for e in g) for g in rows], pa.int64()),
            "file_size_in_bytes": pa.array([sum(e.file.file_size for e in g) for g in rows], pa.int64()),
            "file_count": pa.array([len(g) for g in rows], pa.int64()),
            "last_update_time": pa.array([_wall_clock(ms) for ms in newest], pa.timestamp("ms")),
        })
        if not by_bucket:
            columns["total_buckets"] = pa.array([max(e.total_buckets for e in g) for g in rows], pa.int32())
        return pa.table(columns)


# -- decoding ----------------------------------------------------------------------------------------------------
def _snapshot(t: Table) -> Snapshot | None:
    from laketide.table.time_travel import options_snapshot

    chosen = options_snapshot(t)
    return chosen if chosen is not None else t.snapshot_manager.latest_snapshot()


def _live(t: Table) -> list[ManifestEntry]:
    s = _snapshot(t)
    return t.file_scan().plan(s) if s is not None else []


def _wall_clock(ms: int | None) -> _dt.datetime | None:
    return None if ms is None else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)


def _utc(table: pa.Table, names: Sequence[str]) -> pa.Table:
    """Zone-less timestamp columns that hold UTC instants, marked as UTC (the values do not change)."""
    for name in names:
        i = table.schema.get_field_index(name)
        field = table.schema.field(i)
        aware = pa.timestamp(field.type.unit, tz="UTC")
        table = table.set_column(i, field.with_type(aware), table.column(i).cast(aware))
    return table


def _typed(values: list[object], type_: pa.DataType) -> pa.Array:
    """``values`` as an array of ``type_``; a value that does not convert (statistics written before a column
    type change) becomes null instead of failing the listing."""
    try:
        return pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        out = []
        for v in values:
            try:
                out.append(pa.scalar(v, type_))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                out.append(pa.scalar(None, type_))
        return pa.array([s.as_py() for s in out], type_)


def _struct_of(t: Table, names: list[str], rows: list[tuple[object, ...] | None]) -> pa.Array:
    """A struct column with one field per name (typed as the table's column), from value tuples (None: null)."""
    schema = t.arrow_schema
    fields = [schema.field(n).with_nullable(True) for n in names]
    children = [_typed([None if r is None else r[i] for r in rows], f.type) for i, f in enumerate(fields)]
    mask = pa.array([r is None for r in rows], pa.bool_())
    if not fields:
        return pa.array([None if r is None else {} for r in rows], pa.struct([]))
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _partition_array(t: Table, partitions: list[bytes]) -> pa.Array:
    keys = list(t.partition_keys)
    codec = PartitionCodec(keys, [f.type for f in t.schema.partition_fields])
    return _struct_of(t, keys, [codec.values(p) if keys else () for p in partitions])


class _StatsDecoder:
    """Key and value statistics decoded with each file's own schema and named by the current columns (matched
    by field id, as Paimon's SimpleStatsEvolution does)."""

    def __init__(self, t: Table) -> None:
        self.t = t
        self.current = [f.name for f in t.schema.fields]
        self.by_id = {f.id: f.name for f in t.schema.fields}
        self.key_names = list(t.schema.trimmed_primary_keys) if t.schema.primary_keys else []
        self._schemas: dict[int, TableSchema] = {}

    def _schema(self, schema_id: int) -> TableSchema:
        s = self._schemas.get(schema_id)
        if s is None:
            s = self._schemas[schema_id] = self.t.schema_manager.schema(schema_id)
        return s

    def keys(self, file: DataFileMeta) -> tuple[tuple[object, ...] | None, tuple[object, ...] | None]:
        schema = self._schema(file.schema_id)
        decoded = decode_key_range(file, schema)
        if decoded is None:
            return None, None
        pks = list(schema.trimmed_primary_keys)
        lo, hi = dict(zip(pks, decoded[0])), dict(zip(pks, decoded[1]))
        return tuple(lo.get(k) for k in self.key_names), tuple(hi.get(k) for k in self.key_names)

    def values(self, file: DataFileMeta) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
        return decode_value_stats(file, self._schema(file.schema_id), self.by_id)

    def key_struct(self, rows: list[tuple[object, ...] | None]) -> pa.Array:
        return _struct_of(self.t, self.key_names, rows)

    def value_struct(self, rows: list[dict[str, object]], *, counts: bool = False) -> pa.Array:
        if counts:
            fields = [pa.field(n, pa.int64()) for n in self.current]
            children = [pa.array([r.get(n) for r in rows], pa.int64()) for n in self.current]
            if not rows:
                return pa.array([], pa.struct(fields))
            return pa.StructArray.from_arrays(children, fields=fields)
        return _struct_of(self.t, self.current, [tuple(r.get(n) for n in self.current) for r in rows])
