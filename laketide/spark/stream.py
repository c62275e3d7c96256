"""Structured Streaming source: each new snapshot (or a group of them) becomes a micro-batch.

Offsets are ``{"snapshot": n, "full": b}``: every change up to snapshot ``n`` has been consumed, except that with
``full`` the whole content of snapshot ``n`` is still to be emitted (the first batch of ``latest-full``). A
micro-batch emits the delta files of the APPEND snapshots in its range (COMPACT and OVERWRITE snapshots carry no
new changes for a stream, as in Paimon without ``streaming-read-overwrite``). Primary-key delta files are read as
written, with their row kinds (Paimon with changelog-producer ``none``): through ``db.t$audit_log`` rows carry a
leading ``rowkind`` column (+I, -U, +U, -D); through ``db.t`` retractions are dropped.

Rows of one (partition, bucket) are read by one task in sequence order, so the versions of a key arrive in order.

Paimon: table.source.DataTableStreamScan, snapshot.ContinuousFromSnapshotStartingScanner & co, DeltaFollowUpScanner,
paimon-spark PaimonMicroBatchStream (read.stream.maxFilesPerTrigger / maxRowsPerTrigger)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.meta.manifest import DataFileMeta, FileKind
from laketide.meta.paths import partition_path
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.scan.split import DataSplit
from laketide.spark.errors import surfaced, surfaced_iter
from laketide.spark.options import AUDIT_LOG, ROWKIND, TableRef, int_option
from laketide.spark.types import conform_to_spark, spark_arrow_schema

__all__ = ["StreamReader", "ScanMode"]

ScanMode = str  # latest | latest-full | full | from-snapshot | from-snapshot-full | from-timestamp
_MODES = ("default", "latest", "latest-full", "full", "from-snapshot", "from-snapshot-full", "from-timestamp")
_KINDS = np.array(["+I", "-U", "+U", "-D"], dtype=object)


@dataclass(frozen=True, slots=True, kw_only=True)
class _DeltaFile:
    snapshot_id: int
    file: DataFileMeta
    path: str


class ChangePartition(InputPartition):
    """The changes of one (partition, bucket) in a micro-batch: an optional full split, then delta files in order."""

    def __init__(self, key: tuple[bytes, int], full: DataSplit | None, deltas: list[_DeltaFile]) -> None:
        super().__init__(key)
        self.full = full
        self.deltas = deltas


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
            table = self.ref.data_table()
            try:
                snap = table.snapshot(snapshot_id)
            except NoSuchSnapshotError:
                return (0, 0)
            if snap.commit_kind is not CommitKind.APPEND:
                cost = (0, 0)
            else:
                metas = table.file_scan().manifest_list(snap.delta_manifest_list)
                cost = (sum(m.num_added_files for m in metas), max(snap.delta_record_count, 0))
            self._cost[snapshot_id] = cost
        return cost

    # -- planning ----------------------------------------------------------------------------------------------
    @surfaced
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ChangePartition]:
        table = self.ref.data_table()
        first = int(start["snapshot"])
        last = int(end["snapshot"])
        groups: dict[tuple[bytes, int], tuple[DataSplit | None, list[_DeltaFile]]] = {}
        if start.get("full") and first > 0:
            for split in table.scan(snapshot_id=first).plan():
                groups[(split.partition, split.bucket)] = (split, [])
        scan = table.file_scan()
        default = table.options.partition_default_name
        keys = table.partition_keys
        for sid in range(first + 1, last + 1):
            try:
                snap: Snapshot = table.snapshot(sid)
            except NoSuchSnapshotError:
                continue  # expired before we got to it
            if snap.commit_kind is not CommitKind.APPEND:
                continue
            for meta in scan.manifest_list(snap.delta_manifest_list):
                for e in scan.manifest(meta.file_name):
                    if e.kind is not FileKind.ADD:
                        continue
                    part_dir = partition_path(keys, scan.partition_codec.values(e.partition), default_name=default)
                    bucket_dir = f"{table.path}/{part_dir}/bucket-{e.bucket}" if part_dir else \
                        f"{table.path}/bucket-{e.bucket}"
                    path = e.file.external_path or f"{bucket_dir}/{e.file.file_name}"
                    group = groups.setdefault((e.partition, e.bucket), (None, []))
                    group[1].append(_DeltaFile(snapshot_id=sid, file=e.file, path=path))
        out = []
        for key, (full, deltas) in groups.items():
            deltas.sort(key=lambda d: (d.snapshot_id, d.file.min_sequence_number, d.file.file_name))
            out.append(ChangePartition(key, full, deltas))
        return out

    # -- reading (executors) -----------------------------------------------------------------------------------
    @surfaced_iter
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ChangePartition):
            return  # Spark's stand-in partition for an empty micro-batch
        from laketide.mergetree.kv import VALUE_KIND
        from laketide.scan.split_read import SplitRead

        table = self.ref.data_table()
        target = spark_arrow_schema(self.schema)
        names = [n for n in target.names if not (self.audit and n == ROWKIND)]
        reader = SplitRead(file_io=table.file_io, schema_manager=table.schema_manager,
                           read_schema=self.table_schema, columns=names)
        if partition.full is not None:
            for batch in reader.read(partition.full):
                yield self._out(batch, None, target)
        for d in partition.deltas:
            if not self.has_pk:
                for batch in reader.read_file(d.file, d.path):
                    yield self._out(batch.select(names), None, target)
                continue
            # Key-value files as written: every row with its _VALUE_KIND, no merge.
            for batch in reader.read_kv_file(d.file, d.path):
                kinds = batch.column(VALUE_KIND).to_numpy(zero_copy_only=False)
                if not self.audit:
                    keep = (kinds == 0) | (kinds == 2)
                    batch = batch.filter(pa.array(keep))
                    kinds = kinds[keep]
                if batch.num_rows:
                    yield self._out(batch.select(names), kinds, target)

    def _out(self, batch: pa.RecordBatch, kinds: Any, target: pa.Schema) -> pa.RecordBatch:
        if self.audit:
            rk = pa.array(_KINDS[kinds] if kinds is not None else np.full(batch.num_rows, "+I", dtype=object),
                          pa.string())
            batch = pa.RecordBatch.from_arrays([rk, *batch.columns], names=[ROWKIND, *batch.schema.names])
        return conform_to_spark(batch, target)

    def commit(self, end: dict[str, Any]) -> None:
        for sid in [s for s in self._cost if s <= int(end["snapshot"])]:
            del self._cost[sid]
