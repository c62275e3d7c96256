"""The core Spark cases as a driver program for a standalone cluster (run by test_standalone.py).

    python -m tests.spark.standalone_cases spark://127.0.0.1:PORT /path/to/warehouse WORKER_DIR [WORKER_DIR ...]

Executors are separate JVMs and Python workers: nothing the driver process holds reaches them but what Spark
ships, which is what this run checks. Each case runs on its own tables; the driver prints one line per case,
``CASE <name> <passed|failed|skipped> <detail as JSON>``, and goes on after a failed case so every case reports.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

# In the order they run; test_standalone.py makes one test of each.
CASE_NAMES = ("executors_on_every_worker", "batch_write_and_read", "pk_upsert", "streaming_restart",
              "compaction_job", "merge_into")


class CaseSkipped(Exception):
    """A case that cannot run on this build, with the reason."""


def _write_schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


DDL = "id long, v string, dt string"


def executors_on_every_worker(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    """Tasks ran in one executor per worker: each Python worker's directory is its executor's, under its worker."""
    import os

    sc = spark.sparkContext
    executors = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1  # the driver is listed too
    assert executors == len(ctx["worker_dirs"]), f"{executors} executors, workers {ctx['worker_dirs']}"

    def where(_: object) -> list[tuple[str, int]]:
        return [(os.getcwd(), os.getppid())]

    seen = sc.parallelize(range(16), 16).mapPartitions(where).collect()
    dirs = {Path(cwd).resolve() for cwd, _ in seen}
    for wd in ctx["worker_dirs"]:
        assert any(Path(wd).resolve() in d.parents for d in dirs), f"no task ran under worker dir {wd}: {dirs}"
    assert len({ppid for _, ppid in seen}) >= 2  # Python workers forked by two different executor daemons


def batch_write_and_read(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    t = cat.create_table("db.t", _write_schema(), partition_keys=["dt"])
    df = spark.createDataFrame([(i, f"v{i}", f"d{i % 3}") for i in range(300)], DDL).repartition(4)
    ls.write(df, "db.t")
    assert t.read().num_rows == 300, t.read().num_rows
    loaded = spark.read.format("laketide").load("db.t")
    assert loaded.count() == 300
    assert loaded.where("id < 10").count() == 10
    # the same DataFrame after a commit (and after a filtered query)
    spark.createDataFrame([(i, "new", "d9") for i in range(300, 310)], DDL) \
        .write.format("laketide").mode("append").save("db.t")
    assert loaded.count() == 310, loaded.count()
    assert sorted(r["id"] for r in loaded.where("dt = 'd9'").collect()) == list(range(300, 310))
    # Spark's native reader over the files laketide planned (the executors open them by path)
    native = ls.read(spark, "db.t", native=True, where="dt = 'd1'")
    assert sorted(r["id"] for r in native.collect()) == list(range(1, 300, 3))
    # empty scans
    assert loaded.where("id > 100000").count() == 0
    empty = cat.create_table("db.empty", _write_schema())
    assert spark.read.format("laketide").load("db.empty").collect() == []
    assert empty.latest_snapshot() is None


def pk_upsert(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    pk = cat.create_table("db.pk", _write_schema(), primary_key=["id"], options={"bucket": "3"})
    ls.write(spark.createDataFrame([(i, "a", "x") for i in range(100)], DDL).repartition(4), "db.pk")
    ls.write(spark.createDataFrame([(i, "b", "x") for i in range(50, 150)], DDL).repartition(4), "db.pk")
    got = {r["id"]: r["v"] for r in ls.read(spark, "db.pk").collect()}
    assert len(got) == 150 and got[0] == "a" and got[50] == "b" and got[149] == "b", len(got)
    assert pk.read().num_rows == 150
    assert len(list(pk.snapshot_manager.snapshots())) == 2  # one snapshot per write


def streaming_restart(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    """A query that fails after committing batch 1, restarted from its checkpoint: every row exactly once."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.errors import StreamingQueryException

    from laketide.spark.options import TEST_FAIL_AFTER_COMMIT

    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.sink", schema)
    work = Path(ctx["warehouse"]).parent / "stream"
    inbox = work / "inbox"
    inbox.mkdir(parents=True)
    checkpoint = str(work / "checkpoint")

    def drop_file(i: int) -> None:
        pq.write_table(pa.table({"id": list(range(i * 50, i * 50 + 50)), "v": [f"f{i}"] * 50}, schema=schema),
                       inbox / f"part-{i}.parquet")

    def start(**options: str) -> Any:
        src = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(str(inbox))
        return ls.write_stream(src, "db.sink", checkpoint=checkpoint, trigger={"availableNow": True},
                               options=options)

    for i in range(3):
        drop_file(i)
    crashed = start(**{TEST_FAIL_AFTER_COMMIT: "1"})
    try:
        crashed.awaitTermination()
    except StreamingQueryException as e:
        assert "failing after the laketide commit of batch 1" in str(e), str(e)
    else:
        raise AssertionError("the test hook did not fail the query")
    assert t.read().num_rows == 100  # batches 0 and 1 committed; Spark logged only batch 0
    for i in range(3, 5):
        drop_file(i)
    restarted = start()
    restarted.awaitTermination()
    assert restarted.exception() is None
    assert t.read().sort_by("id").column("id").to_pylist() == list(range(250))  # no duplicates, no gaps
    snaps = list(t.snapshot_manager.snapshots())
    assert [s.commit_identifier for s in snaps] == [0, 1, 2, 3, 4], [s.commit_identifier for s in snaps]
    again = start()  # nothing new: no commit
    again.awaitTermination()
    assert len(list(t.snapshot_manager.snapshots())) == 5


