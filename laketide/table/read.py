"""The read side of a table: pick a snapshot, plan splits, stream Arrow batches.

Paimon: table.source.ReadBuilder / TableScan / TableRead, snapshot time travel (scan.snapshot-id,
scan.timestamp-millis, scan.tag-name)
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.index.file_index.writer import file_index_usable
from laketide.expr import Predicate, bind, parse_where
from laketide.meta.manifest_io import collector_paused
from laketide.meta.snapshot import Snapshot
from laketide.scan.bucket_pruning import select_buckets
from laketide.scan.file_index_filter import FileIndexFilter, FileIndexReport
from laketide.scan.file_scan import FileStoreScan
from laketide.options import MergeEngine
from laketide.scan.split import DataSplit, DeletionFile, generate_splits
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema

if TYPE_CHECKING:
    import pandas as pd

    from laketide.table.table import Table

__all__ = ["ScanExplanation", "TableScan", "epoch_millis"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanExplanation:
    """What ``TableScan.explain()`` reports: the plan's size and the file indexes' work."""

    snapshot_id: int | None
    predicate: str | None
    splits: int
    files: int  # files left to read
    rows_in_files: int  # rows those files hold (before row selection, deletion vectors and filtering)
    file_index: FileIndexReport

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _drain(read: Callable[[DataSplit], Iterator[pa.RecordBatch]], split: DataSplit) -> list[pa.RecordBatch]:
    return list(read(split))


def epoch_millis(value: int | _dt.datetime | None, *, table_name: str) -> int | None:
    """``timestamp_ms`` as epoch milliseconds: an int as it is, a datetime converted (a naive one is UTC)."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
        # Exact integer arithmetic (float timestamps round); sub-millisecond parts are floored.
        return (aware - _EPOCH) // _dt.timedelta(milliseconds=1)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidOptionError(
        f"Table {table_name}: timestamp_ms must be epoch milliseconds (int) or a datetime (naive = UTC), "
        f"got {type(value).__name__} {value!r}"
    )


