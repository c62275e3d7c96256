"""Cross-partition upsert through Spark: each assigner task looks its incoming keys up in the table.

A table whose primary key lacks a partition key lets a key move between partitions, so a writer must know where
every incoming key lives now. In-process writers keep that index in memory (laketide.write.cross_partition);
through Spark no task holds the table's keys:

1. The driver plans the latest snapshot's buckets (the index TTL skips stale ones) and reports them; no job
   reads the table's keys up front.
2. Incoming rows get their arrival order (``monotonically_increasing_id``) and shuffle by key hash to ``n``
   assigner tasks, in arrival order; assigner ``i`` owns the buckets ``b % n == i`` for new keys.
3. Each assigner reads the planned buckets with ``key IN (its incoming keys)`` (laketide.write.key_locations:
   files and row groups skipped by key statistics, rows filtered before the merge), so it learns where its keys
   live without a join against every key of the table. The live-key counts of the buckets it fills (up to
   ``dynamic-bucket.target-row-num``) come from file metadata where exact, else from reading those buckets.
   In arrival order it applies the merge engine's rule for keys that change partition (deduplicate: delete in
   the old partition, insert in the new; partial-update / aggregation: stay in the old one; first-row: keep
   the old row) and tags each row with its bucket and row kind.
4. Rows shuffle by (partition, bucket) to the writers; a key's rows all come from its assigner, in arrival
   order, and a shuffle keeps that order, so the last row of a key wins without a second sort.

Paimon: crosspartition.GlobalIndexAssigner, IndexBootstrap (the Flink / Spark topologies bootstrap -> key hash
shuffle -> assigner -> (partition, bucket) shuffle); here the bootstrap is a keyed read inside the assigner
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from laketide.io.kv import VALUE_KIND
from laketide.meta.commit_message import KeyIndexBase
from laketide.spark.types import conform_to_spark, spark_arrow_schema, spark_schema
from laketide.spark.writer import BUCKET_COLUMN, ROW_KIND_COLUMN
from laketide.write.bucket_assigner import assigner_layout
from laketide.write.cross_partition import OLD_BUCKET, OLD_PARTITION, CrossPartitionAssigner, KeyBootstrap
from laketide.write.key_locations import KeyLocations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ORDER_COLUMN", "SparkBootstrap", "cross_partition_routed"]

_LOG = logging.getLogger(__name__)

# Arrival order of the incoming rows (the last row of a key wins): carried through TableWrite.prepare and the
# assigner's routing.
ORDER_COLUMN = "__laketide_order"
_CARRIED = (ORDER_COLUMN,)
_ASSIGNER = "__laketide_assigner"
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


@contextmanager
def cross_partition_routed(df: DataFrame, table: Any, *,
                           num_tasks: int | None = None) -> Iterator[tuple[DataFrame, SparkBootstrap]]:
    """``df`` routed for a cross-partition table's writers: the table's columns plus the bucket, row kind and
    arrival order of each row (and deletes for keys leaving a partition), with what the driver planned."""
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.types import ByteType, IntegerType, StructField, StructType

    spark = df.sparkSession
    schema = table.schema
    pk = list(schema.primary_keys)
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    n = assigner_layout(table.options, parallelism=num_tasks or shuffle).num_channels

    started = time.perf_counter()
    plan = KeyBootstrap.plan(file_io=table.file_io, table_path=table.path, schema=schema)
    report = SparkBootstrap(table=table.name, keys=sum(f.add_row_count for s in plan.splits for f in s.files),
                            buckets=len(plan.splits), buckets_skipped_by_ttl=plan.skipped_by_ttl,
                            seconds=time.perf_counter() - started,
                            key_index_base=KeyIndexBase(uuid.uuid4().hex, plan.snapshot_id))
    _LOG.info("cross-partition upsert of %s: %d buckets planned (%d skipped by the index TTL), %.2f s",
              report.table, report.buckets, report.buckets_skipped_by_ttl, report.seconds)

    ordered = df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id())
    ordered = ordered.withColumn(_ASSIGNER, F.pmod(F.hash(*[ordered[k] for k in pk]), F.lit(n)))
    by_key = ordered.repartitionById(n, _ASSIGNER).sortWithinPartitions(ORDER_COLUMN)

    # The arrival order stays in the assigners (see below): the writers get the table's columns, kind and bucket.
    out_schema = StructType([*spark_schema(table.arrow_schema).fields,
                             StructField(ROW_KIND_COLUMN, ByteType(), False),
                             StructField(BUCKET_COLUMN, IntegerType(), False)])
    assign = _assign_task(table, KeyLocations(plan), num_assigners=n, out_arrow=spark_arrow_schema(out_schema))
    assigned = by_key.mapInArrow(assign, out_schema)
    writers = num_tasks or max(shuffle, 1)
    # No sort by arrival order before the writers: every row of a key comes from the one assigner task that owns
    # the key, which emits them in arrival order, and a shuffle keeps the order of one map task's rows for each
    # reducer (the default write path relies on the same order across map tasks).
    routed = assigned.repartition(writers, *table.partition_keys, BUCKET_COLUMN)
    yield routed, report


def _assign_task(table: Any, locations: KeyLocations, *, num_assigners: int, out_arrow: pa.Schema) -> Any:
    file_io, path, name, schema = table.file_io, table.path, table.name, table.schema
    pk = list(schema.primary_keys)
    partitions = locations.plan.partitions

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from laketide.write.table_write import TableWrite

        prepare = TableWrite(file_io=file_io, table_path=path, table_name=name, schema=schema).prepare
        assigner: CrossPartitionAssigner | None = None
        counted: set[bytes] = set()  # partitions whose bucket counts this assigner holds
        for chunk in _chunks(batches):
            if assigner is None:  # every row of this task has the same assigner id
                assign_id = int(chunk.column(_ASSIGNER)[0].as_py())
                assigner = CrossPartitionAssigner.with_counts(schema=schema, counts={}, num_assigners=num_assigners,
                                                              assign_id=assign_id)
            rows = prepare(chunk.drop_columns([_ASSIGNER]), carry=_CARRIED)
            old_part, old_bucket = locations.locate(rows.select(pk))
            # Counts of the buckets this assigner may fill, in every partition a key of this chunk comes from or
            # goes to, before routing moves keys between them.
            wanted = assigner.partitions_in(rows) | {partitions[i] for i in old_part.drop_null().unique().to_pylist()}
            if wanted - counted:
                assigner.add_counts(locations.live_counts(wanted - counted, assigner.owns_bucket))
                counted |= wanted
            rows = assigner.learn(rows.append_column(OLD_PARTITION, old_part).append_column(OLD_BUCKET, old_bucket),
                                  partitions)
            for group in assigner.route(rows):
                out = group.rows
                kinds = out.column(VALUE_KIND)
                out = out.drop_columns([VALUE_KIND]).append_column(ROW_KIND_COLUMN, kinds)
                out = out.append_column(BUCKET_COLUMN, pa.array(np.full(out.num_rows, group.bucket, np.int32)))
                for batch in out.to_batches():
                    yield conform_to_spark(batch, out_arrow)

    return assign


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
