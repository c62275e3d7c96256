"""Manifest vocabulary: data file metas, manifest entries, manifest file metas, index entries.

Each value object converts to and from the record dict whose keys are Paimon's field names (see
``manifest_schema``); partition, keys and stats stay as serialized BinaryRow bytes here and are decoded by the
layer that knows the row types.

Paimon: io.DataFileMeta, manifest.ManifestEntry, manifest.ManifestFileMeta, stats.SimpleStats,
manifest.IndexManifestEntry, index.IndexFileMeta, index.DeletionVectorMeta, manifest.FileKind, manifest.FileSource
"""

from __future__ import annotations

from collections.abc import Sequence

import datetime as _dt
import enum
from dataclasses import dataclass, replace
from typing import Any

from laketide.meta.manifest_schema import (
    INDEX_MANIFEST_ENTRY_VERSION,
    MANIFEST_ENTRY_VERSION,
    MANIFEST_FILE_META_VERSION,
)

__all__ = [
    "FileKind",
    "FileSource",
    "SimpleStats",
    "DataFileMeta",
    "ManifestEntry",
    "ManifestFileMeta",
    "DeletionVectorMeta",
    "IndexFileMeta",
    "IndexManifestEntry",
]

# A serialized BinaryRow with zero fields (4-byte arity + 8-byte header): Java's BinaryRow.EMPTY_ROW.
EMPTY_ROW_BYTES = b"\x00" * 12


class FileKind(enum.IntEnum):
    ADD = 0
    DELETE = 1


