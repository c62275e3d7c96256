"""Batch and streaming writes through Spark: executors write files, the driver commits once.

Each task writes the rows it gets through a laketide ``TableWrite`` and returns its ``CommitMessage``s (pickled)
to the driver, which publishes them as one snapshot. ``laketide.spark.write`` first adds each row's bucket (the
Java-identical hash, vectorized in ``mapInArrow``) and repartitions by (partition, bucket), so one task owns a
bucket and its sequence numbers continue the bucket's history without overlap. A failed task deletes its files;
an aborted job deletes the files of the tasks that finished.

Streaming commits are keyed by (query, batch id) as Paimon's (commit user, commit identifier), so a batch Spark
replays after a crash is not committed twice.

Paimon: paimon-spark SparkWrite / WriteIntoPaimonTable, PaimonSink; table.sink.BatchTableCommit / StreamTableCommit
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from laketide.exceptions import CommitError, InvalidOptionError, UnsupportedFeatureError
from laketide.expr import Leaf, Op, Predicate, and_, bind, or_
from laketide.meta.commit_message import CommitMessage, KeyIndexBase
from laketide.spark.options import TableRef, bool_option, int_option
from laketide.write.bucket_assigner import ASSIGNED_BUCKET_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "BUCKET_COLUMN",
    "BatchWriter",
    "KEY_INDEX_BASE",
    "key_index_option",
    "LaketideCommit",
    "StreamWriter",
    "TEST_FAIL_AFTER_COMMIT",
    "with_dynamic_buckets",
]

# Added by laketide.spark.write before the shuffle (TableWrite takes the bucket from it, or drops it).
BUCKET_COLUMN = ASSIGNED_BUCKET_COLUMN
WRITE_CHUNK_ROWS = 262_144  # rows a writer task hands TableWrite.write at once
# Cross-partition writes: the snapshot their key lookup read, for the single-writer check at commit.
KEY_INDEX_BASE = "laketide.key-index-base"
# Batch writes of a streaming micro-batch (foreachBatch) commit under (commit.user, this option).
COMMIT_IDENTIFIER = "commit.identifier"
# Test hook: fail the streaming query right after the laketide commit of this batch id (before Spark's own
# commit log records it), to exercise recovery.
TEST_FAIL_AFTER_COMMIT = "laketide.test.fail-after-commit-batch"


@dataclass(frozen=True, slots=True)
class LaketideCommit(WriterCommitMessage):
    """What one task hands the driver."""

    messages: tuple[CommitMessage, ...]
    # Rows of a dynamic-bucket table that no assigner stage routed: this task chose buckets on its own.
    unrouted_dynamic: bool = False


def _messages(commits: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for c in commits if isinstance(c, LaketideCommit) for m in c.messages]


def _check_routed(table: Any, commits: Sequence[WriterCommitMessage | None]) -> None:
    """Refuse (and delete the files of) a dynamic-bucket write whose tasks each assigned buckets on their own:
    a key written by two of them could land in two buckets, or two partitions."""
    alone = [c for c in commits if isinstance(c, LaketideCommit) and c.unrouted_dynamic and c.messages]
    if len(alone) > 1:
        table.abort(_messages(commits))
        raise UnsupportedFeatureError(
            f"Table {table.name} has dynamic buckets: {len(alone)} Spark tasks assigned buckets each on its own, "
            f"which may put one key in two buckets, so nothing was committed. Write it with "
            f"laketide.spark.write(df, ...) / write_stream (they shuffle rows by key first), or from one task "
            f"(df.coalesce(1))."
        )


def _write_task(ref: TableRef, batches: Iterator[pa.RecordBatch],
                sequences: Mapping[tuple[bytes, int], int] | None,
                key_index_base: KeyIndexBase | None = None) -> LaketideCommit:
    from laketide.write.table_write import TableWrite

    table = ref.data_table()
    if sequences is None:
        w = table.new_write()  # restores sequence numbers from the latest snapshot, lazily
    else:
        w = TableWrite(file_io=table.file_io, table_path=table.path, table_name=table.name, schema=table.schema,
                       restore_sequence=lambda part, bucket: sequences.get((part, bucket)))
    w.key_index_base = key_index_base
    # Spark hands over Arrow batches of maxRecordsPerBatch (10k) rows; each TableWrite.write call has a fixed cost
    # (conform, row kinds, bucketing), so feed it fewer, bigger chunks.
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    routed = False
    try:
        for batch in batches:
            routed = routed or BUCKET_COLUMN in batch.schema.names
            if batch.num_rows:
                pending.append(batch)
                pending_rows += batch.num_rows
                if pending_rows >= WRITE_CHUNK_ROWS:
                    w.write(pa.Table.from_batches(pending))
                    pending, pending_rows = [], 0
        if pending:
            w.write(pa.Table.from_batches(pending))
        messages = w.prepare_commit()
    except BaseException:
        w.abort()
        raise
    finally:
        w.close()
    return LaketideCommit(tuple(messages), unrouted_dynamic=w.dynamic_mode is not None and not routed)


ASSIGNER_COLUMN = "__laketide_assigner"


def with_dynamic_buckets(df: DataFrame, table: Any, *, num_tasks: int | None = None) -> DataFrame:
    """Dynamic-bucket tables: shuffle by key hash to the assigners, assign buckets, shuffle by (partition, bucket).

    Each key reaches one assigner task (``BucketAssigner.computeAssigner`` of its partition and key hashes);
    the task assigns buckets with the hash index of the latest snapshot (one ``HashBucketAssigner`` per task,
    owning its bucket ids), and the rows then go to one writer task per (partition, bucket), which writes the
    bucket's hash index file. Cross-partition tables need a join with the table's keys first
    (laketide.spark.cross_partition).
    """
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType, StructField, StructType

    from laketide.index.hash_index import compute_assigner
    from laketide.meta.binary_row import hash_rows
    from laketide.types import to_arrow_type
    from laketide.write.bucket_assigner import (
        DynamicBucketIndex,
        HashBucketAssigner,
        assign_buckets,
        assigner_layout,
        dynamic_bucket_mode,
        max_buckets,
        partition_hash,
    )
    from laketide.meta.binary_row import serialize_binary_row

    schema = table.schema
    part_keys = list(table.partition_keys)
    if dynamic_bucket_mode(schema) == "cross-partition":
        raise UnsupportedFeatureError(
            f"Table {table.name}: cross-partition upsert routes rows through a join with the table's keys; use "
            f"laketide.spark.write / write_stream (or laketide.spark.cross_partition.cross_partition_routed)"
        )
    shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    layout = assigner_layout(table.options, parallelism=num_tasks or shuffle)
    keys = list(schema.trimmed_primary_keys)
    key_types = [schema.field(k).type for k in keys]
    part_types = [f.type for f in schema.partition_fields]
    names = part_keys + keys
    arrow_types = [to_arrow_type(t) for t in part_types + key_types]
    empty_hash = partition_hash(serialize_binary_row([], []))  # unpartitioned: the empty row's hash

    def assigner_of(*columns: pa.Array) -> pa.Array:
        t = pa.table([c.cast(a) for c, a in zip(columns, arrow_types)], names=names)
        p_hash = hash_rows(t, part_keys, part_types) if part_keys else np.full(t.num_rows, empty_hash)
        return pa.array(compute_assigner(p_hash, hash_rows(t, keys, key_types), num_channels=layout.num_channels,
                                         num_assigners=layout.num_assigners), pa.int32())

    make_udf: Any = arrow_udf
    routed = df.withColumn(ASSIGNER_COLUMN, make_udf(assigner_of, IntegerType())(*[df[k] for k in names]))
    routed = routed.repartition(layout.num_channels, ASSIGNER_COLUMN)
    file_io, path, options = table.file_io, table.path, table.options
    field_types = {n: to_arrow_type(schema.field(n).type) for n in names}

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index = DynamicBucketIndex.latest(file_io=file_io, table_path=path, schema=schema)
        assigner = HashBucketAssigner(index=index, layout=layout, target_row_num=options.dynamic_bucket_target_row_num,
                                      max_buckets=max_buckets(options))
        for batch in batches:
            batch = batch.drop_columns([ASSIGNER_COLUMN])
            typed = pa.table([batch.column(n).cast(field_types[n]) for n in names], names=names)
            buckets = assign_buckets(typed, schema=schema, assigner=assigner)
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    out_schema = StructType([f for f in df.schema.fields] + [StructField(BUCKET_COLUMN, IntegerType(), False)])
    assigned = routed.mapInArrow(assign, out_schema)
    writers = num_tasks or max(shuffle, 1)
    return assigned.repartition(writers, *part_keys, BUCKET_COLUMN)


def key_index_option(base: KeyIndexBase) -> str:
    return f"{base.writer_id}@{'' if base.snapshot_id is None else base.snapshot_id}"


def _parse_key_index(raw: str | None) -> KeyIndexBase | None:
    if not raw:
        return None
    writer_id, _, snapshot = raw.partition("@")
    return KeyIndexBase(writer_id, int(snapshot) if snapshot else None)


def max_sequences(ref: TableRef) -> dict[tuple[bytes, int], int]:
    """Each live bucket's highest sequence number: planned once on the driver, shipped to the tasks."""
    table = ref.data_table()
    latest = table.latest_snapshot()
    out: dict[tuple[bytes, int], int] = {}
    if latest is None:
        return out
    scan = table.file_scan()
    for e in scan.plan(latest):
        key = (e.partition, e.bucket)
        out[key] = max(out.get(key, -1), e.file.max_sequence_number)
    return out


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, ref: TableRef, options: Mapping[str, str], *, overwrite: bool) -> None:
        self.ref = ref
        self.overwrite = overwrite
        mode = (options.get("partitionoverwritemode") or options.get("partition-overwrite-mode") or "static").lower()
        if mode not in ("static", "dynamic"):
            raise InvalidOptionError(f"laketide: partitionOverwriteMode must be static or dynamic, got {mode!r}")
        self.dynamic = overwrite and (mode == "dynamic" or bool_option(options, "dynamic-partition-overwrite"))
        self.static_partition = _static_partition(options.get("overwrite-partition"))
        self.sequences = max_sequences(ref)
        # (commit user, identifier): a micro-batch written as a batch job commits exactly once.
        identifier = options.get(COMMIT_IDENTIFIER)
        self.commit_key = None if identifier is None else (query_commit_user(options), int(identifier))
        self.key_index_base = _parse_key_index(options.get(KEY_INDEX_BASE))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LaketideCommit:
        return _write_task(self.ref, iterator, self.sequences, self.key_index_base)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.ref.data_table()
        _check_routed(table, messages)
        msgs = _messages(messages)
        if not self.overwrite:
            if self.commit_key is None:
                table.commit(msgs)
            elif committed_before(table, *self.commit_key):
                table.abort(msgs)  # a replay of a micro-batch that already landed
            else:
                table.commit(msgs, commit_user=self.commit_key[0], commit_identifier=self.commit_key[1])
            return
        if self.dynamic and table.partition_keys:
            pred = _written_partitions(table, msgs)
            if pred is None:
                return  # dynamic overwrite with no rows replaces nothing
            table.commit(msgs, overwrite=True, overwrite_where=pred)
            return
        table.commit(msgs, overwrite=True, partition=self.static_partition)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.ref.data_table().abort(_messages(messages))


