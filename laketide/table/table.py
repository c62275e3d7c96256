"""The table facade: what users hold to read, write, commit and evolve a Paimon table.

Paimon: table.FileStoreTable, AbstractFileStoreTable
"""

from __future__ import annotations

import datetime as _dt
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from laketide.exceptions import (
    CommitStateUnknownError,
    InvalidOptionError,
    LaketideError,
    NoSuchSnapshotError,
    NotFoundError,
    SchemaError,
    WriteConflictError,
)
from laketide.expr import Leaf, Op, Predicate, and_, bind, or_
from laketide.fs import FileIO
from laketide.meta.commit_message import CommitMessage
from laketide.meta.deletion import TableFileDeleter
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import MAIN_BRANCH, FileStorePathFactory
from laketide.meta.snapshot import Snapshot
from laketide.meta.snapshot_manager import CommitLock, SnapshotManager
from laketide.options import CoreOptions
from laketide.scan.file_scan import FileStoreScan
from laketide.schema.changes import SchemaChange
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.store import FileStore
from laketide.table.incremental import IncrementalScan
from laketide.table.read import TableScan
from laketide.table.sequence_restore import SequenceCache
from laketide.write.commit import FileStoreCommit
from laketide.write.table_write import TableWrite
from laketide.write.validation import validate_table_schema

if TYPE_CHECKING:
    import pandas as pd

    from laketide.table.dml import ChangeResult
    from laketide.table.inspection import TableInspector
    from laketide.table.lookup import KeyBatch
    from laketide.table.maintenance import CompactionResult, ExpireResult
    from laketide.table.merge import MergeBuilder
    from laketide.table.orphan import OrphanFilesResult
    from laketide.table.overwrite import OverwriteSpec, PartitionOverwrite
    from laketide.table.schema_merge import SchemaMode
    from laketide.table.branches import BranchManager
    from laketide.table.consumers import ConsumerManager
    from laketide.table.tags import TagManager

__all__ = ["Table"]

WriteMode = Literal["append", "overwrite"]

_LOG = logging.getLogger(__name__)

