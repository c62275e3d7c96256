"""Merging a section's sorted runs in bounded memory: many runs are spilled, every step is a bounded key range.

An open data-file reader costs memory whatever its batch size (Parquet holds each column's dictionary and
current page, ORC its stripe), so a merge of N runs read straight from their files holds N of those. As in
Paimon's MergeSorter, only some runs (the biggest) are read straight from their files: at most
``sort-spill-threshold`` of them, and - laketide's addition - only as many as fit in half of
``sort-spill-buffer-size`` (at least two). The smaller others are first copied, one at a time, to a local spill
file (compressed Arrow IPC in small batches) and merged from there, where holding a run costs one small batch
(together an eighth of the budget). The streaming merge takes key-range chunks of at most an eighth of the
budget per step (see :func:`merge_streams`); sorting and reducing a chunk needs a few copies of it.

Spill files live in a private directory under the system's temporary directory (``TMPDIR``) and are removed when
the merge ends, fails or is abandoned.

Paimon: mergetree.MergeSorter, disk.IOManager
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from laketide.mergetree.merge import MergeFunction, merge_streams
from laketide.options import CoreOptions

__all__ = ["RunSource", "SortMergeSettings", "merge_sorted_runs", "reader_memory"]

# Rows per batch when a run is read straight from its files (what reads used before): fewer, bigger merge steps
# are cheaper, and the runs read directly are few.
DIRECT_BATCH_ROWS = 65_536
_MIN_SPILL_BATCH_ROWS = 256
_SPILL_COMPRESSION = "lz4"  # cheaper than zstd to write and read back; a spill file lives seconds
# What an open reader holds per column: a decompressed page and a dictionary of up to 1 MiB each (Parquet's
# defaults, in Java's files too), plus the read buffer.
_READER_BYTES_PER_COLUMN = 2 << 20


def reader_memory(file_sizes: Sequence[int], *, columns: int) -> int:
    """Estimated bytes an open reader of a run holds: a page and a dictionary per column, less for small files."""
    return min(2 * max(file_sizes, default=0), max(columns, 1) * _READER_BYTES_PER_COLUMN)


@dataclass(frozen=True, slots=True, kw_only=True)
class SortMergeSettings:
    """How much a merge may hold: ``sort-spill-threshold`` runs read directly, ``sort-spill-buffer-size`` bytes."""

    spill_threshold: int
    buffer_size: int

    @staticmethod
    def from_options(options: CoreOptions) -> SortMergeSettings:
        return SortMergeSettings(spill_threshold=options.sort_spill_threshold,
                                 buffer_size=options.sort_spill_buffer_size)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSource:
    """A sorted run to merge: its size on disk, what reading it holds, how to read it (batch rows -> rows)."""

    size: int
    memory: int  # see reader_memory
    read: Callable[[int], Iterator[pa.Table]]


def _direct_count(runs: Sequence[RunSource], settings: SortMergeSettings) -> int:
    """How many of ``runs`` (biggest first) are read straight from their files."""
    budget = settings.buffer_size // 2
    count, held = 0, 0
    for run in runs:
        if count >= 2 and (count >= settings.spill_threshold or held + run.memory > budget):
            break
        count += 1
        held += run.memory
    return count


def merge_sorted_runs(
    runs: Sequence[RunSource], merge: MergeFunction, *, settings: SortMergeSettings
) -> Iterator[pa.Table]:
    """Merge ``runs`` (one section: their key ranges overlap) into key-sorted tables with one row per key."""
    if len(runs) <= 1:
        yield from merge_streams([r.read(DIRECT_BATCH_ROWS) for r in runs], merge)
        return
    by_size = sorted(runs, key=lambda r: r.size, reverse=True)
    direct = _direct_count(by_size, settings)
    spilled = by_size[direct:]
    spill_dir = tempfile.mkdtemp(prefix="laketide-spill-") if spilled else None
    try:
        streams = [r.read(DIRECT_BATCH_ROWS) for r in by_size[:direct]]
        if spill_dir is not None:
            batch_bytes = max(1, settings.buffer_size // 8 // len(spilled))
            paths = [_spill(r, os.path.join(spill_dir, f"run-{i}.arrows"), batch_bytes=batch_bytes)
                     for i, r in enumerate(spilled)]
            streams += [_read_spilled(p) for p in paths if p is not None]
        yield from merge_streams(streams, merge, max_bytes=settings.buffer_size // 8)
    finally:
        if spill_dir is not None:
            shutil.rmtree(spill_dir, ignore_errors=True)


def _spill(run: RunSource, path: str, *, batch_bytes: int) -> str | None:
    """Copy ``run`` to a compressed Arrow IPC stream file in batches of about ``batch_bytes``; None if empty."""
    options = pa.ipc.IpcWriteOptions(compression=_SPILL_COMPRESSION)
    with pa.OSFile(path, "wb") as sink:
        writer: pa.ipc.RecordBatchStreamWriter | None = None
        try:
            for table in run.read(DIRECT_BATCH_ROWS):
                if table.num_rows == 0:
                    continue
                if writer is None:
                    writer = pa.ipc.new_stream(sink, table.schema, options=options)
                rows = max(_MIN_SPILL_BATCH_ROWS, batch_bytes * table.num_rows // max(table.nbytes, 1))
                writer.write_table(table, max_chunksize=rows)
        finally:
            if writer is not None:
                writer.close()
    return path if writer is not None else None


def _read_spilled(path: str) -> Iterator[pa.Table]:
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_stream(source)
        for batch in reader:
            yield pa.Table.from_batches([batch])
