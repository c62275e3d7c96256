"""What a writer hands to the committer: the files one (partition, bucket) gained or lost.

Crosses driver <-> executor boundaries (Spark), so it is a small picklable value object.

Paimon: table.sink.CommitMessageImpl, io.DataIncrement, io.CompactIncrement
"""

from __future__ import annotations

from dataclasses import dataclass

from laketide.meta.manifest import DataFileMeta, IndexFileMeta

__all__ = ["CommitMessage", "KeyIndexBase", "WriteOrigin"]


@dataclass(frozen=True, slots=True)
class KeyIndexBase:
    """Where a cross-partition writer's key -> partition lookup came from: the snapshot it read the table's keys
    at (None: empty table) and the writer's id, which its own snapshots carry. Another job's appends after that
    snapshot could put a key in two partitions: the commit then fails."""

    writer_id: str
    snapshot_id: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteOrigin:
    """Which table a message was written for, and what the writer could have seen.

    The committer refuses messages of another table (path), or of a table dropped and re-created at the same path
    (the schema's creation time differs). ``base_snapshot_id`` is the latest snapshot before the writer wrote its
    first file (None: the table was empty): no snapshot up to it can hold these files, so checking whether they
    were committed already reads only the snapshots after it.
    """

    table_path: str
    schema_id: int
    schema_time_ms: int
    base_snapshot_id: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitMessage:
    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    # Index files a compaction changed (deletion vectors): they apply with the COMPACT snapshot, not the APPEND one.
    compact_new_index_files: tuple[IndexFileMeta, ...] = ()
    compact_deleted_index_files: tuple[IndexFileMeta, ...] = ()
    # Changelog files a compaction produced (changelog-producer = lookup): listed by the COMPACT snapshot.
    compact_changelog_files: tuple[DataFileMeta, ...] = ()
    key_index_base: KeyIndexBase | None = None  # cross-partition upsert only
    origin: WriteOrigin | None = None  # None: unknown (messages built by hand, or pickled by an older laketide)

    @property
    def write_origin(self) -> WriteOrigin | None:
        # A message unpickled from an older laketide has no origin slot at all.
        return getattr(self, "origin", None)

    def is_empty(self) -> bool:
        return not (
            self.new_files or self.deleted_files or self.changelog_files or self.compact_before
            or self.compact_after or self.new_index_files or self.deleted_index_files
            or self.compact_index_files_changed
        )

    @property
    def compact_index_files_changed(self) -> bool:
        # A message pickled by an older laketide has no such slots.
        return bool(getattr(self, "compact_new_index_files", ()) or getattr(self, "compact_deleted_index_files", ())
                    or getattr(self, "compact_changelog_files", ()))
