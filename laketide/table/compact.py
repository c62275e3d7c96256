"""Compaction wired to a table: writers that compact their buckets, and the dedicated ``Table.compact``.

``Table.compact`` is the dedicated compaction job of Paimon's "write-only writers + one compaction job" setup: it
plans the latest snapshot, compacts every chosen bucket (in parallel) and commits a COMPACT snapshot whose
manifest deletes the replaced files and adds the new ones. If another job removed any of those files meanwhile,
the commit fails with CommitConflictError, the files it wrote are deleted and the table is unchanged.

Paimon: flink.action.CompactAction, operation.AbstractFileStoreWrite#compact, append.AppendCompactTask,
mergetree.compact.MergeTreeCompactManagerFactory
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import CommitConflictError, PredicateError, UnsupportedFeatureError
from laketide.expr import Predicate, bind, or_, parse_where, referenced_fields
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.commit_message import CommitMessage, WriteOrigin
from laketide.index.deletion_vectors import DELETION_VECTORS_INDEX
from laketide.index.dv_maintainer import BucketDeletionVectors, IndexFileChanges
from laketide.meta.manifest import DataFileMeta, FileSource, IndexFileMeta, ManifestEntry
from laketide.mergetree.compaction.dv_rewrite import DeletionVectorRewriter
from laketide.mergetree.compaction.full_changelog import FullCompactionChangelog
from laketide.mergetree.compaction.lookup_changelog import LookupChangelog
from laketide.mergetree.lookup import LookupLevels
from laketide.mergetree.lookup_files import writer_lookup_files
from laketide.options import ChangelogProducer, MergeEngine
from laketide.mergetree.compaction.append import AppendCompactSettings, pack_unaware, pick_bucketed
from laketide.mergetree.compaction.manager import (
    CompactingMergeTreeWriter,
    CompactionSettings,
    MergeTreeCompactManager,
    strategy_for,
)
from laketide.mergetree.compaction.task import CompactResult, KeyValueRewriter
from laketide.mergetree.engines import merge_function_for
from laketide.mergetree.key_order import py_key
from laketide.mergetree.sort_merge import SortMergeSettings
from laketide.mergetree.levels import Levels
from laketide.mergetree.writer import MergeTreeWriter
from laketide.io.file_writer import RollingFileWriter
from laketide.write.table_write import TableWrite
from laketide.scan.row_tracking import ROW_SEQUENCE_NUMBER
from laketide.table.dv_delete import restore_bucket_vectors
from laketide.table.row_tracking_compact import TRACKED_COLUMNS, stamp_tracked_files, tracked_writer
from laketide.table.row_tracking_guard import refuse_data_evolution_compaction

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = [
    "BucketCompaction",
    "BucketFiles",
    "compact_bucket",
    "compact_table",
    "compacting_writer_factory",
    "discard_compaction",
    "plan_compaction",
]


class BucketFiles:
    """The latest snapshot's live files per (partition, bucket), planned once: what writers restore."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._files: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._dv_files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}

    def _load(self) -> dict[tuple[bytes, int], list[DataFileMeta]]:
        if self._files is None:
            files: dict[tuple[bytes, int], list[DataFileMeta]] = {}
            latest = self.table.snapshot_manager.latest_snapshot()
            if latest is not None:
                scan = self.table.file_scan()
                for e in self.table.plan_to_restore(latest):
                    files.setdefault((e.partition, e.bucket), []).append(e.file)
                for ie in scan.index_entries(latest):
                    if ie.index_file.index_type == DELETION_VECTORS_INDEX:
                        self._dv_files.setdefault((ie.partition, ie.bucket), []).append(ie.index_file)
            self._files = files
        return self._files

    def files(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        return list(self._load().get((partition, bucket), ()))

    def max_sequence(self, partition: bytes, bucket: int) -> int | None:
        files = self._load().get((partition, bucket))
        return max(f.max_sequence_number for f in files) if files else None

    def dv_index_files(self, partition: bytes, bucket: int) -> tuple[IndexFileMeta, ...]:
        """The bucket's deletion-vector index files in the latest snapshot."""
        self._load()
        return tuple(self._dv_files.get((partition, bucket), ()))


# -- building blocks ---------------------------------------------------------------------------------------------
def _key_decoder(tw: TableWrite) -> Callable[[bytes], tuple[Any, ...]]:
    types = list(tw.key_layout.types)
    # Compared as Java's key comparator compares (NaN keys equal, -0.0 below 0.0).
    return lambda raw: py_key(deserialize_binary_row(raw, types))


def _kv_reader(table: Table, bucket_dir: str, *,
               columns: Sequence[str] | None = None) -> Callable[[DataFileMeta, int], Iterator[pa.Table]]:
    # The reader is built at the first read: most bucket writers never compact (a small upsert's writer setup
    # spent ~10% of its time building readers nobody used).
    reader = functools.cache(functools.partial(table.store.new_read, columns=columns))

    def read(meta: DataFileMeta, batch_rows: int) -> Iterator[pa.Table]:
        path = meta.external_path or f"{bucket_dir}/{meta.file_name}"
        # The value columns (all, or ``columns`` and what the merge needs) plus _SEQUENCE_NUMBER / _VALUE_KIND,
        # evolved to the current schema.
        for batch in reader().read_kv_file(meta, path, batch_size=batch_rows):
            yield pa.Table.from_batches([batch])

    return read


def _output_writer(template: RollingFileWriter) -> Callable[[int], RollingFileWriter]:
    def new(level: int) -> RollingFileWriter:
        return replace(
            template, level=level, file_source=FileSource.COMPACT, written=[], written_paths=[], _writer=None,
            _out=None, _path=None, _name=None, _rows=0, _stats=None, _keys=None, _index=None,
        )

    return new


def _file_writer(tw: TableWrite, bucket_dir: str, *, level: int, next_sequence_number: int = 0,
                 task: BucketCompaction | None = None) -> RollingFileWriter:
    return RollingFileWriter(
        file_io=tw.file_io, paths=tw.paths, bucket_dir=bucket_dir, file_format=tw.file_format,
        schema=tw.kv_schema if tw.has_primary_key else tw.arrow_schema, schema_id=tw.schema.id,
        stats_layout=tw.stats_layout, target_file_size=tw.options.target_file_size(has_primary_key=tw.has_primary_key),
        compression=tw.options.file_compression, next_sequence_number=next_sequence_number,
        key_layout=tw.key_layout if tw.has_primary_key else None, level=level, file_source=FileSource.COMPACT,
        file_index=tw.file_index, file_index_fields=tw.file_index_fields, format_options=tw.format_options,
        external_paths=None if task is None else tw.path_factory.external_path_provider(task.partition, task.bucket),
    )


def _deleter(table: Table, bucket_dir: str) -> Callable[[DataFileMeta], None]:
    deleter = table.deleter

    def delete(f: DataFileMeta) -> None:
        deleter.delete(f.external_path or f"{bucket_dir}/{f.file_name}")

    return delete


def _manager(
    table: Table, tw: TableWrite, files: Sequence[DataFileMeta], *, bucket_dir: str, settings: CompactionSettings,
    template: RollingFileWriter, vectors: BucketDeletionVectors | None = None,
) -> MergeTreeCompactManager:
    merge = merge_function_for(table.schema)
    read = _kv_reader(table, bucket_dir)
    read_keys = _kv_reader(table, bucket_dir, columns=merge.spec.key_names)
    levels = Levels(files, num_levels=settings.num_levels, key_of=_key_decoder(tw))
    new_writer, sort = _output_writer(template), SortMergeSettings.from_options(table.options)
    options = table.options
    producer = options.changelog_producer is ChangelogProducer.LOOKUP
    # Deletion vectors alone, under an engine where the newest row wins, need only where a key sits: lookup
    # files of keys and positions (Java's PersistPositionProcessor), not of whole rows.
    positions_only = vectors is not None and not producer and merge.newest_row_wins
    lookup = None
    if vectors is not None or producer:
        shared = writer_lookup_files(table.path, local_dir=options.local_temp_dir,
                                     max_disk_size=options.lookup_cache_max_disk_size,
                                     retention_ms=options.lookup_cache_file_retention)
        layout = f"{table.branch}-s{table.schema.id}-{'keys' if positions_only else 'rows'}"
        lookup = LookupLevels(levels, key_names=merge.spec.key_names, read_file=read_keys if positions_only else read,
                              files=shared, layout=layout)
    rewriter: KeyValueRewriter
    if vectors is not None and lookup is not None:
        rewriter = DeletionVectorRewriter(read_file=read, new_writer=new_writer, merge=merge, kv_schema=tw.kv_schema,
                                          sort=sort, vectors=vectors, lookup=lookup, read_keys=read_keys)
    else:
        rewriter = KeyValueRewriter(read_file=read, new_writer=new_writer, merge=merge, kv_schema=tw.kv_schema,
                                    sort=sort, lookup=lookup)
    changelog = None
    if producer and lookup is not None:
        changelog = LookupChangelog(
            read_file=read, merge=merge, kv_schema=tw.kv_schema, lookup=lookup,
            deleted_mask=vectors.deleted_mask if vectors is not None else _nothing_deleted,
            new_writer=_changelog_writer(template), delete_file=_deleter(table, bucket_dir),
            first_row=options.merge_engine is MergeEngine.FIRST_ROW,
            row_deduplicate=options.changelog_producer_row_deduplicate,
        )
    full_changelog = None
    if options.changelog_producer is ChangelogProducer.FULL_COMPACTION:
        full_changelog = FullCompactionChangelog(
            read_file=read, kv_schema=tw.kv_schema, key_names=merge.spec.key_names, max_level=levels.max_level,
            new_writer=_changelog_writer(template), row_deduplicate=options.changelog_producer_row_deduplicate,
        )
    return MergeTreeCompactManager(levels, strategy=strategy_for(settings, files), rewriter=rewriter,
                                   settings=settings, changelog=changelog, full_changelog=full_changelog)


def _nothing_deleted(file_name: str, num_rows: int) -> None:
    return None


def _changelog_writer(template: RollingFileWriter) -> Callable[[int], RollingFileWriter]:
    new = _output_writer(template)

    def changelog(level: int) -> RollingFileWriter:
        return replace(new(level), changelog=True)

    return changelog


def _index_writer(table: Table, tw: TableWrite, vectors: BucketDeletionVectors, partition: bytes,
                  bucket: int) -> Callable[[], IndexFileChanges]:
    index_dir = table.store.path_factory.bucket_index_dir(partition, bucket)

    def write() -> IndexFileChanges:
        if not vectors.modified:
            return IndexFileChanges()
        return vectors.write_index_file(table.file_io, index_dir, tw.paths.new_index_file_name())

    return write


def compacting_writer_factory(
    table: Table, restore: BucketFiles
) -> Callable[[TableWrite, bytes, int, MergeTreeWriter], CompactingMergeTreeWriter]:
    """For ``TableWrite``: wraps each bucket's LSM writer so that it compacts (unless ``write-only``)."""
    settings = CompactionSettings.from_options(table.options)

    def wrap(tw: TableWrite, partition: bytes, bucket: int, writer: MergeTreeWriter) -> CompactingMergeTreeWriter:
        bucket_dir = writer.file_writer.bucket_dir
        vectors = (restore_bucket_vectors(table, restore.dv_index_files(partition, bucket), partition, bucket)
                   if settings.deletion_vectors else None)
        manager = _manager(table, tw, restore.files(partition, bucket), bucket_dir=bucket_dir,
                           settings=settings, template=writer.file_writer, vectors=vectors)
        return CompactingMergeTreeWriter(
            writer=writer, manager=manager, delete_file=_deleter(table, bucket_dir),
            write_index=_index_writer(table, tw, vectors, partition, bucket) if vectors is not None else None,
        )

    return wrap


# -- the dedicated compaction ------------------------------------------------------------------------------------
def partition_predicate(
    table: Table, partitions: Sequence[Mapping[str, object]] | None, where: str | Predicate | None
) -> Predicate | None:
    preds: list[Predicate] = []
    if partitions:
        parts = [table.partition_filter(p) for p in partitions]
        if any(p is None for p in parts):
            parts = []  # an empty mapping selects every partition
        preds.extend([or_(*[p for p in parts if p is not None])] if parts else [])
    if where is not None:
        types = {f.name: f.type for f in table.arrow_schema}
        pred = parse_where(where, types) if isinstance(where, str) else bind(where, types)
        outside = referenced_fields(pred) - set(table.partition_keys)
        if outside:
            raise PredicateError(
                f"Compaction of table {table.name} selects whole partitions: where= may only use partition keys "
                f"{list(table.partition_keys)}, not {sorted(outside)}"
            )
        preds.append(pred)
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    from laketide.expr import and_

    return and_(*preds)


@dataclass(frozen=True, slots=True, kw_only=True)
class BucketCompaction:
    """One bucket's compaction task, planned on a driver and runnable anywhere (picklable)."""

    snapshot_id: int  # the snapshot the task was planned from
    partition: bytes
    bucket: int
    total_buckets: int
    bucket_dir: str
    files: tuple[DataFileMeta, ...]
    dv_index_files: tuple[IndexFileMeta, ...] = ()  # the bucket's deletion-vector index files

    @property
    def has_deletion_vectors(self) -> bool:
        return any(f.dv_ranges for f in self.dv_index_files)


def plan_compaction(
    table: Table,
    *,
    partitions: Sequence[Mapping[str, object]] | None = None,
    where: str | Predicate | None = None,
) -> list[BucketCompaction]:
    """One task per live (partition, bucket) of the latest snapshot in the chosen partitions (all by default)."""
    refuse_data_evolution_compaction(table)
    latest = table.latest_snapshot()
    if latest is None:
        return []
    scan = table.file_scan()
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in scan.plan(latest, predicate=partition_predicate(table, partitions, where)):
        groups.setdefault((e.partition, e.bucket), []).append(e)
    dv_files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
    if groups:
        for ie in scan.index_entries(latest):
            if ie.index_file.index_type == DELETION_VECTORS_INDEX:
                dv_files.setdefault((ie.partition, ie.bucket), []).append(ie.index_file)
    paths = table.store.path_factory
    tasks = []
    for (partition, bucket), entries in groups.items():
        tasks.append(BucketCompaction(
            snapshot_id=latest.id, partition=partition, bucket=bucket, total_buckets=entries[0].total_buckets,
            bucket_dir=paths.bucket_dir(partition, bucket), files=tuple(e.file for e in entries),
            dv_index_files=tuple(dv_files.get((partition, bucket), ())),
        ))
    return tasks


def compact_bucket(table: Table, task: BucketCompaction, *, full: bool = False) -> CommitMessage | None:
    """Compact one bucket: writes the new files and returns their commit message (None: nothing to do).

    Nothing is committed; hand the messages of all buckets to ``table.commit`` (one COMPACT snapshot), or to
    ``discard_compaction`` if that commit fails.
    """
    refuse_data_evolution_compaction(table)
    tw = table.store.new_write()
    files = list(task.files)
    if table.primary_keys:
        settings = CompactionSettings.from_options(table.options)
        vectors = (restore_bucket_vectors(table, task.dv_index_files, task.partition, task.bucket)
                   if settings.deletion_vectors else None)
        if vectors is None and task.has_deletion_vectors:
            raise UnsupportedFeatureError(
                f"Table {table.name}: bucket {task.bucket} has deletion vectors but 'deletion-vectors.enabled' is "
                f"off; compacting it would bring deleted rows back"
            )
        manager = _manager(table, tw, files, bucket_dir=task.bucket_dir, settings=settings,
                           template=_file_writer(tw, task.bucket_dir, level=0, task=task), vectors=vectors)
        try:
            result = manager.compact(full=full) or CompactResult()
            while settings.force_level0 and manager.levels.level0:
                more = manager.compact()
                if more is None:
                    break
                result = _chain(result, more)
        finally:
            manager.rewriter.close()
        index = (_index_writer(table, tw, vectors, task.partition, task.bucket)()
                 if vectors is not None else IndexFileChanges())
        return _message(table, task, result, index)
    # Rewritten files leave their deleted rows (and their vectors) behind; other files keep their vectors.
    append_vectors = (restore_bucket_vectors(table, task.dv_index_files, task.partition, task.bucket)
                      if task.has_deletion_vectors else None)
    append_settings = AppendCompactSettings.from_options(table.options)
    if table.options.bucket <= 0:
        picked = pack_unaware(files, append_settings, full=full)
    else:
        window = pick_bucketed(files, append_settings, full=full)
        picked = [window] if window else []
    if full and append_vectors is not None:
        # A full compaction leaves no deleted row behind, even in a file the strategy would keep as it is.
        chosen = {f.file_name for group in picked for f in group}
        marked = [f for f in files if f.file_name not in chosen and append_vectors.vector_of(f.file_name)]
        picked = [*picked, marked] if marked else picked
    result = CompactResult()
    for group in picked:
        result += _rewrite_append(table, tw, group, task.bucket_dir, task, vectors=append_vectors)
    changes = (_index_writer(table, tw, append_vectors, task.partition, task.bucket)()
               if append_vectors is not None else None)
    return _message(table, task, result, changes)


def compact_table(
    table: Table,
    *,
    full: bool = False,
    partitions: Sequence[Mapping[str, object]] | None = None,
    where: str | Predicate | None = None,
    commit_user: str | None = None,
) -> int | None:
    """Compact the chosen partitions (all by default); returns the COMPACT snapshot id, None if nothing to do."""
    tasks = plan_compaction(table, partitions=partitions, where=where)
    if not tasks:
        return None
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(lambda task: compact_bucket(table, task, full=full), tasks))
    else:
        found = [compact_bucket(table, task, full=full) for task in tasks]
    messages = [m for m in found if m is not None]
    if not messages:
        return None
    try:
        return table.commit(messages, commit_user=commit_user)
    except CommitConflictError:
        discard_compaction(table, messages)
        raise


