"""Who else holds a table's files: the branches (they share data files and manifests with the main branch), and
the clean-up of a snapshot's files nothing else holds (a deleted tag of an expired snapshot, a deleted branch).

A branch created from a tag starts with a copy of that snapshot; its later snapshots hold files it wrote itself or
inherited from that start. Expiration and tag deletion on any branch therefore keep every file a branch's
snapshots or tags reference.

Paimon: TagManager#doClean, TagDeletion, BranchManager
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError
from laketide.meta.paths import MAIN_BRANCH, FileStorePathFactory
from laketide.meta.snapshot import Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.table.expire import TablePathResolver, _live_data_paths, _metadata_names, _unused_metadata

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = ["BRANCH_PREFIX", "branch_names", "branch_snapshots", "clean_unused_files", "other_branch_snapshots"]

BRANCH_PREFIX = "branch-"
_READ_ERRORS = (FileIOError, CorruptMetadataError)


def branch_names(store: FileStore) -> list[str]:
    """The table's branches other than main (``branch/branch-<name>`` directories)."""
    out = []
    for st in store.file_io.list_status(f"{store.path_factory.table_path}/branch"):
        base = st.path.rstrip("/").rsplit("/", 1)[-1]
        if st.is_dir and base.startswith(BRANCH_PREFIX):
            out.append(base[len(BRANCH_PREFIX):])
    return sorted(out)


def branch_snapshots(store: FileStore, branch: str, *, all_snapshots: bool) -> list[Snapshot]:
    """The snapshots ``branch`` holds files through: its tags and its earliest snapshot (every snapshot when
    ``all_snapshots``)."""
    paths = FileStorePathFactory(store.path_factory.table_path, branch=branch)
    sm = SnapshotManager(store.file_io, store.path_factory.table_path, snapshot_dir=paths.snapshot_dir)
    out: list[Snapshot] = []
    if all_snapshots:
        out.extend(sm.snapshots())
    else:
        earliest = sm.earliest_snapshot_id()
        s = None if earliest is None else sm.try_snapshot(earliest)
        if s is not None:
            out.append(s)
    for st in store.file_io.list_status(paths.tag_dir):
        base = st.path.rstrip("/").rsplit("/", 1)[-1]
        if st.is_dir or not base.startswith("tag-"):
            continue
        try:
            out.append(Snapshot.from_json(store.file_io.read_bytes(st.path), path=st.path))
        except _READ_ERRORS:
            continue
    return out


def other_branch_snapshots(store: FileStore, *, all_snapshots: bool = False) -> list[Snapshot]:
    """The holding snapshots (see ``branch_snapshots``) of every branch but ``store``'s, main included."""
    out: list[Snapshot] = []
    for branch in [MAIN_BRANCH, *branch_names(store)]:
        if branch != store.branch:
            out.extend(branch_snapshots(store, branch, all_snapshots=all_snapshots or branch == MAIN_BRANCH))
    return out


def clean_unused_files(store: FileStore, gone: Snapshot, keep: list[Snapshot]) -> None:
    """Delete the data files and metadata of ``gone`` that neither ``keep`` nor any other branch uses. Reads that
    fail skip that part (never delete on a guess)."""
    scan = store.new_scan()
    assert scan.path_factory is not None
    paths = TablePathResolver(scan.path_factory)
    holders = [*keep, *other_branch_snapshots(store)]
    doomed = _live_data_paths(scan, paths, gone)
    if doomed is None:
        return
    skipping: set[str] = set()
    for s in holders:
        held = _live_data_paths(scan, paths, s)
        if held is None:
            return
        doomed -= held
        try:
            skipping |= _metadata_names(scan, s)
        except _READ_ERRORS:
            return
    store.deleter.delete_all(sorted(doomed))
    store.deleter.delete_all(list(_unused_metadata(scan, paths, gone, skipping)))
