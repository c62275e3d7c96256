"""Writing the rows of one (partition, bucket) into data files that roll at ``target-file-size``.

Append tables write their rows as they are; primary-key tables write key-value files (sorted by key, with
sequence numbers and row kinds) and their metadata carries min / max key, key stats and the delete count.

Paimon: io.RollingFileWriter, io.RowDataFileWriter (append tables), io.KeyValueDataFileWriter (PK tables),
stats.SimpleStatsConverter
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import pyarrow as pa

import pyarrow.compute as pc

from laketide.format import FileFormat
from laketide.format.stats import (
    ColumnStats,
    StatsMode,
    StatsModeKind,
    collect_stats,
    merge_stats,
    parse_stats_mode,
    stats_from_bounds,
)
from laketide.fs import FileIO
from laketide.index.file_index.spec import FileIndexSpec
from laketide.index.file_index.writer import DataFileIndexWriter, PlacedIndex
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.manifest import EMPTY_ROW_BYTES, DataFileMeta, FileSource, SimpleStats
from laketide.meta.external_paths import ExternalPathProvider
from laketide.meta.paths import TablePaths
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, count_retracts
from laketide.types import DataType

__all__ = ["StatsLayout", "KeyLayout", "RollingFileWriter", "simple_stats"]


@dataclass(frozen=True, slots=True)
class StatsLayout:
    """Which columns get value stats and how (``metadata.stats-mode`` / ``fields.<f>.stats-mode``)."""

    names: tuple[str, ...]
    types: tuple[DataType, ...]
    modes: tuple[str, ...]

    def dense(self) -> tuple[tuple[str, ...] | None, list[int]]:
        """Paimon's dense stats store: only columns whose mode is not ``none``; ``None`` means all of them."""
        keep = [i for i, m in enumerate(self.modes) if m != "none"]
        if len(keep) == len(self.modes):
            return None, keep
        return tuple(self.names[i] for i in keep), keep

    def value_stats(self, stats: Sequence[ColumnStats]) -> tuple[tuple[str, ...] | None, SimpleStats]:
        """``value_stats_cols`` and ``value_stats`` of a file from one ColumnStats per column (dense store)."""
        cols, keep = self.dense()
        return cols, simple_stats([stats[i] for i in keep], [self.types[i] for i in keep])


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """For key-value files: the key columns (value-column names), their types and stats modes."""

    names: tuple[str, ...]
    types: tuple[DataType, ...]
    modes: tuple[str, ...]


@dataclass(slots=True)
class _KeyTracker:
    """Min / max key (first and last row: files are key-sorted), key stats, sequence range, deletes."""

    min_key: tuple[object, ...] | None = None
    max_key: tuple[object, ...] | None = None
    stats: list[ColumnStats] | None = None
    min_seq: int | None = None
    max_seq: int | None = None
    deletes: int = 0

    def add(self, batch: pa.RecordBatch, layout: KeyLayout) -> None:
        keys = batch.select(list(layout.names))
        if self.min_key is None:
            self.min_key = tuple(c[0].as_py() for c in keys.columns)
        self.max_key = tuple(c[-1].as_py() for c in keys.columns)
        part = collect_stats(keys, layout.modes)
        self.stats = part if self.stats is None else merge_stats(self.stats, part)
        seq = batch.column(SEQUENCE_NUMBER)
        lo, hi = pc.min_max(seq).values()
        self.min_seq = lo.as_py() if self.min_seq is None else min(self.min_seq, lo.as_py())
        self.max_seq = hi.as_py() if self.max_seq is None else max(self.max_seq, hi.as_py())
        self.deletes += count_retracts(batch.column(VALUE_KIND))


def simple_stats(stats: Sequence[ColumnStats], types: Sequence[DataType]) -> SimpleStats:
    return SimpleStats(
        min_values=serialize_binary_row([s.min for s in stats], types),
        max_values=serialize_binary_row([s.max for s in stats], types),
        null_counts=tuple(s.null_count for s in stats),
    )