def _chain(first: CompactResult, second: CompactResult) -> CompactResult:
    """Two compactions of one bucket as one change: files the second replaced from the first never existed."""
    written = {(f.file_name, f.level) for f in first.after}
    before = first.before + tuple(f for f in second.before if (f.file_name, f.level) not in written)
    gone = {(f.file_name, f.level) for f in second.before}
    after = tuple(f for f in first.after if (f.file_name, f.level) not in gone) + second.after
    return CompactResult(before, after, first.changelog + second.changelog)


def _message(
    table: Table, task: BucketCompaction, result: CompactResult, index: IndexFileChanges | None = None
) -> CommitMessage | None:
    index = index or IndexFileChanges()
    if result.is_empty() and index.is_empty():
        return None
    origin = WriteOrigin(table_path=table.path, schema_id=table.schema.id, schema_time_ms=table.schema.time_millis,
                         base_snapshot_id=task.snapshot_id)
    return CommitMessage(partition=task.partition, bucket=task.bucket, total_buckets=task.total_buckets,
                         compact_before=result.before, compact_after=result.after,
                         compact_new_index_files=index.new, compact_deleted_index_files=index.deleted,
                         compact_changelog_files=result.changelog, origin=origin)


def discard_compaction(table: Table, messages: Sequence[CommitMessage]) -> None:
    """Delete the files an uncommitted compaction wrote (an upgraded file keeps its name and stays)."""
    kept = [replace(m, compact_after=tuple(
        f for f in m.compact_after if f.file_name not in {b.file_name for b in m.compact_before}
    )) for m in messages]
    table.abort(kept)


