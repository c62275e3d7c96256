"""Row-level changes on append tables with ``deletion-vectors.enabled``: rows are deleted by vector, not rewritten.

A delete reads the files that may hold matching rows, marks the positions of the matching (still live) rows in
each file's deletion vector, and writes one index file per bucket with every vector of the bucket; the commit
replaces the bucket's previous index files (an OVERWRITE snapshot, as Java commits deletion vectors). An update
does the same and writes the changed rows as new files in the same commit. Unaware-bucket tables keep their
vectors in bucket 0, where their data files are (Java: ``UNAWARE_BUCKET``).

A concurrent change of the same bucket's vectors fails the commit with ``CommitConflictError`` (nothing changes).

Paimon: deletionvectors.append.AppendDeleteFileMaintainer, BucketedAppendDeleteFileMaintainer,
spark DeleteFromPaimonTableCommand (deletion-vector mode)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from laketide.expr import Predicate
from laketide.index.deletion_vectors import DELETION_VECTORS_INDEX, DeletionVector, read_dv_index_file
from laketide.index.dv_maintainer import BucketDeletionVectors
from laketide.meta.commit_message import CommitMessage
from laketide.meta.manifest import IndexFileMeta, ManifestEntry

if TYPE_CHECKING:
    from laketide.table.dml import PendingChange
    from laketide.table.table import Table

__all__ = ["drop_unreferenced_index_files", "plan_vector_change", "restore_bucket_vectors"]


def restore_bucket_vectors(table: Table, index_files: Sequence[IndexFileMeta], partition: bytes,
                           bucket: int) -> BucketDeletionVectors:
    """The vectors of one bucket, read from its deletion-vector index files."""
    vectors: dict[str, DeletionVector] = {}
    paths = table.store.path_factory
    for meta in index_files:
        if meta.dv_ranges:
            path = paths.bucket_index_file_path(partition, bucket, meta.file_name, meta.external_path)
            vectors.update(read_dv_index_file(table.file_io.read_bytes(path), meta.dv_ranges, path=path))
    return BucketDeletionVectors.restore(vectors, index_files, bit64=table.options.deletion_vectors_bitmap64)


def plan_vector_change(
    table: Table,
    predicate: Predicate,
    *,
    row_mask: Callable[[pa.Table, Predicate], np.ndarray],
    replace_rows: Callable[[pa.Table], pa.Table] | None = None,
) -> tuple[PendingChange, int]:
    """Mark the live rows matching ``predicate`` deleted (and, for an update, write ``replace_rows`` of them as
    new rows); returns the uncommitted change and how many rows matched."""
    from laketide.table.dml import PendingChange

    store = table.store
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    scan = store.new_scan()
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in scan.plan(snapshot, predicate=predicate):
        by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    index_files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
    for ie in scan.index_entries(snapshot):
        if ie.index_file.index_type == DELETION_VECTORS_INDEX:
            index_files.setdefault((ie.partition, ie.bucket), []).append(ie.index_file)
    reader = store.new_read()
    paths = store.path_factory
    names = paths.new_file_names()
    messages: list[CommitMessage] = []
    written: list[CommitMessage] = []
    matched = 0
    w = table.new_write() if replace_rows is not None else None
    try:
        try:
            for (partition, bucket), entries in by_bucket.items():
                vectors = restore_bucket_vectors(table, tuple(index_files.get((partition, bucket), ())), partition,
                                                 bucket)
                for e in entries:
                    path = e.file.external_path or f"{paths.bucket_dir(partition, bucket)}/{e.file.file_name}"
                    rows = pa.Table.from_batches(list(reader.read_file(e.file, path)), schema=reader.output_schema)
                    mask = row_mask(rows, predicate)
                    already = vectors.deleted_mask(e.file.file_name, rows.num_rows)
                    if already is not None:
                        mask &= ~already
                    if not mask.any():
                        continue
                    vectors.notify_deletions(e.file.file_name, np.flatnonzero(mask))
                    matched += int(mask.sum())
                    if w is not None and replace_rows is not None:
                        w.write(replace_rows(rows.filter(pa.array(mask))))
                changes = vectors.write_index_file(table.file_io, paths.bucket_index_dir(partition, bucket),
                                                   names.new_index_file_name())
                if not changes.is_empty():
                    messages.append(CommitMessage(
                        partition=partition, bucket=bucket, total_buckets=entries[0].total_buckets,
                        new_index_files=changes.new, deleted_index_files=changes.deleted,
                    ))
            if w is not None and matched:
                written = w.prepare_commit()
        except BaseException:
            if w is not None:
                w.abort()
            _drop_index_files(table, messages)
            raise
    finally:
        if w is not None:
            w.close()
    return PendingChange(table, messages=messages + written), matched


def _drop_index_files(table: Table, messages: list[CommitMessage]) -> None:
    paths = table.store.path_factory
    for m in messages:
        for f in m.new_index_files:
            table.deleter.delete(paths.bucket_index_file_path(m.partition, m.bucket, f.file_name, f.external_path))


def drop_unreferenced_index_files(table: Table, messages: Sequence[CommitMessage]) -> None:
    """Delete the new index files of change messages that were not committed (the latest snapshot does not list
    them: a commit that lost a conflict), so a refused change leaves nothing behind."""
    latest = table.snapshot_manager.latest_snapshot()
    live = set()
    if latest is not None:
        live = {e.index_file.file_name for e in table.store.new_scan().index_entries(latest)}
    _drop_index_files(table, [replace(m, new_index_files=tuple(f for f in m.new_index_files
                                                                if f.file_name not in live)) for m in messages])
