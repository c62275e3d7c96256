"""Batch reads through Spark: Spark partitions of (partition, bucket) groups, Arrow batches out.

Spark 4.3 plans a Python source once per loaded DataFrame: the reader it pickles after planning (and the
partitions it planned) are kept on the relation and reused by every later query of that DataFrame, by a
self-join's other side, and even by queries whose own filters were never shown to the reader. So a reader must
return the right rows whatever query runs it:

- no state from one query reaches another: Spark's filters are not pushed into the reader (Spark evaluates them
  all); what the reader does prune with is part of the DataFrame itself (the ``where`` and ``columns`` options);
- a live read (no time travel) plans on the driver, and each task checks the table's latest snapshot when it
  starts: unchanged, it reads what the driver planned; changed, it plans that snapshot itself and reads its own
  groups. A group ((partition, bucket)) always goes to the same task, chosen from the group alone, so a task
  never reads rows another task reads;
- a time-travel read (``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis``) is pinned: one Spark
  partition per split, planned once.

What remains: an action that runs while another job commits may see that commit in some buckets and not in
others (each bucket is read at one snapshot). Pin a snapshot for a consistent view under concurrent writers.

Paimon: paimon-spark PaimonScan / PaimonPartitionReader
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from laketide.exceptions import InvalidOptionError
from laketide.scan.split import DataSplit
from laketide.spark.errors import surfaced, surfaced_iter
from laketide.spark.options import AUDIT_LOG, GROUPS_OPTION, ROWKIND, TableRef, decode_groups, int_option
from laketide.spark.types import conform_to_spark, spark_arrow_schema

__all__ = ["BatchReader", "GroupLayout", "GroupPartition", "ReadSpec", "SplitPartition", "read_spec"]

# Spark partitions of a live read at most (groups beyond share them); a task per group up to this.
MAX_LIVE_PARTITIONS = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadSpec:
    """What a batch read returns: table, snapshot choice, columns, filter; resolved on the driver at load."""

    ref: TableRef
    columns: tuple[str, ...] | None
    where: str | None
    snapshot_id: int | None
    tag: str | None
    timestamp_ms: int | None
    arrow_schema: pa.Schema  # the rows Spark sees (with `rowkind` first for the audit log)
    system_options: tuple[tuple[str, str], ...] = ()  # scan.* of a system table shown at a snapshot ($files ...)
    # Only these (partition, bucket) groups (a pinned read's Python part of laketide.spark.read(native=True)).
    groups: frozenset[tuple[bytes, int]] | None = None

    @property
    def audit_log(self) -> bool:
        return self.ref.system_table == AUDIT_LOG

    @property
    def system(self) -> bool:
        return self.ref.system_table is not None and not self.audit_log

    @property
    def pinned(self) -> bool:
        return self.snapshot_id is not None or self.tag is not None or self.timestamp_ms is not None

    @property
    def data_columns(self) -> list[str]:
        return [n for n in self.arrow_schema.names if not (self.audit_log and n == ROWKIND)]

    def scan(self, table: Any, *, snapshot_id: int | None = None) -> Any:
        """The table scan of this read (``snapshot_id``: plan that snapshot of a live read)."""
        if self.pinned:
            return table.scan(columns=self.data_columns, where=self.where, snapshot_id=self.snapshot_id,
                              tag=self.tag, timestamp_ms=self.timestamp_ms)
        return table.scan(columns=self.data_columns, where=self.where, snapshot_id=snapshot_id)


def _columns(options: Mapping[str, str]) -> tuple[str, ...] | None:
    raw = options.get("columns")
    if not raw:
        return None
    return tuple(c.strip() for c in raw.split(",") if c.strip())


# System tables that show the files of one snapshot: time travel picks which (Paimon: $files at a snapshot).
_AT_A_SNAPSHOT = frozenset({"files", "manifests", "partitions", "buckets", "table_indexes", "statistics"})


def read_spec(ref: TableRef, options: Mapping[str, str]) -> ReadSpec:
    columns = _columns(options)
    snapshot_id = int_option(options, "scan.snapshot-id")
    timestamp_ms = int_option(options, "scan.timestamp-millis")
    tag = options.get("scan.tag-name") or None
    where = options.get("where") or None
    named = {k: options[k] for k in ("scan.timestamp", "scan.version") if options.get(k)}
    if sum(x is not None for x in (snapshot_id, timestamp_ms, tag)) + len(named) > 1:
        raise InvalidOptionError(
            f"laketide: table {ref.full_name}: give at most one of scan.snapshot-id, scan.tag-name, "
            f"scan.timestamp-millis, scan.timestamp, scan.version"
        )
    if named and (ref.system_table is None or ref.system_table == AUDIT_LOG):
        # Resolved once, on the driver, to what executors can pin: the tag it names, else the snapshot id.
        ((key, value),) = named.items()
        data = ref.data_table()
        if key == "scan.version" and data.tags.exists(value.strip()):
            tag = value.strip()
        else:
            chosen = data.copy({key: value}).scan().snapshot
            snapshot_id = chosen.id if chosen is not None else None
    if ref.system_table is not None and ref.system_table != AUDIT_LOG:
        from laketide.table.system import system_table

        pinned = {k: options[k] for k in ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis",
                                          "scan.timestamp", "scan.version") if options.get(k)}
        if where is not None or (pinned and ref.system_table not in _AT_A_SNAPSHOT):
            raise InvalidOptionError(
                f"laketide: system table {ref.full_name} takes no where / scan.* options (filter the DataFrame; "
                f"{sorted(_AT_A_SNAPSHOT)} take scan.* to show a snapshot)"
            )
        sys_table = system_table(ref.data_table(), ref.system_table)
        if pinned:
            sys_table = sys_table.copy(pinned)
        data = sys_table.read(columns=list(columns) if columns else None)
        return ReadSpec(ref=ref, columns=columns, where=None, snapshot_id=None, tag=None, timestamp_ms=None,
                        arrow_schema=data.schema, system_options=tuple(sorted(pinned.items())))
    groups = None
    if options.get(GROUPS_OPTION) is not None:
        if (snapshot_id is None and tag is None) or ref.system_table is not None:
            raise InvalidOptionError(f"laketide: table {ref.full_name}: option {GROUPS_OPTION} is internal (set by "
                                     f"laketide.spark.read(native=True) with scan.snapshot-id / scan.tag-name)")
        groups = decode_groups(options[GROUPS_OPTION], table=ref.full_name)
    table = ref.data_table()
    data_cols = [c for c in columns if c != ROWKIND] if columns is not None else None
    scan = table.scan(columns=data_cols, where=where, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    schema = scan.output_schema
    if ref.system_table == AUDIT_LOG:
        kind = pa.field(ROWKIND, pa.string(), nullable=False)
        schema = pa.schema([kind, *schema]) if columns is None or ROWKIND in columns else schema
    return ReadSpec(ref=ref, columns=columns, where=where, snapshot_id=snapshot_id, tag=tag,
                    timestamp_ms=timestamp_ms, arrow_schema=schema, groups=groups)


class SplitPartition(InputPartition):
    """A pinned read's Spark partition: one split of the pinned snapshot."""

    def __init__(self, split: DataSplit) -> None:
        super().__init__(None)
        self.split = split


