"""The committer: commit messages -> manifests -> a new snapshot, with optimistic concurrency.

A lost race for snapshot-N (another writer published it first) re-plans on top of the new latest snapshot and
tries again (``commit.max-retries``, ``commit.timeout``, exponential backoff between ``commit.min-retry-wait``
and ``commit.max-retry-wait`` with jitter); files this attempt wrote are removed. Transient storage failures
are retried the same way. A commit that deletes files (compaction, overwrite, delete) first checks, in the
partitions it changes only, that those files are still live: if a concurrent commit removed them it fails with
CommitConflictError and changes nothing. Appends of append tables never conflict; a primary-key append whose new
files do not sort after its buckets' live files fails with SequenceConflictError (see ``commit_checks``), and so
do foreign messages and files already added (ForeignCommitMessageError, AlreadyCommittedError). A compaction that
loses after its APPEND landed drops only its own files and the APPEND's id is returned.

``(commit_user, commit_identifier)`` makes a commit idempotent: before every retry the committer looks at the
snapshots published since its previous attempt (never the whole history) and stops if its own landed. A publish
that failed without a clear answer keeps its files until the answer is known.

Paimon: operation.FileStoreCommitImpl, operation.commit.ConflictDetection, utils.RetryWaiter
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from laketide.exceptions import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    FileIOError,
    WriteConflictError,
)
from laketide.expr import Leaf, Op, Predicate, and_, bind, or_
from laketide.fs import FileIO
from laketide.meta.manifest import FileKind, IndexManifestEntry, ManifestEntry
from laketide.meta.commit_message import CommitMessage
from laketide.meta.deletion import TableFileDeleter
from laketide.meta.paths import TablePaths
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.scan.file_scan import FileStoreScan
from laketide.schema.table_schema import TableSchema
from laketide.write.commit_checks import (
    CommittedFiles,
    check_origin,
    check_sequences,
    new_file_names,
    origin_base,
    refuse_committed,
)
from laketide.write.manifest_writer import ManifestWriter
from laketide.write.index_manifest import index_changes, next_index_manifest

__all__ = ["FileStoreCommit", "BATCH_COMMIT_IDENTIFIER"]

_LOG = logging.getLogger(__name__)

# Java's BatchWriteBuilder.COMMIT_IDENTIFIER: batch jobs commit once with Long.MAX_VALUE.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1

# Snapshot property naming the cross-partition writer that committed it (see _check_single_key_writer).
KEY_INDEX_WRITER = "laketide.key-index-writer"
# The conflict message lists at most this many files.
_SHOWN_FILES = 5


class _Unsure(Exception):  # noqa: N818 - internal signal, never leaves this module
    """An attempt whose snapshot publish failed without telling whether the snapshot landed."""

    def __init__(self, *, base_manifest_list: str, files: Sequence[str]) -> None:
        super().__init__(base_manifest_list)
        self.base_manifest_list = base_manifest_list
        self.files = tuple(files)


@dataclass(frozen=True, slots=True)
class _Pending:
    """Files of an attempt whose outcome was unknown: deleted once another outcome proves it did not land."""

    base_manifest_list: str
    files: tuple[str, ...]


class FileStoreCommit:
    def __init__(
        self,
        *,
        file_io: FileIO,
        table_path: str,
        table_name: str,
        schema: TableSchema,
        snapshot_manager: SnapshotManager,
        scan_factory: Callable[[], FileStoreScan],
        commit_user: str,
        restored_plan: Callable[[Snapshot], list[ManifestEntry] | None] | None = None,
    ) -> None:
        """``restored_plan`` gives the live files of a snapshot if a writer planned them already (else None)."""
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self.schema = schema
        self.options = schema.core_options
        self.snapshot_manager = snapshot_manager
        self.scan_factory = scan_factory
        self.commit_user = commit_user
        self._restored_plan = restored_plan
        self._scan_cache: FileStoreScan | None = None
        self._live_cache: tuple[tuple[object, ...], list[ManifestEntry]] | None = None
        self._origin_base: int | None = None

    def commit(
        self,
        messages: Sequence[CommitMessage],
        *,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        overwrite_filter: Predicate | None = None,
        overwrite: bool = False,
        check_committed: bool = False,
        properties: dict[str, str] | None = None,
    ) -> int | None:
        """Publish ``messages`` as one snapshot; returns its id, or None when there was nothing to commit.

        ``overwrite`` replaces the rows of the partitions matched by ``overwrite_filter`` (all of the table when
        it is None) with the new files (snapshot kind OVERWRITE).
        """
        added = [
            ManifestEntry(kind=FileKind.ADD, partition=m.partition, bucket=m.bucket,
                          total_buckets=m.total_buckets, file=f)
            for m in messages for f in m.new_files
        ]
        removed = [
            ManifestEntry(kind=FileKind.DELETE, partition=m.partition, bucket=m.bucket,
                          total_buckets=m.total_buckets, file=f)
            for m in messages for f in m.deleted_files
        ]
        compact = [
            ManifestEntry(kind=FileKind.DELETE, partition=m.partition, bucket=m.bucket,
                          total_buckets=m.total_buckets, file=f)
            for m in messages for f in m.compact_before
        ] + [
            ManifestEntry(kind=FileKind.ADD, partition=m.partition, bucket=m.bucket,
                          total_buckets=m.total_buckets, file=f)
            for m in messages for f in m.compact_after
        ]
        self._origin_base = origin_base(messages)  # None: some message does not say where its writer started
        self._index_changes = index_changes(messages)  # hash indexes: applied by the APPEND / OVERWRITE snapshot
        self._compact_index_changes = index_changes(messages, compact=True)  # DVs: by the COMPACT snapshot
        # Changelog files of the writes (changelog-producer = input): listed by the APPEND / OVERWRITE snapshot.
        self._changelog = [
            ManifestEntry(kind=FileKind.ADD, partition=m.partition, bucket=m.bucket, total_buckets=m.total_buckets,
                          file=f)
            for m in messages for f in m.changelog_files
        ]
        # Changelog files of the compactions (changelog-producer = lookup): listed by the COMPACT snapshot.
        self._compact_changelog = [
            ManifestEntry(kind=FileKind.ADD, partition=m.partition, bucket=m.bucket, total_buckets=m.total_buckets,
                          file=f)
            for m in messages for f in getattr(m, "compact_changelog_files", ())
        ]
        bases = {m.key_index_base for m in messages if m.key_index_base is not None}
        self._key_index_base = min(bases, key=lambda b: b.snapshot_id or 0) if bases else None
        if self._key_index_base is not None:
            properties = {**(properties or {}), KEY_INDEX_WRITER: self._key_index_base.writer_id}
        # Deletion vectors of a row-level delete on an append table: an index-only change, committed as Java does
        # (an OVERWRITE snapshot, ConflictDetection#shouldBeOverwriteCommit).
        vectors = any(e.index_file.index_type == "DELETION_VECTORS" for e in self._index_changes)
        if not overwrite and not added and not removed and not compact and not vectors:
            return None
        check_origin(messages, table_path=self.table_path, table_name=self.table_name, schema=self.schema,
                     scan=self._scan())
        latest = self.snapshot_manager.latest_snapshot()
        if check_committed:
            done = self._already_committed(latest, commit_identifier) if latest is not None else None
            if done is not None:
                return done
        # A file some snapshot holds already: these messages were committed before (checked once here against
        # the snapshots since the write; each attempt checks the latest snapshot's live files again).
        refuse_committed(self._committed_files().find(messages, latest), table_name=self.table_name)
        if not (overwrite or added or removed or vectors):
            return self._commit_compact(compact, commit_identifier=commit_identifier, properties=properties)
        sid = self._commit_changes(added, removed, commit_identifier=commit_identifier,
                                   overwrite_filter=overwrite_filter, overwrite=overwrite, properties=properties,
                                   vectors=vectors)
        if sid is None or not compact:
            return sid
        # One commit of a compacting writer yields two snapshots (seed 001 3.3.6): APPEND, then COMPACT. The APPEND
        # has landed: a compaction that loses now (its inputs were replaced meanwhile) costs only its own files.
        try:
            return self._commit_compact(compact, commit_identifier=commit_identifier, properties=properties)
        except CommitStateUnknownError as e:
            _LOG.warning("Table %s: the compaction after APPEND snapshot %d may or may not have landed (%s); its "
                         "files are kept (orphan cleanup removes them if it did not)", self.table_name, sid, e)
        except Exception as e:  # noqa: BLE001 - the APPEND is committed; the compaction never landed
            _LOG.warning("Table %s: the compaction after APPEND snapshot %d was not committed (%s: %s); the data is "
                         "committed, the compaction's files are discarded", self.table_name, sid,
                         type(e).__name__, e)
            self.abort([replace(m, new_files=(), changelog_files=()) for m in messages])
        return sid

    def _commit_changes(
        self,
        added: list[ManifestEntry],
        removed: list[ManifestEntry],
        *,
        commit_identifier: int,
        overwrite_filter: Predicate | None,
        overwrite: bool,
        properties: dict[str, str] | None,
        vectors: bool = False,
    ) -> int | None:
        # Replacing files (a copy-on-write delete or update) or deleting rows by vector is an OVERWRITE, as in Java
        # (shouldBeOverwriteCommit).
        kind = CommitKind.OVERWRITE if overwrite or removed or vectors else CommitKind.APPEND

        def plan(latest: Snapshot | None) -> list[ManifestEntry] | None:
            delta = list(removed)
            if overwrite:
                # Re-planned on every attempt: the partitions may have changed since the previous one.
                delta += self._overwrite_deletes(latest, overwrite_filter)
                if not added and not delta:
                    return None
            else:
                self._check_conflicts(latest, removed, added, kind=kind)
                if self.schema.primary_keys and latest is not None:
                    self._check_single_key_writer(latest)  # the more specific refusal of a cross-partition writer
                    check_sequences(added, self._live(latest, {e.partition for e in added}), latest=latest,
                                    table_name=self.table_name, scan=self._scan())
            return delta + added

        return self._commit_with_retries(plan, kind=kind, identifier=commit_identifier, properties=properties)

    def _commit_compact(
        self, delta: list[ManifestEntry], *, commit_identifier: int, properties: dict[str, str] | None
    ) -> int:
        """Publish a COMPACT snapshot; fails with CommitConflictError when a replaced file is gone already."""
        removed = [e for e in delta if e.kind is FileKind.DELETE]
        added = [e for e in delta if e.kind is FileKind.ADD]

        def plan(latest: Snapshot | None) -> list[ManifestEntry]:
            if removed:
                self._check_conflicts(latest, removed, added, kind=CommitKind.COMPACT)
            return delta

        sid = self._commit_with_retries(plan, kind=CommitKind.COMPACT, identifier=commit_identifier,
                                        properties=properties)
        assert sid is not None  # plan never gives up
        return sid

    def _commit_with_retries(
        self,
        plan: Callable[[Snapshot | None], list[ManifestEntry] | None],
        *,
        kind: CommitKind,
        identifier: int,
        properties: dict[str, str] | None,
    ) -> int | None:
        """Attempt until a snapshot lands; ``plan`` turns the latest snapshot into the delta (None: nothing to do).

        Paimon: FileStoreCommitImpl#tryCommit / #tryCommitOnce.
        """
        opts = self.options
        retries = opts.commit_max_retries
        timeout_ms = opts.commit_timeout
        started = time.monotonic()
        attempt = 0
        seen: int | None = None  # latest snapshot id of the previous attempt that might have published
        pending: list[_Pending] = []
        error: BaseException | None = None
        landed: str | None = None  # base manifest list of the snapshot that settled the commit
        settled = False
        try:
            while True:
                try:
                    latest = self.snapshot_manager.latest_snapshot()
                    if seen is not None:
                        done = self._landed_since(seen, latest, identifier=identifier, kind=kind)
                        if done is not None:
                            landed, settled = done.base_manifest_list, True
                            return done.id
                    # From here on the previous attempts are known not to have landed.
                    settled = True
                    delta = plan(latest)
                    if delta is None:
                        return None
                    seen = latest.id if latest is not None else 0
                    settled = False
                    sid = self._try_commit(latest, delta, kind=kind, identifier=identifier, properties=properties)
                    if sid is not None:
                        settled = True
                        return sid
                    error = None
                except _Unsure as e:
                    pending.append(_Pending(e.base_manifest_list, e.files))
                    error = e.__cause__
                except CommitConflictError:
                    raise
                except FileIOError as e:
                    # Transient storage failures are retried like a lost race; a later attempt first checks
                    # whether an uncertain earlier one landed after all.
                    error = e
                attempt += 1
                elapsed_ms = (time.monotonic() - started) * 1000
                if attempt > retries or (timeout_ms is not None and elapsed_ms > timeout_ms):
                    what = (f"storage kept failing ({type(error).__name__}: {error})" if error is not None
                            else "other writers kept publishing snapshots first")
                    if pending:
                        raise CommitStateUnknownError(
                            f"Commit of table {self.table_name} by commit user {self.commit_user} gave up after "
                            f"{attempt - 1} retries: {what}. A snapshot publish failed without a clear answer, so "
                            f"the commit may have landed; commit again with the same commit user and identifier "
                            f"(that lands at most once)"
                        ) from error
                    raise CommitError(
                        f"Commit of table {self.table_name} failed after {attempt - 1} retries: {what}"
                    ) from error
                self._backoff(attempt)
        finally:
            if settled:
                for p in pending:
                    if p.base_manifest_list != landed:
                        self._delete_quietly(p.files)

    def _landed_since(
        self, seen: int, latest: Snapshot | None, *, identifier: int, kind: CommitKind
    ) -> Snapshot | None:
        """Our snapshot among those published after ``seen`` (a previous attempt may have landed unnoticed).

        Reads only the snapshots since the previous attempt, so its cost follows the contention, not history.
        """
        if latest is None:
            return None
        for sid in range(latest.id, seen, -1):
            s = latest if sid == latest.id else self.snapshot_manager.try_snapshot(sid)
            if (s is not None and s.commit_user == self.commit_user and s.commit_identifier == identifier
                    and s.commit_kind is kind):
                return s
        return None

    def _try_commit(
        self,
        latest: Snapshot | None,
        delta: list[ManifestEntry],
        *,
        kind: CommitKind,
        identifier: int,
        properties: dict[str, str] | None,
    ) -> int | None:
        if kind is not CommitKind.COMPACT:
            self._check_single_key_writer(latest)
        scan = self.scan_factory()
        opts = self.options
        writer = ManifestWriter(
            file_io=self.file_io,
            paths=TablePaths(self.table_path),
            partition_codec=scan.partition_codec,
            schema_id=self.schema.id,
            fmt=opts.manifest_format,
            compression=opts.manifest_compression,
            target_size=opts.manifest_target_file_size,
            merge_min_count=opts.manifest_merge_min_count,
            full_compaction_threshold=opts.manifest_full_compaction_threshold_size,
        )
        next_row_id = latest.next_row_id if latest is not None else None
        if opts.row_tracking_enabled and not self.schema.primary_keys:
            from laketide.write.row_tracking import assign_row_tracking

            delta, next_row_id = assign_row_tracking(
                delta, snapshot_id=(latest.id + 1) if latest is not None else 1, next_row_id=next_row_id or 0)
        try:
            previous = scan.data_manifests(latest) if latest is not None else []
            base = writer.merge(previous, scan.manifest)
            base_name, base_size = writer.write_manifest_list(base)
            delta_metas = writer.write_manifests(delta)
            delta_name, delta_size = writer.write_manifest_list(delta_metas)
            delta_rows = sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in delta)
            changelog = getattr(self, "_compact_changelog" if kind is CommitKind.COMPACT else "_changelog", [])
            index_changes = getattr(self, "_compact_index_changes" if kind is CommitKind.COMPACT else "_index_changes",
                                    ())
            changelog_name, changelog_size = (
                writer.write_manifest_list(writer.write_manifests(changelog)) if changelog else (None, None)
            )
            snapshot = Snapshot(
                id=(latest.id + 1) if latest is not None else 1,
                schema_id=self.schema.id,
                base_manifest_list=base_name,
                base_manifest_list_size=base_size,
                delta_manifest_list=delta_name,
                delta_manifest_list_size=delta_size,
                changelog_manifest_list=changelog_name,
                changelog_manifest_list_size=changelog_size,
                index_manifest=next_index_manifest(
                    file_io=self.file_io, table_path=self.table_path, schema=self.schema, latest=latest, scan=scan,
                    changes=index_changes,
                    delta=delta, kind=kind, table_name=self.table_name,
                ),
                commit_user=self.commit_user,
                commit_identifier=identifier,
                commit_kind=kind,
                time_millis=int(time.time() * 1000),
                total_record_count=(latest.total_record_count if latest is not None else 0) + delta_rows,
                delta_record_count=delta_rows,
                changelog_record_count=sum(e.file.row_count for e in changelog),
                properties=properties,
                # Row tracking: laketide assigns no row ids, but must not lose the next free one.
                next_row_id=next_row_id,
            )
            self._make_durable(scan, [*delta, *changelog], index_changes, snapshot, latest, writer)
        except BaseException:  # even an interrupt: delete this attempt's manifests, then re-raise
            self._cleanup(writer)
            raise
        return self._publish(snapshot, writer)

    def _make_durable(self, scan: FileStoreScan, entries: Sequence[ManifestEntry],
                      index_changes: Sequence[IndexManifestEntry], snapshot: Snapshot, latest: Snapshot | None,
                      writer: ManifestWriter) -> None:
        """Everything the snapshot references that is new must survive a power loss before it is published:
        the added data / changelog files (and their extra files), index files and this attempt's manifests."""
        paths = scan.path_factory
        assert paths is not None
        new: list[str] = []
        for e in entries:
            if e.kind is FileKind.ADD:
                new += paths.data_file_paths(e.partition, e.bucket, e.file)
        for c in index_changes:
            if c.kind is FileKind.ADD:
                new.append(paths.bucket_index_file_path(c.partition, c.bucket, c.index_file.file_name,
                                                        c.index_file.external_path))
        new += writer.written or ()
        if snapshot.index_manifest is not None and (latest is None or latest.index_manifest != snapshot.index_manifest):
            new.append(paths.manifest_path(snapshot.index_manifest))
        self.file_io.make_durable(new)

    def _publish(self, snapshot: Snapshot, writer: ManifestWriter) -> int | None:
        """Publish ``snapshot``: its id, None when another writer took the id (our files are then removed).

        A failed publish is ambiguous (the link or conditional put may have happened before the error): the
        snapshot is read back, and only a definite answer lets us delete this attempt's files.
        """
        try:
            published = self.snapshot_manager.try_publish(snapshot)
        except Exception as e:  # any failure is ambiguous: read back, then clean up only on a definite answer
            try:
                there = self.snapshot_manager.try_snapshot(snapshot.id)
            except Exception:  # noqa: BLE001 - still no answer; the caller retries and checks again
                raise _Unsure(base_manifest_list=snapshot.base_manifest_list,
                              files=list(writer.written or ())) from e
            if there is not None and there.base_manifest_list == snapshot.base_manifest_list:
                return snapshot.id
            self._cleanup(writer)
            raise
        if published:
            return snapshot.id
        self._cleanup(writer)
        return None

    def _cleanup(self, writer: ManifestWriter) -> None:
        self._delete_quietly(writer.written or ())
        if writer.written is not None:
            writer.written.clear()

    def _delete_quietly(self, paths: Sequence[str]) -> None:
        # Cleanup must not mask the error being handled; what stays behind is left to remove_orphan_files.
        for p in paths:
            self.file_io.delete_quietly(p)

    def _overwrite_deletes(self, latest: Snapshot | None, overwrite_filter: Predicate | None) -> list[ManifestEntry]:
        if latest is None:
            return []
        live = self.scan_factory().plan(latest, predicate=overwrite_filter)
        return [
            ManifestEntry(kind=FileKind.DELETE, partition=e.partition, bucket=e.bucket,
                          total_buckets=e.total_buckets, file=e.file)
            for e in live
        ]

    def _check_single_key_writer(self, latest: Snapshot | None) -> None:
        """A cross-partition writer looked every key up at one snapshot: fail if another writer has appended or
        overwritten since (its new keys were invisible to the lookup, so a key could now be in two partitions).
        Compactions and this writer's own earlier commits are fine. Reads only the snapshots since that one."""
        base = getattr(self, "_key_index_base", None)
        if base is None or latest is None:
            return
        for sid in range(latest.id, base.snapshot_id or 0, -1):
            s = latest if sid == latest.id else self.snapshot_manager.try_snapshot(sid)
            if s is None or s.commit_kind is CommitKind.COMPACT:
                continue
            if (s.properties or {}).get(KEY_INDEX_WRITER) != base.writer_id:
                raise WriteConflictError(
                    f"Table {self.table_name} (cross-partition upsert) was written by another job since this one "
                    f"looked its keys up at snapshot {base.snapshot_id or 0}: snapshot {s.id} "
                    f"({s.commit_kind.value}, commit user {s.commit_user}). A key written by both could end up in two "
                    f"partitions, so nothing was committed. Only one job may write a table whose primary key lacks "
                    f"partition keys at a time; re-run this write from the latest snapshot."
                )

    def _check_conflicts(
        self, latest: Snapshot | None, removed: list[ManifestEntry], added: list[ManifestEntry], *, kind: CommitKind
    ) -> None:
        """Fail when files this commit deletes are no longer live, or files it adds are live already.

        Only the partitions this commit changes are planned: writers of other partitions never conflict, and
        the cost follows the changed partitions, not the table.
        Paimon: ConflictDetection#checkConflicts ("File deletion conflicts detected! Give up committing.").
        """
        if latest is not None and not removed and kind is not CommitKind.COMPACT and self._added_files_checked(
                latest, added):
            return
        if latest is None:
            live: set[tuple[object, ...]] = set()
        else:
            live = {e.identifier for e in self._live(latest, {e.partition for e in (*removed, *added)})}
        gone = [e.file.file_name for e in removed if e.identifier not in live]
        twice = [e.file.file_name for e in added if e.identifier in live]
        if not gone and not twice:
            return
        if twice and kind is not CommitKind.COMPACT:
            refuse_committed({name: f"live in snapshot {latest.id if latest else 0}" for name in twice},
                             table_name=self.table_name)
        problem = (f"files it deletes are no longer live: {gone[:_SHOWN_FILES]}" if gone
                   else f"files it adds are live already: {twice[:_SHOWN_FILES]}")
        base = (f"snapshot {latest.id} ({latest.commit_kind.value}, commit user {latest.commit_user})"
                if latest is not None else "an empty table")
        raise CommitConflictError(
            f"File deletion conflict: the {kind.value} commit of table {self.table_name} by commit user "
            f"{self.commit_user} cannot apply on top of {base}: {problem}. Nothing was committed. Cause: another "
            f"job compacted, overwrote or deleted the same files since this commit read the table (two jobs "
            f"compacting the same partitions, or a job restarted from an old state). Remedy: let one dedicated job "
            f"compact (set 'write-only' = 'true' on the writing jobs and run Table.compact in one job), then re-run "
            f"this job from the latest snapshot. Writers of different partitions never conflict."
        )

    def _added_files_checked(self, latest: Snapshot, added: list[ManifestEntry]) -> bool:
        """Refuse files some snapshot since the writers' base snapshot added (from those snapshots' deltas, not
        the live files: the cost follows the snapshots since the write, not the table). False: could not tell
        (no base, or a snapshot in between expired), the caller checks the live files."""
        base = self._origin_base
        if base is None:
            return False
        names = {e.file.file_name for e in added}
        deltas = self._committed_files().deltas_since(latest, base, names)
        if deltas.gap:
            return False
        held: dict[str, str] = {}
        for name, kind, holder in deltas.records:
            if kind is FileKind.ADD:
                held.setdefault(name, holder)
        refuse_committed(held, table_name=self.table_name)
        return True

    def _scan(self) -> FileStoreScan:
        if self._scan_cache is None:
            self._scan_cache = self.scan_factory()
        return self._scan_cache

    def _live(self, latest: Snapshot, partitions: set[bytes]) -> list[ManifestEntry]:
        """Live files of ``latest`` in ``partitions`` (planned once per snapshot and partition set)."""
        key = (latest.id, latest.base_manifest_list, frozenset(partitions))
        if self._live_cache is not None and self._live_cache[0] == key:
            return self._live_cache[1]
        known = self._restored_plan(latest) if self._restored_plan is not None else None
        if known is not None:
            entries = [e for e in known if e.partition in partitions]
        else:
            scan = self._scan()
            entries = scan.plan(latest, predicate=self._partitions_predicate(scan, partitions))
        self._live_cache = (key, entries)
        return entries

    def _committed_files(self) -> CommittedFiles:
        return CommittedFiles(snapshot_manager=self.snapshot_manager, scan=self._scan(), live=self._live)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the new files of messages that will never be committed, except any a snapshot or tag holds.

        Safe on messages that were committed after all (a retry, a replay): their files are kept. Deletes go
        through the table's deleter (never outside the table). Paimon: TableCommit#abort.
        """
        names = new_file_names(messages)
        if not names:
            return
        finder = self._committed_files()
        held = finder.find(messages, self.snapshot_manager.latest_snapshot(), tags=True)
        if finder.uncertain:
            _LOG.warning("Table %s: not deleting the %d files of aborted commit messages: a snapshot whose manifests "
                         "could not be read might hold them (orphan cleanup removes them if not)", self.table_name,
                         len(names))
            return
        if held:
            _LOG.warning("Table %s: aborted commit messages hold %d files a snapshot references; they are kept: %s",
                         self.table_name, len(held), list(held.items())[:_SHOWN_FILES])
        paths = self._scan().path_factory
        assert paths is not None
        deleter = TableFileDeleter.for_options(self.file_io, self.table_path, self.schema.options,
                                               table_name=self.table_name)
        for name, (m, f) in names.items():
            if name not in held:
                deleter.delete_all(paths.data_file_paths(m.partition, m.bucket, f))

    def _partitions_predicate(self, scan: FileStoreScan, partitions: set[bytes]) -> Predicate | None:
        keys = list(self.schema.partition_keys)
        if not keys or not partitions:
            return None
        from laketide.types import to_arrow_schema

        types = {f.name: f.type for f in to_arrow_schema(self.schema.row_type)}
        try:
            alternatives = []
            for part in partitions:
                leaves = [Leaf(Op.IS_NULL, k, ()) if v is None else Leaf(Op.EQ, k, (v,))
                          for k, v in zip(keys, scan.partition_codec.values(part), strict=True)]
                alternatives.append(and_(*leaves) if len(leaves) > 1 else leaves[0])
            return bind(or_(*alternatives) if len(alternatives) > 1 else alternatives[0], types)
        except Exception:  # noqa: BLE001 - pruning is an optimisation: an unbindable value just plans everything
            return None

    def _already_committed(self, latest: Snapshot, identifier: int) -> int | None:
        """The snapshot that committed ``identifier`` (or a later one) for this user, if any.

        Identifiers of one commit user only grow (Paimon: FileStoreCommitImpl#filterCommitted).
        """
        s = self.snapshot_manager.latest_snapshot_of_user(self.commit_user, latest=latest)
        return s.id if s is not None and s.commit_identifier >= identifier else None

    def _backoff(self, attempt: int) -> None:
        lo = self.options.commit_min_retry_wait
        hi = self.options.commit_max_retry_wait
        wait_ms = min(hi, lo * (2 ** min(attempt, 16)))
        time.sleep(random.uniform(lo, max(lo, wait_ms)) / 1000.0)
