"""Writing the rows of one (partition, bucket) into data files that roll at ``target-file-size``.

Paimon: io.RollingFileWriter, io.RowDataFileWriter (append tables), stats.SimpleStatsConverter
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from laketide.format import FileFormat
from laketide.format.stats import ColumnStats, collect_stats, merge_stats
from laketide.fs import FileIO
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.manifest import EMPTY_ROW_BYTES, DataFileMeta, FileSource, SimpleStats
from laketide.meta.paths import TablePaths
from laketide.types import DataType

__all__ = ["StatsLayout", "RollingFileWriter", "simple_stats"]


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
    format_options: dict[str, str] = field(default_factory=dict)
    written: list[DataFileMeta] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)

    _writer: object | None = None
    _out: object | None = None
    _path: str | None = None
    _name: str | None = None
    _rows: int = 0
    _stats: list[ColumnStats] | None = None
    _min_seq: int = 0

    def write(self, table: pa.Table) -> None:
        for batch in table.to_batches():
            if batch.num_rows == 0:
                continue
            if self._writer is None:
                self._open()
            self._writer.write_batch(batch)  # type: ignore[attr-defined]
            self._rows += batch.num_rows
            part = collect_stats(batch, self.stats_layout.modes)
            self._stats = part if self._stats is None else merge_stats(self._stats, part)
            if self._writer.bytes_written() >= self.target_file_size:  # type: ignore[attr-defined]
                self._close_current()

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
                self._out.close()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - we are cleaning up after another failure
                pass
            self._writer = None
        for p in self.written_paths:
            self.file_io.delete(p)
        self.written.clear()
        self.written_paths.clear()

    def _open(self) -> None:
        self._name = self.paths.new_data_file_name(self.file_format.extension)
        self._path = f"{self.bucket_dir}/{self._name}"
        self.written_paths.append(self._path)
        self._out = self.file_io.open_output(self._path)
        self._writer = self.file_format.open_writer(
            self._out, self.schema, compression=self.compression, options=self.format_options
        )
        self._rows = 0
        self._stats = None
        self._min_seq = self.next_sequence_number

    def _close_current(self) -> None:
        assert self._writer is not None and self._path is not None and self._name is not None
        self._writer.close()  # type: ignore[attr-defined]
        self._out.close()  # type: ignore[attr-defined]
        self._writer = None
        size = self.file_io.file_size(self._path)
        layout = self.stats_layout
        cols, keep = layout.dense()
        stats = self._stats or []
        value_stats = simple_stats([stats[i] for i in keep], [layout.types[i] for i in keep])
        max_seq = self._min_seq + self._rows - 1
        self.next_sequence_number = max_seq + 1
        self.written.append(
            DataFileMeta(
                file_name=self._name,
                file_size=size,
                row_count=self._rows,
                min_key=EMPTY_ROW_BYTES,
                max_key=EMPTY_ROW_BYTES,
                key_stats=SimpleStats.empty(),
                value_stats=value_stats,
                min_sequence_number=self._min_seq,
                max_sequence_number=max_seq,
                schema_id=self.schema_id,
                level=0,
                extra_files=(),
                creation_time_ms=_local_now_ms(),
                delete_row_count=0,
                embedded_index=None,
                file_source=FileSource.APPEND,
                value_stats_cols=cols,
            )
        )


def _local_now_ms() -> int:
    # Java stores LocalDateTime.now() (wall clock of the writer's zone) as TIMESTAMP(3).
    return int((time.time() + time.localtime().tm_gmtoff) * 1000)
