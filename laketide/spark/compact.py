"""Compaction as a Spark job: one task per bucket, one COMPACT snapshot committed by the driver.

The driver plans the latest snapshot into per-bucket tasks (``laketide.table.compact.plan_compaction``); each
Spark task compacts its bucket and returns the commit message; the driver commits them all at once. If that commit
fails because a concurrent compaction replaced the same files first, the files the tasks wrote are deleted and the
table is unchanged; a failed Spark job leaves the files of its finished tasks as orphans, never a half compaction.

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
    from laketide.table.compact import compact_bucket, discard_compaction, plan_compaction

    table = ref.data_table()
    tasks = plan_compaction(table, partitions=partitions, where=where)
    if not tasks:
        return None

    def run(task_bytes: bytes) -> bytes:
        task = pickle.loads(task_bytes)
        message = compact_bucket(ref.data_table(), task, full=full)
        return pickle.dumps(message)

    # Tasks travel pickled so Spark never has to infer a schema for them; one slice per bucket.
    payload = [pickle.dumps(t) for t in tasks]
    rdd = spark.sparkContext.parallelize(payload, numSlices=len(payload))
    found = [pickle.loads(b) for b in rdd.map(run).collect()]
    messages = [m for m in found if m is not None]
    if not messages:
        return None
    try:
        committed: int | None = table.commit(messages, commit_user=commit_user)
        return committed
    except CommitConflictError:
        discard_compaction(table, messages)
        raise