@dataclass(slots=True)
class RollingFileWriter:
    file_io: FileIO
    paths: TablePaths
    bucket_dir: str
    file_format: FileFormat
    schema: pa.Schema
    schema_id: int
    stats_layout: StatsLayout
    target_file_size: int
    compression: str
    next_sequence_number: int = 0
    key_layout: KeyLayout | None = None  # set for primary-key tables
    level: int = 0
    file_source: FileSource = FileSource.APPEND
    format_options: dict[str, str] = field(default_factory=dict)
    changelog: bool = False  # names its files as changelog files (changelog-file.prefix)
    # The table's file indexes (``file-index.*``) and the column types they are built from; None: no index.
    file_index: FileIndexSpec | None = None
    file_index_fields: dict[str, DataType] = field(default_factory=dict)
    # ``data-file.external-paths``: new files go where this provider says (recorded as their external path).
    external_paths: ExternalPathProvider | None = None
    written: list[DataFileMeta] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)

    _writer: object | None = None
    _out: object | None = None
    _path: str | None = None
    _name: str | None = None
    _external: str | None = None
    _rows: int = 0
    _stats: list[ColumnStats] | None = None
    _min_seq: int = 0
    _keys: _KeyTracker | None = None
    _index: DataFileIndexWriter | None = None
    # Value-stats columns of the open file whose stats come from the file's own statistics (its footer), and
    # the stats modes of each batch (``none`` for those columns: not computed twice).
    _from_footer: tuple[int, ...] = ()
    _batch_modes: tuple[str | StatsMode, ...] = ()

    def write(self, table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows == 0:
                continue
            if self._writer is None:
                self._open()
            self._writer.write_batch(batch)  # type: ignore[attr-defined]
            self._rows += batch.num_rows
            if self._index is not None:
                self._index.write(batch)
            # Stats cover the layout's columns: the value columns of a kv file, the data columns of an append file
            # that also stores _ROW_ID / _SEQUENCE_NUMBER (a row-tracking compaction, as Java's stats evolution reads).
            whole = self.key_layout is None and batch.num_columns == len(self.stats_layout.names)
            values = batch if whole else batch.select(list(self.stats_layout.names))
            part = collect_stats(values, self._batch_modes)
            if self._keys is not None and self.key_layout is not None:
                self._keys.add(batch, self.key_layout)
            self._stats = part if self._stats is None else merge_stats(self._stats, part)
            if self._writer.bytes_written() >= self.target_file_size:  # type: ignore[attr-defined]
                self._close_current()

    def sibling(self) -> RollingFileWriter:
        """A fresh writer with this one's settings (same bucket, format, layouts), no file open, nothing written:
        it writes files of its own that :meth:`adopt` hands back to this writer."""
        settings = {f.name: getattr(self, f.name) for f in fields(self)
                    if not f.name.startswith("_") and f.name not in ("written", "written_paths")}
        return RollingFileWriter(**settings)

    def adopt(self, other: RollingFileWriter) -> None:
        """Take over the closed files of ``other`` (a sibling): they are returned, and aborted, with this
        writer's own."""
        assert other._writer is None, "adopt a closed sibling"
        self.written.extend(other.written)
        self.written_paths.extend(other.written_paths)
        other.written.clear()
        other.written_paths.clear()

    def close(self) -> list[DataFileMeta]:
        """Finish the open file; returns every file this writer produced."""
        if self._writer is not None:
            self._close_current()
        return list(self.written)

    def abort(self) -> None:
        """Delete every file this writer created (a failed or abandoned write leaves no trace)."""
        if self._writer is not None:
            try:
                self._writer.close()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - we are cleaning up after another failure
                pass
            self._writer = None
        if self._index is not None:
            self._index.abort()
            self._index = None
        if self._out is not None:
            try:
                # Closed on its own: a format writer that failed to close leaves its stream open.
                self._out.close()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - we are cleaning up after another failure
                pass
            self._out = None
        for p in self.written_paths:
            self.file_io.delete_quietly(p)  # a failing delete must not stop the cleanup (orphan cleanup gets it)
        self.written.clear()
        self.written_paths.clear()

    def _open(self) -> None:
        ext = self.file_format.extension
        self._name = self.paths.new_changelog_file_name(ext) if self.changelog else self.paths.new_data_file_name(ext)
        self._external = None if self.external_paths is None else self.external_paths.next_path(self._name)
        self._path = self._external or f"{self.bucket_dir}/{self._name}"
        self.written_paths.append(self._path)
        # Formats whose encoder is native write into a native stream where the file system has one: no Python
        # call per write (each took the GIL from the encoding threads).
        native = self.file_io.open_native_output(self._path) if self.file_format.takes_native_output else None
        self._out = native if native is not None else self.file_io.open_output(self._path)
        self._writer = self.file_format.open_writer(
            self._out, self.schema, compression=self.compression, options=self.format_options
        )
        self._rows = 0
        self._stats = None
        self._min_seq = self.next_sequence_number
        self._keys = _KeyTracker() if self.key_layout is not None else None
        spec = self.file_index
        self._index = None if spec is None or spec.empty else DataFileIndexWriter(spec, fields=self.file_index_fields)
        bounded = self._writer.bounded_columns()
        modes = [parse_stats_mode(m) for m in self.stats_layout.modes]
        self._from_footer = tuple(
            i for i, (name, mode) in enumerate(zip(self.stats_layout.names, modes, strict=True))
            if name in bounded and mode.kind in (StatsModeKind.FULL, StatsModeKind.TRUNCATE)
        )
        self._batch_modes = tuple(
            parse_stats_mode("none") if i in self._from_footer else m for i, m in enumerate(modes)
        )

    def _footer_stats(self, writer: object, computed: list[ColumnStats]) -> list[ColumnStats]:
        """``computed`` with the footer columns' stats filled in from the closed file's statistics."""
        bounds = writer.column_bounds()  # type: ignore[attr-defined]
        stats = list(computed)
        for i in self._from_footer:
            name = self.stats_layout.names[i]
            mode = parse_stats_mode(self.stats_layout.modes[i])
            b = bounds.get(name)
            if b is not None and b.complete:
                stats[i] = stats_from_bounds(b.min, b.max, b.null_count, mode)
            else:  # rare: values too long for the footer's statistics; read the column back
                stats[i] = self._stats_from_file(name, mode)
        return stats

    def _stats_from_file(self, name: str, mode: StatsMode) -> ColumnStats:
        assert self._path is not None
        with self.file_io.open_input(self._path) as stream:
            column = pa.Table.from_batches(list(self.file_format.read(stream, columns=[name])))
        return collect_stats(column, [mode])[0]

    def _close_current(self) -> None:
        assert self._writer is not None and self._path is not None and self._name is not None
        if self._index is not None:
            self._index.start_finish()  # serialized while the data file is encoded
        writer = self._writer
        writer.close()  # type: ignore[attr-defined]
        self._out.close()  # type: ignore[attr-defined]
        self._writer = None
        size = self.file_io.file_size(self._path)
        if self._stats is not None and self._from_footer:
            self._stats = self._footer_stats(writer, self._stats)
        placed = PlacedIndex()
        if self._index is not None:
            placed = self._index.finish(self.file_io, self._path, self._name)
            self._index = None
            if placed.sidecar_path is not None:
                self.written_paths.append(placed.sidecar_path)  # an abort deletes it with its data file
        cols, value_stats = self.stats_layout.value_stats(self._stats or [])
        min_key = max_key = EMPTY_ROW_BYTES
        key_stats = SimpleStats.empty()
        deletes = 0
        if self._keys is not None and self.key_layout is not None:
            k, kl = self._keys, self.key_layout
            min_key = serialize_binary_row(list(k.min_key or ()), kl.types)
            max_key = serialize_binary_row(list(k.max_key or ()), kl.types)
            key_stats = simple_stats(k.stats or [], kl.types)
            min_seq, max_seq, deletes = k.min_seq or 0, k.max_seq or 0, k.deletes
        else:
            # Append rows are numbered in arrival order within the bucket.
            min_seq, max_seq = self._min_seq, self._min_seq + self._rows - 1
            self.next_sequence_number = max_seq + 1
        self.written.append(
            DataFileMeta(
                file_name=self._name,
                file_size=size,
                row_count=self._rows,
                min_key=min_key,
                max_key=max_key,
                key_stats=key_stats,
                value_stats=value_stats,
                min_sequence_number=min_seq,
                max_sequence_number=max_seq,
                schema_id=self.schema_id,
                level=self.level,
                extra_files=placed.extra_files,
                creation_time_ms=_local_now_ms(),
                delete_row_count=deletes,
                embedded_index=placed.embedded,
                file_source=self.file_source,
                value_stats_cols=cols,
                external_path=self._external,
            )
        )


def _local_now_ms() -> int:
    # Java stores LocalDateTime.now() (wall clock of the writer's zone) as TIMESTAMP(3).
    return int((time.time() + time.localtime().tm_gmtoff) * 1000)