class Table:
    def __init__(
        self,
        *,
        name: str,
        path: str,
        file_io: FileIO,
        schema: TableSchema | None = None,
        commit_lock: CommitLock | None = None,
        branch: str = MAIN_BRANCH,
    ) -> None:
        """``commit_lock`` serializes snapshot publishing on stores without atomic write-if-absent
        (a catalog lock, Paimon's ``lock.enabled``). ``branch`` names the branch this table reads and writes
        (its snapshots, schemas, tags and consumers live under ``branch/branch-<name>``)."""
        self.name = name
        self.path = path
        self.file_io = file_io
        self.branch = branch
        self._commit_lock = commit_lock
        dirs = FileStorePathFactory(path, branch=branch)
        self.schema_manager = SchemaManager(file_io, path, schema_dir=dirs.schema_dir)
        self.snapshot_manager = SnapshotManager(file_io, path, lock=commit_lock, snapshot_dir=dirs.snapshot_dir)
        latest = schema or self.schema_manager.latest()
        if latest is None:
            where = path if branch == MAIN_BRANCH else f"{path} (branch {branch})"
            raise SchemaError(f"Table {name} at {where} has no schema")
        self._schema = latest
        self._store: FileStore | None = None
        # The live files of the last snapshot a writer restored from: the commit that follows checks its new
        # files against the same snapshot, usually, and reuses the plan instead of reading the manifests again.
        self._restored_plan: tuple[tuple[int, str], list[ManifestEntry]] | None = None
        # Buckets' highest sequence numbers, moved forward snapshot by snapshot (not re-planned at every write).
        self._sequence_cache = SequenceCache()

    def __repr__(self) -> str:
        s = self._schema
        parts = [f"{len(s.fields)} columns"]
        if s.primary_keys:
            parts.append(f"primary key {list(s.primary_keys)}")
        if s.partition_keys:
            parts.append(f"partitioned by {list(s.partition_keys)}")
        parts.append(f"bucket {s.options.get('bucket', '-1')}")
        if self.branch != MAIN_BRANCH:
            parts.append(f"branch {self.branch}")
        try:
            latest = self.snapshot_manager.latest_snapshot_id()
            parts.append("no snapshot" if latest is None else f"snapshot {latest}")
        except (LaketideError, OSError):  # a repr never fails: the store may be unreachable
            parts.append("snapshot unknown")
        return f"<Table {self.name} at {self.path}: {', '.join(parts)}>"

    # -- metadata ----------------------------------------------------------------------------------------------
    @property
    def inspect(self) -> TableInspector:
        """The table's metadata as Arrow tables with Python-typed values: ``files()``, ``partitions()``,
        ``buckets()``, ``manifests()``, ``snapshots()``, ``schemas()``, ``tags()``, ``branches()`` ..."""
        from laketide.table.inspection import TableInspector

        return TableInspector(self)

    @property
    def schema(self) -> TableSchema:
        return self._schema

    @property
    def store(self) -> FileStore:
        """The store of the current schema (rebuilt when ``alter`` or ``refresh`` changes the schema)."""
        store = self._store
        if store is None or store.schema is not self._schema:
            store = self._store = FileStore.create(
                file_io=self.file_io, table_path=self.path, table_name=self.name, schema=self._schema,
                schema_manager=self.schema_manager, snapshot_manager=self.snapshot_manager, branch=self.branch,
            )
        return store

    @property
    def options(self) -> CoreOptions:
        return self.store.options

    @property
    def arrow_schema(self) -> pa.Schema:
        from laketide.types import to_arrow_schema

        return to_arrow_schema(self._schema.row_type)

    @property
    def primary_keys(self) -> tuple[str, ...]:
        return self._schema.primary_keys

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self._schema.partition_keys

    @property
    def deleter(self) -> TableFileDeleter:
        """The one way maintenance deletes this table's files: never outside its directory (or its
        ``data-file.external-paths``)."""
        return self.store.deleter

    def refresh(self) -> Table:
        """Reload the latest schema (after another process altered the table)."""
        latest = self.schema_manager.latest()
        if latest is not None:
            self._schema = latest
        return self

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def tag_snapshot(self, tag: str) -> Snapshot:
        return self.store.tag_snapshot(tag)

    @property
    def branches(self) -> BranchManager:
        """The table's branches: ``create(name, tag=None)``, ``delete``, ``list``, ``fast_forward``."""
        from laketide.table.branches import BranchManager

        return BranchManager(self)

    def branch_table(self, branch: str) -> Table:
        """The table as branch ``branch`` holds it (reads and writes go to the branch); NoSuchTableError when the
        branch does not exist."""
        from laketide.exceptions import NoSuchTableError
        from laketide.table.names import check_name

        check_name("branch", branch, table_name=self.name)
        base = self.name.split("$", 1)[0]
        if branch == MAIN_BRANCH:
            return Table(name=base, path=self.path, file_io=self.file_io, commit_lock=self._commit_lock)
        dirs = FileStorePathFactory(self.path, branch=branch)
        if not SchemaManager(self.file_io, self.path, schema_dir=dirs.schema_dir).list_ids():
            raise NoSuchTableError(f"Table {base}: branch {branch!r} does not exist")
        return Table(name=f"{base}$branch_{branch}", path=self.path, file_io=self.file_io,
                     commit_lock=self._commit_lock, branch=branch)

    def snapshots(self) -> pa.Table:
        """Every snapshot of this branch as Arrow (``$snapshots``' columns, ``commit_time`` a UTC instant)."""
        return self.inspect.snapshots()

    def history(self, limit: int | None = None) -> pa.Table:
        """The commits of this branch, newest first (``$snapshots``' columns): what each one did, when, by whom."""
        from laketide.table.system import system_table

        snaps = system_table(self, "snapshots").read()
        order = snaps.sort_by([("snapshot_id", "descending")])
        return order if limit is None else order.slice(0, max(limit, 0))

    @property
    def consumers(self) -> ConsumerManager:
        """This branch's consumers (streaming readers' progress): ``get``, ``reset``, ``delete``, ``list``."""
        from laketide.table.consumers import ConsumerManager

        return ConsumerManager(self.store)

    @property
    def tags(self) -> TagManager:
        """This branch's tags: ``create``, ``replace``, ``rename``, ``delete``, ``list``, ``expire``."""
        from laketide.table.tags import TagManager

        return TagManager(self.store)

    # -- read --------------------------------------------------------------------------------------------------
    def scan(
        self,
        *,
        columns: Sequence[str] | None = None,
        where: str | Predicate | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | _dt.datetime | None = None,
        read_optimized: bool = False,
    ) -> TableScan:
        """Plan a read; ``.plan()`` gives splits, ``.to_batches()`` streams, ``.to_arrow()`` collects.

        ``timestamp_ms`` reads the latest snapshot committed at or before it: epoch milliseconds, or a datetime
        (a naive one is taken as UTC).

        ``read_optimized`` reads only what full compaction produced (the top level of primary-key tables, no
        merge): fast, possibly stale (Paimon's ``$ro`` system table).
        """
        return TableScan(self, columns=columns, where=where, snapshot_id=snapshot_id, tag=tag,
                         timestamp_ms=timestamp_ms, read_optimized=read_optimized)

    def read(
        self,
        columns: Sequence[str] | None = None,
        where: str | Predicate | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | _dt.datetime | None = None,
        read_optimized: bool = False,
        options: Mapping[str, object] | None = None,
    ) -> pa.Table:
        if options:  # dynamic options of this read only (see copy): e.g. {'fields.v.aggregate-function': 'sum'}
            return self.copy(options).read(columns, where, snapshot_id=snapshot_id, tag=tag,
                                           timestamp_ms=timestamp_ms, read_optimized=read_optimized)
        if where is None and snapshot_id is None and tag is None and timestamp_ms is None and not read_optimized:
            ranged = self._incremental_between(columns, row_kind_column=None)
            if ranged is not None:
                return ranged  # a batch read with incremental-between returns the changes of the range
        return self.scan(columns=columns, where=where, snapshot_id=snapshot_id, tag=tag,
                         timestamp_ms=timestamp_ms, read_optimized=read_optimized).to_arrow()

    def lookup(self, keys: KeyBatch, *, columns: Sequence[str] | None = None, cache: bool = True) -> pa.Table:
        """The latest merged rows of the primary keys in ``keys``; keys that do not exist (or were deleted) are absent.

        ``keys``: a pyarrow Table / RecordBatch or a dict with the primary key columns (partition columns
        included, as they are part of the key), or a list of key tuples in primary-key order (plain values for
        a one-column key). Duplicates count once; a key with a null finds nothing. Only the buckets, files and
        row groups that may hold one of the keys are read (Paimon's local table query); rows come in no
        particular order. The same rows as ``read(where=<key> IN (...))``.

        ``cache``: keep the data files a lookup decodes whole as local memory-mapped lookup files with a key
        index (``local-temp-dir``, bounded by ``lookup.cache-max-disk-size``, 1 GiB when unset), so that the
        next lookups of this process search them instead of decoding them again (Paimon's LocalTableQuery).
        Files are planned from the latest snapshot at every call: a cached file the table dropped is never used.
        """
        from laketide.table.lookup import lookup

        return lookup(self, keys, columns=columns, cache=cache)

    def incremental_scan(self) -> IncrementalScan:
        """Plans and reads the changes between snapshots (what a streaming read consumes)."""
        return IncrementalScan(self)

    def read_changes(
        self,
        start_snapshot: int | None = None,
        end_snapshot: int | None = None,
        *,
        columns: Sequence[str] | None = None,
        full_start: bool = False,
        binlog: bool = False,
        consumer_id: str | None = None,
    ) -> pa.Table:
        """The rows written after snapshot ``start_snapshot`` up to ``end_snapshot`` (default: the latest), with
        their row kind in a first ``rowkind`` column (+I, -U, +U, -D), as ``db.t$audit_log`` streams them.
        ``full_start`` includes the whole content of ``start_snapshot`` first (as inserts). Tables with a
        ``changelog-producer`` are read from their changelog. ``binlog``: ``db.t$binlog``'s layout (each column an
        array; an update's -U / +U pair is one +U row holding ``[before, after]``).

        ``consumer_id`` (default: the ``consumer-id`` option) reads on from the consumer's recorded progress when
        ``start_snapshot`` is None (unless ``consumer.ignore-progress``); a new consumer starts with the full
        content of the latest snapshot (Paimon's ``latest-full``). After the read, the consumer's next snapshot is
        ``end + 1``, and snapshot expiration keeps it until then.
        """
        if start_snapshot is None and end_snapshot is None and consumer_id is None:
            ranged = self._incremental_between(columns, row_kind_column="rowkind")
            if ranged is not None:
                return ranged
        consumer_id = consumer_id if consumer_id is not None else self.options.consumer_id
        latest = self.snapshot_manager.latest_snapshot_id() or 0
        end = latest if end_snapshot is None else end_snapshot
        if start_snapshot is None:
            progress = None
            if consumer_id is not None and not self.options.consumer_ignore_progress:
                progress = self.consumers.get(consumer_id)
            if progress is not None:
                start_snapshot = progress - 1
            elif consumer_id is not None:
                start_snapshot, full_start = end, end > 0
            else:
                start_snapshot = 0
        if start_snapshot < 0 or end < start_snapshot:
            raise InvalidOptionError(
                f"Table {self.name}: read_changes needs 0 <= start_snapshot <= end_snapshot, got "
                f"{start_snapshot} and {end}"
            )
        out = IncrementalScan(self).to_arrow(start_snapshot, end, full_start=full_start, columns=columns)
        if binlog:
            from laketide.table.binlog import to_binlog

            missing = [k for k in self.primary_keys if k not in out.column_names]
            if missing:
                raise InvalidOptionError(f"Table {self.name}: a binlog read needs the primary key columns {missing}")
            out = to_binlog(out, self.primary_keys)
        if consumer_id is not None:
            self.consumers.reset(consumer_id, end + 1)
        return out

    def _incremental_between(self, columns: Sequence[str] | None, *, row_kind_column: str | None) -> pa.Table | None:
        """The changes ``incremental-between`` / ``incremental-between-timestamp`` select, None without them:
        snapshot by snapshot when every snapshot of the range is there, else the file diff of its ends."""
        from laketide.table.time_travel import incremental_range

        ranged = incremental_range(self)
        if ranged is None:
            return None
        start, end = ranged
        mode = self.options.incremental_between_scan_mode
        # auto: the changelog of a table with a changelog-producer, else the deltas (Java: toSnapshotScanMode).
        scan = IncrementalScan(self, source=mode if mode in ("delta", "changelog") else None)
        first = start.id + 1 if start is not None else 1
        changelog = mode == "changelog" or (mode == "auto" and scan._from_changelog)
        kept = self.store.changelog_manager

        def present(sid: int) -> bool:
            # Decoupled changelog retention keeps a changelog after its snapshot expired.
            return self.snapshot_manager.snapshot_exists(sid) or (changelog and kept.try_changelog(sid) is not None)

        complete = all(present(i) for i in range(first, end.id + 1))
        if mode in ("delta", "changelog") and not complete:
            raise NoSuchSnapshotError(
                f"Table {self.name}: incremental-between-scan-mode {mode!r} needs snapshots {first}..{end.id}, some "
                f"of which have expired; use 'diff' (or 'auto')"
            )
        if mode != "diff" and complete:
            return scan.to_arrow(start.id if start is not None else 0, end.id, columns=columns,
                                 row_kind_column=row_kind_column)
        return scan.to_arrow_changes(scan.plan_diff(start, end), columns=columns, row_kind_column=row_kind_column)

    def copy(self, options: Mapping[str, object]) -> Table:
        """This table with dynamic ``options`` on top of its schema's (nothing is written): e.g. time travel by
        ``scan.version`` / ``scan.timestamp`` or ``incremental-between`` for ``read``, or ``consumer-id``; or a
        merge behaviour for reading (``fields.<f>.aggregate-function``, ``ignore-delete``, ``sequence.field``)."""
        from dataclasses import replace

        from laketide.options import CoreOptions, check_unknown_options
        from laketide.table.dynamic_options import check_dynamic_options, check_merged_schema

        dynamic = {str(k): str(v) for k, v in options.items()}
        check_unknown_options(dynamic, table_name=self.name)  # 'scan.snapshot-idd' would silently read the latest
        # Read options and the merge behaviour Java's copy() may change; never where or how files are written.
        check_dynamic_options(self._schema, dynamic, table_name=self.name)
        merged = {**self._schema.options, **dynamic}
        try:
            CoreOptions(merged)  # a malformed value fails here, naming the key
        except InvalidOptionError as e:
            raise InvalidOptionError(f"Table {self.name}: {e}") from e
        schema = replace(self._schema, options=merged)
        check_merged_schema(schema, table_name=self.name)
        return Table(name=self.name, path=self.path, file_io=self.file_io, schema=schema,
                     commit_lock=self._commit_lock, branch=self.branch)

    def with_file_io(self, file_io: FileIO) -> Table:
        """This table read and written through ``file_io`` (a wrapper of its own that watches what is written: a
        Spark task's, laketide.spark.job_files)."""
        return Table(name=self.name, path=self.path, file_io=file_io, schema=self._schema,
                     commit_lock=self._commit_lock, branch=self.branch)

    def to_arrow(self, **kwargs: Any) -> pa.Table:
        return self.read(**kwargs)

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:  # pandas is optional: imported only when called
        return self.read(**kwargs).to_pandas()

    # -- interop (table/interop.py) ----------------------------------------------------------------------------
    def to_arrow_batch_reader(self, **scan_kwargs: Any) -> pa.RecordBatchReader:
        """Stream the rows (``scan`` arguments: columns, where, snapshot_id, ...) as a RecordBatchReader."""
        return self.scan(**scan_kwargs).to_arrow_batch_reader()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The Arrow PyCapsule stream protocol over the latest snapshot: ``pl.from_arrow(t)``, ``pa.table(t)``,
        ``duckdb.sql("from t")`` read it streaming, without a copy through Python."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def to_polars(self, *, lazy: bool = False, snapshot_id: int | None = None) -> Any:
        """A polars DataFrame, or with ``lazy`` a LazyFrame whose projection and filters are pushed down to the
        scan (partitions and files the filter excludes are never opened). Needs ``laketide[polars]``."""
        from laketide.table.interop import _import, polars_lazy

        if lazy:
            return polars_lazy(self, snapshot_id=snapshot_id)
        return _import("polars", "polars").from_arrow(self.read(snapshot_id=snapshot_id))

    def to_duckdb(self, con: Any = None, name: str | None = None, *, columns: Sequence[str] | None = None) -> Any:
        """Register the table as view ``name`` (default: the table's name) on DuckDB connection ``con`` (a new
        in-memory one when None) and return the connection; each query streams the latest snapshot. Needs
        ``laketide[duckdb]``."""
        from laketide.table.interop import register_duckdb

        return register_duckdb(self, con, name, columns)

    # -- write -------------------------------------------------------------------------------------------------
    def new_write(self, *, compact: bool = True) -> TableWrite:
        """A writer for two-phase commits: ``w.write(...)``, then ``t.commit(w.prepare_commit())``.

        Primary-key writers compact their buckets unless ``write-only`` is set or ``compact=False`` (several
        writers share a bucket, e.g. Spark tasks of an unshuffled DataFrame: ``Table.compact`` after the commit).
        """
        from laketide.table.compact import BucketFiles, compacting_writer_factory

        if self.branch != MAIN_BRANCH and self.store.bucket_mode in ("dynamic", "cross-partition"):
            from laketide.exceptions import UnsupportedFeatureError

            raise UnsupportedFeatureError(
                f"Table {self.name}: writing a branch of a dynamic-bucket table is not supported (its bucket index "
                f"is read from the main branch); use a fixed 'bucket' or an append table"
            )

        compacts = compact and bool(self._schema.primary_keys) and not self.options.write_only
        restore = BucketFiles(self) if compacts else None
        return self.store.new_write(
            restore_sequence=restore.max_sequence if restore is not None else self._sequence_restorer(),
            wrap_writer=compacting_writer_factory(self, restore) if restore is not None else None,
        )

    def compact(
        self,
        *,
        full: bool = False,
        partitions: Sequence[Mapping[str, object]] | None = None,
        where: str | Predicate | None = None,
        commit_user: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> CompactionResult | None:
        """Compact the table, some ``partitions`` or those matching a partition predicate ``where``.

        ``full`` merges every bucket into one sorted run at the top level (append tables: rewrites all small
        files); otherwise the compaction strategy picks. Commits a COMPACT snapshot and returns its id as a
        ``CompactionResult`` (an int that also carries ``buckets``, ``files_rewritten``, ``files_written``,
        ``bytes_rewritten``, ``bytes_written``, ``duration_s``); None when there was nothing to compact.
        ``progress(done, total)`` is called after each bucket. Fails with CommitConflictError, changing nothing,
        when a concurrent compaction replaced the same files first.
        """
        from laketide.table.maintenance import compact_with_progress

        return compact_with_progress(self, full=full, partitions=partitions, where=where, commit_user=commit_user,
                                     progress=progress)

    def rewrite_file_index(
        self,
        *,
        partitions: Sequence[Mapping[str, object]] | None = None,
        commit_user: str | None = None,
    ) -> int | None:
        """Rebuild the file indexes of existing data files (of ``partitions``, default all) as the table's
        ``file-index.*`` options say now: add the newly configured ones, drop the others. Data files are not
        rewritten; one COMPACT snapshot replaces their manifest entries. Returns its id (None: nothing changed).

        Paimon: the ``sys.rewrite_file_index`` procedure.
        """
        from laketide.table.file_index_rewrite import rewrite_file_index

        return rewrite_file_index(self, partitions=partitions, commit_user=commit_user)

    def commit(
        self,
        messages: Sequence[CommitMessage],
        *,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        overwrite: bool = False,
        partition: Mapping[str, object] | None = None,
        overwrite_where: Predicate | None = None,
    ) -> int | None:
        """Publish written files as one snapshot; None if there was nothing to commit.

        A ``commit_user`` reused with the same ``commit_identifier`` is committed at most once. With
        ``overwrite``, the rows of ``partition`` (or of the partitions matching the partition predicate
        ``overwrite_where``; all of the table when neither is given) are replaced.
        """
        if partition is not None and overwrite_where is not None:
            raise ValueError("give partition= or overwrite_where=, not both")
        committer = self._committer(commit_user)
        kwargs: dict[str, Any] = {}
        if commit_identifier is not None:
            kwargs["commit_identifier"] = commit_identifier
        where = overwrite_where if overwrite_where is not None else self.partition_filter(partition)
        try:
            sid = committer.commit(
                messages,
                overwrite=overwrite,
                overwrite_filter=where if overwrite else None,
                check_committed=commit_user is not None,
                **kwargs,
            )
        finally:
            self._restored_plan = None  # only ever held from a write's restore to its commit
        if sid is not None:
            self._expire_after_commit()
        return sid

    def write(
        self,
        data: Any,
        *,
        mode: WriteMode = "append",
        partition: Mapping[str, object] | None = None,
        where: str | Predicate | None = None,
        partition_overwrite: PartitionOverwrite | None = None,
        schema_mode: SchemaMode = "strict",
    ) -> int | None:
        """Write and commit ``data`` in one call; returns the new snapshot id (None if nothing changed).

        ``mode='overwrite'`` replaces, in the same snapshot: all of the table; or the static ``partition``
        (``{key: value}``); or the partitions matching ``where`` (a predicate on partition columns only, Delta's
        replaceWhere) — with either, every row of ``data`` must belong to what is replaced, else SchemaError and
        nothing is written; or, with ``partition_overwrite='dynamic'`` (default: the table option
        ``dynamic-partition-overwrite``, else static), only the partitions ``data`` has rows in (empty data
        replaces nothing).

        ``schema_mode='merge'`` first evolves the table in one schema change: columns only the data has are added
        (nullable), columns it lacks are filled with nulls (a missing NOT NULL column is a SchemaError), and a
        column whose values do not fit its type is widened where ``alter`` allows it without an explicit cast.
        The schema change is kept even if the data commit then fails (it only adds nullable columns or widens).
        The default ``'strict'`` refuses data that does not match the schema.

        A primary-key write that compacts publishes an APPEND snapshot, then a COMPACT one; when the compaction
        loses to a concurrent one, its files are dropped (with a warning) and the APPEND's id is returned: the
        data is committed. When a concurrent commit changed what the write was built on (a bucket's sequence
        numbers, a dynamic bucket's index), the rows are written again from the latest snapshot, up to
        ``commit.max-retries`` times, so the later commit wins on every key.
        """
        if mode not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
        given = [k for k, v in (("partition", partition), ("where", where),
                                ("partition_overwrite", partition_overwrite)) if v is not None]
        if given and mode != "overwrite":
            raise InvalidOptionError(f"write to table {self.name}: {given} only apply to mode='overwrite'")
        from laketide.table.overwrite import check_rows_match, overwrite_spec
        from laketide.table.schema_merge import check_schema_mode, merge_schema
        from laketide.write.conform import to_arrow

        check_schema_mode(self, schema_mode)

        spec = (overwrite_spec(self, partition=partition, where=where, partition_overwrite=partition_overwrite)
                if mode == "overwrite" else None)
        rows = to_arrow(data)  # once: a retry writes the same rows again (a reader would be drained)
        if partition is not None:
            self._check_rows_in_partition(rows, partition)
        elif where is not None and spec is not None and spec.where is not None:
            check_rows_match(self, rows, spec.where, where_text=str(where))
        if schema_mode == "merge":
            rows = merge_schema(self, rows)
        attempt = 0
        while True:
            try:
                return self._write_once(rows, overwrite=spec)
            except WriteConflictError as e:
                attempt += 1
                if attempt > self.options.commit_max_retries:
                    raise
                _LOG.info("Table %s: write attempt %d conflicted with a concurrent commit (%s); writing again",
                          self.name, attempt, type(e).__name__)
                self._retry_wait(attempt)

    def _write_once(self, rows: pa.Table, *, overwrite: OverwriteSpec | None) -> int | None:
        w = self.new_write()
        base = self.snapshot_manager.latest_snapshot_id()
        try:
            try:
                w.write(rows, final=True)  # the commit comes next: buckets flush as soon as their rows are in
                # A batch write compacts fully at each commit when full-compaction.delta-commits is set (as Java).
                messages = w.prepare_commit(full_compaction=self.options.full_compaction_delta_commits is not None)
            except BaseException as e:  # even an interrupt: delete the written files, then re-raise
                w.abort()
                if isinstance(e, NotFoundError) and self.snapshot_manager.latest_snapshot_id() != base:
                    # A file the writer restored (to compact it) was compacted away and expired meanwhile.
                    raise WriteConflictError(
                        f"Write to table {self.name}: a file it restored is gone, replaced by a concurrent commit "
                        f"since snapshot {base}: {e}"
                    ) from e
                raise
            try:
                if overwrite is None:
                    return self.commit(messages)
                if overwrite.dynamic:
                    from laketide.table.overwrite import written_partitions

                    replaced = written_partitions(self, messages)
                    if replaced is None:  # no rows: a dynamic overwrite replaces nothing (as Java)
                        self.abort(messages)
                        return None
                    return self.commit(messages, overwrite=True, overwrite_where=replaced)
                return self.commit(messages, overwrite=True, overwrite_where=overwrite.where)
            except CommitStateUnknownError:
                raise  # the snapshot may reference these files: only orphan cleanup may remove them
            except BaseException:
                self.abort(messages)  # keeps whatever a snapshot holds
                raise
        finally:
            w.close()

    def _retry_wait(self, attempt: int) -> None:
        lo = self.options.commit_min_retry_wait
        hi = self.options.commit_max_retry_wait
        time.sleep(random.uniform(lo, max(lo, min(hi, lo * (2 ** min(attempt, 16))))) / 1000.0)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the new files of messages that will never be committed (Paimon: TableCommit.abort).

        Files a snapshot or tag already holds (the messages were committed after all) are kept, and nothing
        outside the table is deleted.
        """
        self._committer(None).abort(messages)

    # -- maintenance -------------------------------------------------------------------------------------------
    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained_ms: int | None = None,
        max_deletes: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExpireResult:
        """Expire old snapshots and delete the files only they used; returns how many snapshots went, as an
        ``ExpireResult`` (an int that also carries ``files_deleted`` and ``duration_s``).

        Defaults come from ``snapshot.num-retained.min`` / ``.max``, ``snapshot.time-retained`` and
        ``snapshot.expire.limit``. Also runs after every commit unless ``write-only`` is set (as in Java).
        ``progress(done, total)`` is called after each snapshot.
        """
        import time as _time

        from laketide.table.consumers import ConsumerManager
        from laketide.table.expire import expire_snapshots
        from laketide.table.maintenance import ExpireResult, ExpireStats

        stats = ExpireStats(progress=progress)
        ConsumerManager(self.store).expire()  # consumer.expiration-time: gone readers pin nothing
        n = expire_snapshots(self.store, retain_min=retain_min, retain_max=retain_max,
                             time_retained_ms=time_retained_ms, max_deletes=max_deletes, stats=stats)
        return ExpireResult(n, snapshots_expired=n, files_deleted=stats.files_deleted,
                            duration_s=_time.monotonic() - stats.started)

    def remove_orphan_files(
        self,
        *,
        older_than: _dt.datetime | _dt.timedelta | None = None,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> OrphanFilesResult:
        """Delete files no snapshot or tag references, last modified before ``older_than`` (an instant or an
        age; default one day, which keeps the files of in-flight commits). ``dry_run`` only lists them.
        The result has ``paths``, ``count``, ``total_bytes``, ``duration_s``; ``progress(done, total)`` is called
        after each file deleted."""
        from laketide.table.orphan import remove_orphan_files

        return remove_orphan_files(self.store, older_than=older_than, dry_run=dry_run, progress=progress)

    # -- row-level changes (table/dml.py) --------------------------------------------------------------------
    def delete(self, where: str | Predicate) -> ChangeResult:
        """Delete the rows matching ``where`` in one commit; returns counts and the snapshot id (None: no match).

        Primary-key tables write deletes for the matching keys; append tables rewrite the files holding matching
        rows (copy-on-write; CommitConflictError, nothing changed, if a concurrent commit replaced one of them); a
        predicate on partition columns only drops whole partitions without reading data (``rows_deleted`` is then
        None on primary-key tables). ``where='TRUE'`` deletes every row.
        """
        from laketide.table.dml import delete_rows

        return delete_rows(self, where)

    def update(self, set: Mapping[str, Any], where: str | Predicate | None = None) -> ChangeResult:  # noqa: A002
        """Set columns of the rows matching ``where`` (all rows when None) in one commit.

        A value is a Python value, an Arrow expression or a SQL-like expression string over the row's columns
        (``"amount * 2"``, ``"'text'"`` for a string literal, ``"NULL"``). Primary-key columns cannot be set.
        """
        from laketide.table.dml import update_rows

        return update_rows(self, set, where)

    def update_by_row_id(self, data: Any, columns: Sequence[str] | None = None) -> int | None:
        """Data-evolution tables: set ``columns`` (default: every column of ``data`` but ``_ROW_ID``) of the rows
        whose ``_ROW_ID`` ``data`` gives, in one commit; row ids stay. New files hold only those columns (pypaimon's
        ``update_by_arrow_with_row_id``); returns the snapshot id, None for empty data."""
        from laketide.table.update_by_row_id import update_by_row_id

        return update_by_row_id(self, data, None if columns is None else list(columns))

    def upsert(self, data: Any) -> ChangeResult:
        """Insert or replace rows by primary key (what ``write`` does on a primary-key table), with counts of
        inserted and updated keys."""
        from laketide.table.dml import upsert_rows

        return upsert_rows(self, data)

    def merge(
        self,
        source: Any,
        on: Sequence[str] | str | None = None,
        *,
        predicate: str | None = None,
        source_alias: str = "source",
        target_alias: str = "target",
    ) -> MergeBuilder:
        """MERGE ``source`` into this table (delta-rs style): chain ``when_matched_update(...)``,
        ``when_not_matched_insert_all()``, ... then ``.execute()`` -> ChangeResult. Join on columns of the same name
        (``on``) or on ``predicate='target.a = source.b AND ...'``; expressions name ``source.col`` /
        ``target.col``. Two source rows matching one target row raise MergeSourceError, changing nothing."""
        from laketide.table.merge import MergeBuilder

        return MergeBuilder(self, source, on=on, predicate=predicate, source_alias=source_alias,
                            target_alias=target_alias)

    def rollback_to(self, target: int | str) -> Snapshot:
        """Make snapshot ``target`` (an id) or the snapshot of tag ``target`` (a name) the latest again.

        Newer snapshots and tags are removed; their files are left to ``remove_orphan_files``. Stop writers first.
        """
        from laketide.table.rollback import rollback_to

        return rollback_to(self.store, target)

    def _expire_after_commit(self) -> None:
        if self.options.write_only:
            return
        from laketide.table.tags import auto_tag_after_commit

        try:
            self.expire_snapshots()
            auto_tag_after_commit(self.store)
        except LaketideError as e:
            # The commit has landed; a failed expiration only leaves work for the next one.
            _LOG.warning("Snapshot or tag maintenance after a commit to table %s failed: %s", self.name, e)

    # -- schema evolution --------------------------------------------------------------------------------------
    def alter(self, *changes: SchemaChange) -> Table:
        """Apply schema changes (each call writes one new schema file).

        The new schema passes the validation ``create_table`` runs (same errors); a refused change writes nothing.
        """
        def validate(new: TableSchema, old: TableSchema | None) -> None:
            validate_table_schema(new, table_name=self.name, previous=old)

        self._schema = self.schema_manager.commit_changes(list(changes), validate=validate)
        return self

    # -- helpers -----------------------------------------------------------------------------------------------
    def _committer(self, commit_user: str | None) -> FileStoreCommit:
        return self.store.new_commit(commit_user or self._new_commit_user(), restored_plan=self.restored_plan)

    def _new_commit_user(self) -> str:
        prefix = self.options.commit_user_prefix
        return f"{prefix}_{uuid.uuid4()}" if prefix else str(uuid.uuid4())

    def file_scan(self) -> FileStoreScan:
        return self.store.new_scan()

    def plan_to_restore(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """Every live file of ``snapshot``, for a writer restoring its buckets (kept for the commit to reuse)."""
        entries = self.file_scan().plan(snapshot)
        self._restored_plan = ((snapshot.id, snapshot.base_manifest_list), entries)
        return entries

    def restored_plan(self, snapshot: Snapshot) -> list[ManifestEntry] | None:
        """The live files of ``snapshot`` if a writer of this table planned them to restore, else None."""
        held = self._restored_plan
        return held[1] if held is not None and held[0] == (snapshot.id, snapshot.base_manifest_list) else None

    def _sequence_restorer(self) -> Callable[[bytes, int], int | None]:
        return self._sequence_cache.restorer(self)

    def partition_filter(self, partition: Mapping[str, object] | None) -> Predicate | None:
        """The predicate selecting partition ``{key: value}`` (None for no partition); SchemaError for a key that
        is not a partition key."""
        if not partition:
            return None
        unknown = [k for k in partition if k not in self._schema.partition_keys]
        if unknown:
            raise SchemaError(
                f"{unknown} are not partition keys of table {self.name}; partition keys are "
                f"{list(self._schema.partition_keys)}"
            )
        leaves = [
            Leaf(Op.IS_NULL, k, ()) if v is None else Leaf(Op.EQ, k, (v,)) for k, v in partition.items()
        ]
        types = {f.name: f.type for f in self.arrow_schema}
        return bind(and_(*leaves), types)

    def _check_rows_in_partition(self, data: Any, partition: Mapping[str, object]) -> None:
        from laketide.expr import filter_table, negate
        from laketide.write.conform import to_arrow

        table = to_arrow(data)
        pred = self.partition_filter(partition)
        if pred is None or table.num_rows == 0:
            return
        outside = filter_table(table.select(list(partition)), or_(negate(pred), *[
            Leaf(Op.IS_NULL, k, ()) for k, v in partition.items() if v is not None
        ]))
        if outside.num_rows:
            raise SchemaError(
                f"Overwrite of partition {dict(partition)} of table {self.name}: "
                f"{outside.num_rows} rows belong to other partitions"
            )
