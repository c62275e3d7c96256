"""Orphan file cleanup: delete files in a table's directory that no snapshot or tag references.

Orphans are what crashed or failed writers leave behind (data files of a job killed before it committed,
manifests of a commit that lost its publish, temp files of an interrupted atomic write) and what a rollback
strands. Only Paimon's own directories are walked (never a foreign directory inside the table), every delete goes
through ``Table.deleter``, and only files older than the threshold (default: one day) go, so the files of a commit
still in flight are never touched; the listing is taken before the references are collected, so a snapshot
published while the cleanup runs protects its files.

Paimon: operation.OrphanFilesClean, operation.LocalOrphanFilesClean
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, NotFoundError
from laketide.fs import FileStatus
from laketide.meta.paths import JOBS_DIR, STAGING_DIR_PREFIX, partition_path
from laketide.meta.snapshot import Snapshot
from laketide.table.expire import list_tags

if TYPE_CHECKING:
    from laketide.scan.file_scan import FileStoreScan
    from laketide.store import FileStore

__all__ = ["OrphanFilesResult", "remove_orphan_files", "DEFAULT_OLDER_THAN"]

DEFAULT_OLDER_THAN = _dt.timedelta(days=1)

# Directories of files that snapshots reference. schema/, tag/, consumer/, branch/, changelog/ and service/ hold
# metadata that is live by itself and are never walked.
_METADATA_DIRS = frozenset({"manifest", "index", "statistics"})
_BUCKET_DIR = re.compile(r"^bucket-(-?\d+|postpone)$")
_SNAPSHOT_FILE = re.compile(r"^(snapshot-\d+|EARLIEST|LATEST)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanFilesResult:
    """The orphan files found (deleted, or only listed in a dry run) and their total size."""

    paths: tuple[str, ...]
    total_bytes: int
    dry_run: bool
    duration_s: float = 0.0

    @property
    def count(self) -> int:
        return len(self.paths)


def remove_orphan_files(
    store: FileStore,
    *,
    older_than: _dt.datetime | _dt.timedelta | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> OrphanFilesResult:
    """Delete unreferenced files last modified before ``older_than`` (an instant, or an age; default 1 day).
    ``progress(done, total)`` is called after each orphan deleted."""
    started = time.monotonic()
    now = _dt.datetime.now(_dt.timezone.utc)
    if older_than is None:
        older_than = DEFAULT_OLDER_THAN
    if isinstance(older_than, _dt.timedelta):
        cutoff = now - older_than
    else:
        cutoff = older_than if older_than.tzinfo is not None else older_than.astimezone(_dt.timezone.utc)
    cutoff_ms = int(cutoff.timestamp() * 1000)

    candidates = [st for st in _walk(store) if st.modification_time_ms < cutoff_ms]
    if not candidates:
        return OrphanFilesResult(paths=(), total_bytes=0, dry_run=dry_run, duration_s=time.monotonic() - started)
    used = _used_names(store)
    orphans = [st for st in candidates if _name(st.path) not in used]
    if not dry_run:
        from laketide.table.maintenance import report

        deleter = store.deleter
        for done, st in enumerate(orphans, 1):
            deleter.delete_all([st.path])
            report(progress, done, len(orphans), what="orphan files deleted")
    return OrphanFilesResult(paths=tuple(sorted(st.path for st in orphans)),
                             total_bytes=sum(st.size for st in orphans), dry_run=dry_run,
                             duration_s=time.monotonic() - started)


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _walk(store: FileStore) -> list[FileStatus]:
    """Every file that may be an orphan, found by walking Paimon's layout only: the partition directories of the
    table's partition keys down to their ``bucket-N`` directories, ``manifest/``, ``index/``, ``statistics/``, and
    leftovers in ``snapshot/`` that are neither snapshots nor hints (temp files of an interrupted publish), and what
    Spark jobs staged (``_spark-staging-*``) or recorded (``_laketide_jobs``).

    A directory that is not part of that layout (a user's ``notes/``, a table nested inside this one, a
    subdirectory of a bucket) is never entered, whatever it holds. Paimon: OrphanFilesClean#listPaimonFileDirs.
    """
    io = store.file_io
    keys = [partition_path([k], ["v"], default_name="v")[:-1] for k in store.schema.partition_keys]  # "<key>="
    out: list[FileStatus] = []

    def files_in(directory: str, *, keep: re.Pattern[str] | None = None) -> None:
        for st in io.list_status(directory):
            if not st.is_dir and not (keep is not None and keep.match(_name(st.path))):
                out.append(st)

    def partitions(directory: str, depth: int) -> None:
        for st in io.list_status(directory):
            name = _name(st.path)
            if not st.is_dir:
                continue
            if depth == len(keys):
                if _BUCKET_DIR.match(name):
                    files_in(st.path)
            elif name.startswith(keys[depth]):
                partitions(st.path, depth + 1)

    def staged(directory: str) -> None:
        for st in io.list_status(directory):
            if st.is_dir:
                staged(st.path)
            else:
                out.append(st)

    for st in io.list_status(store.table_path):
        name = _name(st.path)
        if not st.is_dir:
            continue  # files directly in the table directory are not Paimon's
        if name == "snapshot":
            files_in(st.path, keep=_SNAPSHOT_FILE)
        elif name.startswith(STAGING_DIR_PREFIX):
            staged(st.path)  # what a killed engine job left before laketide adopted its files
        elif name == JOBS_DIR:
            staged(st.path)  # records and end flags of Spark jobs (their own expiry waits for the next Spark write)
        elif name in _METADATA_DIRS:
            files_in(st.path)
    data_root = store.path_factory.data_root
    if data_root == store.table_path or io.exists(data_root):
        partitions(data_root, 0)
    # Java walks every configured external root the same way (whatever the strategy): data files written
    # there by a failed job are orphans too.
    for root in _external_roots(store):
        if io.exists(root):
            partitions(root, 0)
    return out


def _external_roots(store: FileStore) -> list[str]:
    raw = store.options.data_file_external_paths or ""
    directory = store.path_factory.data_file_path_directory
    roots = [r.strip().rstrip("/") for r in raw.split(",") if r.strip()]
    return [f"{r}/{directory}" if directory else r for r in roots]


def _used_names(store: FileStore) -> set[str]:
    """Names of every file a snapshot or tag references (file names are unique: uuids and counters)."""
    scan = store.new_scan()
    used: set[str] = set()
    seen_manifests: set[str] = set()
    sm = store.snapshot_manager
    for s in sm.snapshots():
        try:
            _collect(scan, s, used, seen_manifests)
        except (NotFoundError, CorruptMetadataError):
            # Expired while we read it: whatever it shared with later snapshots they reference too. A missing
            # file of a snapshot that still exists is a broken table: stop rather than delete anything.
            if sm.snapshot_exists(s.id):
                raise
    for tag in list_tags(store):
        _collect(scan, tag, used, seen_manifests)
    cm = store.changelog_manager
    for cid in cm.ids():  # decoupled changelogs keep their changelog manifests and files
        kept = cm.try_changelog(cid)
        if kept is not None and kept.changelog_manifest_list:
            _collect(scan, replace(kept, base_manifest_list="", delta_manifest_list="", index_manifest=None,
                                   statistics=None), used, seen_manifests)
    from laketide.table.file_holders import other_branch_snapshots

    # Branches share the data files and manifests: every snapshot and tag of every other branch protects them.
    for s in other_branch_snapshots(store):
        _collect(scan, s, used, seen_manifests)
    return used


def _collect(scan: FileStoreScan, s: Snapshot, used: set[str], seen_manifests: set[str]) -> None:

    for lst in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
        if not lst:
            continue
        used.add(lst)
        for m in scan.manifest_list(lst):
            used.add(m.file_name)
            if m.file_name in seen_manifests:
                continue
            seen_manifests.add(m.file_name)
            for e in scan.manifest(m.file_name, m.file_size):
                used.add(e.file.file_name)
                used.update(e.file.extra_files)
                if e.file.external_path:
                    used.add(_name(e.file.external_path))
    if s.index_manifest:
        used.add(s.index_manifest)
        for ie in scan.index_manifest(s.index_manifest):
            used.add(ie.index_file.file_name)
    if s.statistics:
        used.add(s.statistics)

