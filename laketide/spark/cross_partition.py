"""Cross-partition upsert through Spark: each assigner task looks its incoming keys up in the table.

A table whose primary key lacks a partition key lets a key move between partitions, so a writer must know where
every incoming key lives now. In-process writers keep that index in memory (laketide.write.cross_partition);
through Spark no task holds the table's keys:

1. The driver plans the latest snapshot's buckets (the index TTL skips stale ones) and reports them; no job
   reads the table's keys up front.
2. ``laketide.spark.write`` (``cross_partition_keyed``): each input task looks its keys up in the planned
   buckets (an iterator Arrow UDF over the key columns only: one read with ``key IN (its keys)`` per 262k keys,
   laketide.write.key_locations: files and row groups skipped by key statistics, rows filtered before the
   merge). Rows get their arrival order (``monotonically_increasing_id``) and shuffle once to ``n`` tasks: a
   key the table holds to the task owning its (partition, bucket) (``(bucket + partition index) % n``,
   laketide.spark.bucket_owners), a new key by its hash; each task sorts its rows back into arrival order. Task
   ``i`` fills only buckets it owns with new keys, so every bucket a key's rows go to (its old one, the new ones
   it fills) belongs to the key's task: one writer per bucket, which may compact it. With nothing planned (an
   empty table) there is nothing to look up and no UDF.
3. Each task is the assigner and the writer of its rows, in one Python pass: the live-key counts of the buckets
   it fills (up to ``dynamic-bucket.target-row-num``) come from file metadata where exact, else from reading
   those buckets; in arrival order it applies the merge engine's rule for keys that change partition
   (deduplicate: delete in the old partition, insert in the new; partial-update / aggregation: stay in the old
   one; first-row: keep the old row), tags each row with its bucket and row kind and hands it to the table's
   writer.
4. ``cross_partition_routed`` keeps the two-stage form for callers that want the routed rows: assigner tasks by
   key hash (each looks its keys up itself), then a second shuffle by (partition, bucket) to one writer per
   bucket; a key's rows all come from its assigner, in arrival order, and a shuffle keeps that order, so the
   last row of a key wins without a second sort.

Paimon: crosspartition.GlobalIndexAssigner, IndexBootstrap (the Flink / Spark topologies bootstrap -> key hash
shuffle -> assigner -> (partition, bucket) shuffle); here the bootstrap is a keyed read inside the assigner
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.io.kv import VALUE_KIND
from laketide.meta.commit_message import KeyIndexBase
from laketide.spark.bucket_owners import SpreadAssigner, owned_live_counts, partition_offsets
from laketide.spark.types import conform_to_spark, map_in_arrow, spark_arrow_schema, spark_name, spark_schema
from laketide.spark.writer import BUCKET_COLUMN, ROW_KIND_COLUMN
from laketide.types import to_arrow_schema
from laketide.write.bucket_assigner import assigner_layout
from laketide.write.cross_partition import OLD_BUCKET, OLD_PARTITION, CrossPartitionAssigner, KeyBootstrap
from laketide.write.key_locations import KeyLocations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["LOCATION_COLUMN", "ORDER_COLUMN", "SparkBootstrap", "assigned_rows", "cross_partition_keyed",
           "cross_partition_routed", "parse_assign_option", "task_locations"]

_LOG = logging.getLogger(__name__)

# Arrival order of the incoming rows (the last row of a key wins): carried through TableWrite.prepare and the
# assigner's routing.
ORDER_COLUMN = "__laketide_order"
_CARRIED = (ORDER_COLUMN,)
_ASSIGNER = "__laketide_assigner"
# Where each incoming key lives (``cross_partition_keyed``): partition index << 32 | bucket, null for a new key.
LOCATION_COLUMN = "__laketide_location"
ASSIGN_CHUNK_ROWS = 262_144  # rows an assigner routes at once (each chunk's new keys are looked up in one read)


@dataclass(frozen=True, slots=True)
class SparkBootstrap:
    """What the driver planned for the assigners (Paimon reports its bootstrap per assigner)."""

    table: str
    keys: int  # live keys of the planned buckets by their file metadata (exact for compacted buckets, else at most)
    buckets: int  # (partition, bucket) pairs planned
    buckets_skipped_by_ttl: int
    seconds: float
    key_index_base: KeyIndexBase  # the writers' commit fails if another job wrote the table since


def _plan(table: Any) -> tuple[KeyBootstrap, SparkBootstrap]:
    started = time.perf_counter()
    plan = KeyBootstrap.plan(file_io=table.file_io, table_path=table.path, schema=table.schema)
    report = SparkBootstrap(table=table.name, keys=sum(f.add_row_count for s in plan.splits for f in s.files),
                            buckets=len(plan.splits), buckets_skipped_by_ttl=plan.skipped_by_ttl,
                            seconds=time.perf_counter() - started,
                            key_index_base=KeyIndexBase(uuid.uuid4().hex, plan.snapshot_id))
    _LOG.info("cross-partition upsert of %s: %d buckets planned (%d skipped by the index TTL), %.2f s",
              report.table, report.buckets, report.buckets_skipped_by_ttl, report.seconds)
    return plan, report


def _by_key(df: DataFrame, table: Any, num_tasks: int | None) -> tuple[DataFrame, int]:
    """``df`` with its arrival order, shuffled by key hash to the assigners (sorted back into arrival order)."""
    from pyspark.sql import functions as F  # noqa: N812

    shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    n = assigner_layout(table.options, parallelism=num_tasks or shuffle).num_channels
    pk = list(table.schema.primary_keys)
    ordered = df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id())
    ordered = ordered.withColumn(_ASSIGNER, F.pmod(F.hash(*[ordered[spark_name(k)] for k in pk]), F.lit(n)))
    return ordered.repartitionById(n, _ASSIGNER).sortWithinPartitions(ORDER_COLUMN), n


@contextmanager
def cross_partition_keyed(df: DataFrame, table: Any, *,
                          num_tasks: int | None = None) -> Iterator[tuple[DataFrame, dict[str, str], SparkBootstrap]]:
    """``df`` shuffled to the tasks that assign and write (one per assigner), the write options that tell the
    writer tasks so, and what the driver planned.

    Before the shuffle each input task looks its keys up (one keyed read, only the key columns cross into Python):
    a key the table holds goes to the task owning its (partition, bucket), a new key by its hash. So the task
    of a key owns every bucket the key's rows go to (its old bucket, and the new buckets it fills), and each
    bucket has one writer, which may compact it, as after a shuffle by (partition, bucket)."""
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import LongType

    from laketide.spark.writer import ASSIGN, KEY_INDEX_BASE, ROUTED, ROUTED_ASSIGN, key_index_option

    plan, report = _plan(table)
    shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    n = assigner_layout(table.options, parallelism=num_tasks or shuffle).num_channels
    pk = [spark_name(k) for k in table.schema.primary_keys]
    if plan.splits:
        make_udf: Any = arrow_udf
        keys = F.expr(f"struct({', '.join(pk)})")  # one parsed expression, not a Column per key
        location = make_udf(_locate_udf(KeyLocations(plan), table.name), LongType())(keys)
    else:  # an empty table (or every bucket past the index TTL): every key is new, nothing to look up
        location = F.lit(None).cast(LongType())
    # A held key goes to the owner of its (partition, bucket): (bucket + partition index) % n
    # (laketide.spark.bucket_owners), so partitions of one bucket each still spread over the tasks.
    loc = spark_name(LOCATION_COLUMN)
    owner = (f"CAST(CASE WHEN {loc} IS NULL THEN pmod(hash({', '.join(pk)}), {n}) "
             f"ELSE pmod(pmod({loc}, {1 << 32}) + shiftright({loc}, 32), {n}) END AS INT)")
    # Built from SQL text where it can be: each PySpark Column operation is ~10 py4j round trips (its call-site
    # tracking), a parsed expression 3.
    by_owner = df.withColumns({ORDER_COLUMN: F.expr("monotonically_increasing_id()"), LOCATION_COLUMN: location})
    by_owner = by_owner.withColumns({_ASSIGNER: F.expr(owner)}).repartitionById(n, _ASSIGNER)
    by_owner = by_owner.sortWithinPartitions(F.expr(spark_name(ORDER_COLUMN)))
    routing = json.dumps({"assigners": n, "partitions": [p.hex() for p in plan.partitions]})
    yield by_owner, {KEY_INDEX_BASE: key_index_option(report.key_index_base), ROUTED: ROUTED_ASSIGN,
                     ASSIGN: routing}, report


def parse_assign_option(raw: str | None, table: str) -> tuple[int, tuple[bytes, ...]]:
    """(assigners, the partitions the locations index) of the internal option ``cross_partition_keyed`` sets."""
    from laketide.exceptions import InvalidOptionError

    try:
        value = json.loads(raw or "")
        return int(value["assigners"]), tuple(bytes.fromhex(p) for p in value["partitions"])
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidOptionError(f"laketide: internal assign option of the write to {table} is malformed") from e


def _locate_udf(locations: KeyLocations, table_name: str) -> Any:
    """Each input task's keys looked up at once: ``partition index << 32 | bucket``, null for a new key."""
    schema = locations.plan.schema
    pk = list(schema.primary_keys)
    key_schema = pa.schema([to_arrow_schema(schema.row_type).field(k) for k in pk])

    def located(keys: list[pa.Array]) -> Iterator[pa.Array]:
        from laketide.write.conform import conform

        rows = pa.Table.from_batches([pa.RecordBatch.from_struct_array(k) for k in keys])
        rows = conform(rows.rename_columns(pk), key_schema, table_name=table_name)
        parts, buckets = locations.locate(rows)
        packed = pc.add(pc.shift_left(parts.cast(pa.int64()), 32), buckets.cast(pa.int64()))
        start = 0
        for k in keys:
            yield packed.slice(start, len(k))
            start += len(k)

    def locate(batches: Iterator[pa.Array]) -> Iterator[pa.Array]:
        from laketide.spark.worker_gc import freeze_long_lived

        freeze_long_lived()
        # One keyed read per ASSIGN_CHUNK_ROWS keys: few reads, and Spark holds only that many rows meanwhile.
        pending: list[pa.Array] = []
        rows = 0
        for keys in batches:
            pending.append(keys)
            rows += len(keys)
            if rows >= ASSIGN_CHUNK_ROWS:
                yield from located(pending)
                pending, rows = [], 0
        if pending:
            yield from located(pending)

    return locate


