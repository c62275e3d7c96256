"""Snapshot expiration: drop old snapshots and every file only they needed.

Which snapshots go (Paimon: ExpireSnapshotsImpl#expire): keep at least ``snapshot.num-retained.min`` and at
most ``snapshot.num-retained.max``; between those, a snapshot goes only when the snapshot after it is older
than ``snapshot.time-retained`` — so a snapshot that was the latest within that window, which a reader may
still be planning against, stays. Consumers (``consumer/consumer-*``) pin their next snapshot; at most
``snapshot.expire.limit`` snapshots go per call.

What is deleted when snapshots [begin, end) go (Paimon: SnapshotDeletion, FileDeletionBase):

- data files deleted by the deltas of snapshots [begin, end] (they were live in an expired snapshot only; the delta
  of ``begin`` matters only after an interrupted expiration),
  unless a tag still holds them; a DELETE cancelled by an ADD of the same path (a level upgrade) keeps it;
- changelog files added by expired snapshots — unless changelogs are decoupled (``changelog.*`` retention longer
  than ``snapshot.*``): then each expiring snapshot with a changelog is kept as ``changelog/changelog-N`` with its
  changelog manifest list and files, and ``expire_changelogs`` removes them by the changelog retention;
- manifest lists, manifests, index manifests, index files and statistics of expired snapshots that neither
  snapshot ``end`` nor a tag references;

Order (unlike Java's ExpireSnapshotsImpl, which deletes data files and manifests before the snapshot files): every
delete is planned first; then the snapshot files go oldest first, each followed by the data files that only it
and older snapshots used; then the EARLIEST hint moves to ``end``; then changelogs and metadata. A crash (SIGKILL)
at any point leaves every listed snapshot readable, at worst with unreferenced manifests (orphan cleanup removes
them); the next expiration starts from the snapshots that are left and first deletes what the delta of the oldest
one dropped. Every delete goes through ``Table.deleter``: a path from metadata outside the table is skipped and
named in a warning.

Manifests are shared by a contiguous run of snapshots, so whatever a later snapshot needs, ``end`` needs too:
comparing against ``end`` alone is enough. Reads that fail (a concurrent expiration deleted something first)
skip that part, never delete on a guess.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError, InvalidOptionError
from laketide.meta.manifest import FileKind, ManifestEntry
from laketide.meta.paths import FileStorePathFactory
from laketide.meta.snapshot import Snapshot
from laketide.options import ChangelogProducer, ConfigOption, OptionType
from laketide.scan.file_scan import FileStoreScan
from laketide.table.maintenance import ExpireStats

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = ["EXPIRE_LIMIT", "TablePathResolver", "expire_changelogs", "expire_snapshots", "list_consumers",
           "list_tags"]

# Not in the shared option registry yet (laketide.options); same key and default as Java's CoreOptions.
EXPIRE_LIMIT: ConfigOption[int] = ConfigOption(
    key="snapshot.expire.limit", type=OptionType.INT, default=50,
    description="The maximum number of snapshots allowed to expire at a time.",
)

_READ_ERRORS = (FileIOError, CorruptMetadataError)


class TablePathResolver:
    """Paths of a table's files from their manifest entries (data, changelog, index, statistics)."""

    def __init__(self, paths: FileStorePathFactory) -> None:
        self.paths = paths

    def data_paths(self, entry: ManifestEntry) -> list[str]:
        """The data file of ``entry`` and its extra files (e.g. embedded file indexes)."""
        return self.paths.data_file_paths(entry.partition, entry.bucket, entry.file)

    def manifest(self, name: str) -> str:
        return self.paths.manifest_path(name)

    def index(self, name: str, external_path: str | None = None, *, partition: bytes = b"", bucket: int = 0) -> str:
        return self.paths.bucket_index_file_path(partition, bucket, name, external_path)

    def statistics(self, name: str) -> str:
        return self.paths.statistics_path(name)


def list_tags(store: FileStore) -> list[Snapshot]:
    """The snapshots tags point at (``tag/tag-<name>`` files hold a snapshot's JSON), oldest first."""
    out = []
    for st in store.file_io.list_status(store.path_factory.tag_dir):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        if st.is_dir or not name.startswith("tag-"):
            continue
        try:
            out.append(Snapshot.from_json(store.file_io.read_bytes(st.path), path=st.path))
        except _READ_ERRORS:
            continue  # deleted meanwhile
    return sorted(out, key=lambda s: s.id)


