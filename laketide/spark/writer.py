"""Batch and streaming writes through Spark: executors write files, the driver commits once.

Each task writes the rows it gets through a laketide ``TableWrite`` and returns its ``CommitMessage``s (pickled)
to the driver, which publishes them as one snapshot. ``laketide.spark.write`` first adds each row's bucket (the
Java-identical hash, vectorized in ``mapInArrow``) and repartitions by (partition, bucket), so one task owns a
bucket and its sequence numbers continue the bucket's history without overlap. A failed task deletes its files;
an aborted job deletes the files of every task, also of those finishing or killed after the abort
(laketide.spark.job_files).

Streaming commits are keyed by (query, batch id) as Paimon's (commit user, commit identifier), so a batch Spark
replays after a crash is not committed twice.

Paimon: paimon-spark SparkWrite / WriteIntoPaimonTable, PaimonSink; table.sink.BatchTableCommit / StreamTableCommit
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from laketide.exceptions import CommitError, InvalidOptionError, SchemaError, UnsupportedFeatureError
from laketide.expr import Leaf, Op, Predicate, and_, bind, filter_table, or_
from laketide.meta.commit_message import CommitMessage, KeyIndexBase
from laketide.spark.errors import surfaced
from laketide.spark.job_files import SparkJob
from laketide.spark.options import (
    ASSIGN,
    COMMIT_IDENTIFIER,
    KEY_INDEX_BASE,
    READ_BASE_SNAPSHOT,
    ROUTED,
    TEST_FAIL_AFTER_COMMIT,
    TableRef,
    int_option,
)
from laketide.spark.types import map_in_arrow, spark_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ASSIGN",
    "BUCKET_COLUMN",
    "BatchWriter",
    "KEY_INDEX_BASE",
    "ROUTED",
    "ROUTED_OWNED",
    "ROW_KIND_COLUMN",
    "key_index_option",
    "LaketideCommit",
    "StreamWriter",
    "TEST_FAIL_AFTER_COMMIT",
    "with_dynamic_buckets",
]

_LOG = logging.getLogger(__name__)

# Columns laketide.spark.write adds for the writer tasks (a row's bucket, a row's kind), named by the ROUTED
# write option: the tasks hand them to TableWrite as parameters. A user's DataFrame never carries them.
BUCKET_COLUMN = "__laketide_bucket"
ROW_KIND_COLUMN = "__laketide_row_kind"
ROUTED_BUCKET = "bucket"
# Fixed buckets routed by the bucket alone (no bucket column: the shuffle computes it for the partition id): each
# task owns its buckets, and its TableWrite computes every row's bucket itself, as for fixed buckets it always does.
ROUTED_OWNED = "owned"
ROUTED_ROW_KIND = "row-kind"
# Cross-partition tables: rows arrive with their keys' locations, shuffled to the task owning their buckets
# (laketide.spark.cross_partition); each task assigns buckets and row kinds itself and writes in the same pass.
ROUTED_ASSIGN = "assign"
RESERVED_PREFIX = "__laketide_"
WRITE_CHUNK_ROWS = 262_144  # rows a writer task hands TableWrite.write at once


@dataclass(frozen=True, slots=True)
class LaketideCommit(WriterCommitMessage):
    """What one task hands the driver."""

    messages: tuple[CommitMessage, ...]
    # Rows of a dynamic-bucket table that no assigner stage routed: this task chose buckets on its own.
    unrouted_dynamic: bool = False
    attempt: str | None = None  # the task attempt whose files these are (laketide.spark.job_files)


def _messages(commits: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    return [m for c in commits if isinstance(c, LaketideCommit) for m in c.messages]


def _attempts(commits: Sequence[WriterCommitMessage | None]) -> set[str]:
    return {c.attempt for c in commits if isinstance(c, LaketideCommit) and c.attempt is not None}


def spark_job(table: Any) -> SparkJob:
    """A new Spark job writing ``table`` (its files may be in the table and its external data paths)."""
    from laketide.meta.external_paths import external_roots

    return SparkJob(table.path, external_roots(table.options, table_name=table.name))


def micro_batch_job(table: Any, stream_query: str, batch_id: int) -> SparkJob:
    """The job of one micro-batch of a streaming query. PySpark gives the query's tasks and each of its commits
    and aborts writers of their own: the query (its commit user) and the batch id are what they share."""
    return replace(spark_job(table), job_id=f"stream-{stream_query}-{batch_id}", replayable=True)


def _task_micro_batch(table: Any, stream_query: str) -> SparkJob | None:
    from pyspark import TaskContext

    context = TaskContext.get()
    batch = None if context is None else context.getLocalProperty("streaming.sql.batchId")
    return None if batch is None else micro_batch_job(table, stream_query, int(batch))


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


def routed_columns(options: Mapping[str, str]) -> frozenset[str]:
    raw = options.get(ROUTED) or ""
    out = frozenset(p.strip() for p in raw.split(",") if p.strip())
    unknown = out - {ROUTED_BUCKET, ROUTED_OWNED, ROUTED_ROW_KIND, ROUTED_ASSIGN}
    if unknown:
        raise InvalidOptionError(f"laketide: internal option {ROUTED!r} has unknown parts {sorted(unknown)}")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _TaskPlan:
    """What every writer task of one job needs besides the rows (picklable)."""

    ref: TableRef
    job: SparkJob | None = None  # the batch job; None: a streaming query's (each micro-batch a job) or untracked
    # A streaming query: its commit user's digest (its micro-batches' jobs are named by it and the batch id).
    stream_query: str | None = None
    routed: frozenset[str] = frozenset()
    key_index_base: KeyIndexBase | None = None
    # mode("overwrite") of a static partition: every row must belong to it.
    static_partition: dict[str, object] | None = None
    full_compaction: bool = False
    # ROUTED_ASSIGN: the cross-partition assigners' bucket counts, how many there are, and the partitions the
    # rows' locations index.
    locations: Any = None
    num_assigners: int = 1
    located: tuple[bytes, ...] = ()

    @property
    def one_task_per_bucket(self) -> bool:
        """laketide.spark.write routed each bucket to one task: the tasks may compact their buckets."""
        return bool(self.routed & {ROUTED_BUCKET, ROUTED_OWNED, ROUTED_ASSIGN})

    @property
    def buckets_given(self) -> bool:
        """Each row arrives with its bucket, or gets it from this task's assigner."""
        return ROUTED_BUCKET in self.routed or ROUTED_ASSIGN in self.routed

    @property
    def row_kinds_given(self) -> bool:
        return ROUTED_ROW_KIND in self.routed or ROUTED_ASSIGN in self.routed


