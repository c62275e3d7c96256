"""Spark cross-partition upsert vs ``df.write.parquet`` of the same rows, interleaved round by round in one
local[2] session (timings printed to stdout, never asserted, nothing written into the repository).

    PYTHONPATH=<tree> .venv/bin/python -m bench.spark_cross_partition_rounds --rows 500000 --rounds 5

The data and table are bench/spark_bench.py's workload 4: a table of ``rows`` ``orders`` rows partitioned by
``status`` with ``order_id`` alone as the key (written through Python, untimed), and an upsert of rows/4 rows, half
of them new keys, whose statuses are drawn afresh (so most known keys move partition). Each round times, back to
back, ``updates.write.parquet`` (the floor) and ``laketide.spark.write(updates, <a fresh populated table>)``;
the first round warms the JVM and the Python workers and is left out of the medians. Reported: per-round wall
ratios (floor / laketide: the target's speed ratio) and their median, CPU of the JVM alone and of the JVM's process
tree (its Python workers) plus this driver, their difference (python cpu), and, with ``--stages``, the Spark stages
of the last laketide write (tasks, executor run time, JVM CPU, shuffle bytes) from the UI's REST API.

``--two-stage`` adds the write as it was before the assigners became the writers (``cross_partition_routed``:
assigners, then a second shuffle by (partition, bucket) to the writers), for a before / after in one session.

``--pk-upsert`` times instead bench/spark_bench.py's workload 3: ``rows`` rows upserted into a fresh EMPTY table
keyed by ``order_id`` with 4 fixed buckets (the "laketide" variant), against ``df.write.parquet`` of the same rows.

``--cold`` starts with a laketide write before anything else has run in the session (the first JVM compile, the
Python workers' first imports) and reports it separately: the benchmark leaves its warm-up round out, a one-shot
user pays it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
import laketide.spark as ls
from bench.data import orders
from bench.spark_write_floors import _cpu


def _stages(ui: str, app: str, group: str) -> list[str]:
    """One line per stage of the jobs of ``group``: tasks, wall, executor run time, JVM CPU, shuffle bytes."""
    def get(path: str) -> Any:
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{path}") as r:
            return json.load(r)

    def stamp(s: str) -> float:
        return datetime.datetime.strptime(s[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()

    lines = []
    for job in sorted(get("jobs"), key=lambda j: j["jobId"]):
        if job.get("jobGroup") != group:
            continue
        took = stamp(job["completionTime"]) - stamp(job["submissionTime"])
        lines.append(f"job {job['jobId']} ({job['name'][:60]}): {took:.3f} s")
        for sid in sorted(job["stageIds"]):
            for a in get(f"stages/{sid}"):
                if a["status"] == "SKIPPED":
                    continue
                wall = stamp(a["completionTime"]) - stamp(a["submissionTime"]) if a.get("completionTime") else 0.0
                lines.append(
                    f"  stage {sid:3d} {a['name'][:48]:48s} tasks {a['numTasks']:3d}  wall {wall:6.3f} s  "
                    f"run {a['executorRunTime'] / 1000:6.3f} s  jvm cpu {a['executorCpuTime'] / 1e9:6.3f} s  "
                    f"shuffle w {a['shuffleWriteBytes'] / 1e6:6.1f} MB r {a['shuffleReadBytes'] / 1e6:6.1f} MB")
    return lines


def _two_stage_write(df: Any, name: str, wh: str) -> None:
    from laketide.spark.api import _save
    from laketide.spark.cross_partition import cross_partition_routed
    from laketide.spark.writer import KEY_INDEX_BASE, ROUTED, key_index_option

    table = laketide.load_catalog(warehouse=wh).table(name)
    with cross_partition_routed(df, table) as (routed, report):
        _save(routed, name, "append", {"warehouse": wh, KEY_INDEX_BASE: key_index_option(report.key_index_base),
                                       ROUTED: "bucket,row-kind"})


def run(rows: int, *, rounds: int, work: Path, stages: bool, cold: bool, fixed: bool,
        two_stage: bool = False, upsert_rows: int | None = None, pk_upsert: bool = False) -> dict[str, float]:
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "0"} if stages else None
    spark = ls.session("local[2]", app_name="laketide-cross-partition-rounds", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    wh = str(work / "wh")
    cat = laketide.load_catalog(warehouse=wh)
    cat.create_database("b", exist_ok=True)
    data = orders(rows)
    pk_schema = pa.schema([pa.field("order_id", pa.int64(), nullable=False), *list(data.schema)[1:]])
    status_schema = pa.schema([*list(pk_schema)[:2], pa.field("status", pa.string(), nullable=False),
                               *list(pk_schema)[3:]])
    table_rows = data.cast(status_schema)
    if pk_upsert:  # workload 3: every row of the data set into an empty table
        upsert = data if upsert_rows is None else data.slice(0, upsert_rows)
    else:
        upsert = orders(rows // 4 if upsert_rows is None else upsert_rows, seed=43, key_offset=rows - rows // 8)
    pq.write_table(upsert, work / "upsert.parquet")
    updates = spark.read.parquet(str(work / "upsert.parquet")).repartition(4).cache()
    updates.count()
    counter = iter(range(1_000_000))
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]

    def populated(keys: list[str], options: dict[str, str]) -> str:
        name = f"b.cross{next(counter)}"
        if pk_upsert:
            cat.create_table(name, pk_schema, primary_key=["order_id"], options={"bucket": "4"})
            return name
        t = cat.create_table(name, status_schema, primary_key=keys, partition_keys=["status"], options=options)
        t.write(table_rows)
        return name

    def timed(fn: Callable[[], object]) -> tuple[float, float, float]:
        c0 = _cpu(jvm_pid)
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        c1 = _cpu(jvm_pid)
        return wall, c1[0] - c0[0], c1[1] - c0[1]

    out: dict[str, float] = {}
    if cold:
        name = populated(["order_id"], {})
        wall, jvm, tree = timed(lambda: ls.write(updates, name, warehouse=wh))
        out["cold laketide s"] = wall
        print(f"cold (first) laketide write: {wall:.3f} s, JVM cpu {jvm:.2f} s, tree cpu {tree:.2f} s")

    variants = (["floor", "laketide"] + (["fixed"] if fixed and not pk_upsert else [])
                + (["two-stage"] if two_stage else []))
    results: dict[str, list[tuple[float, float, float]]] = {v: [] for v in variants}
    last_group = ""
    for r in range(rounds + 1):  # round 0 warms up
        for v in variants:
            if v == "floor":
                path = str(work / f"pq{next(counter)}")
                fn: Callable[[], object] = lambda path=path: updates.write.mode("overwrite").parquet(path)  # noqa: E731
            elif v == "two-stage":
                name = populated(["order_id"], {})
                fn = lambda name=name: _two_stage_write(updates, name, wh)  # noqa: E731
            else:
                keys, options = (["order_id"], {}) if v == "laketide" else (["order_id", "status"], {"bucket": "4"})
                name = populated(keys, options)
                fn = lambda name=name: ls.write(updates, name, warehouse=wh)  # noqa: E731
            group = f"{v}-{r}"
            sc.setJobGroup(group, group)
            results[v].append(timed(fn))
            sc.setJobGroup("", "")
            if v == "laketide":
                last_group = group
        line = "  ".join(f"{v} {results[v][-1][0]:.3f} s" for v in variants)
        ratio = results["floor"][-1][0] / results["laketide"][-1][0]
        print(f"round {r}{' (warm-up)' if r == 0 else ''}: {line}  ratio {ratio:.2f}x")
    if stages:
        print("\n".join(_stages(str(sc.uiWebUrl), str(sc.applicationId), last_group)))
    spark.stop()

    def med(v: str, i: int) -> float:
        return statistics.median(x[i] for x in results[v][1:])

    for v in variants[1:]:
        pairs = list(zip(results["floor"][1:], results[v][1:]))
        out[f"median ratio (floor/{v}, wall)"] = statistics.median(floor[0] / ours[0] for floor, ours in pairs)
        out[f"median ratio (floor/{v}, tree cpu)"] = statistics.median(floor[2] / ours[2] for floor, ours in pairs)
    ratios = [floor[0] / ours[0] for floor, ours in zip(results["floor"][1:], results["laketide"][1:])]
    for v in variants:
        out[f"{v} wall s"], out[f"{v} jvm cpu s"], out[f"{v} tree cpu s"] = med(v, 0), med(v, 1), med(v, 2)
        # the Python workers and this driver: what laketide's own code costs, steadier than wall on a busy machine
        out[f"{v} python cpu s"] = statistics.median(x[2] - x[1] for x in results[v][1:])
    print(f"per-round wall ratios (floor / laketide): {', '.join(f'{x:.2f}' for x in ratios)}")
    for k, val in out.items():
        print(f"{k:42s} {val:.3f}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000, help="rows of the table (the upsert writes rows/4)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--upsert-rows", type=int, default=None,
                        help="rows of the upsert (default rows/4; a few rows show the fixed latency)")
    parser.add_argument("--stages", action="store_true", help="the Spark stages of the last laketide write")
    parser.add_argument("--cold", action="store_true", help="time a first laketide write before any warm-up")
    parser.add_argument("--fixed", action="store_true", help="also the same write into fixed buckets")
    parser.add_argument("--pk-upsert", action="store_true",
                        help="the PK upsert instead: all rows into an empty table with 4 fixed buckets")
    parser.add_argument("--two-stage", action="store_true", help="also the two-stage write (assigners, then writers)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="laketide-cross-rounds-"))
    try:
        run(args.rows, rounds=args.rounds, work=work, stages=args.stages, cold=args.cold, fixed=args.fixed,
            two_stage=args.two_stage, upsert_rows=args.upsert_rows, pk_upsert=args.pk_upsert)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
