"""The committer: commit messages -> manifests -> a new snapshot, with optimistic concurrency.

A lost race for snapshot-N (another writer published it first) re-plans on top of the new latest snapshot and
tries again; files this attempt wrote are removed. ``(commit_user, commit_identifier)`` makes a commit
idempotent: a commit that already landed is not applied twice.

Paimon: operation.FileStoreCommitImpl
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from laketide.exceptions import CommitConflictError, CommitError
from laketide.expr import Predicate
from laketide.fs import FileIO
from laketide.meta.manifest import FileKind, ManifestEntry
from laketide.meta.commit_message import CommitMessage
from laketide.meta.paths import TablePaths
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.options import CoreOptions
from laketide.scan.file_scan import FileStoreScan
from laketide.schema.table_schema import TableSchema
from laketide.write.manifest_writer import ManifestWriter

__all__ = ["FileStoreCommit", "BATCH_COMMIT_IDENTIFIER"]

# Java's BatchWriteBuilder.COMMIT_IDENTIFIER: batch jobs commit once with Long.MAX_VALUE.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


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
    ) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.snapshot_manager = snapshot_manager
        self.scan_factory = scan_factory
        self.commit_user = commit_user

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
        if not overwrite and not added and not removed and not compact:
            return None
        if check_committed:
            latest = self.snapshot_manager.latest_snapshot()
            done = self._already_committed(latest, commit_identifier) if latest is not None else None
            if done is not None:
                return done
        sid = None
        if overwrite or added or removed:
            sid = self._commit_changes(added, removed, commit_identifier=commit_identifier,
                                       overwrite_filter=overwrite_filter, overwrite=overwrite,
                                       properties=properties)
            if sid is None:
                return None
        if compact:
            # One commit of a compacting writer yields two snapshots (seed 001 3.3.6): APPEND, then COMPACT.
            sid = self._commit_compact(compact, commit_identifier=commit_identifier, properties=properties,
                                       since=sid)
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
    ) -> int | None:
        retries = self.options.commit_max_retries
        attempt = 0
        while True:
            latest = self.snapshot_manager.latest_snapshot()
            if attempt > 0 and latest is not None:
                done = self._already_committed(latest, commit_identifier)
                if done is not None:
                    return done
            delta = list(removed)
            if overwrite:
                delta += self._overwrite_deletes(latest, overwrite_filter)
                if not added and not delta:
                    return None
            elif removed and latest is not None:
                self._check_still_live(latest, removed)
            delta += added
            kind = CommitKind.OVERWRITE if overwrite else CommitKind.APPEND
            sid = self._try_commit(latest, delta, kind=kind, identifier=commit_identifier, properties=properties)
            if sid is not None:
                return sid
            attempt += 1
            if attempt > retries:
                raise CommitError(
                    f"Commit to table {self.table_name} failed after {retries} retries: other writers kept "
                    f"publishing snapshots first"
                )
            self._backoff(attempt)

    def _commit_compact(
        self, delta: list[ManifestEntry], *, commit_identifier: int, properties: dict[str, str] | None,
        since: int | None,
    ) -> int:
        """Publish a COMPACT snapshot; fails with CommitConflictError when a replaced file is gone already."""
        removed = [e for e in delta if e.kind is FileKind.DELETE]
        retries = self.options.commit_max_retries
        attempt = 0
        while True:
            latest = self.snapshot_manager.latest_snapshot()
            if attempt > 0 and latest is not None:
                done = self._compact_committed(latest, commit_identifier, since=since)
                if done is not None:
                    return done
            if removed:
                if latest is None:
                    raise CommitConflictError(
                        f"Compaction of table {self.table_name} replaces files, but the table has no snapshot"
                    )
                self._check_still_live(latest, removed)
            sid = self._try_commit(latest, delta, kind=CommitKind.COMPACT, identifier=commit_identifier,
                                   properties=properties)
            if sid is not None:
                return sid
            attempt += 1
            if attempt > retries:
                raise CommitError(
                    f"Compaction commit to table {self.table_name} failed after {retries} retries: other writers "
                    f"kept publishing snapshots first"
                )
            self._backoff(attempt)

    def _compact_committed(self, latest: Snapshot, identifier: int, *, since: int | None) -> int | None:
        """Our COMPACT snapshot of ``identifier``, if a previous attempt published it after all."""
        floor = max(since or 0, (self.snapshot_manager.earliest_snapshot_id() or 1) - 1)
        sid = latest.id
        while sid > floor:
            s = latest if sid == latest.id else self.snapshot_manager.snapshot(sid)
            if (s.commit_user == self.commit_user and s.commit_identifier == identifier
                    and s.commit_kind is CommitKind.COMPACT):
                return s.id
            sid -= 1
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
        try:
            previous = scan.data_manifests(latest) if latest is not None else []
            base = writer.merge(previous, scan.manifest)
            base_name, base_size = writer.write_manifest_list(base)
            delta_metas = writer.write_manifests(delta)
            delta_name, delta_size = writer.write_manifest_list(delta_metas)
            delta_rows = sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in delta)
            snapshot = Snapshot(
                id=(latest.id + 1) if latest is not None else 1,
                schema_id=self.schema.id,
                base_manifest_list=base_name,
                base_manifest_list_size=base_size,
                delta_manifest_list=delta_name,
                delta_manifest_list_size=delta_size,
                changelog_manifest_list=None,
                index_manifest=latest.index_manifest if latest is not None else None,
                commit_user=self.commit_user,
                commit_identifier=identifier,
                commit_kind=kind,
                time_millis=int(time.time() * 1000),
                total_record_count=(latest.total_record_count if latest is not None else 0) + delta_rows,
                delta_record_count=delta_rows,
                changelog_record_count=0,
                properties=properties,
            )
            if self.snapshot_manager.try_publish(snapshot):
                return snapshot.id
        except BaseException:
            writer.cleanup()
            raise
        writer.cleanup()
        return None

    def _overwrite_deletes(self, latest: Snapshot | None, overwrite_filter: Predicate | None) -> list[ManifestEntry]:
        if latest is None:
            return []
        live = self.scan_factory().plan(latest, predicate=overwrite_filter)
        return [
            ManifestEntry(kind=FileKind.DELETE, partition=e.partition, bucket=e.bucket,
                          total_buckets=e.total_buckets, file=e.file)
            for e in live
        ]

    def _check_still_live(self, latest: Snapshot, removed: list[ManifestEntry]) -> None:
        live = {e.identifier for e in self.scan_factory().plan(latest)}
        gone = [e.file.file_name for e in removed if e.identifier not in live]
        if gone:
            raise CommitConflictError(
                f"Commit to table {self.table_name} conflicts with a concurrent commit: files {gone[:5]} it "
                f"deletes are already gone. Run compaction in one dedicated job (write-only = true for the others)."
            )

    def _already_committed(self, latest: Snapshot, identifier: int) -> int | None:
        sid: int | None = latest.id
        earliest = self.snapshot_manager.earliest_snapshot_id() or 1
        while sid is not None and sid >= earliest:
            s = latest if sid == latest.id else self.snapshot_manager.snapshot(sid)
            if s.commit_user == self.commit_user:
                return s.id if s.commit_identifier >= identifier else None
            sid -= 1
        return None

    def _backoff(self, attempt: int) -> None:
        lo = self.options.commit_min_retry_wait
        hi = self.options.commit_max_retry_wait
        wait_ms = min(hi, lo * (2 ** min(attempt, 16)))
        time.sleep(random.uniform(lo, max(lo, wait_ms)) / 1000.0)
