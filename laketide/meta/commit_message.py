"""What a writer hands to the committer: the files one (partition, bucket) gained or lost.

Crosses driver <-> executor boundaries (Spark), so it is a small picklable value object.

Paimon: table.sink.CommitMessageImpl, io.DataIncrement, io.CompactIncrement
"""

from __future__ import annotations

from dataclasses import dataclass

from laketide.meta.manifest import DataFileMeta, IndexFileMeta

__all__ = ["CommitMessage", "KeyIndexBase"]


@dataclass(frozen=True, slots=True)
class KeyIndexBase:
    """Where a cross-partition writer's key -> partition lookup came from: the snapshot it read the table's keys
    at (None: empty table) and the writer's id, which its own snapshots carry. Another job's appends after that
    snapshot could put a key in two partitions: the commit then fails."""

    writer_id: str
    snapshot_id: int | None


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
    key_index_base: KeyIndexBase | None = None  # cross-partition upsert only

    def is_empty(self) -> bool:
        return not (
            self.new_files or self.deleted_files or self.changelog_files or self.compact_before
            or self.compact_after or self.new_index_files or self.deleted_index_files
        )