class TableScan:
    """A planned read: the snapshot, the schema rows come out in, the splits and how to read them."""

    def __init__(
        self,
        table: Table,
        *,
        columns: Sequence[str] | None = None,
        where: str | Predicate | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | _dt.datetime | None = None,
        read_optimized: bool = False,
    ) -> None:
        self.table = table
        timestamp_ms = epoch_millis(timestamp_ms, table_name=table.name)
        self.read_optimized = read_optimized
        time_travel = snapshot_id is not None or tag is not None or timestamp_ms is not None
        if time_travel:
            self.snapshot = self._pick_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
        else:
            from laketide.table.time_travel import options_snapshot

            # scan.snapshot-id / scan.tag-name / scan.timestamp(-millis) / scan.version of the table's options
            chosen = options_snapshot(table)
            time_travel = chosen is not None
            self.snapshot = chosen if chosen is not None else table.snapshot_manager.latest_snapshot()
        # A plain read shows the latest schema; a time-travel read shows the schema of that snapshot.
        if time_travel and self.snapshot is not None:
            self.schema: TableSchema = table.schema_manager.schema(self.snapshot.schema_id)
        else:
            self.schema = table.schema
        arrow_schema = to_arrow_schema(self.schema.row_type)
        types = {f.name: f.type for f in arrow_schema}
        if isinstance(where, str):
            self.predicate: Predicate | None = parse_where(where, types)
        elif where is not None:
            self.predicate = bind(where, types)
        else:
            self.predicate = None
        self.columns = list(columns) if columns is not None else None
        self.reader = table.store.new_read(read_schema=self.schema, columns=self.columns, predicate=self.predicate)
        self._file_index_report: FileIndexReport | None = None
        # scan.fallback-branch: partitions this branch lacks are read from that branch (Paimon:
        # FallbackReadFileStoreTable), for plain reads of the latest snapshot.
        fallback = table.options.scan_fallback_branch
        self._fallback: TableScan | None = None
        self._main_partitions: set[bytes] | None = None
        if fallback and fallback != table.branch and not time_travel and not read_optimized:
            self._fallback = TableScan(table.branch_table(fallback), columns=columns, where=where)

    def __repr__(self) -> str:
        at = "empty table" if self.snapshot is None else f"snapshot {self.snapshot.id}"
        cols = "all columns" if self.columns is None else f"columns {self.columns}"
        where = "" if self.predicate is None else f" where {self.predicate}"
        mode = ", read-optimized" if self.read_optimized else ""
        return f"<TableScan of {self.table.name} at {at}: {cols}{where}{mode}>"

    def _pick_snapshot(self, *, snapshot_id: int | None, tag: str | None, timestamp_ms: int | None) -> Snapshot | None:
        sm = self.table.snapshot_manager
        if snapshot_id is not None:
            return sm.snapshot(snapshot_id)
        if tag is not None:
            return self.table.tag_snapshot(tag)
        if timestamp_ms is not None:
            s = sm.earlier_or_equal_time_millis(timestamp_ms)
            if s is None:
                raise NoSuchSnapshotError(
                    f"Table {self.table.name} has no snapshot at or before timestamp {timestamp_ms}"
                )
            return s
        return sm.latest_snapshot()

    def plan(self) -> list[DataSplit]:
        # Planning builds objects by the file (entries, stats, splits), none of them cyclic: with the collector
        # running, its full passes grow with the files and come more often, and 10x the files took over 11x the time.
        with collector_paused():
            own = self._plan_own()
            if self._fallback is None:
                return own
            have = self._partitions_of_this_branch()
            return own + [sp for sp in self._fallback.plan() if sp.partition not in have]

    def _partitions_of_this_branch(self) -> set[bytes]:
        # Fallback splits are exactly those of partitions this branch lacks: a task that only reads a split (an
        # executor) tells them apart the same way, without the planner's state.
        if self._main_partitions is None:
            if self.snapshot is None:
                self._main_partitions = set()
            else:
                entries = self.table.store.new_scan(self.schema).plan(self.snapshot)
                self._main_partitions = {e.partition for e in entries}
        return self._main_partitions

    def _plan_own(self) -> list[DataSplit]:
        if self.snapshot is None:
            return []
        store = self.table.store
        scan = store.new_scan(self.schema)
        options = self.schema.core_options
        bucket_keys = self.schema.bucket_keys() if options.bucket > 0 else []
        buckets = select_buckets(
            self.predicate, bucket_keys=bucket_keys, num_buckets=options.bucket,
            key_types=[self.schema.field(k).type for k in bucket_keys],
        )
        # Data evolution: a file holding some columns of a row-id range has stats of those only, and pruning one
        # file of a range would drop columns of rows other files hold: plan every file, filter after stitching.
        evolved = bool(options.data_evolution_enabled) and not self.schema.primary_keys
        planned = self.predicate
        if evolved and planned is not None:
            from laketide.expr import pick_fields

            planned = pick_fields(planned, set(self.schema.partition_keys))  # partitions still prune
        dv_read = bool(self.schema.primary_keys) and options.deletion_vectors_enabled
        entries = scan.plan(self.snapshot, predicate=planned, buckets=buckets, prune_by_values=dv_read)
        deletion_files = None
        if self.read_optimized and self.schema.primary_keys:
            # Only the top level: one sorted run per bucket, read file by file without a merge.
            top = options.num_levels - 1
            entries = [e for e in entries if e.file.level == top]
            deletion_files = self._deletion_files(scan) if options.deletion_vectors_enabled else {}
        elif self.schema.primary_keys and (
            options.deletion_vectors_enabled or options.merge_engine is MergeEngine.FIRST_ROW
        ):
            # Level-0 files become visible once compaction has folded them in (and written their DVs).
            entries = [e for e in entries if e.file.level > 0]
            if options.deletion_vectors_enabled:
                deletion_files = self._deletion_files(scan)
        elif options.deletion_vectors_enabled:
            deletion_files = self._deletion_files(scan)  # append tables: rows deleted by vector
        assert scan.path_factory is not None
        index_filter = FileIndexFilter(
            file_io=store.file_io, schema_manager=store.schema_manager, schema=self.schema,
            path_factory=scan.path_factory, predicate=self.predicate,
            enabled=file_index_usable(options, has_primary_key=bool(self.schema.primary_keys)) and not evolved,
        )
        indexed = index_filter.plan(entries)
        self._file_index_report = indexed.report
        return generate_splits(
            indexed.entries,
            snapshot_id=self.snapshot.id,
            paths=scan.path_factory,
            merge=bool(self.schema.primary_keys),
            target_size=options.source_split_target_size,
            open_file_cost=options.source_split_open_file_cost,
            deletion_files=deletion_files,
            row_selections=indexed.selections,
            whole_buckets=evolved,
        )

    def explain(self) -> ScanExplanation:
        """How this scan is planned: snapshot, splits, files and what the file indexes skipped / selected.

        ``file_index`` (a :class:`FileIndexReport`) counts the files the indexes ruled out (per index type)
        and the rows bitmap / BSI indexes selected; ``to_dict()`` gives it all as plain values.
        """
        splits = self.plan()
        report = self._file_index_report or FileIndexReport(enabled=False, filter=self.predicate)
        return ScanExplanation(
            snapshot_id=None if self.snapshot is None else self.snapshot.id,
            predicate=None if self.predicate is None else str(self.predicate),
            splits=len(splits), files=sum(len(s.files) for s in splits),
            rows_in_files=sum(s.row_count for s in splits), file_index=report,
        )

    def _deletion_files(self, scan: FileStoreScan) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        assert self.snapshot is not None
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
        for e in scan.index_entries(self.snapshot):
            f = e.index_file
            if f.index_type != "DELETION_VECTORS" or not f.dv_ranges:
                continue
            path = self.table.store.path_factory.bucket_index_file_path(e.partition, e.bucket, f.file_name,
                                                                        f.external_path)
            bucket = out.setdefault((e.partition, e.bucket), {})
            for m in f.dv_ranges:
                bucket[m.data_file_name] = DeletionFile(
                    path=path, offset=m.offset, length=m.length, cardinality=m.cardinality
                )
        return out

    @property
    def output_schema(self) -> pa.Schema:
        return self.reader.output_schema

    def read_split(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        """The rows of one split of ``plan()`` (merged, filtered, projected): what a distributed reader's task runs."""
        if self._is_fallback(split):
            return self._read_fallback(split)
        return self.reader.read(split)

    def _read_fallback(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        # The fallback branch's rows in this branch's schema: columns by name, cast to this branch's types.
        assert self._fallback is not None
        target = self.output_schema
        for batch in self._fallback.reader.read(split):
            arrays = [
                batch.column(f.name).cast(f.type) if f.name in batch.schema.names
                else pa.nulls(batch.num_rows, f.type)
                for f in target
            ]
            yield pa.RecordBatch.from_arrays(arrays, schema=target)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Stream the rows batch by batch (bounded memory)."""
        for split in self.plan():
            yield from self.read_split(split)

    def to_arrow(self) -> pa.Table:
        """Read every split into one table, in parallel (decoding releases the GIL): splits that merge one by one,
        the others file by file (raw-convertible splits with deletion vectors, and append splits that pack many
        files)."""
        tasks: list[Callable[[], list[pa.RecordBatch]]] = []
        for split in self.plan():
            for part in split.per_file():
                files = None if self._is_fallback(part) else self.reader.raw_file_readers(part)
                tasks.extend(files if files is not None else [partial(_drain, self.read_split, part)])
        workers = min(len(tasks), os.cpu_count() or 1)
        if workers <= 1:
            parts = [task() for task in tasks]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(lambda task: task(), tasks))
        return pa.Table.from_batches([b for part in parts for b in part], schema=self.output_schema)

    def _is_fallback(self, split: DataSplit) -> bool:
        return self._fallback is not None and split.partition not in self._partitions_of_this_branch()

    def to_pandas(self) -> pd.DataFrame:  # pandas is optional: imported only when called
        return self.to_arrow().to_pandas()

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A streaming RecordBatchReader: files are opened as batches are pulled."""
        from laketide.table.interop import batch_reader

        return batch_reader(self)

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The Arrow PyCapsule stream protocol (``pl.from_arrow``, ``duckdb.sql("from scan")``, ``pa.table``)."""
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)