def _static_partition(raw: str | None) -> dict[str, object] | None:
    """``overwrite-partition`` = ``dt=2026-01-01,hr=3`` (values coerced to the column types on commit)."""
    if not raw:
        return None
    out: dict[str, object] = {}
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise InvalidOptionError(f"laketide: overwrite-partition must look like 'k=v,k2=v2', got {raw!r}")
        out[key.strip()] = value.strip()
    return out


def _written_partitions(table: Any, messages: Sequence[CommitMessage]) -> Predicate | None:
    """The partitions ``messages`` wrote to, as an OR of partition equalities (None: none written)."""
    from laketide.scan.file_scan import PartitionCodec

    keys = list(table.partition_keys)
    codec = PartitionCodec(keys, [f.type for f in table.schema.partition_fields])
    seen = {m.partition for m in messages if m.new_files}
    if not seen:
        return None
    ors = []
    for part in seen:
        values = codec.values(part)
        ors.append(and_(*[Leaf(Op.IS_NULL, k, ()) if v is None else Leaf(Op.EQ, k, (v,))
                          for k, v in zip(keys, values)]))
    types = {f.name: f.type for f in table.arrow_schema}
    return bind(or_(*ors), types)


# -- streaming -----------------------------------------------------------------------------------------------------
def query_commit_user(options: Mapping[str, str]) -> str:
    """The commit user of a streaming query: stable across restarts from the same checkpoint."""
    explicit = options.get("commit.user") or options.get("commit-user")
    if explicit:
        return explicit
    checkpoint = options.get("checkpointlocation")
    if checkpoint:
        query_id = _query_id(checkpoint)
        if query_id:
            return f"spark-query-{query_id}"
    raise InvalidOptionError(
        "laketide streaming sink: exactly-once commits need a stable commit user; set a checkpointLocation "
        "(the query id stored there is used) or option('commit.user', ...)"
    )