def list_consumers(store: FileStore) -> dict[str, int]:
    """Consumer id -> the next snapshot it will read (``consumer/consumer-<id>``: {"nextSnapshot": n})."""
    out: dict[str, int] = {}
    for st in store.file_io.list_status(store.path_factory.consumer_dir):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        if st.is_dir or not name.startswith("consumer-"):
            continue
        try:
            out[name[len("consumer-"):]] = int(json.loads(store.file_io.read_bytes(st.path))["nextSnapshot"])
        except (*_READ_ERRORS, ValueError, KeyError, TypeError):
            continue
    return out


def expire_snapshots(
    store: FileStore,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    time_retained_ms: int | None = None,
    max_deletes: int | None = None,
    now_ms: int | None = None,
    stats: ExpireStats | None = None,
) -> int:
    """Expire snapshots by the table's ``snapshot.*`` options (or the overrides); returns how many went.

    ``stats`` (table/maintenance.py) counts the deleted files and reports progress per snapshot."""
    opts = store.options
    retain_min = opts.snapshot_num_retained_min if retain_min is None else retain_min
    retain_max = opts.snapshot_num_retained_max if retain_max is None else retain_max
    time_retained_ms = opts.snapshot_time_retained if time_retained_ms is None else time_retained_ms
    max_deletes = opts.get(EXPIRE_LIMIT) if max_deletes is None else max_deletes
    if retain_min < 1 or retain_max < retain_min:
        raise InvalidOptionError(
            f"Snapshot retention of table {store.table_name}: need 1 <= snapshot.num-retained.min ({retain_min}) <= "
            f"snapshot.num-retained.max ({retain_max})"
        )
    assert max_deletes is not None
    sm = store.snapshot_manager
    latest = sm.latest_snapshot_id()
    earliest = sm.earliest_snapshot_id()
    if latest is None or earliest is None:
        return 0
    older_than = (int(time.time() * 1000) if now_ms is None else now_ms) - time_retained_ms
    low = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    consumers = list_consumers(store)
    if consumers:
        end = min(end, min(consumers.values()))
    end = min(end, earliest + max_deletes)
    stop = end
    for sid in range(low, end):
        nxt = sm.try_snapshot(sid + 1)
        # A snapshot may go only once its successor has been around longer than time-retained.
        if nxt is not None and older_than <= nxt.time_millis:
            stop = sid
            break
    expired = _expire_until(store, earliest, stop, stats)
    if _decoupled(store):
        expire_changelogs(store, now_ms=now_ms)
    return expired