def _write_task(plan: _TaskPlan, batches: Iterator[pa.RecordBatch]) -> LaketideCommit:
    table = plan.ref.data_table()
    job = plan.job if plan.stream_query is None else _task_micro_batch(table, plan.stream_query)
    files = None if job is None else job.task_files(table.file_io, table.name)
    if files is not None:
        table = table.with_file_io(files)
    # The table's own writer: restores each bucket's sequence numbers and compacts it as the table's options
    # say (num-sorted-run.*, lookup compaction for first-row / deletion vectors, none with write-only).
    w = table.new_write(compact=plan.one_task_per_bucket)
    w.key_index_base = plan.key_index_base
    inside = _partition_predicate(table, plan.static_partition) if plan.static_partition else None
    # Spark hands over Arrow batches of maxRecordsPerBatch (10k) rows; each TableWrite.write call has a fixed cost
    # (conform, row kinds, bucketing), so feed it fewer, bigger chunks.
    pending: list[pa.RecordBatch] = []
    pending_rows = 0

    def flush() -> None:
        chunk = pa.Table.from_batches(pending)
        if inside is not None:
            _check_inside(table, chunk, inside, plan.static_partition or {})
        buckets = row_kinds = None
        if plan.buckets_given:
            if w.dynamic_mode is not None:
                buckets = chunk.column(BUCKET_COLUMN).to_numpy()
            chunk = chunk.drop_columns([BUCKET_COLUMN])
        if plan.row_kinds_given:
            row_kinds = chunk.column(ROW_KIND_COLUMN).to_numpy()
            chunk = chunk.drop_columns([ROW_KIND_COLUMN])
        w.write(chunk, buckets=buckets, row_kinds=row_kinds)

    messages: list[CommitMessage] = []
    if ROUTED_ASSIGN in plan.routed:  # this task is a cross-partition assigner: route, then write the routed rows
        from laketide.spark.cross_partition import assigned_rows

        batches = (b for out in assigned_rows(batches, file_io=table.file_io, path=table.path, name=table.name,
                                              schema=table.schema, locations=plan.locations,
                                              num_assigners=plan.num_assigners, located=plan.located)
                   for b in out.to_batches())
    try:
        for batch in batches:
            if batch.num_rows:
                pending.append(batch)
                pending_rows += batch.num_rows
                if pending_rows >= WRITE_CHUNK_ROWS:
                    flush()
                    pending, pending_rows = [], 0
        if pending:
            flush()
        messages = w.prepare_commit(full_compaction=plan.full_compaction and plan.one_task_per_bucket)
    except BaseException:  # even an interrupt: delete this task's files, then re-raise
        w.abort()
        table.abort(messages)
        if files is not None:
            files.discard()
        raise
    finally:
        w.close()
    return LaketideCommit(tuple(messages), unrouted_dynamic=w.dynamic_mode is not None and not plan.buckets_given,
                          attempt=None if files is None else files.attempt)