@contextmanager
def cross_partition_routed(df: DataFrame, table: Any, *,
                           num_tasks: int | None = None) -> Iterator[tuple[DataFrame, SparkBootstrap]]:
    """``df`` routed for a cross-partition table's writers: the table's columns plus the bucket, row kind and
    arrival order of each row (and deletes for keys leaving a partition), with what the driver planned."""
    from pyspark.sql.types import ByteType, IntegerType, StructField, StructType

    plan, report = _plan(table)
    by_key, n = _by_key(df, table, num_tasks)
    # The arrival order stays in the assigners (see below): the writers get the table's columns, kind and bucket.
    out_schema = StructType([*spark_schema(table.arrow_schema).fields,
                             StructField(ROW_KIND_COLUMN, ByteType(), False),
                             StructField(BUCKET_COLUMN, IntegerType(), False)])
    out_arrow = spark_arrow_schema(out_schema)
    locations, schema, name = KeyLocations(plan), table.schema, table.name
    file_io, path = table.file_io, table.path

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for out in assigned_rows(batches, file_io=file_io, path=path, name=name, schema=schema,
                                 locations=locations, num_assigners=n):
            for batch in out.to_batches():
                yield conform_to_spark(batch, out_arrow)

    assigned = map_in_arrow(by_key, assign, out_schema)
    shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    writers = num_tasks or max(shuffle, 1)
    # No sort by arrival order before the writers: every row of a key comes from the one assigner task that owns
    # the key, which emits them in arrival order, and a shuffle keeps the order of one map task's rows for each
    # reducer (the default write path relies on the same order across map tasks).
    routed = assigned.repartition(writers, *[assigned[spark_name(p)] for p in table.partition_keys],
                                  assigned[BUCKET_COLUMN])
    yield routed, report