class GroupPartition(InputPartition):
    """A live read's Spark partition ``index``: the splits the driver planned for it."""

    def __init__(self, index: int, splits: Sequence[DataSplit]) -> None:
        super().__init__(index)
        self.index = index
        self.splits = tuple(splits)


class SystemPartition(InputPartition):
    """The whole of a (small) system table, read when the task runs."""

    def __init__(self) -> None:
        super().__init__(None)


Group = tuple[bytes, int]  # (partition, bucket)


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """Which Spark partition reads a (partition, bucket) group: the same answer in every task.

    The groups of the planned snapshot are dealt round-robin (balanced); a group that appeared since goes to a
    partition chosen from its bytes alone (Python's own hash() is salted per process, crc32 is not).
    """

    planned_snapshot: int | None
    slots: Mapping[Group, int]
    num_slots: int

    def slot(self, partition: bytes, bucket: int) -> int:
        found = self.slots.get((partition, bucket))
        if found is not None:
            return found
        return zlib.crc32(partition + bucket.to_bytes(4, "big", signed=True)) % self.num_slots


class BatchReader(DataSourceReader):
    """Spark calls ``reader()``, pickles the reader, and only then calls ``partitions()``: so the plan is made
    here, in the constructor, and the tasks get its group layout with the reader."""

    def __init__(self, spec: ReadSpec, schema: StructType) -> None:
        self.spec = spec
        self.schema = schema
        self._splits: list[DataSplit] = []  # the driver's plan; not pickled (the partitions carry it)
        self.layout = GroupLayout(None, {}, 1)
        if spec.system:
            return
        scan = spec.scan(spec.ref.data_table())
        self._splits = scan.plan()
        if spec.groups is not None:
            self._splits = [s for s in self._splits if (s.partition, s.bucket) in spec.groups]
        groups = sorted({(s.partition, s.bucket) for s in self._splits})
        num_slots = max(1, min(len(groups), MAX_LIVE_PARTITIONS))
        self.layout = GroupLayout(
            scan.snapshot.id if scan.snapshot is not None else None,
            {g: i % num_slots for i, g in enumerate(groups)}, num_slots,
        )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_splits"] = []
        return state

    @surfaced
    def partitions(self) -> list[InputPartition]:
        if self.spec.system:
            return [SystemPartition()]
        if self.spec.pinned:
            return [SplitPartition(s) for s in self._splits] or [GroupPartition(0, [])]
        slots: list[list[DataSplit]] = [[] for _ in range(self.layout.num_slots)]
        for s in self._splits:
            slots[self.layout.slot(s.partition, s.bucket)].append(s)
        return [GroupPartition(i, ss) for i, ss in enumerate(slots)]

    @surfaced_iter
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec = self.spec
        target = spark_arrow_schema(self.schema)
        if isinstance(partition, SystemPartition):
            from laketide.table.system import system_table

            sys_table = system_table(spec.ref.data_table(), spec.ref.system_table or "")
            if spec.system_options:
                sys_table = sys_table.copy(dict(spec.system_options))
            data = sys_table.read(columns=list(spec.columns) if spec.columns else None)
            for batch in data.to_batches():
                yield conform_to_spark(batch, target)
            return
        if isinstance(partition, SplitPartition):
            scan = spec.scan(spec.ref.data_table())
            yield from self._rows(scan, [partition.split], target)
            return
        if not isinstance(partition, GroupPartition):
            return  # Spark's stand-in partition for an empty plan
        scan = spec.scan(spec.ref.data_table())  # the latest snapshot, now (or the pinned one)
        current = scan.snapshot.id if scan.snapshot is not None else None
        if current == self.layout.planned_snapshot or spec.pinned:
            splits: Sequence[DataSplit] = partition.splits
        else:
            splits = [s for s in scan.plan() if self.layout.slot(s.partition, s.bucket) == partition.index]
        yield from self._rows(scan, splits, target)

    def _rows(self, scan: Any, splits: Sequence[DataSplit], target: pa.Schema) -> Iterator[pa.RecordBatch]:
        audit = self.spec.audit_log and ROWKIND in self.spec.arrow_schema.names
        for split in splits:
            for batch in scan.read_split(split):
                if audit:
                    kinds = pa.repeat(pa.scalar("+I"), batch.num_rows)
                    batch = pa.RecordBatch.from_arrays([kinds, *batch.columns],
                                                       names=[ROWKIND, *batch.schema.names])
                yield conform_to_spark(batch, target)
