"""Row tracking and data evolution on read (``row-tracking.enabled`` / ``data-evolution.enabled`` append tables).

Row tracking gives every row a stable ``_ROW_ID``: the file's ``first_row_id`` plus the row's position in the file,
and a ``_SEQUENCE_NUMBER``: the file's max sequence number (the commit that wrote it). Data evolution writes new
values of some columns as files holding only those columns (``write_cols``) over the same row-id range as the
original file; a read stitches the files of one range together: each column comes from the newest file
(highest max sequence number) that holds it, a column no file holds is null.

Paimon: io.DataFileRecordReader (assignRowTracking), table.SpecialFields, operation.DataEvolutionSplitRead
(mergeRangesAndSort, createUnionReader)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from laketide.exceptions import CorruptMetadataError
from laketide.format.blob import is_blob_file
from laketide.meta.manifest import DataFileMeta

__all__ = ["ROW_ID", "ROW_SEQUENCE_NUMBER", "TRACKING_FIELDS", "group_by_row_id", "tracking_columns"]

ROW_ID = "_ROW_ID"
ROW_SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
# SpecialFields.ROW_ID / SEQUENCE_NUMBER (ids Integer.MAX_VALUE - 5 / - 1); BIGINT NOT NULL in Java's row type.
TRACKING_FIELDS = (pa.field(ROW_ID, pa.int64()), pa.field(ROW_SEQUENCE_NUMBER, pa.int64()))


def tracking_columns(meta: DataFileMeta, positions: np.ndarray, names: Sequence[str]) -> list[pa.Array]:
    """``names`` (of ``_ROW_ID`` / ``_SEQUENCE_NUMBER``) for the rows at ``positions`` of ``meta``'s file."""
    out = []
    for name in names:
        if name == ROW_ID:
            out.append(pa.nulls(len(positions), pa.int64()) if meta.first_row_id is None
                       else pa.array(positions + meta.first_row_id, pa.int64()))
        else:
            out.append(pa.array(np.full(len(positions), meta.max_sequence_number, dtype=np.int64)))
    return out


def _row_range(f: DataFileMeta, path: str) -> tuple[int, int]:
    if f.first_row_id is None:
        raise CorruptMetadataError(
            f"Data file {path} of a data-evolution table has no first_row_id; its rows cannot be stitched",
            path=path)
    return f.first_row_id, f.first_row_id + f.row_count - 1


def group_by_row_id(files: Sequence[DataFileMeta], paths: Sequence[str]) -> list[list[tuple[DataFileMeta, str]]]:
    """Files whose row-id ranges overlap, grouped and ordered by range; in a group, the data files newest (max
    sequence) first, then the ``.blob`` files by first row id, newest first.

    Every data file of a group must cover the same range (Java checks the same): a partial-column file always
    rewrites a whole file's range. Blob files roll by size, so several may cover one data file's range.
    """
    items = sorted(zip(files, paths), key=lambda fp: _row_range(fp[0], fp[1]))
    groups: list[list[tuple[DataFileMeta, str]]] = []
    end = -1
    for f, p in items:
        lo, hi = _row_range(f, p)
        if groups and lo <= end:
            groups[-1].append((f, p))
            end = max(end, hi)
        else:
            groups.append([(f, p)])
            end = hi
    for g in groups:
        g.sort(key=lambda fp: (is_blob_file(fp[0].file_name),
                               fp[0].first_row_id if is_blob_file(fp[0].file_name) else 0,
                               -fp[0].max_sequence_number))
        ranges = {_row_range(f, p) for f, p in g if not is_blob_file(f.file_name)}
        if len(ranges) > 1:
            raise CorruptMetadataError(
                f"Data files {[p for _, p in g]} overlap in row ids but do not cover the same range {sorted(ranges)}",
                path=g[0][1])
    return groups
