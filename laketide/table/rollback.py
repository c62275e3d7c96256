"""Rollback: make an earlier snapshot (or a tagged one) the table's latest again.

Snapshots newer than the target are deleted newest first, after the LATEST hint moved to the target, and so are
tags pointing past it. Their data files and manifests are left to ``remove_orphan_files`` (as in Java): a reader
still planning against a removed snapshot keeps working until the orphan threshold passes. Stop the table's
writers first — a commit racing the rollback could publish on top of a snapshot being removed.

Paimon: table.RollbackHelper, AbstractFileStoreTable#rollbackTo
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from laketide.exceptions import NoSuchSnapshotError
from laketide.meta.snapshot import Snapshot
from laketide.table.expire import list_tags

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["rollback_to", "rollback_to_snapshot"]


def rollback_to(table: Table, target: int | str) -> Snapshot:
    """Roll back to snapshot id ``target`` or to the tag named ``target``; returns the snapshot now latest.

    A snapshot id that has expired but is still tagged is restored from its tag (as Java does).
    """
    sm = table.snapshot_manager
    if isinstance(target, str):
        return rollback_to_snapshot(table, table.tag_snapshot(target))
    snapshot = sm.try_snapshot(target)
    if snapshot is None:
        tagged = next((t for t in list_tags(table) if t.id == target), None)
        if tagged is None:
            raise NoSuchSnapshotError(
                f"Cannot roll back table {table.name} to snapshot {target}: it does not exist (expired or never "
                f"committed) and no tag holds it"
            )
        snapshot = tagged
    return rollback_to_snapshot(table, snapshot)


def rollback_to_snapshot(table: Table, snapshot: Snapshot) -> Snapshot:
    """Delete everything newer than ``snapshot``; the hook tags use (a tag file holds its snapshot's JSON)."""
    sm = table.snapshot_manager
    latest = sm.latest_snapshot_id()
    earliest = sm.earliest_snapshot_id()
    sm.commit_latest_hint(snapshot.id)
    if latest is not None:
        start = max(earliest or 1, snapshot.id + 1)
        for sid in range(latest, start - 1, -1):
            sm.delete_snapshot(sid)
    for st in table.file_io.list_status(f"{table.path}/tag"):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        tagged = _tagged_id(table, st.path) if name.startswith("tag-") and not st.is_dir else None
        if tagged is not None and tagged > snapshot.id:
            table.file_io.delete_quietly(st.path)
    if not sm.snapshot_exists(snapshot.id):
        # Expired but tagged: the tag's snapshot becomes the only one (Paimon: createSnapshotFileIfNeeded);
        # tag-only fields (creation time, time retained) are not part of a snapshot.
        plain = replace(snapshot, extra={})
        sm.file_io.write_bytes(sm.snapshot_path(snapshot.id), plain.to_json().encode(), overwrite=True)
        sm.commit_earliest_hint(snapshot.id)
        sm.commit_latest_hint(snapshot.id)
    sm.forget_users()
    return snapshot


def _tagged_id(table: Table, path: str) -> int | None:
    try:
        return Snapshot.from_json(table.file_io.read_bytes(path), path=path).id
    except Exception:  # noqa: BLE001 - an unreadable tag is not ours to judge
        return None
