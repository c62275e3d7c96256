"""Row ids and sequence numbers of new files in a row-tracking table, assigned at commit.

Writers leave ``first_row_id`` unset; each commit attempt gives the new APPEND files of its delta consecutive row-id
ranges from the latest snapshot's ``nextRowId`` (in delta order) and stamps them with the new snapshot's id as
sequence number, so a retry against a newer snapshot assigns again and ids never overlap. Deleted entries and files
that already carry a row id (a compaction's output) keep theirs.

Paimon: operation.commit.RowTrackingCommitUtils (assignSnapshotId, assignRowTrackingMeta)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from laketide.meta.manifest import FileKind, FileSource, ManifestEntry

__all__ = ["assign_row_tracking"]


def assign_row_tracking(
    delta: Sequence[ManifestEntry], *, snapshot_id: int, next_row_id: int
) -> tuple[list[ManifestEntry], int]:
    """``delta`` with row ids and sequence numbers assigned; and the snapshot's new ``nextRowId``."""
    out = []
    start = next_row_id
    for e in delta:
        f = e.file
        if e.kind is FileKind.ADD and f.file_source is FileSource.APPEND and f.first_row_id is None:
            f = replace(f, first_row_id=start, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
            start += f.row_count
            e = replace(e, file=f)
        out.append(e)
    return out, start
