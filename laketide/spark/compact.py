"""Compaction as a Spark job: one task per bucket, one COMPACT snapshot committed by the driver.

The driver plans the latest snapshot into per-bucket tasks (``laketide.table.compact.plan_compaction``); each
Spark task compacts its bucket and returns the commit message; the driver commits them all at once. If that commit
fails because a concurrent compaction replaced the same files first, the files the tasks wrote are deleted and the
table is unchanged; a failed Spark job deletes the files of its tasks, also of those finishing after it failed
(laketide.spark.job_files).

Paimon: paimon-spark CompactProcedure (one task per bucket), flink.action.CompactAction
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from laketide.exceptions import CommitConflictError
from laketide.expr import Predicate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["compact"]


def compact(
    spark: SparkSession,
    name: str,
    *,
    warehouse: str | None = None,
    full: bool = False,
    partitions: Sequence[Mapping[str, object]] | None = None,
    where: str | Predicate | None = None,
    commit_user: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> int | None:
    """Compact table ``name`` on Spark (``full`` merges each bucket into one sorted run / rewrites small files).

    Returns the COMPACT snapshot id, or None when no bucket needed compaction.
    """
    from laketide.spark.api import resolve_table
    from laketide.spark.errors import typed_errors
    from laketide.spark.options import check_options

    with typed_errors():
        opts, ref = resolve_table(spark, name, warehouse, options)
        check_options(opts, "compact", table=ref.full_name)
        return _compact(spark, ref.writable(), full=full, partitions=partitions, where=where, commit_user=commit_user)


def _compact(spark: SparkSession, ref: Any, *, full: bool, partitions: Sequence[Mapping[str, object]] | None,
             where: str | Predicate | None, commit_user: str | None) -> int | None:
    from laketide.spark.writer import spark_job
    from laketide.table.compact import compact_bucket, discard_compaction, plan_compaction

    table = ref.data_table()
    tasks = plan_compaction(table, partitions=partitions, where=where)
    if not tasks:
        return None
    job = spark_job(table)

    def run(task_bytes: bytes) -> bytes:
        task = pickle.loads(task_bytes)
        bucket_table = ref.data_table()
        files = job.task_files(bucket_table.file_io, bucket_table.name)
        try:
            message = compact_bucket(bucket_table.with_file_io(files), task, full=full)
        except BaseException:
            files.discard()
            raise
        return pickle.dumps((files.attempt, message))

    # Tasks travel pickled so Spark never has to infer a schema for them; one slice per bucket.
    payload = [pickle.dumps(t) for t in tasks]
    rdd = spark.sparkContext.parallelize(payload, numSlices=len(payload))
    try:
        found = [pickle.loads(b) for b in rdd.map(run).collect()]
    except BaseException:
        job.end(table.file_io)  # the files of every task, also of those finishing after the failure
        raise
    messages = [m for _, m in found if m is not None]
    committed: int | None = None
    try:
        if messages:
            committed = table.commit(messages, commit_user=commit_user)
    except CommitConflictError:
        discard_compaction(table, messages)
        job.end(table.file_io)
        raise
    job.end(table.file_io, kept={attempt for attempt, _ in found})
    return committed
