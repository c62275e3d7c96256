"""Cross-partition upsert through Spark: the key -> (partition, bucket) lookup as a distributed join.

A table whose primary key lacks a partition key lets a key move between partitions, so a writer must know where
every incoming key lives now. In-process writers keep that index in memory (laketide.write.cross_partition);
here Spark does the lookup, so no task ever holds the table's keys:

1. The table's live keys are read, one task per bucket (the index TTL skips stale buckets), deduplicated by key
   and cached: ``(key columns, partition bytes, bucket)``. One job counts the keys of every bucket (the
   "bootstrap", reported in the log); the counts go to every assigner, which fills buckets up to
   ``dynamic-bucket.target-row-num``.
2. Incoming rows get their arrival order (``monotonically_increasing_id``) and are left-joined to those keys.
3. Rows shuffle by key hash to ``n`` assigner tasks; assigner ``i`` owns the buckets ``b % n == i`` for new
   keys. In arrival order it applies the merge engine's rule for keys that change partition (deduplicate:
   delete in the old partition, insert in the new; partial-update / aggregation: stay in the old one;
   first-row: keep the old row) and tags each row with its bucket and row kind.
4. Rows shuffle by (partition, bucket) to the writers, again in arrival order, so the last row of a key wins.

Paimon: crosspartition.GlobalIndexAssigner, IndexBootstrap (the Flink / Spark topologies bootstrap -> key hash
shuffle -> assigner -> (partition, bucket) shuffle)
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

from laketide.meta.commit_message import KeyIndexBase
from laketide.io.kv import VALUE_KIND
from laketide.spark.types import conform_to_spark, spark_arrow_schema, spark_schema
from laketide.spark.writer import BUCKET_COLUMN, ROW_KIND_COLUMN
from laketide.write.bucket_assigner import assigner_layout
from laketide.write.cross_partition import OLD_BUCKET, OLD_PARTITION, CrossPartitionAssigner, KeyBootstrap

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ORDER_COLUMN", "SparkBootstrap", "cross_partition_routed", "existing_keys"]

_LOG = logging.getLogger(__name__)

# Arrival order of the incoming rows (the last row of a key wins): carried through TableWrite.prepare and the
# assigner's routing, with the key locations the join found.
ORDER_COLUMN = "__laketide_order"
_CARRIED = (ORDER_COLUMN, OLD_PARTITION, OLD_BUCKET)
_ASSIGNER = "__laketide_assigner"
_KEY_PREFIX = "__laketide_key_"  # the table's key columns, named apart from the incoming ones for the join
ASSIGN_CHUNK_ROWS = 262_144  # rows an assigner routes at once (each call looks keys up in its index once)


@dataclass(frozen=True, slots=True)
class SparkBootstrap:
    """What reading the table's keys cost (Paimon reports its bootstrap the same way, per assigner)."""

    table: str
    keys: int
    buckets: int  # (partition, bucket) pairs holding keys
    buckets_skipped_by_ttl: int
    seconds: float
    key_index_base: KeyIndexBase  # the writers' commit fails if another job wrote the table since


