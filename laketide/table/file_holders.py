"""Who else holds a table's files: the branches (they share data files and manifests with the main branch), and
the clean-up of a snapshot's files nothing else holds (a deleted tag of an expired snapshot).

A branch created from a tag starts with a copy of that snapshot; its later snapshots hold files it wrote itself or
inherited from that start. Expiration and tag deletion on any branch therefore keep every file another branch's
snapshots or tags reference. Main's later snapshots may hold a branch's files (after a fast-forward), so all of
main's snapshots count; another branch is represented by its earliest snapshot, the deltas after it and its tags.

Paimon: TagManager#doClean, TagDeletion, BranchManager
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError
from laketide.meta.manifest import FileKind
from laketide.meta.paths import MAIN_BRANCH, FileStorePathFactory
from laketide.meta.snapshot import Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.table.expire import TablePathResolver, _live_data_paths, _metadata_names, _unused_metadata

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = [
    "BRANCH_PREFIX", "HeldElsewhere", "branch_names", "branch_snapshots", "clean_unused_files",
    "held_by_other_branches", "other_branch_snapshots",
]

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


def branch_snapshots(store: FileStore, branch: str, *, all_snapshots: bool) -> tuple[list[Snapshot], list[Snapshot]]:
    """(snapshots, tags) of ``branch``: every snapshot oldest first (only the earliest unless ``all_snapshots``)
    and the snapshots its tags hold."""
    paths = FileStorePathFactory(store.path_factory.table_path, branch=branch)
    sm = SnapshotManager(store.file_io, store.path_factory.table_path, snapshot_dir=paths.snapshot_dir)
    snapshots: list[Snapshot] = []
    if all_snapshots:
        snapshots.extend(sm.snapshots())
    else:
        earliest = sm.earliest_snapshot_id()
        s = None if earliest is None else sm.try_snapshot(earliest)
        if s is not None:
            snapshots.append(s)
    tags: list[Snapshot] = []
    for st in store.file_io.list_status(paths.tag_dir):
        base = st.path.rstrip("/").rsplit("/", 1)[-1]
        if st.is_dir or not base.startswith("tag-"):
            continue
        try:
            tags.append(Snapshot.from_json(store.file_io.read_bytes(st.path), path=st.path))
        except _READ_ERRORS:
            continue
    return snapshots, tags


def other_branch_snapshots(store: FileStore) -> list[Snapshot]:
    """Every snapshot and tag of every branch but ``store``'s, main included (orphan clean-up reads them all)."""
    out: list[Snapshot] = []
    for branch in [MAIN_BRANCH, *branch_names(store)]:
        if branch != store.branch:
            snapshots, tags = branch_snapshots(store, branch, all_snapshots=True)
            out.extend(snapshots)
            out.extend(tags)
    return out


@dataclass(frozen=True, slots=True)
class HeldElsewhere:
    """What the other branches still reference: data file paths and metadata file names."""

    data: set[str]
    metadata: set[str]


def held_by_other_branches(store: FileStore) -> HeldElsewhere | None:
    """Every data file and metadata file the other branches' snapshots and tags reference; None when some of it
    could not be read (then nothing may be deleted on a guess).

    The files of a run of snapshots are the live files of the first plus what the deltas of the others added (a
    deleted file never comes back: names are unique), so one plan per branch and its deltas suffice.
    """
    others = [b for b in [MAIN_BRANCH, *branch_names(store)] if b != store.branch]
    data: set[str] = set()
    metadata: set[str] = set()
    if not others:
        return HeldElsewhere(data=data, metadata=metadata)
    scan = store.new_scan()
    assert scan.path_factory is not None
    paths = TablePathResolver(scan.path_factory)
    try:
        for branch in others:
            snapshots, tags = branch_snapshots(store, branch, all_snapshots=branch == MAIN_BRANCH)
            for s in [*snapshots[:1], *tags]:
                live = _live_data_paths(scan, paths, s)
                if live is None:
                    return None
                data |= live
            for s in snapshots[1:]:
                for meta in scan.manifest_list(s.delta_manifest_list, s.delta_manifest_list_size):
                    for e in scan.manifest(meta.file_name, meta.file_size):
                        if e.kind is FileKind.ADD:
                            data.update(paths.data_paths(e))
            for s in [*snapshots, *tags]:
                metadata |= _metadata_names(scan, s)
    except _READ_ERRORS:
        return None
    return HeldElsewhere(data=data, metadata=metadata)


def clean_unused_files(store: FileStore, gone: Snapshot, keep: list[Snapshot]) -> None:
    """Delete the data files and metadata of ``gone`` that neither ``keep`` nor any other branch uses. Reads that
    fail skip that part (never delete on a guess)."""
    scan = store.new_scan()
    assert scan.path_factory is not None
    paths = TablePathResolver(scan.path_factory)
    elsewhere = held_by_other_branches(store)
    doomed = _live_data_paths(scan, paths, gone)
    if doomed is None or elsewhere is None:
        return
    doomed -= elsewhere.data
    skipping: set[str] = set(elsewhere.metadata)
    for s in keep:
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
