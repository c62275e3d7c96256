"""The next snapshot's index manifest: the previous one combined with the index files a commit adds or removes.

Every snapshot references the index manifest of its table state; a commit that changes no index file reuses the
previous name. Hash indexes and bucketed deletion vectors combine per (partition, bucket, index type): a new file
replaces the bucket's old one, deletions apply first. Other index types combine by file name. The written
manifest holds ADD entries only (Java checks that when it reads the previous manifest).

Concurrent dynamic-bucket writers are detected here: a commit's new HASH file of a bucket was built on the file
its message names as deleted (or on none); when the latest snapshot holds a different file for that bucket,
another job assigned keys to it meanwhile and the commit fails with ``CommitConflictError``.

Paimon: manifest.IndexManifestFile#writeIndexFiles, manifest.IndexManifestFileHandler (BucketedCombiner,
GlobalCombiner), operation.commit.ManifestEntryChanges
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from laketide.exceptions import CommitConflictError, WriteConflictError
from laketide.fs import FileIO
from laketide.meta.commit_message import CommitMessage
from laketide.meta.manifest import FileKind, IndexManifestEntry, ManifestEntry
from laketide.meta.manifest_io import encode_records, to_records
from laketide.meta.manifest_schema import INDEX_MANIFEST_ENTRY
from laketide.meta.paths import TablePaths
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.options import CoreOptions
from laketide.scan.file_scan import FileStoreScan
from laketide.schema.table_schema import TableSchema

__all__ = [
    "check_deletion_vector_conflicts",
    "check_hash_index_conflicts",
    "check_vectors_name_live_files",
    "combine_index_entries",
    "index_changes",
    "next_index_manifest",
]

_BUCKETED = ("HASH", "DELETION_VECTORS")


def index_changes(messages: Iterable[CommitMessage], *, compact: bool = False) -> list[IndexManifestEntry]:
    """The index files of ``messages`` as DELETE (deleted_index_files) then ADD entries, message by message;
    ``compact``: those of their compactions (compact_deleted_index_files / compact_new_index_files)."""
    out: list[IndexManifestEntry] = []
    for m in messages:
        deleted = getattr(m, "compact_deleted_index_files", ()) if compact else m.deleted_index_files
        new = getattr(m, "compact_new_index_files", ()) if compact else m.new_index_files
        out += [IndexManifestEntry(kind=FileKind.DELETE, partition=m.partition, bucket=m.bucket, index_file=f)
                for f in deleted]
        out += [IndexManifestEntry(kind=FileKind.ADD, partition=m.partition, bucket=m.bucket, index_file=f)
                for f in new]
    return out


def _bucket_id(e: IndexManifestEntry) -> tuple[bytes, int, str]:
    return (e.partition, e.bucket, e.index_file.index_type)


def combine_index_entries(
    previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry], *, bucket_unaware: bool = False
) -> list[IndexManifestEntry]:
    """Live index entries after ``changes`` (all ADD), as Java's IndexManifestFileHandler combines them."""
    bucketed: dict[tuple[bytes, int, str], IndexManifestEntry] = {}
    by_name: dict[str, IndexManifestEntry] = {}

    def per_bucket(e: IndexManifestEntry) -> bool:
        t = e.index_file.index_type
        return t == "HASH" or (t == "DELETION_VECTORS" and not bucket_unaware)

    for e in previous:
        if per_bucket(e):
            bucketed[_bucket_id(e)] = e
        else:
            by_name[e.index_file.file_name] = e
    for e in changes:  # deletions first, so that a bucket's replacement is not removed again
        if e.kind is FileKind.DELETE:
            if per_bucket(e):
                current = bucketed.get(_bucket_id(e))
                if current is not None and current.index_file.file_name == e.index_file.file_name:
                    del bucketed[_bucket_id(e)]
            else:
                by_name.pop(e.index_file.file_name, None)
    for e in changes:
        if e.kind is FileKind.ADD:
            if per_bucket(e):
                bucketed[_bucket_id(e)] = e
            else:
                by_name[e.index_file.file_name] = e
    return list(bucketed.values()) + list(by_name.values())


def check_hash_index_conflicts(
    live: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry], *, table_name: str
) -> None:
    """Fail when a bucket's new hash index was not built on the bucket's current one (a concurrent job)."""
    added: dict[tuple[bytes, int], list[str]] = {}
    deleted: dict[tuple[bytes, int], list[str]] = {}
    for e in changes:
        if e.index_file.index_type != "HASH":
            continue
        target = added if e.kind is FileKind.ADD else deleted
        target.setdefault((e.partition, e.bucket), []).append(e.index_file.file_name)
    if not added:
        return
    current = {(e.partition, e.bucket): e.index_file.file_name for e in live if e.index_file.index_type == "HASH"}
    for key, names in added.items():
        replaced = deleted.get(key, [])
        # Successive prepare_commits of one writer chain: each new file replaces the previous new one.
        heads = [n for n in names if n not in replaced]
        bases = [n for n in replaced if n not in names]
        if len(heads) > 1:
            raise CommitConflictError(
                f"Commit to table {table_name}: {len(heads)} writers built hash indexes for bucket {key[1]} of one "
                f"partition independently (files {heads}); a dynamic-bucket table takes one writer per bucket — "
                f"write it through one TableWrite or laketide.spark.write, which routes each key to one assigner"
            )
        base = bases[0] if bases else None
        now = current.get(key)
        if now != base:
            raise WriteConflictError(
                f"Commit to table {table_name} conflicts with a concurrent dynamic-bucket writer: bucket {key[1]} "
                f"of a partition now has hash index {now!r}, but this commit was built on {base!r}. Only one job "
                f"may write a dynamic-bucket table at a time (it could put one key in two buckets); write the rows "
                f"again from the latest snapshot (Table.write does that by itself)"
            )