def existing_keys(spark: SparkSession, table: Any, *, parallelism: int) -> tuple[DataFrame, KeyBootstrap]:
    """The table's live keys as ``(__laketide_key_<pk>..., OLD_PARTITION, OLD_BUCKET)``, one read task per bucket
    (at most ``parallelism`` tasks); also what was planned (snapshot, buckets the index TTL skipped)."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = table.schema
    pk = list(schema.primary_keys)
    plan = KeyBootstrap.plan(file_io=table.file_io, table_path=table.path, schema=schema)
    key_arrow = pa.schema([pa.field(f"{_KEY_PREFIX}{k}", table.arrow_schema.field(k).type, nullable=False)
                           for k in pk])
    # Partitions as ids into plan.partitions: fixed-width columns let Spark hash-aggregate and join them cheaply.
    out_schema = StructType([*spark_schema(key_arrow).fields, StructField(OLD_PARTITION, IntegerType(), False),
                             StructField(OLD_BUCKET, IntegerType(), False)])
    out_arrow = spark_arrow_schema(out_schema)
    splits = plan.splits
    part_ids = {part: i for i, part in enumerate(plan.partitions)}
    if not splits:
        return spark.createDataFrame([], out_schema), plan

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                split = splits[i]
                part_id = part_ids[split.partition]
                for keys in plan.read(split):
                    n = keys.num_rows
                    columns = [*keys.columns, pa.array(np.full(n, part_id, np.int32)),
                               pa.array(np.full(n, split.bucket, np.int32))]
                    for out in pa.Table.from_arrays(columns, names=out_arrow.names).to_batches():
                        yield conform_to_spark(out, out_arrow)

    ids = spark.range(0, len(splits), 1, numPartitions=max(1, min(len(splits), parallelism)))
    return ids.mapInArrow(read, out_schema), plan


@contextmanager
def cross_partition_routed(df: DataFrame, table: Any, *,
                           num_tasks: int | None = None) -> Iterator[tuple[DataFrame, SparkBootstrap]]:
    """``df`` routed for a cross-partition table's writers: the table's columns plus the bucket, row kind and
    arrival order of each row (and deletes for keys leaving a partition). The table's keys stay cached in
    Spark while the context is open."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.types import ByteType, IntegerType, LongType, StructField, StructType

    spark = df.sparkSession
    schema = table.schema
    pk = list(schema.primary_keys)
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    n = assigner_layout(table.options, parallelism=num_tasks or shuffle).num_channels

    started = time.perf_counter()
    keys, plan = existing_keys(spark, table, parallelism=shuffle)
    keys = keys.dropDuplicates([f"{_KEY_PREFIX}{k}" for k in pk])  # a key twice: two jobs wrote at once
    keys = keys.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counted = keys.groupBy(OLD_PARTITION, OLD_BUCKET).count().collect()
        partitions = plan.partitions
        counts = {(partitions[int(r[0])], int(r[1])): int(r[2]) for r in counted}
        report = SparkBootstrap(table=table.name, keys=sum(counts.values()), buckets=len(counts),
                                buckets_skipped_by_ttl=plan.skipped_by_ttl, seconds=time.perf_counter() - started,
                                key_index_base=KeyIndexBase(uuid.uuid4().hex, plan.snapshot_id))
        _LOG.info("cross-partition bootstrap of %s: %d keys in %d buckets (%d skipped by the index TTL), %.2f s",
                  report.table, report.keys, report.buckets, report.buckets_skipped_by_ttl, report.seconds)

        ordered = df.withColumn(ORDER_COLUMN, F.monotonically_increasing_id())
        joined = ordered.join(keys, on=[ordered[k] == keys[f"{_KEY_PREFIX}{k}"] for k in pk], how="left")
        joined = joined.drop(*[f"{_KEY_PREFIX}{k}" for k in pk])
        joined = joined.withColumn(_ASSIGNER, F.pmod(F.hash(*[joined[k] for k in pk]), F.lit(n)))
        by_key = joined.repartitionById(n, _ASSIGNER).sortWithinPartitions(ORDER_COLUMN)

        out_schema = StructType([*spark_schema(table.arrow_schema).fields,
                                 StructField(ORDER_COLUMN, LongType(), False),
                                 StructField(ROW_KIND_COLUMN, ByteType(), False),
                                 StructField(BUCKET_COLUMN, IntegerType(), False)])
        assign = _assign_task(table, counts, partitions, num_assigners=n,
                              out_arrow=spark_arrow_schema(out_schema))
        assigned = by_key.mapInArrow(assign, out_schema)
        writers = num_tasks or max(shuffle, 1)
        routed = assigned.repartition(writers, *table.partition_keys, BUCKET_COLUMN).sortWithinPartitions(ORDER_COLUMN)
        yield routed.drop(ORDER_COLUMN), report
    finally:
        keys.unpersist()


def _assign_task(table: Any, counts: dict[tuple[bytes, int], int], partitions: tuple[bytes, ...], *,
                 num_assigners: int, out_arrow: pa.Schema) -> Any:
    file_io, path, name, schema = table.file_io, table.path, table.name, table.schema

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from laketide.write.table_write import TableWrite

        prepare = TableWrite(file_io=file_io, table_path=path, table_name=name, schema=schema).prepare
        assigner: CrossPartitionAssigner | None = None
        for chunk in _chunks(batches):
            if assigner is None:  # every row of this task has the same assigner id
                assigner = CrossPartitionAssigner.with_counts(
                    schema=schema, counts=counts, num_assigners=num_assigners,
                    assign_id=int(chunk.column(_ASSIGNER)[0].as_py()))
            rows = assigner.learn(prepare(chunk.drop_columns([_ASSIGNER]), carry=_CARRIED), partitions)
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