def compact_after_commit(table: Any, plan: _TaskPlan, messages: Sequence[CommitMessage]) -> None:
    """An unshuffled DataFrame's tasks may share buckets, so they wrote level-0 files only: compact the buckets
    they touched now, as the table's writers would have (first-row and deletion-vector tables show new rows
    only then). Best effort: the write has landed; a concurrent compaction leaves the work to the next one."""
    if plan.one_task_per_bucket or not table.primary_keys or table.options.write_only or not messages:
        return
    from laketide.exceptions import LaketideError
    from laketide.scan.file_scan import PartitionCodec

    keys = list(table.partition_keys)
    parts = None
    if keys:
        codec = PartitionCodec(keys, [f.type for f in table.schema.partition_fields])
        parts = [dict(zip(keys, codec.values(p))) for p in {m.partition for m in messages}]
    try:
        table.compact(partitions=parts, full=plan.full_compaction)
    except LaketideError as e:
        _LOG.warning("Compaction of table %s after a Spark write failed (the write has landed): %s", table.name, e)


def _partition_predicate(table: Any, partition: Mapping[str, object]) -> Predicate:
    keys = list(table.partition_keys)
    if not keys:
        raise InvalidOptionError(f"laketide: table {table.name} has no partitions: overwrite-partition does not apply")
    unknown = [k for k in partition if k not in keys]
    if unknown:
        raise InvalidOptionError(
            f"laketide: overwrite-partition of table {table.name} names {unknown}, which are not partition keys "
            f"{keys}"
        )
    leaves = [Leaf(Op.IS_NULL, k, ()) if v is None else Leaf(Op.EQ, k, (v,)) for k, v in partition.items()]
    types = {f.name: f.type for f in table.arrow_schema}
    return bind(and_(*leaves), types)


def _check_inside(table: Any, rows: pa.Table, inside: Predicate, partition: Mapping[str, object]) -> None:
    """Spark's INSERT OVERWRITE ... PARTITION refuses rows of other partitions: so does a static overwrite."""
    keys = [k for k in partition if k in rows.column_names]
    if len(keys) != len(partition):
        return  # conform reports the missing partition columns
    matched = filter_table(rows.select(keys), inside).num_rows
    if matched != rows.num_rows:
        raise SchemaError(
            f"Overwrite of partition {dict(partition)} of table {table.name}: {rows.num_rows - matched} rows "
            f"belong to other partitions; nothing was written"
        )


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

    router = table.store.bucket_router()
    part_keys = list(table.partition_keys)
    if router.mode == "cross-partition":
        raise UnsupportedFeatureError(
            f"Table {table.name}: cross-partition upsert routes rows through a join with the table's keys; use "
            f"laketide.spark.write / write_stream (or laketide.spark.cross_partition.cross_partition_routed)"
        )
    shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    layout = router.assigner_layout(num_tasks or shuffle)
    names = router.key_columns

    def assigner_of(*columns: pa.Array) -> pa.Array:
        return router.assigners(layout, *columns)

    make_udf: Any = arrow_udf
    routed = df.withColumn(ASSIGNER_COLUMN, make_udf(assigner_of, IntegerType())(*[df[spark_name(k)] for k in names]))
    routed = routed.repartition(layout.num_channels, ASSIGNER_COLUMN)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task = router.assigner_task(layout)
        for batch in batches:
            batch = batch.drop_columns([ASSIGNER_COLUMN])
            buckets = task.buckets(*[batch.column(n) for n in names])
            yield batch.append_column(BUCKET_COLUMN, buckets)

    out_schema = StructType([f for f in df.schema.fields] + [StructField(BUCKET_COLUMN, IntegerType(), False)])
    assigned = map_in_arrow(routed, assign, out_schema)
    writers = num_tasks or max(shuffle, 1)
    return assigned.repartition(writers, *[assigned[spark_name(p)] for p in part_keys], assigned[BUCKET_COLUMN])