def _expire_until(store: FileStore, earliest: int, end: int, stats: ExpireStats | None = None) -> int:
    """Expire snapshots [earliest, end): plan every delete first, then remove the snapshot files (oldest first)
    and move EARLIEST, and only then delete the files nothing retained uses.

    A crash at any point therefore leaves either the old snapshots whole, or fewer snapshots and some files no
    snapshot references (invisible; orphan cleanup removes them). Never a listed snapshot with missing files.
    """
    sm = store.snapshot_manager
    if end <= earliest:
        if sm.earliest_hint_missing():
            sm.commit_earliest_hint(earliest)
        return 0
    snapshots = [s for s in (sm.try_snapshot(i) for i in range(earliest, end + 1)) if s is not None]
    if not snapshots or snapshots[-1].id != end:
        return 0  # the snapshot to keep is gone: a concurrent expiration or rollback is at work
    expired, keep = snapshots[:-1], snapshots[-1]
    scan = store.new_scan()
    assert scan.path_factory is not None
    paths = TablePathResolver(scan.path_factory)
    tags = [t for t in list_tags(store) if t.id < end]
    from laketide.table.file_holders import held_by_other_branches

    # Other branches share data files and manifests: whatever their snapshots or tags reference stays.
    elsewhere = held_by_other_branches(store)
    if elsewhere is None:
        return 0  # unknown holders: delete nothing rather than guess
    branch_files = elsewhere.data

    # Data files: those the delta of a snapshot deleted were live only in older snapshots. Each snapshot's list is
    # planned first (without the files the newest tag before it still holds); they are deleted right after the
    # last snapshot that used them went. The delta of ``begin`` deleted files of snapshots gone already: normally
    # the previous expiration deleted them, but one killed half-way left them (a missing file is a no-op).
    tag_files: dict[int, set[str] | None] = {}
    doomed: dict[int, list[str]] = {}
    for s in snapshots:
        tag = _previous_tag(tags, s.id)
        held: set[str] | None = set()
        if tag is not None:
            if tag.id not in tag_files:
                tag_files[tag.id] = _live_data_paths(scan, paths, tag)
            held = tag_files[tag.id]
        if held is None:
            continue  # the tag could not be read: keep this snapshot's files
        doomed[s.id] = [p for p in _deleted_in_delta(scan, paths, s) if p not in held and p not in branch_files]
    decoupled = _decoupled(store)
    changelogs = [] if decoupled else [p for s in expired for p in _added_in_changelog(scan, paths, s)]

    # Metadata files no survivor references.
    unused: list[str] = []
    try:
        skipping = set()
        skipping |= elsewhere.metadata
        for s in (*tags, keep):
            skipping |= _metadata_names(scan, s)
    except _READ_ERRORS:
        skipping = None  # unknown survivors: keep every manifest rather than guess
    if skipping is not None:
        for s in expired:
            unused.extend(_unused_metadata(scan, paths, s, skipping, keep_changelog=decoupled))

    # Snapshots go oldest first (the listed ones stay contiguous), each followed by the data files that only it and
    # older snapshots used; then EARLIEST moves, then changelogs and metadata (unreferenced by now).
    deleter = store.deleter
    tally = stats if stats is not None else ExpireStats()
    tally.deleted(deleter.delete_all(doomed.get(snapshots[0].id, ())))
    for done, (s, nxt) in enumerate(zip(expired, snapshots[1:]), 1):
        if decoupled and s.changelog_manifest_list:
            store.changelog_manager.commit(s)  # before the snapshot goes: its changelog stays reachable
        sm.delete_snapshot(s.id)
        tally.deleted(deleter.delete_all(doomed.get(nxt.id, ())))
        tally.step(done, len(expired))
    sm.commit_earliest_hint(end)
    tally.deleted(deleter.delete_all(changelogs))
    tally.deleted(deleter.delete_all(unused))
    return len(expired)


def _decoupled(store: FileStore) -> bool:
    opts = store.options
    return opts.changelog_decoupled and opts.changelog_producer is not ChangelogProducer.NONE


def expire_changelogs(store: FileStore, *, now_ms: int | None = None) -> int:
    """Expire ``changelog/changelog-N`` by ``changelog.num-retained.min`` / ``.max`` / ``changelog.time-retained``
    (counted, like Java, over changelogs and the snapshots after them); returns how many went.

    A changelog goes with its changelog manifest list, manifests and files (nothing else references them: a
    snapshot's changelog manifests are its own). Paimon: ExpireChangelogImpl.
    """
    cm = store.changelog_manager
    ids = cm.ids()
    latest = store.snapshot_manager.latest_snapshot_id()
    if not ids or latest is None:
        return 0
    opts = store.options
    retain_min, retain_max = opts.changelog_num_retained_min, opts.changelog_num_retained_max
    older_than = (int(time.time() * 1000) if now_ms is None else now_ms) - opts.changelog_time_retained
    earliest_snapshot = store.snapshot_manager.earliest_snapshot_id() or latest
    low = latest - retain_max + 1  # everything below goes whatever its age
    high = latest - retain_min + 1  # nothing from here on goes
    gone = []
    for cid in ids:
        if cid >= high or cid >= earliest_snapshot:
            break
        if cid >= low:
            c = cm.try_changelog(cid)
            if c is not None and c.time_millis >= older_than:
                break
        gone.append(cid)
    if not gone:
        return 0
    scan = store.new_scan()
    assert scan.path_factory is not None
    paths = TablePathResolver(scan.path_factory)
    deleter = store.deleter
    for cid in gone:
        c = cm.try_changelog(cid)
        files: list[str] = []
        if c is not None and c.changelog_manifest_list:
            files = _added_in_changelog(scan, paths, c)
            try:
                metas = scan.manifest_list(c.changelog_manifest_list)
            except _READ_ERRORS:
                metas = []
            files += [paths.manifest(m.file_name) for m in metas] + [paths.manifest(c.changelog_manifest_list)]
        cm.delete(cid)  # first: a crash leaves files no changelog references (orphan cleanup), never the reverse
        deleter.delete_all(files)
    remaining = cm.ids()
    if remaining:
        cm.commit_earliest_hint(remaining[0])
    return len(gone)


