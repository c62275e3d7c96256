"""The read side of a table: pick a snapshot, plan splits, stream Arrow batches.

Paimon: table.source.ReadBuilder / TableScan / TableRead, snapshot time travel (scan.snapshot-id,
scan.timestamp-millis, scan.tag-name)
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.expr import Predicate, bind, parse_where
from laketide.meta.snapshot import Snapshot
from laketide.scan.bucket_pruning import select_buckets
from laketide.scan.file_scan import FileStoreScan
from laketide.options import MergeEngine
from laketide.scan.split import DataSplit, DeletionFile, generate_splits
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema

if TYPE_CHECKING:
    import pandas as pd

    from laketide.table.table import Table

__all__ = ["TableScan", "epoch_millis"]


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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
        self.snapshot = self._pick_snapshot(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
        time_travel = snapshot_id is not None or tag is not None or timestamp_ms is not None
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
        entries = scan.plan(self.snapshot, predicate=self.predicate, buckets=buckets)
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
        assert scan.path_factory is not None
        return generate_splits(
            entries,
            snapshot_id=self.snapshot.id,
            paths=scan.path_factory,
            merge=bool(self.schema.primary_keys),
            deletion_files=deletion_files,
        )

    def _deletion_files(self, scan: FileStoreScan) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        assert self.snapshot is not None
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
        for e in scan.index_entries(self.snapshot):
            f = e.index_file
            if f.index_type != "DELETION_VECTORS" or not f.dv_ranges:
                continue
            path = f.external_path or f"{self.table.path}/index/{f.file_name}"
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
        return self.reader.read(split)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Stream the rows batch by batch (bounded memory)."""
        for split in self.plan():
            yield from self.reader.read(split)

    def to_arrow(self) -> pa.Table:
        """Read every split into one table; splits are read in parallel (decoding releases the GIL)."""
        splits = self.plan()
        workers = min(len(splits), os.cpu_count() or 1)
        if workers <= 1:
            batches = [b for split in splits for b in self.reader.read(split)]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(lambda split: list(self.reader.read(split)), splits))
            batches = [b for part in parts for b in part]
        return pa.Table.from_batches(batches, schema=self.output_schema)

    def to_pandas(self) -> pd.DataFrame:  # pandas is optional: imported only when called
        return self.to_arrow().to_pandas()