def check_deletion_vector_conflicts(
    live: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry], *, table_name: str
) -> None:
    """Fail when a bucket's new deletion vectors were not built on the bucket's current ones: another compaction
    changed them meanwhile, and replacing its file would bring back the rows it deleted.

    Paimon: operation.commit.ConflictDetection (deletion vector conflicts)
    """
    replaced: dict[tuple[bytes, int], set[str]] = {}
    for e in changes:
        if e.index_file.index_type == "DELETION_VECTORS":
            names = replaced.setdefault((e.partition, e.bucket), set())
            if e.kind is FileKind.DELETE:
                names.add(e.index_file.file_name)
    if not replaced:
        return
    current: dict[tuple[bytes, int], set[str]] = {}
    for e in live:
        if e.index_file.index_type == "DELETION_VECTORS":
            current.setdefault((e.partition, e.bucket), set()).add(e.index_file.file_name)
    for key, names in replaced.items():
        now = current.get(key, set())
        if now != names:
            raise CommitConflictError(
                f"Commit to table {table_name}: the deletion vectors of bucket {key[1]} of a partition were "
                f"changed by a concurrent compaction (now {sorted(now)}, this compaction was built on "
                f"{sorted(names)}); give up this compaction and compact again from the latest snapshot"
            )


def check_vectors_name_live_files(
    live: Sequence[ManifestEntry], changes: Sequence[IndexManifestEntry], delta: Sequence[ManifestEntry], *,
    table_name: str,
) -> None:
    """Fail when a new deletion vector belongs to a data file that is gone: a concurrent compaction rewrote it
    after the rows were marked (append tables; Java: ConflictDetection's deletion-vector check)."""
    added = [e for e in changes if e.kind is FileKind.ADD and e.index_file.index_type == "DELETION_VECTORS"]
    if not added:
        return
    names = {e.file.file_name for e in live}
    names -= {e.file.file_name for e in delta if e.kind is FileKind.DELETE}
    names |= {e.file.file_name for e in delta if e.kind is FileKind.ADD}
    for e in added:
        gone = sorted(m.data_file_name for m in e.index_file.dv_ranges or () if m.data_file_name not in names)
        if gone:
            raise CommitConflictError(
                f"Commit to table {table_name}: deletion vectors of data files {gone[:3]} that a concurrent commit "
                f"removed (compacted or overwritten); run the change again from the latest snapshot"
            )


def next_index_manifest(
    *,
    file_io: FileIO,
    table_path: str,
    schema: TableSchema,
    latest: Snapshot | None,
    scan: FileStoreScan,
    changes: Sequence[IndexManifestEntry],
    delta: Sequence[ManifestEntry],
    kind: CommitKind,
    table_name: str,
) -> str | None:
    """The index manifest name the new snapshot references (the previous one when nothing changes).

    ``scan`` reads the latest snapshot's index entries (only when something changes). An OVERWRITE drops the index
    files of the partitions whose data files it deletes (their keys are gone); the commit's own new files then apply
    on top.
    """
    previous = latest.index_manifest if latest is not None else None
    changed = bool(changes)
    if not changed and kind is not CommitKind.OVERWRITE:
        return previous
    live = scan.index_entries(latest) if latest is not None else []
    if kind is CommitKind.OVERWRITE:
        gone = {e.partition for e in delta if e.kind is FileKind.DELETE}
        dropped = [e for e in live if e.partition in gone]
        if dropped:
            live = [e for e in live if e.partition not in gone]
            # The writer's files in those partitions now replace nothing.
            changes = [c for c in changes if not (c.kind is FileKind.DELETE and c.partition in gone)]
            changed = True
    if not changed:
        return previous
    check_hash_index_conflicts(live, changes, table_name=table_name)
    check_deletion_vector_conflicts(live, changes, table_name=table_name)
    if not schema.primary_keys and latest is not None:
        check_vectors_name_live_files(scan.plan(latest), changes, delta, table_name=table_name)
    unaware = not schema.primary_keys and schema.core_options.bucket == -1
    return _write(file_io, table_path, schema.core_options,
                  combine_index_entries(live, changes, bucket_unaware=unaware))


def _write(file_io: FileIO, table_path: str, options: CoreOptions, entries: list[IndexManifestEntry]) -> str | None:
    if not entries:
        return None
    paths = TablePaths(table_path)
    name = paths.new_index_manifest_name()
    data = encode_records(to_records(entries), INDEX_MANIFEST_ENTRY, fmt=options.manifest_format,
                          compression=options.manifest_compression)
    file_io.write_bytes(f"{paths.manifest_dir}/{name}", data)
    return name