def key_index_option(base: KeyIndexBase) -> str:
    return f"{base.writer_id}@{'' if base.snapshot_id is None else base.snapshot_id}"


def _parse_key_index(raw: str | None) -> KeyIndexBase | None:
    if not raw:
        return None
    writer_id, _, snapshot = raw.partition("@")
    return KeyIndexBase(writer_id, int(snapshot) if snapshot else None)


class BatchWriter(DataSourceArrowWriter):
    """``df.write.format("laketide")``: ``overwrite`` is what Spark tells a Python source of the save mode
    (append or overwrite; Spark itself refuses errorifexists / ignore for Python sources)."""

    def __init__(self, ref: TableRef, options: Mapping[str, str], *, overwrite: bool) -> None:
        self.ref = ref
        self.overwrite = overwrite
        raw_mode = options.get("partitionoverwritemode")
        mode = (raw_mode or "static").strip().lower()
        if mode not in ("static", "dynamic"):
            raise InvalidOptionError(
                f"laketide: option partitionOverwriteMode of table {ref.name} must be static or dynamic, "
                f"got {raw_mode!r}"
            )
        static_partition = _static_partition(options.get("overwrite-partition"))
        if not overwrite and (raw_mode is not None or static_partition is not None):
            given = [k for k, v in (("partitionOverwriteMode", raw_mode), ("overwrite-partition", static_partition))
                     if v is not None]
            raise InvalidOptionError(
                f"laketide: option(s) {given} of the write to table {ref.name} only apply to mode('overwrite')"
            )
        if mode == "dynamic" and static_partition is not None:
            raise InvalidOptionError(
                f"laketide: write to table {ref.name}: give partitionOverwriteMode=dynamic or overwrite-partition, "
                f"not both"
            )
        self.dynamic = overwrite and mode == "dynamic"
        self.static_partition = static_partition
        table = ref.data_table()  # the table must exist: writes never create one
        if static_partition is not None:
            _partition_predicate(table, static_partition)  # refuse unknown keys before any task runs
        # (commit user, identifier): a micro-batch written as a batch job commits exactly once.
        identifier = int_option(options, COMMIT_IDENTIFIER)
        if identifier is None and options.get("commit.user"):
            raise InvalidOptionError(
                f"laketide: option commit.user of the write to table {ref.name} needs commit.identifier (the pair "
                f"makes the commit exactly-once)"
            )
        self.commit_key = None if identifier is None else (query_commit_user(options), identifier)
        self.read_base = int_option(options, READ_BASE_SNAPSHOT)
        routed = routed_columns(options)
        locations: Any = None
        assigners = 1
        located: tuple[bytes, ...] = ()
        if ROUTED_ASSIGN in routed:  # planned once here, in the driver's Python worker, shipped to every task
            from laketide.spark.cross_partition import parse_assign_option, task_locations

            assigners, located = parse_assign_option(options.get(ASSIGN), ref.name)
            locations = task_locations(table)
        self.plan = _TaskPlan(
            ref=ref, job=spark_job(table), routed=routed,
            key_index_base=_parse_key_index(options.get(KEY_INDEX_BASE)),
            static_partition=static_partition if overwrite else None,
            # A batch write compacts fully at each commit when full-compaction.delta-commits is set (as Table.write).
            full_compaction=table.options.full_compaction_delta_commits is not None,
            locations=locations, num_assigners=assigners, located=located,
        )

    @surfaced
    def write(self, iterator: Iterator[pa.RecordBatch]) -> LaketideCommit:
        return _write_task(self.plan, iterator)

    @surfaced
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.ref.data_table()
        self._commit(table, messages)
        # Reached only when committed (Spark aborts after a raise): attempts Spark did not hand over lose their files.
        assert self.plan.job is not None
        self.plan.job.end(table.file_io, kept=_attempts(messages))

    def _commit(self, table: Any, messages: list[WriterCommitMessage | None]) -> None:
        _check_routed(table, messages)
        msgs = _messages(messages)
        if self.read_base is not None:
            from laketide.table.change_base import refuse_changes_since

            try:
                refuse_changes_since(table, self.read_base or None, msgs, verb="merge / update")
            except BaseException:
                table.abort(msgs)
                raise
        if not self.overwrite:
            if self.commit_key is None:
                table.commit(msgs)
            elif committed_before(table, *self.commit_key):
                table.abort(msgs)  # a replay of a micro-batch that already landed
                return
            else:
                table.commit(msgs, commit_user=self.commit_key[0], commit_identifier=self.commit_key[1])
        elif self.dynamic and table.partition_keys:
            pred = _written_partitions(table, msgs)
            if pred is None:
                table.abort(msgs)
                return  # dynamic overwrite with no rows replaces nothing
            table.commit(msgs, overwrite=True, overwrite_where=pred)
        else:
            table.commit(msgs, overwrite=True, partition=self.static_partition)
        compact_after_commit(table, self.plan, msgs)

    @surfaced
    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        table = self.ref.data_table()
        table.abort(_messages(messages))
        assert self.plan.job is not None
        self.plan.job.end(table.file_io)  # also the files of tasks that finish, or are killed, after this abort