def task_locations(table: Any) -> KeyLocations:
    """The keyed reads a writer task that assigns uses: the latest snapshot's buckets, planned once per job (a
    later commit of another job fails this job's commit: the key index base the driver planned)."""
    return KeyLocations(KeyBootstrap.plan(file_io=table.file_io, table_path=table.path, schema=table.schema))


def assigned_rows(batches: Iterator[pa.RecordBatch], *, file_io: Any, path: str, name: str, schema: Any,
                  locations: KeyLocations, num_assigners: int,
                  located: tuple[bytes, ...] | None = None) -> Iterator[pa.Table]:
    """One assigner task: rows shuffled to it, in arrival order, routed to (partition, bucket) groups with their
    row kind and bucket (``ROW_KIND_COLUMN``, ``BUCKET_COLUMN``): the table's columns and those two. The rows'
    locations are looked up here, or (``located``: the partitions their indexes name) come with the rows."""
    from laketide.write.table_write import TableWrite

    pk = list(schema.primary_keys)
    partitions = locations.plan.partitions if located is None else located
    carried = _CARRIED if located is None else (*_CARRIED, LOCATION_COLUMN)
    prepare = TableWrite(file_io=file_io, table_path=path, table_name=name, schema=schema).prepare
    assigner: CrossPartitionAssigner | None = None
    counted: set[bytes] = set()  # partitions whose bucket counts this assigner holds
    for chunk in _chunks(batches):
        if assigner is None:  # every row of this task has the same assigner id
            assign_id = int(chunk.column(_ASSIGNER)[0].as_py())
            if located is None:  # assigners by key hash, writers after them: ownership by bucket alone
                assigner = CrossPartitionAssigner.with_counts(schema=schema, counts={}, num_assigners=num_assigners,
                                                              assign_id=assign_id)
            else:  # this task writes what it owns: ownership spread over partitions as the driver routed
                assigner = SpreadAssigner.spread(schema=schema, num_assigners=num_assigners, assign_id=assign_id,
                                                 offsets=partition_offsets(located))
        rows = prepare(chunk.drop_columns([_ASSIGNER]), carry=carried)
        if located is None:
            old_part, old_bucket = locations.locate(rows.select(pk))
        else:  # carried through prepare: still aligned with the rows it kept
            packed = rows.column(LOCATION_COLUMN)
            rows = rows.drop_columns([LOCATION_COLUMN])
            old_part = pc.shift_right(packed, 32).cast(pa.int32())
            old_bucket = pc.bit_wise_and(packed, 0xFFFFFFFF).cast(pa.int32())
        # Counts of the buckets this assigner may fill, in every partition a key of this chunk comes from or
        # goes to, before routing moves keys between them.
        wanted = assigner.partitions_in(rows) | {partitions[i] for i in old_part.drop_null().unique().to_pylist()}
        if wanted - counted:
            if isinstance(assigner, SpreadAssigner):
                assigner.add_counts(owned_live_counts(locations, wanted - counted, assigner))
            else:
                assigner.add_counts(locations.live_counts(wanted - counted, assigner.owns_bucket))
            counted |= wanted
        rows = assigner.learn(rows.append_column(OLD_PARTITION, old_part).append_column(OLD_BUCKET, old_bucket),
                              partitions)
        for group in assigner.route(rows):
            out = group.rows
            kinds = out.column(VALUE_KIND)
            out = out.drop_columns([VALUE_KIND, *_CARRIED]).append_column(ROW_KIND_COLUMN, kinds)
            yield out.append_column(BUCKET_COLUMN, pa.array(np.full(out.num_rows, group.bucket, np.int32)))


def _chunks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """Spark's small Arrow batches gathered into tables of about ASSIGN_CHUNK_ROWS rows, in order."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            rows += batch.num_rows
        if rows >= ASSIGN_CHUNK_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending)
