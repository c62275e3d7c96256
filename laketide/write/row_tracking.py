"""Row ids and sequence numbers of new files in a row-tracking table, assigned at commit.

Writers leave ``first_row_id`` unset; each commit attempt gives the new APPEND files of its delta consecutive row-id
ranges from the latest snapshot's ``nextRowId`` (in delta order) and stamps them with the new snapshot's id as
sequence number, so a retry against a newer snapshot assigns again and ids never overlap. Deleted entries and files
that already carry a row id keep it: a partial-column file of a data-evolution update (``first_row_id`` of the range
it updates, sequence numbers 0 so that the commit stamps them) or a compaction's output (``_ROW_ID`` stored in the
file, listed in ``write_cols``; sequence numbers of its rows kept).

Paimon: operation.commit.RowTrackingCommitUtils (assignSnapshotId, assignRowTrackingMeta)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from laketide.exceptions import CorruptMetadataError
from laketide.format.blob import is_blob_file
from laketide.meta.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry
from laketide.scan.row_tracking import ROW_ID

__all__ = ["assign_row_tracking"]


def _stamp_sequence(f: DataFileMeta, snapshot_id: int) -> DataFileMeta:
    # Java's assignSnapshotId: min 0 -> a new file (every row of this snapshot); max 0 -> some rows new; else kept.
    if f.min_sequence_number == 0:
        return replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
    if f.max_sequence_number == 0:
        return replace(f, max_sequence_number=snapshot_id)
    return f


def assign_row_tracking(
    delta: Sequence[ManifestEntry], *, snapshot_id: int, next_row_id: int
) -> tuple[list[ManifestEntry], int]:
    """``delta`` with row ids and sequence numbers assigned; and the snapshot's new ``nextRowId``."""
    out = []
    start = next_row_id
    # A data file's .blob files follow it in the delta and take its row ids, per BLOB column (blobStarts).
    blob_default = start
    blob_starts: dict[str, int] = {}
    for e in delta:
        f = e.file
        if e.kind is FileKind.ADD:
            stores_row_id = f.write_cols is not None and ROW_ID in f.write_cols
            if f.file_source is FileSource.APPEND and f.first_row_id is None and not stores_row_id:
                # laketide's append writer numbers rows from its bucket's restored sequence: a new file's rows
                # all belong to this snapshot (Java's writer leaves 0 for the same effect).
                if is_blob_file(f.file_name):
                    column = (f.write_cols or ("",))[0]
                    first = blob_starts.get(column, blob_default)
                    if first >= start:
                        raise CorruptMetadataError(
                            f"Blob file {f.file_name} of column {column} has no data file before it in the commit "
                            f"to take row ids from", path=f.file_name)
                    blob_starts[column] = first + f.row_count
                else:
                    first = blob_default = start
                    blob_starts.clear()
                    start += f.row_count
                f = replace(f, first_row_id=first, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
            elif f.file_source is FileSource.APPEND:
                f = _stamp_sequence(f, snapshot_id)
            e = replace(e, file=f)
        out.append(e)
    return out, start
