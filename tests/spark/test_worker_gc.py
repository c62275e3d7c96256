"""Reused Spark Python workers keep laketide's long-lived objects out of their per-task gc.collect()
(laketide.spark.worker_gc), and still collect what tasks leave behind."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

import laketide.spark as lts

ROOT = str(Path(__file__).resolve().parents[2])


def _probe(batches):  # noqa: ANN001, ANN202 - runs in a Spark Python worker
    import gc as worker_gc
    import weakref

    class Node:
        pass

    for _ in batches:
        pass
    node = Node()
    node.self = node  # a cycle created after the freeze: the worker's collection must still free it
    ref = weakref.ref(node)
    del node
    worker_gc.collect()
    yield pa.RecordBatch.from_pylist([{"frozen": worker_gc.get_freeze_count(), "cycle_freed": ref() is None}])


def test_write_tasks_freeze_the_workers_long_lived_objects(spark, cat, wh: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    cat.create_table("db.t", schema, primary_key=["k"], options={"bucket": "2"})
    frozen_here = gc.get_freeze_count()
    df = spark.createDataFrame([(i, str(i)) for i in range(200)], "k long, v string").repartition(4)
    lts.write(df, "db.t", warehouse=wh)
    lts.write(df, "db.t", warehouse=wh)  # the same rows again: the workers are reused
    assert cat.table("db.t").read().num_rows == 200

    probes = spark.range(0, 4, numPartitions=2).mapInArrow(_probe, "frozen long, cycle_freed boolean").collect()
    # The workers that ran laketide's tasks hold their modules frozen (tens of thousands of objects)...
    assert max(r["frozen"] for r in probes) > 10_000
    # ... and still collect cyclic garbage made afterwards.
    assert all(r["cycle_freed"] for r in probes)
    # The driver (the user's process) is never frozen.
    assert gc.get_freeze_count() == frozen_here


def _run(code: str, env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": ROOT, **env},
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


_COUNTS = """
import gc, json
from laketide.spark.worker_gc import freeze_long_lived
freeze_long_lived(); first = gc.get_freeze_count()
freeze_long_lived(); again = gc.get_freeze_count()  # nothing imported since: no second freeze
import laketide.spark.cross_partition
freeze_long_lived(); after_import = gc.get_freeze_count()
print(json.dumps({"first": first, "again": again, "after_import": after_import}))
"""


def test_freezes_only_in_a_reused_worker_and_again_only_after_imports() -> None:
    worker = _run(_COUNTS, {"SPARK_PYTHON_RUNTIME": "PYTHON_WORKER", "SPARK_REUSE_WORKER": "1"})
    assert worker["first"] > 0
    assert worker["again"] == worker["first"]
    assert worker["after_import"] > worker["first"]
    for env in ({"SPARK_PYTHON_RUNTIME": "", "SPARK_REUSE_WORKER": "1"},  # the driver, a plain interpreter
                {"SPARK_PYTHON_RUNTIME": "PYTHON_WORKER", "SPARK_REUSE_WORKER": ""}):  # a worker that exits
        assert _run(_COUNTS, env) == {"first": 0, "again": 0, "after_import": 0}