def _previous_tag(tags: list[Snapshot], snapshot_id: int) -> Snapshot | None:
    best = None
    for t in tags:
        if t.id < snapshot_id:
            best = t
        else:
            break
    return best


def _read_entries(scan: FileStoreScan, manifest_list: str | None) -> list[ManifestEntry] | None:
    if not manifest_list:
        return []
    try:
        return [e for m in scan.manifest_list(manifest_list) for e in scan.manifest(m.file_name, m.file_size)]
    except _READ_ERRORS:
        return None


def _deleted_in_delta(scan: FileStoreScan, paths: TablePathResolver, s: Snapshot) -> list[str]:
    entries = _read_entries(scan, s.delta_manifest_list)
    if entries is None:
        return []  # Java: cancel this snapshot's deletion when a manifest cannot be read
    deleted: list[str] = []
    added: set[str] = set()
    for e in entries:
        if e.kind is FileKind.ADD:
            # Upgraded to another level, or given a new file index, in the same snapshot: still live (an index
            # it no longer lists is not).
            added.update(paths.data_paths(e))
        else:
            deleted.extend(paths.data_paths(e))
    return [p for p in dict.fromkeys(deleted) if p not in added]


def _added_in_changelog(scan: FileStoreScan, paths: TablePathResolver, s: Snapshot) -> list[str]:
    entries = _read_entries(scan, s.changelog_manifest_list)
    return [p for e in entries or () if e.kind is FileKind.ADD for p in paths.data_paths(e)]


def _live_data_paths(scan: FileStoreScan, paths: TablePathResolver, s: Snapshot) -> set[str] | None:
    try:
        return {p for e in scan.plan(s) for p in paths.data_paths(e)}
    except _READ_ERRORS:
        return None


def _metadata_names(scan: FileStoreScan, s: Snapshot) -> set[str]:
    """Every manifest list, manifest, index manifest, index file and statistics file ``s`` references."""
    names = {s.base_manifest_list, s.delta_manifest_list}
    names.update(m.file_name for m in scan.data_manifests(s))
    if s.index_manifest:
        names.add(s.index_manifest)
        names.update(e.index_file.file_name for e in scan.index_manifest(s.index_manifest))
    if s.statistics:
        names.add(s.statistics)
    return names


def _unused_metadata(
    scan: FileStoreScan, paths: TablePathResolver, s: Snapshot, skipping: set[str], *, keep_changelog: bool = False
) -> Iterable[str]:
    """Metadata files of expired ``s`` not in ``skipping``; names are added to it so each goes once
    (``keep_changelog``: not its changelog manifest list and manifests, which changelog-N keeps)."""

    def fresh(name: str) -> bool:
        if name in skipping:
            return False
        skipping.add(name)
        return True

    lists = (s.base_manifest_list, s.delta_manifest_list) + (() if keep_changelog else (s.changelog_manifest_list,))
    for lst in lists:
        if not lst:
            continue
        try:
            metas = scan.manifest_list(lst)
        except _READ_ERRORS:
            metas = []  # gone already or unreadable: its manifests are judged by the snapshots that list them
        for m in metas:
            if fresh(m.file_name):
                yield paths.manifest(m.file_name)
        if fresh(lst):
            yield paths.manifest(lst)
    if s.index_manifest:
        try:
            entries = scan.index_manifest(s.index_manifest)
        except _READ_ERRORS:
            entries = []
        for e in entries:
            if fresh(e.index_file.file_name):
                yield paths.index(e.index_file.file_name, e.index_file.external_path, partition=e.partition,
                                  bucket=e.bucket)
        if fresh(s.index_manifest):
            yield paths.manifest(s.index_manifest)
    if s.statistics and fresh(s.statistics):
        yield paths.statistics(s.statistics)
