"""Compaction of row-tracking tables that keeps every row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER``.

Java compacts an unaware-bucket append table with row tracking by reading each file with both columns and writing
them into the new file (``withWriteType(SpecialFields.rowTypeWithRowTracking)``): ``write_cols`` lists the data
columns and then ``_ROW_ID`` / ``_SEQUENCE_NUMBER``, the file has no ``first_row_id`` (the commit assigns none, the
ids are in the file), its sequence range is the min / max of the stored sequence numbers, and value stats cover the
data columns (Java's stats evolution projects a file's stats to the data columns of ``write_cols``). A read takes the
stored values (scan/split_read.py), so ids and sequence numbers survive any number of compactions.

Paimon: AppendOnlyFileStore#newWrite (readForCompact with row tracking), AppendTableCompactor,
io.RowDataFileSequenceNumberTracker, stats.SimpleStatsEvolutions#getOrCreate
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa

from laketide.io.file_writer import RollingFileWriter
from laketide.meta.manifest import DataFileMeta
from laketide.scan.row_tracking import ROW_ID, ROW_SEQUENCE_NUMBER, TRACKING_FIELDS

__all__ = ["TRACKED_COLUMNS", "tracked_writer", "stamp_tracked_files"]

TRACKED_COLUMNS = (ROW_ID, ROW_SEQUENCE_NUMBER)


def tracked_writer(writer: RollingFileWriter) -> RollingFileWriter:
    """``writer`` writing the data columns followed by ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (stats: data only)."""
    return replace(writer, schema=pa.schema(list(writer.schema) + list(TRACKING_FIELDS)), written=[],
                   written_paths=[])


def stamp_tracked_files(files: Sequence[DataFileMeta], sequences: Sequence[pa.Array],
                        names: Sequence[str]) -> list[DataFileMeta]:
    """The written files with Java's metadata: ``write_cols``, no ``first_row_id``, the sequence range of the
    rows each file holds (``sequences``: the written rows' sequence numbers in write order)."""
    seq = (np.concatenate([np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.int64) for a in sequences])
           if sequences else np.empty(0, dtype=np.int64))
    out = []
    start = 0
    for f in files:
        part = seq[start:start + f.row_count]
        start += f.row_count
        lo, hi = (int(part.min()), int(part.max())) if len(part) else (0, 0)
        out.append(replace(f, first_row_id=None, min_sequence_number=lo, max_sequence_number=hi,
                           write_cols=(*names, *TRACKED_COLUMNS)))
    return out
