"""Rollback: make an earlier snapshot (or a tagged one) the table's latest again.

Snapshots newer than the target are deleted newest first, after the LATEST hint moved to the target, and so are
tags pointing past it. A rollback killed at any point leaves a readable table and finishes when run again. Their
data files and manifests are left to ``remove_orphan_files`` (as in Java): a reader still planning against a
removed snapshot keeps working until the orphan threshold passes. Stop the table's writers first — a commit racing
the rollback could publish on top of a snapshot being removed.

Paimon: table.RollbackHelper, AbstractFileStoreTable#rollbackTo
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError, NoSuchSnapshotError
from laketide.meta.snapshot import Snapshot
from laketide.table.expire import list_tags

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = ["rollback_to", "rollback_to_snapshot"]


def rollback_to(store: FileStore, target: int | str) -> Snapshot:
    """Roll back to snapshot id ``target`` or to the tag named ``target``; returns the snapshot now latest.

    A snapshot id that has expired but is still tagged is restored from its tag (as Java does).
    """
    sm = store.snapshot_manager
    if isinstance(target, str):
        return rollback_to_snapshot(store, store.tag_snapshot(target))
    snapshot = sm.try_snapshot(target)
    if snapshot is None:
        tagged = next((t for t in list_tags(store) if t.id == target), None)
        if tagged is None:
            raise NoSuchSnapshotError(
                f"Cannot roll back table {store.table_name} to snapshot {target}: it does not exist (expired or never "
                f"committed) and no tag holds it"
            )
        snapshot = tagged
    return rollback_to_snapshot(store, snapshot)


def rollback_to_snapshot(store: FileStore, snapshot: Snapshot) -> Snapshot:
    """Delete everything newer than ``snapshot``; the hook tags use (a tag file holds its snapshot's JSON).

    Every step leaves a readable table, so a rollback killed half-way is finished by running it again: an
    expired (tagged) target is written back first, then LATEST moves to it, then newer snapshots go newest first
    (the listed ones stay contiguous above the target), then newer tags.
    """
    sm = store.snapshot_manager
    if not sm.snapshot_exists(snapshot.id):
        # Expired but tagged: the tag's snapshot becomes the only one (Paimon: createSnapshotFileIfNeeded);
        # tag-only fields (creation time, time retained) are not part of a snapshot. Written before anything is
        # removed, so the table is never without a snapshot.
        plain = replace(snapshot, extra={})
        sm.file_io.write_bytes(sm.snapshot_path(snapshot.id), plain.to_json().encode(), overwrite=True)
    sm.commit_latest_hint(snapshot.id)
    for sid in sorted((i for i in sm.snapshot_ids() if i > snapshot.id), reverse=True):
        sm.delete_snapshot(sid)
    for st in store.file_io.list_status(store.path_factory.tag_dir):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        tagged = _tagged_id(store, st.path) if name.startswith("tag-") and not st.is_dir else None
        if tagged is not None and tagged > snapshot.id:
            store.deleter.delete(st.path)
    earliest = min(sm.snapshot_ids(), default=snapshot.id)
    if sm.earliest_snapshot_id() != earliest or sm.earliest_hint_missing():
        sm.commit_earliest_hint(earliest)
    sm.forget_users()
    return snapshot


def _tagged_id(store: FileStore, path: str) -> int | None:
    try:
        return Snapshot.from_json(store.file_io.read_bytes(path), path=path).id
    except (CorruptMetadataError, FileIOError):  # an unreadable tag is not ours to judge
        return None