def _query_id(checkpoint: str) -> str | None:
    path = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
    try:
        with open(os.path.join(path, "metadata"), encoding="utf-8") as f:
            return str(json.loads(f.readline())["id"])
    except (OSError, ValueError, KeyError):
        return None


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, ref: TableRef, options: Mapping[str, str]) -> None:
        self.ref = ref
        self.commit_user = query_commit_user(options)
        self.fail_after = int_option(options, TEST_FAIL_AFTER_COMMIT)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LaketideCommit:
        # Restored per task from the latest snapshot: earlier micro-batches have committed by now.
        return _write_task(self.ref, iterator, None)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        table = self.ref.data_table()
        _check_routed(table, messages)
        msgs = _messages(messages)
        if committed_before(table, self.commit_user, batchId):
            table.abort(msgs)  # a replay of a batch that already landed: its new files are orphans
        else:
            table.commit(msgs, commit_user=self.commit_user, commit_identifier=batchId)
        if self.fail_after is not None and batchId == self.fail_after:
            raise CommitError(f"test hook: failing after the laketide commit of batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        table = self.ref.data_table()
        if not committed_before(table, self.commit_user, batchId):
            table.abort(_messages(messages))


def committed_before(table: Any, commit_user: str, identifier: int) -> bool:
    """Whether ``commit_user`` already committed ``identifier`` (its newest snapshot has one at least as big)."""
    sm = table.snapshot_manager
    latest = sm.latest_snapshot_id()
    earliest = sm.earliest_snapshot_id() or 1
    sid = latest
    while sid is not None and sid >= earliest:
        s = sm.snapshot(sid)
        if s.commit_user == commit_user:
            return bool(s.commit_identifier >= identifier)
        sid -= 1
    return False