def compaction_job(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    from laketide.meta.snapshot import CommitKind

    t = cat.create_table("db.cpk", _write_schema(), primary_key=["id"],
                         options={"bucket": "2", "write-only": "true"})
    for round_ in range(3):  # overlapping upserts: three sorted runs per bucket
        rows = [(i, f"r{round_}", "x") for i in range(round_ * 40, round_ * 40 + 80)]
        ls.write(spark.createDataFrame(rows, DDL).repartition(2), "db.cpk")
    before = t.read().sort_by("id")
    assert sum(len(s.files) for s in t.scan().plan()) == 6
    sid = ls.compact(spark, "db.cpk", full=True)
    assert sid is not None and t.snapshot(sid).commit_kind is CommitKind.COMPACT
    assert sum(len(s.files) for s in t.scan().plan()) == 2  # one sorted run per bucket
    assert t.read().sort_by("id").equals(before)
    assert before.num_rows == 160
    # a compacted PK table through Spark's native Parquet reader: the same rows
    native = ls.read(spark, "db.cpk", native=True).toArrow().sort_by("id")
    assert native.column("v").to_pylist() == before.column("v").to_pylist()
    assert ls.compact(spark, "db.cpk", full=True) is None  # nothing left to do


def merge_into(spark: Any, cat: Any, ls: Any, ctx: dict[str, Any]) -> None:
    t = cat.create_table("db.m", _write_schema(), primary_key=["id"], options={"bucket": "2"})
    ls.write(spark.createDataFrame([(i, "old", "x") for i in range(10)], DDL), "db.m")
    spark.createDataFrame([(i, "new", "x") for i in range(5, 15)], DDL).createOrReplaceTempView("merge_src")
    ls.sql(spark, "MERGE INTO db.m AS t USING merge_src AS s ON t.id = s.id "
               "WHEN MATCHED AND s.id = 9 THEN DELETE "
               "WHEN MATCHED THEN UPDATE SET v = s.v "
               "WHEN NOT MATCHED THEN INSERT *")
    got = dict(zip(*t.read().sort_by("id").select(["id", "v"]).to_pydict().values(), strict=True))
    want = {**{i: "old" for i in range(5)}, **{i: "new" for i in range(5, 15) if i != 9}}
    assert got == want, got


def main(master: str, warehouse: str, worker_dirs: list[str]) -> None:
    import laketide
    import laketide.spark as ls

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        # One 1-core executor per worker; the context waits (Spark's own wait, not a sleep) until both registered.
        spark = ls.session(master, app_name="laketide-standalone", warehouse=warehouse, conf={
            "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": str(len(worker_dirs)),
            "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
            "spark.executorEnv.PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        })
    spark.sparkContext.setLogLevel("ERROR")
    ctx = {"warehouse": warehouse, "worker_dirs": worker_dirs}
    try:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db", exist_ok=True)
        for name in CASE_NAMES:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    globals()[name](spark, cat, ls, ctx)
            except CaseSkipped as e:
                print(f"CASE {name} skipped {json.dumps(str(e))}", flush=True)
            except Exception:  # noqa: BLE001 - reported to the test, which fails that case
                print(f"CASE {name} failed {json.dumps(traceback.format_exc()[-6000:])}", flush=True)
            else:
                print(f"CASE {name} passed \"\"", flush=True)
    finally:
        spark.stop()
    print("standalone driver done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
