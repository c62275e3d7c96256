"""What the committer checks before it publishes, and what it may delete when messages are dropped.

- Messages written for another table, or for a table dropped and re-created at the same path, are refused
  (``ForeignCommitMessageError``).
- A file a snapshot already holds is never added again (``AlreadyCommittedError``: the same messages committed
  twice, the natural retry after a timeout). Paimon: "Trying to add file ... which is already added".
- A primary-key APPEND whose new files do not sort after every live file of their bucket is refused
  (``SequenceConflictError``): another writer committed to the bucket after this one restored its sequence
  numbers, and the later commit must win on every key, before and after compaction.
- Dropping messages (abort) deletes only files no snapshot or tag holds.

"Holds" is decided from the delta (and changelog) manifests of the snapshots published after the writer's base
snapshot (``WriteOrigin``): no earlier snapshot can reference a file written later. The latest snapshot's live
files in the messages' partitions are planned only when that is not enough (a message without an origin, a
snapshot of the range expired or unreadable). The cost follows the snapshots since the write, not the table or
its history.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field

from laketide.exceptions import (
    AlreadyCommittedError,
    CorruptMetadataError,
    FileIOError,
    ForeignCommitMessageError,
    SequenceConflictError,
)
from laketide.meta.commit_message import CommitMessage
from laketide.meta.deletion import same_location
from laketide.meta.manifest import DataFileMeta, FileKind, ManifestEntry
from laketide.meta.snapshot import Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.scan.file_scan import FileStoreScan, max_sequence_per_bucket
from laketide.schema.table_schema import TableSchema

__all__ = [
    "CommittedFiles",
    "DeltaRecords",
    "origin_base",
    "check_origin",
    "check_sequences",
    "new_file_names",
    "refuse_committed",
]

_READ_ERRORS = (FileIOError, CorruptMetadataError)
_SHOWN = 5


def check_origin(
    messages: Iterable[CommitMessage], *, table_path: str, table_name: str, schema: TableSchema, scan: FileStoreScan
) -> None:
    """Refuse messages whose ``WriteOrigin`` names another table (messages without one are not checked)."""
    times: dict[int, int | None] = {schema.id: schema.time_millis}
    for m in messages:
        origin = m.write_origin
        if origin is None:
            continue
        if not same_location(origin.table_path, table_path):
            raise ForeignCommitMessageError(
                f"Commit to table {table_name} ({table_path}) refused: a commit message was written for the table at "
                f"{origin.table_path}. Nothing was committed; commit messages to the table whose writer made them."
            )
        if origin.schema_id not in times:
            try:
                times[origin.schema_id] = scan.schema_manager.schema(origin.schema_id).time_millis
            except _READ_ERRORS:
                times[origin.schema_id] = None
        if times[origin.schema_id] != origin.schema_time_ms:
            raise ForeignCommitMessageError(
                f"Commit to table {table_name} ({table_path}) refused: a commit message was written for schema "
                f"{origin.schema_id} created at {origin.schema_time_ms} ms, but this table's schema {origin.schema_id} "
                f"{'does not exist' if times[origin.schema_id] is None else 'is another one'} (the table was dropped "
                f"and re-created since the write?). Nothing was committed."
            )


def new_file_names(messages: Iterable[CommitMessage]) -> dict[str, tuple[CommitMessage, DataFileMeta]]:
    """The files ``messages`` bring into the table (an upgraded file keeps its name: it is the table's already)."""
    out: dict[str, tuple[CommitMessage, DataFileMeta]] = {}
    for m in messages:
        upgraded = {f.file_name for f in m.compact_before}
        for f in (*m.new_files, *m.changelog_files, *m.compact_after, *getattr(m, "compact_changelog_files", ())):
            if f.file_name not in upgraded:
                out[f.file_name] = (m, f)
    return out


def origin_base(messages: Iterable[CommitMessage]) -> int | None:
    """The earliest snapshot the writers of ``messages`` started from (0: an empty table); None if a message has
    no ``WriteOrigin`` (then nothing bounds where its files could have been committed)."""
    bases = []
    for m in messages:
        if m.write_origin is None:
            return None
        bases.append(m.write_origin.base_snapshot_id or 0)
    return min(bases) if bases else None


@dataclass(slots=True)
class DeltaRecords:
    """(file name, ADD / DELETE, which snapshot) of some files in the deltas of a range of snapshots."""

    records: list[tuple[str, FileKind, str]] = field(default_factory=list)
    gap: bool = False  # a snapshot of the range expired or could not be read: the records may be incomplete


class CommittedFiles:
    """Finds which files of some messages a snapshot (or a tag) already references."""

    def __init__(
        self,
        *,
        snapshot_manager: SnapshotManager,
        scan: FileStoreScan,
        live: Callable[[Snapshot, set[bytes]], list[ManifestEntry]],
    ) -> None:
        self.sm = snapshot_manager
        self.scan = scan
        self.live = live
        self.uncertain = False  # a snapshot whose manifests could not be read might hold some of them

    def find(
        self, messages: Sequence[CommitMessage], latest: Snapshot | None, *, tags: bool = False
    ) -> dict[str, str]:
        names = new_file_names(messages)
        if not names or latest is None:
            return {}
        partitions = {m.partition for m in messages}
        base = origin_base(messages)
        deltas = None if base is None else self.deltas_since(latest, base, names)
        found: dict[str, str] = {}
        if deltas is None or deltas.gap:
            # No base to start from, or a snapshot in between expired (what it added is live still, or deleted
            # by a later delta) or could not be read: check the live files too.
            for e in self.live(latest, partitions):
                if e.file.file_name in names:
                    found.setdefault(e.file.file_name, f"live in snapshot {latest.id}")
        if deltas is None:
            return found
        for name, kind, holder in deltas.records:
            if kind is FileKind.ADD or name not in found:
                found[name] = holder
        if tags:
            assert base is not None
            for tag in self._tags(after=base):
                try:
                    held = self.live(tag, partitions)
                except _READ_ERRORS:
                    self.uncertain = True
                    continue
                for e in held:
                    if e.file.file_name in names:
                        found.setdefault(e.file.file_name, f"held by a tag of snapshot {tag.id}")
        return found

    def deltas_since(self, latest: Snapshot, base: int, names: Container[str]) -> DeltaRecords:
        """What the snapshots after ``base`` up to ``latest`` did to the files ``names``, newest first.

        Every file a write since ``base`` produced was added by one of these snapshots if it was committed, so
        their deltas answer "committed already?" without planning the live files (unless there is a gap).
        """
        out = DeltaRecords()
        for sid in range(latest.id, base, -1):
            s = latest if sid == latest.id else self.sm.try_snapshot(sid)
            if s is None:
                out.gap = True  # expired: its additions are visible only among the live files
                continue
            for kind, lst, size in (("delta", s.delta_manifest_list, s.delta_manifest_list_size),
                                    ("changelog", s.changelog_manifest_list, s.changelog_manifest_list_size)):
                entries = self._entries(lst, size)
                if entries is None:
                    out.gap = True
                    continue
                for e in entries:
                    if e.file.file_name in names:
                        verb = "added" if e.kind is FileKind.ADD else "deleted"
                        out.records.append((e.file.file_name, e.kind, f"{verb} by snapshot {s.id} ({kind})"))
        return out

    def _entries(self, manifest_list: str | None, size: int | None) -> list[ManifestEntry] | None:
        if not manifest_list:
            return []
        try:
            scan = self.scan
            return [e for m in scan.manifest_list(manifest_list, size) for e in scan.manifest(m.file_name, m.file_size)]
        except _READ_ERRORS:
            self.uncertain = True
            return None

    def _tags(self, *, after: int) -> list[Snapshot]:
        out = []
        io = self.scan.file_io
        paths = self.scan.path_factory  # the branch's tag directory (main's when the scan has no factory)
        tag_dir = paths.tag_dir if paths is not None else f"{self.scan.table_path}/tag"
        for st in io.list_status(tag_dir):
            name = st.path.rstrip("/").rsplit("/", 1)[-1]
            if st.is_dir or not name.startswith("tag-"):
                continue
            try:
                tag = Snapshot.from_json(io.read_bytes(st.path), path=st.path)
            except _READ_ERRORS:
                self.uncertain = True
                continue
            if tag.id > after:
                out.append(tag)
        return out


def refuse_committed(found: dict[str, str], *, table_name: str) -> None:
    if not found:
        return
    shown = [f"{name} ({holder})" for name, holder in list(found.items())[:_SHOWN]]
    raise AlreadyCommittedError(
        f"Commit to table {table_name} refused: trying to add {len(found)} file(s) which are already added: "
        f"{shown}. These commit messages were committed before (a retry after a timeout or an error?). Nothing "
        f"was committed; to make retries safe, commit with a commit_user and commit_identifier (exactly once)."
    )


def check_sequences(
    added: Iterable[ManifestEntry],
    live: Iterable[ManifestEntry],
    *,
    latest: Snapshot | None,
    table_name: str,
    scan: FileStoreScan,
) -> None:
    """Refuse new primary-key files that do not sort after every live file of their bucket (see the module doc)."""
    lowest: dict[tuple[bytes, int], int] = {}
    for e in added:
        key = (e.partition, e.bucket)
        lowest[key] = min(lowest.get(key, e.file.min_sequence_number), e.file.min_sequence_number)
    if not lowest or latest is None:
        return
    highest = max_sequence_per_bucket(live, only=lowest)
    for key, lo in lowest.items():
        hi = highest.get(key)
        if hi is None or lo > hi:
            continue
        partition = scan.partition_codec.values(key[0]) if scan.schema.partition_keys else ()
        where = f"bucket {key[1]}" + (f" of partition {list(partition)}" if partition else "")
        raise SequenceConflictError(
            f"Commit to table {table_name} refused: {where} already holds sequence numbers up to {hi} (snapshot "
            f"{latest.id}, {latest.commit_kind.value} by commit user {latest.commit_user} or earlier), but this "
            f"commit's new files start at {lo}. Another writer committed to this bucket after this writer restored "
            f"it; committing would let the earlier write win on keys both wrote. Nothing was committed. Table.write "
            f"retries such a write by itself. A long-lived writer (new_write, a streaming job) must be the only "
            f"writer of its buckets: write other partitions/buckets from other jobs, or re-create the writer (it "
            f"restores the latest snapshot) and write the rows again. Java Paimon does not check this: two writers "
            f"of one bucket can make an earlier commit win there (apache/paimon#5872)."
        )
