"""Structured Streaming source: each new snapshot (or a group of them) becomes a micro-batch.

Offsets are ``{"snapshot": n, "full": b}``: every change up to snapshot ``n`` has been consumed, except that with
``full`` the whole content of snapshot ``n`` is still to be emitted (the first batch of ``latest-full``). A
micro-batch emits the delta files of the APPEND snapshots in its range (COMPACT and OVERWRITE snapshots carry no
new changes for a stream, as in Paimon without ``streaming-read-overwrite``). Primary-key delta files are read as
written, with their row kinds (Paimon with changelog-producer ``none``); a table with a changelog producer is read
from its changelog files instead (``-U`` before-images included, see ``laketide.table.incremental``): through
``db.t$audit_log`` rows carry a leading ``rowkind`` column (+I, -U, +U, -D); through ``db.t`` retractions are dropped.

Rows of one (partition, bucket) are read by one task in sequence order, so the versions of a key arrive in order.

Paimon: table.source.DataTableStreamScan, snapshot.ContinuousFromSnapshotStartingScanner & co, DeltaFollowUpScanner,
paimon-spark PaimonMicroBatchStream (read.stream.maxFilesPerTrigger / maxRowsPerTrigger)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from laketide.exceptions import InvalidOptionError
from laketide.spark.errors import surfaced, surfaced_iter
from laketide.spark.options import AUDIT_LOG, ROWKIND, TableRef, int_option
from laketide.spark.types import conform_to_spark, spark_arrow_schema
from laketide.table.incremental import ROW_KINDS, BucketChanges, IncrementalScan

__all__ = ["StreamReader", "ScanMode"]

ScanMode = str  # latest | latest-full | full | from-snapshot | from-snapshot-full | from-timestamp
_MODES = ("default", "latest", "latest-full", "full", "from-snapshot", "from-snapshot-full", "from-timestamp")


class ChangePartition(InputPartition):
    """The changes of one (partition, bucket) in a micro-batch: an optional full split, then delta files in order."""

    def __init__(self, changes: BucketChanges) -> None:
        super().__init__((changes.partition, changes.bucket))
        self.changes = changes


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, ref: TableRef, options: Mapping[str, str], schema: StructType) -> None:
        self.ref = ref
        self.schema = schema
        self.audit = ref.system_table == AUDIT_LOG
        if ref.system_table is not None and not self.audit:
            raise InvalidOptionError(f"laketide: system table {ref.name}${ref.system_table} cannot be streamed")
        self.mode = (options.get("scan.mode") or "default").lower()
        if self.mode not in _MODES:
            raise InvalidOptionError(f"laketide: scan.mode must be one of {_MODES}, got {self.mode!r}")
        self.start_snapshot = int_option(options, "scan.snapshot-id")
        self.start_timestamp = int_option(options, "scan.timestamp-millis")
        self.max_files = int_option(options, "read.stream.maxfilespertrigger", "maxfilespertrigger")
        self.max_rows = int_option(options, "read.stream.maxrowspertrigger", "maxrowspertrigger")
        # consumer-id: a new query resumes from the consumer's recorded progress, and each committed micro-batch
        # records it (Paimon's consumer; exactly-once and at-least-once both record at commit here).
        self.consumer_id = options.get("consumer-id") or None
        self._recorded: int | None = None
        self.ignore_progress = (options.get("consumer.ignore-progress") or "false").strip().lower() == "true"
        self.target: int | None = None  # AvailableNow: the latest snapshot when the query started
        self._cost: dict[int, tuple[int, int]] = {}  # snapshot id -> (files, rows) it adds to a stream
        table = ref.data_table()
        self.has_pk = bool(table.primary_keys)
        self.table_schema = table.schema

    # -- offsets -----------------------------------------------------------------------------------------------
    @surfaced
    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - Spark's name
        table = self.ref.data_table()
        sm = table.snapshot_manager
        latest = sm.latest_snapshot_id() or 0
        if self.consumer_id is not None and not self.ignore_progress:
            progress = table.consumers.get(self.consumer_id)
            if progress is not None:
                return {"snapshot": progress - 1, "full": False}
        mode = self.mode
        if mode == "default":
            mode = ("from-snapshot" if self.start_snapshot is not None
                    else "from-timestamp" if self.start_timestamp is not None else "latest-full")
        if mode == "latest":
            return {"snapshot": latest, "full": False}
        if mode in ("latest-full", "full"):
            return {"snapshot": latest, "full": latest > 0}
        if mode in ("from-snapshot", "from-snapshot-full"):
            if self.start_snapshot is None:
                raise InvalidOptionError(f"laketide: scan.mode {mode} needs scan.snapshot-id")
            if mode == "from-snapshot-full":
                return {"snapshot": self.start_snapshot, "full": True}
            return {"snapshot": self.start_snapshot - 1, "full": False}
        if self.start_timestamp is None:
            raise InvalidOptionError("laketide: scan.mode from-timestamp needs scan.timestamp-millis")
        before = sm.earlier_or_equal_time_millis(self.start_timestamp)
        if before is not None:
            return {"snapshot": before.id, "full": False}
        earliest = sm.earliest_snapshot_id()
        return {"snapshot": (earliest or 1) - 1, "full": False}

    @surfaced
    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.target = self.ref.data_table().snapshot_manager.latest_snapshot_id() or 0

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        if self.max_files is not None:
            return ReadMaxFiles(self.max_files)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()

    @surfaced
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802
        if not start.get("full"):
            # Spark plans the next batch only once the one ending at ``start`` is in its commit log (and never
            # calls commit() for the last batch of an availableNow query): ``start`` is processed.
            self._record(int(start["snapshot"]))
        sm = self.ref.data_table().snapshot_manager
        latest = sm.latest_snapshot_id() or 0
        if self.target is not None:
            latest = min(latest, self.target)
        current = int(start["snapshot"])
        full = bool(start.get("full"))
        if isinstance(limit, ReadAllAvailable):
            if latest <= current and not full:
                return start
            return {"snapshot": max(latest, current), "full": False}
        if full:
            return {"snapshot": current, "full": False}  # the full scan is a batch of its own
        # Bounded: at least one snapshot per batch, then more while the limits of the options hold.
        files = rows = 0
        end = current
        while end < latest:
            f, r = self._snapshot_cost(end + 1)
            too_many = (self.max_files is not None and files + f > self.max_files) or (
                self.max_rows is not None and rows + r > self.max_rows)
            if end > current and too_many:
                break
            files, rows, end = files + f, rows + r, end + 1
        return start if end == current else {"snapshot": end, "full": False}

    def _snapshot_cost(self, snapshot_id: int) -> tuple[int, int]:
        cost = self._cost.get(snapshot_id)
        if cost is None:
            cost = self._cost[snapshot_id] = self.ref.data_table().incremental_scan().snapshot_cost(snapshot_id)
        return cost

    # -- planning ----------------------------------------------------------------------------------------------
    @surfaced
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ChangePartition]:
        changes = self.ref.data_table().incremental_scan().plan(
            int(start["snapshot"]), int(end["snapshot"]), full_start=bool(start.get("full")))
        return [ChangePartition(c) for c in changes]

    # -- reading (executors) -----------------------------------------------------------------------------------
    @surfaced_iter
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ChangePartition):
            return  # Spark's stand-in partition for an empty micro-batch
        target = spark_arrow_schema(self.schema)
        names = [n for n in target.names if not (self.audit and n == ROWKIND)]
        scan = IncrementalScan(self.ref.data_table(), read_schema=self.table_schema)
        for batch, kinds in scan.read(partition.changes, columns=names, retractions=self.audit):
            yield self._out(batch, kinds, target)

    def _out(self, batch: pa.RecordBatch, kinds: Any, target: pa.Schema) -> pa.RecordBatch:
        if self.audit:
            rk = pa.array(ROW_KINDS[kinds] if kinds is not None else np.full(batch.num_rows, "+I", dtype=object),
                          pa.string())
            batch = pa.RecordBatch.from_arrays([rk, *batch.columns], names=[ROWKIND, *batch.schema.names])
        return conform_to_spark(batch, target)

    @surfaced
    def commit(self, end: dict[str, Any]) -> None:
        for sid in [s for s in self._cost if s <= int(end["snapshot"])]:
            del self._cost[sid]
        if not end.get("full"):
            self._record(int(end["snapshot"]))

    def _record(self, processed: int) -> None:
        if self.consumer_id is None or self._recorded == processed:
            return
        self.ref.data_table().consumers.reset(self.consumer_id, processed + 1)
        self._recorded = processed
