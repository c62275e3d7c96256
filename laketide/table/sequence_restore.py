"""Each bucket's highest sequence number, carried from one snapshot to the next instead of re-planned per write.

A writer continues every bucket's sequence numbers after the highest one among the bucket's live files. Planning
the live files reads every manifest of the table: on a table with a long history that is the cost of each
write (and ~40 requests on an object store). The table keeps the answer of its last restore and, at the next
write, replays only the delta manifests of the snapshots committed since: a delta that only adds files raises
the maxima; anything else (a delete or compaction that removed files, an expired snapshot in the gap, a snapshot
that is not the one the maxima were computed at, e.g. after a rollback) falls back to planning the live files,
so the answer is always exactly what a full restore would give.

Paimon: AbstractFileStoreWrite#scanExistingFileMetas (restore) — Java re-plans per writer; this is a cache of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError
from laketide.meta.manifest import FileKind, ManifestEntry
from laketide.meta.snapshot import Snapshot
from laketide.scan.file_scan import max_sequence_per_bucket

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["SequenceCache"]

# Beyond this many snapshots since the cached one, planning the live files is not slower than replaying deltas.
_MAX_REPLAY = 64


@dataclass(frozen=True, slots=True)
class _At:
    snapshot_id: int
    base_manifest_list: str  # tells a snapshot apart from another one that got the same id after a rollback


class SequenceCache:
    """The highest sequence number of every (partition, bucket) at one snapshot of one table."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: _At | None = None
        self._highest: dict[tuple[bytes, int], int] = {}

    def restorer(self, table: Table) -> Callable[[bytes, int], int | None]:
        """A writer's ``restore_sequence``: the maxima at the latest snapshot, computed at its first call."""
        highest: dict[tuple[bytes, int], int] | None = None

        def restore(partition: bytes, bucket: int) -> int | None:
            nonlocal highest
            if highest is None:
                latest = table.snapshot_manager.latest_snapshot()
                highest = self.at(table, latest) if latest is not None else {}
            return highest.get((partition, bucket))

        return restore

    def at(self, table: Table, latest: Snapshot) -> dict[tuple[bytes, int], int]:
        """The maxima at ``latest`` (a copy the caller may keep)."""
        with self._lock:
            replayed = self._replay(table, latest) if self._at is not None else None
            if replayed is None:
                replayed = max_sequence_per_bucket(table.plan_to_restore(latest))
            self._at = _At(latest.id, latest.base_manifest_list)
            self._highest = replayed
            return dict(replayed)

    def _replay(self, table: Table, latest: Snapshot) -> dict[tuple[bytes, int], int] | None:
        """The cached maxima moved forward to ``latest`` through the deltas in between; None if it cannot be."""
        at = self._at
        assert at is not None
        if latest.id < at.snapshot_id or latest.id - at.snapshot_id > _MAX_REPLAY:
            return None
        sm = table.snapshot_manager
        cached = latest if latest.id == at.snapshot_id else sm.try_snapshot(at.snapshot_id)
        if cached is None or cached.base_manifest_list != at.base_manifest_list:
            return None
        highest = dict(self._highest)
        scan = table.file_scan()
        try:
            for sid in range(at.snapshot_id + 1, latest.id + 1):
                s = latest if sid == latest.id else sm.try_snapshot(sid)
                if s is None:
                    return None  # expired in the gap: its delta is gone
                added: list[ManifestEntry] = []
                for m in scan.manifest_list(s.delta_manifest_list, s.delta_manifest_list_size):
                    if m.num_deleted_files:
                        return None  # files left the table: a bucket's maximum may have dropped
                    added += scan.manifest(m.file_name, m.file_size)
                if any(e.kind is not FileKind.ADD for e in added):
                    return None
                for key, seq in max_sequence_per_bucket(added).items():
                    if seq > highest.get(key, seq - 1):
                        highest[key] = seq
        except (FileIOError, CorruptMetadataError):
            return None  # a manifest expired under us: plan the live files instead
        return highest