def _static_partition(raw: str | None) -> dict[str, object] | None:
    """``overwrite-partition`` = ``dt=2026-01-01,hr=3`` (values coerced to the column types on commit)."""
    if not raw:
        return None
    out: dict[str, object] = {}
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
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
    explicit = options.get("commit.user")
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
    """Each micro-batch is a job (laketide.spark.job_files) named by the query's commit user and the batch id."""

    def __init__(self, ref: TableRef, options: Mapping[str, str]) -> None:
        self.ref = ref
        self.commit_user = query_commit_user(options)
        self.fail_after = int_option(options, TEST_FAIL_AFTER_COMMIT)
        ref.data_table()  # the table must exist: writes never create one
        query = hashlib.sha256(self.commit_user.encode()).hexdigest()[:20]
        self.plan = _TaskPlan(ref=ref, stream_query=query, routed=routed_columns(options))

    @surfaced
    def write(self, iterator: Iterator[pa.RecordBatch]) -> LaketideCommit:
        # Restored per task from the latest snapshot: earlier micro-batches have committed by now.
        return _write_task(self.plan, iterator)

    @surfaced
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        table = self.ref.data_table()
        _check_routed(table, messages)
        msgs = _messages(messages)
        job = self._job(table, batchId)
        if committed_before(table, self.commit_user, batchId):
            table.abort(msgs)  # a replay of a batch that already landed: its new files are orphans
            job.sweep(table.file_io)
        else:
            table.commit(msgs, commit_user=self.commit_user, commit_identifier=batchId)
            # Attempts of this micro-batch Spark did not hand over (a speculative twin's, an earlier run's late
            # task's) lose their files.
            job.sweep(table.file_io, kept=_attempts(messages))
            compact_after_commit(table, self.plan, msgs)
        if self.fail_after is not None and batchId == self.fail_after:
            raise CommitError(f"test hook: failing after the laketide commit of batch {batchId}")

    @surfaced
    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        table = self.ref.data_table()
        committed = committed_before(table, self.commit_user, batchId)
        if not committed:
            table.abort(_messages(messages))
        # The query stops: tasks of this micro-batch finishing (or killed) later delete their files.
        self._job(table, batchId).end(table.file_io, kept=_attempts(messages) if committed else ())

    def _job(self, table: Any, batch_id: int) -> SparkJob:
        assert self.plan.stream_query is not None
        return micro_batch_job(table, self.plan.stream_query, batch_id)


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