def _rewrite_append(
    table: Table, tw: TableWrite, files: Sequence[DataFileMeta], bucket_dir: str,
    task: BucketCompaction | None = None, *, vectors: BucketDeletionVectors | None = None,
) -> CompactResult:
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    # Row tracking: the rows keep their _ROW_ID / _SEQUENCE_NUMBER, written into the new files (as Java).
    tracked = bool(table.store.options.row_tracking_enabled)
    names = list(table.schema.field_names)
    reader = table.store.new_read(columns=[*names, *TRACKED_COLUMNS] if tracked else None)
    writer = _file_writer(tw, bucket_dir, level=0, next_sequence_number=ordered[0].min_sequence_number, task=task)
    if tracked:
        writer = tracked_writer(writer)
    sequences: list[pa.Array] = []
    try:
        for f in ordered:
            deleted = vectors.deleted_mask(f.file_name, f.row_count) if vectors is not None else None
            position = 0
            for batch in reader.read_file(f, f.external_path or f"{bucket_dir}/{f.file_name}"):
                rows = pa.Table.from_batches([batch])
                if deleted is not None:
                    rows = rows.filter(pa.array(~deleted[position:position + batch.num_rows]))
                    position += batch.num_rows
                if rows.num_rows:
                    writer.write(rows)
                    if tracked:
                        sequences.append(rows.column(ROW_SEQUENCE_NUMBER).combine_chunks())
            if vectors is not None:
                vectors.remove(f.file_name)
        after = writer.close()
    except BaseException:  # even an interrupt: delete the half-written outputs, then re-raise
        writer.abort()
        raise
    if tracked:
        after = stamp_tracked_files(after, sequences, names)
    return CompactResult(tuple(ordered), tuple(after))