class FileSource(enum.IntEnum):
    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleStats:
    """Min / max values as serialized BinaryRows and per-field null counts."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    @classmethod
    def empty(cls) -> SimpleStats:
        return cls(min_values=EMPTY_ROW_BYTES, max_values=EMPTY_ROW_BYTES, null_counts=())

    def to_record(self) -> dict[str, Any]:
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts),
        }

    @classmethod
    def from_record(cls, r: dict[str, Any] | None) -> SimpleStats:
        if r is None:
            return cls.empty()
        nc = r.get("_NULL_COUNTS")
        return cls(
            min_values=bytes(r["_MIN_VALUES"]),
            max_values=bytes(r["_MAX_VALUES"]),
            null_counts=None if nc is None else tuple(nc),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time_ms: int | None = None  # TIMESTAMP(3), local wall clock as Java writes it
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: FileSource | None = None
    value_stats_cols: tuple[str, ...] | None = None  # None = stats for all value columns
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def stats_columns(self, schema_names: Sequence[str]) -> list[str]:
        """The columns ``value_stats`` covers: ``value_stats_cols``; else, for a file holding ``write_cols`` (data
        evolution, row-tracking compaction), the schema's columns among them (in ``write_cols`` order, system
        columns left out); else every column (Paimon: SimpleStatsEvolutions#getOrCreate)."""
        if self.value_stats_cols is not None:
            return list(self.value_stats_cols)
        if self.write_cols is not None:
            known = set(schema_names)
            return [c for c in self.write_cols if c in known]
        return list(schema_names)

    @property
    def add_row_count(self) -> int:
        return self.row_count - (self.delete_row_count or 0)

    def upgrade(self, level: int) -> DataFileMeta:
        return replace(self, level=level)

    def to_record(self) -> dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_record(),
            "_VALUE_STATS": self.value_stats.to_record(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time_ms,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": None if self.file_source is None else int(self.file_source),
            "_VALUE_STATS_COLS": _opt_list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": _opt_list(self.write_cols),
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> DataFileMeta:
        # Older manifests lack the later fields: .get() gives None, as Java's reader does.
        fs = r.get("_FILE_SOURCE")
        return cls(
            file_name=r["_FILE_NAME"],
            file_size=r["_FILE_SIZE"],
            row_count=r["_ROW_COUNT"],
            min_key=bytes(r["_MIN_KEY"]),
            max_key=bytes(r["_MAX_KEY"]),
            key_stats=SimpleStats.from_record(r.get("_KEY_STATS")),
            value_stats=SimpleStats.from_record(r.get("_VALUE_STATS")),
            min_sequence_number=r["_MIN_SEQUENCE_NUMBER"],
            max_sequence_number=r["_MAX_SEQUENCE_NUMBER"],
            schema_id=r["_SCHEMA_ID"],
            level=r["_LEVEL"],
            extra_files=tuple(r.get("_EXTRA_FILES") or ()),
            creation_time_ms=_to_millis(r.get("_CREATION_TIME")),
            delete_row_count=r.get("_DELETE_ROW_COUNT"),
            embedded_index=_opt_bytes(r.get("_EMBEDDED_FILE_INDEX")),
            file_source=None if fs is None else FileSource(fs),
            value_stats_cols=_opt_tuple(r.get("_VALUE_STATS_COLS")),
            external_path=r.get("_EXTERNAL_PATH"),
            first_row_id=r.get("_FIRST_ROW_ID"),
            write_cols=_opt_tuple(r.get("_WRITE_COLS")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]:
        """What makes two entries refer to the same file (Paimon: FileEntry.Identifier): a rewritten file index
        (``rewrite_file_index``) replaces an entry by one that differs only in its extra files or embedded index."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)

    def to_record(self) -> dict[str, Any]:
        return {
            "_VERSION": MANIFEST_ENTRY_VERSION,
            "_KIND": int(self.kind),
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_record(),
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> ManifestEntry:
        return cls(
            kind=FileKind(r["_KIND"]),
            partition=bytes(r["_PARTITION"]),
            bucket=r["_BUCKET"],
            total_buckets=r["_TOTAL_BUCKETS"],
            file=DataFileMeta.from_record(r["_FILE"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "_VERSION": MANIFEST_FILE_META_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_record(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> ManifestFileMeta:
        return cls(
            file_name=r["_FILE_NAME"],
            file_size=r["_FILE_SIZE"],
            num_added_files=r["_NUM_ADDED_FILES"],
            num_deleted_files=r["_NUM_DELETED_FILES"],
            partition_stats=SimpleStats.from_record(r.get("_PARTITION_STATS")),
            schema_id=r["_SCHEMA_ID"],
            min_bucket=r.get("_MIN_BUCKET"),
            max_bucket=r.get("_MAX_BUCKET"),
            min_level=r.get("_MIN_LEVEL"),
            max_level=r.get("_MAX_LEVEL"),
            min_row_id=r.get("_MIN_ROW_ID"),
            max_row_id=r.get("_MAX_ROW_ID"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletionVectorMeta:
    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFileMeta:
    index_type: str  # "HASH" | "DELETION_VECTORS" | ...
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: dict[str, Any] | None = None  # kept verbatim; laketide does not build global indexes


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexManifestEntry:
    kind: FileKind
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    def to_record(self) -> dict[str, Any]:
        f = self.index_file
        ranges = None
        if f.dv_ranges is not None:
            ranges = [
                {"f0": m.data_file_name, "f1": m.offset, "f2": m.length, "_CARDINALITY": m.cardinality}
                for m in f.dv_ranges
            ]
        return {
            "_VERSION": INDEX_MANIFEST_ENTRY_VERSION,
            "_KIND": int(self.kind),
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_INDEX_TYPE": f.index_type,
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_DELETIONS_VECTORS_RANGES": ranges,
            "_EXTERNAL_PATH": f.external_path,
            "_GLOBAL_INDEX": f.global_index,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> IndexManifestEntry:
        raw = r.get("_DELETIONS_VECTORS_RANGES")
        ranges = None
        if raw is not None:
            ranges = tuple(
                DeletionVectorMeta(
                    data_file_name=m["f0"], offset=m["f1"], length=m["f2"], cardinality=m.get("_CARDINALITY")
                )
                for m in raw
            )
        return cls(
            kind=FileKind(r["_KIND"]),
            partition=bytes(r["_PARTITION"]),
            bucket=r["_BUCKET"],
            index_file=IndexFileMeta(
                index_type=r["_INDEX_TYPE"],
                file_name=r["_FILE_NAME"],
                file_size=r["_FILE_SIZE"],
                row_count=r["_ROW_COUNT"],
                dv_ranges=ranges,
                external_path=r.get("_EXTERNAL_PATH"),
                global_index=r.get("_GLOBAL_INDEX"),
            ),
        )


def _opt_list(v: tuple[str, ...] | None) -> list[str] | None:
    return None if v is None else list(v)


def _opt_tuple(v: Any) -> tuple[str, ...] | None:
    return None if v is None else tuple(v)


def _opt_bytes(v: Any) -> bytes | None:
    return None if v is None else bytes(v)


_EPOCH = _dt.datetime(1970, 1, 1)


def _to_millis(v: Any) -> int | None:
    """Avro gives an aware datetime, ORC/Parquet a naive (pandas) timestamp; both mean wall-clock millis."""
    if v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, _dt.datetime):
        naive = v.replace(tzinfo=None) if v.tzinfo is None else v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return (naive - _EPOCH) // _dt.timedelta(milliseconds=1)
    raise TypeError(f"unexpected creation time {v!r}")
