"""Batch writing to a table: rows -> data files per (partition, bucket) -> commit messages.

``TableWrite`` is executor-side work: it writes files and returns picklable ``CommitMessage``s; the
committer (driver side) turns them into a snapshot. Append tables write rows as they come; primary-key tables go
through one LSM writer per bucket (write buffer -> sorted level-0 runs).

Paimon: table.sink.TableWriteImpl, operation.AppendFileStoreWrite, operation.KeyValueFileStoreWrite
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.format import file_format
from laketide.index.dv_maintainer import IndexFileChanges
from laketide.fs import FileIO
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.commit_message import CommitMessage, KeyIndexBase, WriteOrigin
from laketide.meta.manifest import DataFileMeta
from laketide.meta.paths import FileStorePathFactory
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.index.file_index.writer import file_index_spec
from laketide.io.kv import VALUE_KIND, RowKind, kv_schema, parse_row_kinds
from laketide.mergetree.engines import check_writable, merge_function_for
from laketide.mergetree.writer import MergeTreeWriter
from laketide.options import ChangelogProducer, CoreOptions, check_write_options
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema
from laketide.write.bucket_assigner import (
    ASSIGNED_BUCKET_COLUMN,
    DynamicBucketIndex,
    HashBucketAssigner,
    assigner_layout,
    dynamic_bucket_mode,
    max_buckets,
    plan_dynamic,
)
from laketide.write.bucketing import Group, GroupRows, group_rows, split_by_partition_and_bucket
from laketide.write.cross_partition import CrossPartitionAssigner
from laketide.write.conform import conform, to_arrow
from laketide.write.flush_pipeline import write_groups_flushing
from laketide.write.routed_pieces import group_pieces
from laketide.write.write_budget import flush_biggest, is_buffered, piece_rows
from laketide.io.file_writer import KeyLayout, RollingFileWriter, StatsLayout

# Arrow bytes per row group of a primary-key table's Parquet files (about 16k-32k rows of a typical row).
KEYED_ROW_GROUP_BYTES = 2 * 1024 * 1024

__all__ = ["TableWrite"]

# (partition bytes, bucket) -> the bucket's highest sequence number so far, or None for a new bucket.
SequenceRestorer = Callable[[bytes, int], "int | None"]
# (the table write, partition bytes, bucket, the bucket's LSM writer) -> the writer to use instead (e.g. one that
# compacts).
WriterWrapper = Callable[["TableWrite", bytes, int, MergeTreeWriter], "_BucketWriter"]


class _BucketWriter(Protocol):
    def write(self, rows: pa.Table) -> None: ...
    def prepare_commit(self) -> list[DataFileMeta]: ...
    def abort(self) -> None: ...


@runtime_checkable
class _Compacting(Protocol):
    """A bucket writer that compacts: prepare_commit may compact fully; the compaction is drained after."""

    def prepare_commit(self, *, full_compaction: bool = False) -> list[DataFileMeta]: ...
    def drain_compaction(self) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]: ...


@runtime_checkable
class _ChangelogProducing(Protocol):
    """A bucket writer that writes changelog files (changelog-producer = input)."""

    def drain_changelog(self) -> list[DataFileMeta]: ...


@runtime_checkable
class _CompactChangelogProducing(Protocol):
    """A bucket writer whose compactions produce changelog files (changelog-producer = lookup)."""

    def drain_compact_changelog(self) -> list[DataFileMeta]: ...


@runtime_checkable
class _IndexMaintaining(Protocol):
    """A bucket writer that maintains index files of its own (deletion vectors), written at prepare_commit."""

    def drain_index_files(self) -> IndexFileChanges: ...


@dataclass(slots=True)
class _AppendWriter:
    files: RollingFileWriter

    def write(self, rows: pa.Table) -> None:
        self.files.write(rows)

    def prepare_commit(self) -> list[DataFileMeta]:
        files = self.files.close()
        self.files.written.clear()
        self.files.written_paths.clear()
        return files

    def abort(self) -> None:
        self.files.abort()


@dataclass(frozen=True, slots=True)
class _BucketKey:
    partition: bytes
    bucket: int


class TableWrite:
    """Writes rows of one table; ``prepare_commit()`` returns the commit messages of everything written."""

    def __init__(
        self,
        *,
        file_io: FileIO,
        table_path: str,
        table_name: str,
        schema: TableSchema,
        restore_sequence: SequenceRestorer | None = None,
        wrap_writer: WriterWrapper | None = None,
        options: CoreOptions | None = None,
        path_factory: FileStorePathFactory | None = None,
    ) -> None:
        """``options`` and ``path_factory`` come from the table's FileStore (built from ``schema`` if not)."""
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self.schema = schema
        self.options = options if options is not None else schema.core_options
        # A Java-written table may carry options laketide cannot honour: refuse before writing anything.
        check_write_options(schema.options, table_name=table_name)
        from laketide.write.validation import check_blob_columns

        check_blob_columns(schema, table_name)
        self.arrow_schema = to_arrow_schema(schema.row_type)
        self.partition_types = [f.type for f in schema.partition_fields]
        self.path_factory = path_factory if path_factory is not None else FileStorePathFactory.from_options(
            table_path, partition_keys=schema.partition_keys, partition_types=self.partition_types,
            options=self.options)
        self.paths = self.path_factory.new_file_names()
        self.num_buckets = self.options.bucket
        self.has_primary_key = bool(schema.primary_keys)
        if self.has_primary_key:
            self._check_primary_key_support()
        self.bucket_keys = schema.bucket_keys() if self.num_buckets > 0 else []
        self.bucket_key_types = [schema.field(k).type for k in self.bucket_keys]
        self.file_format = file_format(self.options.file_format)
        # The codec reads its own keys (parquet.block.size / page.size / compression, the zstd level, ...), as
        # Java's format factories take the table's options.
        self.format_options = dict(schema.options)
        if self.has_primary_key and self.options.file_format == "parquet":
            # Key-sorted files in small row groups: point and key-range reads skip row groups by their _KEY_
            # statistics (a full read measured no cost); an explicit parquet.block.size wins.
            self.format_options.setdefault("parquet.block.size", str(KEYED_ROW_GROUP_BYTES))
        self.stats_layout = StatsLayout(
            names=tuple(schema.field_names),
            types=tuple(f.type for f in schema.fields),
            modes=tuple(self.options.stats_mode(n) for n in schema.field_names),
        )
        key_names = tuple(schema.trimmed_primary_keys)
        self.key_layout = KeyLayout(
            names=key_names,
            types=tuple(schema.field(k).type for k in key_names),
            modes=tuple(self.options.stats_mode(k) for k in key_names),
        )
        self.kv_schema = kv_schema(self.arrow_schema, key_names, thin=self.options.data_file_thin_mode)
        self.file_index = file_index_spec(schema, table_name=table_name)
        self.file_index_fields = {f.name: f.type for f in schema.fields}
        self._restore_sequence = restore_sequence
        self._wrap_writer = wrap_writer
        self._writers: dict[_BucketKey, _BucketWriter] = {}
        # Dynamic bucket mode (bucket = -1): built on first write from the latest snapshot.
        self.dynamic_mode = dynamic_bucket_mode(schema)
        self.assigner_ids: tuple[int, ...] | None = None  # a Spark task assigns only its own ids
        self._dynamic_index: DynamicBucketIndex | None = None
        self._assigner: HashBucketAssigner | None = None
        self._cross: CrossPartitionAssigner | None = None
        # Cross-partition upsert: the snapshot the key lookup read (set by the bootstrap, or by Spark's join).
        self.key_index_base: KeyIndexBase | None = None
        # The latest snapshot before this round's first file (read at the first write, renewed by prepare_commit).
        self._base_snapshot: tuple[int | None] | None = None

    @property
    def blob_names(self) -> tuple[str, ...]:
        from laketide.scan.blob_read import blob_columns

        return tuple(blob_columns(self.schema.fields))

    def _blob_writer(self, files: RollingFileWriter) -> _BucketWriter:
        # BLOB columns go to .blob files beside the data file of the other columns (write/blob_write.py).
        from laketide.write.blob_write import BlobAppendWriter

        blobs = self.blob_names
        keep = [i for i, n in enumerate(self.stats_layout.names) if n not in blobs]
        layout = StatsLayout(names=tuple(self.stats_layout.names[i] for i in keep),
                             types=tuple(self.stats_layout.types[i] for i in keep),
                             modes=tuple(self.stats_layout.modes[i] for i in keep))
        normal = pa.schema([f for f in self.arrow_schema if f.name not in blobs])
        target = self.options.blob_target_file_size
        return BlobAppendWriter(
            files=replace(files, schema=normal, stats_layout=layout,
                          file_index_fields={k: v for k, v in files.file_index_fields.items() if k not in blobs}),
            blob_names=blobs, file_io=self.file_io, paths=files.paths, bucket_dir=files.bucket_dir,
            schema_id=self.schema.id,
            blob_target_size=target if target is not None else self.options.target_file_size(has_primary_key=False),
        )

    def _check_primary_key_support(self) -> None:
        if self.num_buckets <= 0 and self.num_buckets != -1:
            raise UnsupportedFeatureError(
                f"Table {self.table_name}: bucket = {self.num_buckets} (postpone bucket) is not writable yet; "
                f"use a fixed 'bucket' number or -1 (dynamic buckets)"
            )
        check_writable(self.schema, table_name=self.table_name)

    # -- writing -----------------------------------------------------------------------------------------------
    def write(
        self,
        data: Any,
        *,
        row_kind: RowKind | None = None,
        buckets: Any = None,
        row_kinds: Any = None,
        final: bool = False,
    ) -> None:
        """Write Arrow / pandas / polars data; a schema mismatch raises before any file is written.

        On primary-key tables rows are upserts (+I) unless ``row_kind`` is given or the ``rowkind.field`` column
        says otherwise. An earlier stage (Spark's assigner) may hand over what it decided as arrays aligned with
        the rows: ``buckets`` (dynamic-bucket tables: each row's bucket) and ``row_kinds`` (each row's RowKind
        value, already checked and filtered). They never come from columns of ``data``.

        ``final``: ``prepare_commit`` comes next (no other write before it). A fixed-bucket primary-key table then
        flushes each bucket as soon as its rows are in, on worker threads (write/flush_pipeline.py), and the call
        returns with the files written. Writing again before the commit still works (those rows make one more
        level-0 run per bucket they touch).
        """
        if buckets is not None and self.dynamic_mode is None:
            raise ValueError(f"Table {self.table_name} has fixed buckets: it computes each row's bucket itself")
        table = self.prepare(data, row_kind=row_kind, buckets=buckets, row_kinds=row_kinds)
        if table.num_rows == 0:
            return
        if self._base_snapshot is None:
            self._base_snapshot = (self._latest_snapshot_id(),)
        if self.dynamic_mode is not None:
            if final and self._write_dynamic_flushing(table):
                return
            # Routed over the whole call first, then buffered in pieces, bounded after each (write/routed_pieces.py).
            for group in self._route_dynamic(table, max_rows=piece_rows(table, self.options.write_buffer_size)):
                self._writer(group.partition, group.bucket).write(group.rows)
                self._bound_write_buffers()
            return
        if final and self.has_primary_key:
            self._write_flushing(table)
            return
        # Primary-key rows go to the buffers a bucket at a time, in pieces, bounded after each
        # (write/write_budget.py).
        for group in split_by_partition_and_bucket(
            table,
            partition_keys=self.schema.partition_keys,
            bucket_keys=self.bucket_keys,
            bucket_key_types=self.bucket_key_types,
            num_buckets=self.num_buckets,
            max_rows=piece_rows(table, self.options.write_buffer_size) if self.has_primary_key else None,
        ):
            self._writer(group.partition, group.bucket).write(group.rows)
            if self.has_primary_key:
                self._bound_write_buffers()

    def prepare(
        self,
        data: Any,
        *,
        row_kind: RowKind | None = None,
        buckets: Any = None,
        row_kinds: Any = None,
        carry: Sequence[str] = (),
    ) -> pa.Table:
        """``data`` conformed to the table (with ``_VALUE_KIND`` on primary-key tables), as ``write`` takes it.

        The ``carry`` columns of ``data`` (an earlier stage's bookkeeping, e.g. arrival order) are set aside before
        conforming and ride along through row-kind filtering; every other column must be the table's. ``buckets``
        and ``row_kinds`` are arrays aligned with the rows (see ``write``).
        """
        if row_kind is not None and row_kinds is not None:
            raise ValueError("give row_kind= (one kind for every row) or row_kinds= (one per row), not both")
        partial = row_kind in (RowKind.DELETE, RowKind.UPDATE_BEFORE)
        incoming = to_arrow(data)
        n = incoming.num_rows
        for name, values in (("buckets", buckets), ("row_kinds", row_kinds)):
            if values is not None and len(values) != n:
                raise ValueError(f"{name} has {len(values)} values for {n} rows (table {self.table_name})")
        table = conform(incoming.drop_columns(list(carry)) if carry else incoming, self.arrow_schema,
                        table_name=self.table_name, fill_missing=partial,
                        required=self.schema.primary_keys if partial else None)
        for name in carry:
            table = table.append_column(name, incoming.column(name))
        if buckets is not None:
            table = table.append_column(ASSIGNED_BUCKET_COLUMN, pa.array(buckets, pa.int32()))
        if self.has_primary_key:
            return self._with_row_kinds(table, row_kind, row_kinds)
        if row_kind not in (None, RowKind.INSERT) or row_kinds is not None:
            raise SchemaError(f"Table {self.table_name} has no primary key: it only takes inserts")
        return table

    def _write_flushing(self, table: pa.Table) -> None:
        """The last write before the commit: each bucket flushes once its rows are in (write/flush_pipeline.py)."""
        groups = group_rows(table, partition_keys=self.schema.partition_keys, bucket_keys=self.bucket_keys,
                            bucket_key_types=self.bucket_key_types, num_buckets=self.num_buckets)
        self._flush_groups(groups, table)

    def _flush_groups(self, groups: Sequence[GroupRows], table: pa.Table) -> None:
        """Buffer each group and flush it on a worker as soon as its rows are in, within write-buffer-size."""
        write_groups_flushing(
            groups,
            writer_of=lambda g: self._writer(g.partition, g.bucket),
            buffered=lambda: [w for w in self._writers.values() if is_buffered(w)],
            budget=self.options.write_buffer_size,
            max_rows=piece_rows(table, self.options.write_buffer_size),
            workers=os.cpu_count() or 1,
        )

    def _write_dynamic_flushing(self, table: pa.Table) -> bool:
        """The last write before the commit into a dynamic-bucket or cross-partition table: routed as the serial
        path routes it, then each bucket is copied and flushed on a worker as soon as its rows are in (the fixed
        tables' pipeline). False (nothing done): the rows need rewriting on the way (partial-update / aggregation
        across partitions), the serial path takes them."""
        if self.dynamic_mode == "cross-partition":
            if ASSIGNED_BUCKET_COLUMN in table.column_names or not self._cross_assigner().plans_groups:
                return False
            groups = self._cross_assigner().plan(table)
        else:
            groups = list(self._plan_dynamic(table))
        self._flush_groups(groups, table)
        return True

    def _bound_write_buffers(self) -> None:
        """Keep all buckets' buffers within write-buffer-size: flush the biggest as level-0 runs."""
        flush_biggest([w for w in self._writers.values() if is_buffered(w)], self.options.write_buffer_size)

    def _cross_assigner(self) -> CrossPartitionAssigner:
        if self._cross is None:
            self._cross = CrossPartitionAssigner.bootstrap(
                file_io=self.file_io, table_path=self.table_path, schema=self.schema)
            assert self._cross.bootstrap_stats is not None
            self.key_index_base = KeyIndexBase(uuid.uuid4().hex, self._cross.bootstrap_stats.snapshot_id)
        return self._cross

    def _route_dynamic(self, table: pa.Table, *, max_rows: int | None) -> Iterator[Group]:
        if self.dynamic_mode == "cross-partition" and ASSIGNED_BUCKET_COLUMN not in table.column_names:
            yield from self._cross_assigner().route(table, max_rows=max_rows)
            return
        yield from group_pieces(self._plan_dynamic(table), max_rows)

    def _plan_dynamic(self, table: pa.Table) -> Iterator[GroupRows]:
        """The bucket groups of a dynamic-bucket table (or of rows whose buckets an assigner stage chose), not
        copied yet."""
        assigned = None
        if ASSIGNED_BUCKET_COLUMN in table.column_names:  # write(buckets=...): an assigner stage chose them
            assigned = np.asarray(table.column(ASSIGNED_BUCKET_COLUMN).to_numpy(), dtype=np.int32)
            table = table.drop_columns([ASSIGNED_BUCKET_COLUMN])
        if self.dynamic_mode == "cross-partition":
            # ... and also the partitions and row kinds (no hash index in this mode)
            yield from plan_dynamic(table, schema=self.schema, partition_types=self.partition_types,
                                    index=None, assigner=None, assigned=assigned)
            return
        if self._dynamic_index is None:
            self._dynamic_index = DynamicBucketIndex.latest(
                file_io=self.file_io, table_path=self.table_path, schema=self.schema)
        if assigned is None and self._assigner is None:
            self._assigner = HashBucketAssigner(
                index=self._dynamic_index, layout=assigner_layout(self.options),
                target_row_num=self.options.dynamic_bucket_target_row_num, max_buckets=max_buckets(self.options),
                assign_ids=self.assigner_ids,
            )
        yield from plan_dynamic(table, schema=self.schema, partition_types=self.partition_types,
                                index=self._dynamic_index, assigner=self._assigner, assigned=assigned)

    @property
    def bucket_assigner(self) -> HashBucketAssigner | CrossPartitionAssigner | None:
        """The dynamic-bucket assigner of this writer (None before the first write or with fixed buckets)."""
        return self._cross if self._cross is not None else self._assigner

    def upsert(self, data: Any) -> None:
        self.write(data, row_kind=RowKind.INSERT)

    def delete(self, data: Any) -> None:
        """Delete rows by primary key (other columns may be left out)."""
        self.write(data, row_kind=RowKind.DELETE)

    def _with_row_kinds(self, table: pa.Table, row_kind: RowKind | None, row_kinds: Any = None) -> pa.Table:
        if row_kinds is not None:  # prepared (filtered, checked) by an earlier stage
            kinds_column = pa.array(row_kinds).cast(pa.int8())
            return table.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), kinds_column)
        field = self.options.rowkind_field
        if row_kind is not None:
            kinds = np.full(table.num_rows, int(row_kind), dtype=np.int8)
        elif field is not None:
            kinds = parse_row_kinds(table.column(field), field=field)
        else:
            kinds = np.zeros(table.num_rows, dtype=np.int8)
        kind_array = pa.array(kinds, pa.int8())
        table = table.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), kind_array)
        if self.options.ignore_delete:
            retract = pc.or_(pc.equal(kind_array, 1), pc.equal(kind_array, 3))
            table = table.filter(pc.invert(retract))
        from laketide.mergetree.engines import prepare_rows  # row kinds the merge engine cannot take fail here

        return prepare_rows(self.schema, table, table_name=self.table_name)

    # -- committing --------------------------------------------------------------------------------------------
    def prepare_commit(self, *, full_compaction: bool = False) -> list[CommitMessage]:
        """Flush everything and describe what was written; the writer can be used again after.

        Buckets whose writer compacts also report what their compaction replaced (``full_compaction`` forces a
        full compaction of every bucket this writer touched).
        """
        total = self.num_buckets if self.num_buckets > 0 else (-1 if self.dynamic_mode is not None else 0)
        origin = None if self._base_snapshot is None else WriteOrigin(
            table_path=self.table_path, schema_id=self.schema.id, schema_time_ms=self.schema.time_millis,
            base_snapshot_id=self._base_snapshot[0])
        messages = []
        items = list(self._writers.items())

        def flush(w: _BucketWriter) -> list[DataFileMeta]:
            if isinstance(w, _Compacting):
                return w.prepare_commit(full_compaction=full_compaction)
            return w.prepare_commit()

        # Buckets flush (and compact) independently: sorting and encoding release the GIL, so use every core.
        workers = min(len(items), os.cpu_count() or 1)
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(flush, w) for _, w in items]
            errors = [f.exception() for f in futures]
            flushed = [[] if e is not None else f.result() for f, e in zip(futures, errors)]
        else:
            flushed, errors = [], []
            for _, w in items:
                try:
                    flushed.append(flush(w))
                    errors.append(None)
                except BaseException as e:  # noqa: BLE001 - re-raised below, after the cleanup
                    flushed.append([])
                    errors.append(e)
                    break
        def forget_flushed() -> None:
            # A bucket that flushed has handed its files over (its writer forgot them): nobody will commit them now,
            # and abort() would not find them. The failed bucket's own files are left to abort().
            for (key, _), files in zip(items, flushed):
                for f in files:
                    for path in self.path_factory.data_file_paths(key.partition, key.bucket, f):
                        self.file_io.delete_quietly(path)

        failed = next((e for e in errors if e is not None), None)
        if failed is not None:
            forget_flushed()
            raise failed
        try:
            indexes = self._dynamic_index.prepare_commit() if self._dynamic_index is not None else {}
        except BaseException:  # a hash index file failed (the index deleted its own): the data files go too
            forget_flushed()
            raise
        if self._assigner is not None:
            self._assigner.prepare_commit()
        for (key, w), files in zip(items, flushed):
            before, after = w.drain_compaction() if isinstance(w, _Compacting) else ((), ())
            new_index, old_index = indexes.pop((key.partition, key.bucket), (None, None))
            own = w.drain_index_files() if isinstance(w, _IndexMaintaining) else IndexFileChanges()
            changelog = w.drain_changelog() if isinstance(w, _ChangelogProducing) else []
            compact_changelog = w.drain_compact_changelog() if isinstance(w, _CompactChangelogProducing) else []
            if (files or changelog or compact_changelog or before or after or new_index is not None
                    or not own.is_empty()):
                messages.append(
                    CommitMessage(partition=key.partition, bucket=key.bucket, total_buckets=total,
                                  new_files=tuple(files), changelog_files=tuple(changelog),
                                  compact_before=before, compact_after=after,
                                  new_index_files=() if new_index is None else (new_index,),
                                  deleted_index_files=() if old_index is None else (old_index,),
                                  compact_new_index_files=own.new, compact_deleted_index_files=own.deleted,
                                  compact_changelog_files=tuple(compact_changelog),
                                  key_index_base=self.key_index_base, origin=origin)
                )
        # Files of the next round are written after this point: no snapshot up to the current latest holds them.
        self._base_snapshot = (self._latest_snapshot_id(),) if messages else self._base_snapshot
        return messages

    def _latest_snapshot_id(self) -> int | None:
        return SnapshotManager(self.file_io, self.table_path,
                               snapshot_dir=self.path_factory.snapshot_dir).latest_snapshot_id()

    def abort(self) -> None:
        """Delete the files written since the last prepare_commit()."""
        for w in self._writers.values():
            w.abort()
        if self._dynamic_index is not None:
            self._dynamic_index.abort()
        if self._cross is not None:  # it learnt the aborted rows' keys: bootstrap again at the next write
            self._cross = None
            self.key_index_base = None

    def close(self) -> None:
        self._writers.clear()

    def _writer(self, partition_values: tuple[object, ...], bucket: int) -> _BucketWriter:
        part_bytes = serialize_binary_row(list(partition_values), self.partition_types)
        key = _BucketKey(part_bytes, bucket)
        existing = self._writers.get(key)
        if existing is not None:
            return existing
        restored = self._restore_sequence(part_bytes, bucket) if self._restore_sequence else None
        next_seq = 0 if restored is None else restored + 1
        files = RollingFileWriter(
            file_io=self.file_io,
            paths=self.paths,
            bucket_dir=self.path_factory.bucket_dir_of(partition_values, bucket),
            file_format=self.file_format,
            schema=self.kv_schema if self.has_primary_key else self.arrow_schema,
            schema_id=self.schema.id,
            stats_layout=self.stats_layout,
            target_file_size=self.options.target_file_size(has_primary_key=self.has_primary_key),
            compression=self.options.file_compression,
            next_sequence_number=next_seq,
            key_layout=self.key_layout if self.has_primary_key else None,
            file_index=self.file_index,
            file_index_fields=self.file_index_fields,
            external_paths=self.path_factory.external_path_provider(part_bytes, bucket),
            format_options=self.format_options,
        )
        if self.has_primary_key:
            lsm = MergeTreeWriter(
                file_writer=files,
                merge=merge_function_for(self.schema),
                kv_schema=self.kv_schema,
                value_names=tuple(self.arrow_schema.names),
                next_sequence_number=next_seq,
                changelog_writer=(replace(files, changelog=True, written=[], written_paths=[])
                                  if self.options.changelog_producer is ChangelogProducer.INPUT else None),
            )
            w: _BucketWriter = self._wrap_writer(self, part_bytes, bucket, lsm) if self._wrap_writer else lsm
        elif self.blob_names:
            w = self._blob_writer(files)
        else:
            w = _AppendWriter(files)
        self._writers[key] = w
        return w
