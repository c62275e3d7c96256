"""Where a Spark primary-key upsert through ``laketide.spark.write`` spends its time, next to the floors of each
design (timings printed, never asserted).

    .venv/bin/python -m bench.spark_write_floors --rows 500000 --repeat 5

All on one local[2] session, interleaved round by round (medians; the ratio is parquet time / variant time):
- ``df.write.parquet`` of the same cached rows (the target's reference) and ``noop`` (reading the cache only);
- ``lts.write`` (the default path: bucket in a scalar Arrow UDF over the key columns, shuffle by bucket id, one
  Python writer task per bucket) with the Spark jobs of one write (start / end relative to the call, executor run
  time) from the Spark UI's REST API;
- the floors of the designs: the bucket (the Arrow UDF, or the Java UDF lts.write uses) + shuffle alone,
  Spark's own hash shuffle alone, Spark's hash shuffle + every row into a Python task that drops it (one Python
  pass after a JVM shuffle), every row into Python without a shuffle. A design costs at least its floor plus the
  Python sort / dedupe / encode (~0.1 s per 125k rows);
- the floors of the Spark-native design (rows never enter Python; laketide.spark.native_write): the Java bucket +
  shuffle (+ ``df.write.parquet`` without a sort: the floor of every shuffle-then-write design) + Spark's sort of
  each bucket by key, + ``df.write.parquet`` (zstd, as the table), + the keep-last
  dedupe and sequence numbers as two windows over that one sort; and ``lts.write(native=True)`` itself.

Besides wall time (noisy on a shared machine) each variant's CPU time is reported: the JVM's and its Python
workers' (the process tree under the JVM) plus this driver's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
import laketide.spark as ls
from bench.data import orders


def _jobs(ui: str, app: str, group: str, start: float) -> list[str]:
    def get(path: str) -> Any:
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{path}") as r:
            return json.load(r)

    def offset(stamp: str) -> float:
        t = datetime.datetime.strptime(stamp[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        return t.timestamp() - start

    lines = []
    for job in sorted(get("jobs"), key=lambda j: j["jobId"]):
        if job.get("jobGroup") != group:
            continue
        run = sum(a["executorRunTime"] for s in job["stageIds"] for a in get(f"stages/{s}") if a["status"] != "SKIPPED")
        lines.append(f"job {job['jobId']}: +{offset(job['submissionTime']):.3f} s .. "
                     f"+{offset(job['completionTime']):.3f} s, executor run time {run / 1000:.3f} s")
    return lines


def _cpu(jvm: int) -> tuple[float, float]:
    """(CPU seconds of the JVM process alone + this driver's, of the JVM's whole process tree + this driver's).

    The JVM figure is exact (executors, shuffle, Parquet encode all run in it). The tree adds the Python workers
    alive at both samples and the children each process has reaped; a worker orphaned in between (reparented out
    of the tree) drops out, so the tree figure can be low, even negative: rerun then."""
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append((int(entry), fields))
    with open(f"/proc/{jvm}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = sum(int(x) for x in fields[11:13])
    tree = sum(int(x) for x in fields[11:15])
    todo = [jvm]
    while todo:
        for pid, fields in children.get(todo.pop(), []):
            tree += sum(int(x) for x in fields[11:15])
            todo.append(pid)
    tick, driver = os.sysconf("SC_CLK_TCK"), sum(os.times()[:2])
    return own / tick + driver, tree / tick + driver


def run(rows: int, *, repeat: int, work: Path) -> dict[str, float]:
    from pyspark.sql.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    from laketide.spark.jvm_bucket import jvm_bucket_column

    spark = ls.session("local[2]", app_name="laketide-write-floors",
                       conf={"spark.ui.enabled": "true", "spark.ui.port": "0"})
    spark.sparkContext.setLogLevel("ERROR")
    sc = spark.sparkContext
    wh = str(work / "wh")
    cat = laketide.load_catalog(warehouse=wh)
    cat.create_database("b", exist_ok=True)
    data = orders(rows)
    pk_schema = pa.schema([pa.field("order_id", pa.int64(), nullable=False), *list(data.schema)[1:]])
    pq.write_table(data, work / "src.parquet")
    src = spark.read.parquet(str(work / "src.parquet")).repartition(4).cache()
    src.count()
    router = cat.create_table("b.router", pk_schema, primary_key=["order_id"], options={"bucket": "4"}).store \
        .bucket_router()
    make_udf: Any = arrow_udf
    bucket_of = make_udf(router.buckets, IntegerType())
    jvm_bucket = jvm_bucket_column(src, ["order_id"], [router.schema.field("order_id").type], 4)
    counter = iter(range(1_000_000))
    breakdown: list[str] = []

    def noop(df: Any) -> None:
        df.write.format("noop").mode("overwrite").save()

    def drop_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        n = sum(b.num_rows for b in batches)
        yield pa.record_batch([pa.array([n], pa.int64())], names=["n"])

    def laketide_write() -> None:
        name = f"b.upsert{next(counter)}"
        cat.create_table(name, pk_schema, primary_key=["order_id"], options={"bucket": "4"})
        group = f"write-{name}"
        sc.setJobGroup(group, group)
        start = time.time()
        ls.write(src, name, warehouse=wh)
        took = time.time() - start
        sc.setJobGroup("", "")
        breakdown[:] = [f"lts.write {took:.3f} s", *_jobs(str(sc.uiWebUrl), str(sc.applicationId), group, start)]

    def native_rows(dedupe: bool) -> Any:
        """The native design's rows: Java bucket, shuffle by bucket, one sort by (bucket, key, input order)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F  # noqa: N812

        rows = src.withColumn("__o", F.monotonically_increasing_id()).withColumn("__b", jvm_bucket)
        rows = rows.repartitionById(4, "__b").sortWithinPartitions("__b", "order_id", "__o")
        if dedupe:  # both windows ask for the sort's ordering: Spark sorts once
            ordered = Window.partitionBy("__b").orderBy("order_id", "__o")
            rows = rows.withColumn("__n", F.lead("order_id").over(ordered))
            rows = rows.where(F.col("__n").isNull() | (F.col("__n") != F.col("order_id")))
            rows = rows.withColumn("_SEQUENCE_NUMBER", F.row_number().over(ordered).cast("bigint")).drop("__n")
        return rows.drop("__o", "__b")

    def native_write() -> None:
        name = f"b.native{next(counter)}"
        cat.create_table(name, pk_schema, primary_key=["order_id"], options={"bucket": "4"})
        ls.write(src, name, warehouse=wh, native=True)

    def zstd(df: Any) -> None:
        df.write.option("compression", "zstd").parquet(str(work / f"pq{next(counter)}"))

    variants: dict[str, Callable[[], None]] = {
        "df.write.parquet": lambda: src.write.mode("overwrite").parquet(str(work / f"pq{next(counter)}")),
        "lts.write": laketide_write,
        "noop (cache read)": lambda: noop(src),
        "bucket UDF + shuffle": lambda: noop(src.withColumn("b", bucket_of(src["order_id"])).repartitionById(4, "b")),
        "Java bucket UDF + shuffle": lambda: noop(src.withColumn("b", jvm_bucket).repartitionById(4, "b")),
        "JVM hash shuffle": lambda: noop(src.repartition(4, "order_id")),
        "JVM hash shuffle + rows into Python": lambda: noop(src.repartition(4, "order_id")
                                                            .mapInArrow(drop_rows, "n long")),
        "rows into Python, no shuffle": lambda: noop(src.mapInArrow(drop_rows, "n long")),
        "df.write.parquet zstd": lambda: zstd(src),
        "native: bucket + shuffle + sort": lambda: noop(native_rows(False)),
        "native: bucket + shuffle + sort + write": lambda: zstd(native_rows(False)),
        # Any design that shuffles by bucket and writes with Spark's Parquet writer costs at least this, before
        # its sort, dedupe and key-value columns.
        "native: bucket + shuffle + write (no sort)": lambda: zstd(src.withColumn("__b", jvm_bucket)
                                                                .repartitionById(4, "__b").drop("__b")),
        "native: + dedupe + numbering (1 sort)": lambda: zstd(native_rows(True)),
        "lts.write(native=True)": native_write,
    }
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    tree: dict[str, list[float]] = {k: [] for k in variants}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeat + 1):  # the first round warms the JVM and the Python workers up
        for key, fn in variants.items():
            c0 = _cpu(jvm_pid)
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
            c1 = _cpu(jvm_pid)
            cpu[key].append(c1[0] - c0[0])
            tree[key].append(c1[1] - c0[1])
    spark.stop()
    medians = {k: statistics.median(v[1:] or v) for k, v in times.items()}
    cpu_medians = {k: statistics.median(v[1:] or v) for k, v in cpu.items()}
    tree_medians = {k: statistics.median(v[1:] or v) for k, v in tree.items()}
    reference, cpu_reference = medians["df.write.parquet"], cpu_medians["df.write.parquet"]
    print("\n".join(breakdown))
    print(f"{'':40s} {'wall':>9s}   {'parquet/this':>12s}   {'JVM cpu':>8s}   {'parquet/this':>12s}   {'+ Python':>8s}")
    for key, t in medians.items():
        c = cpu_medians[key]
        print(f"{key:40s} {t:7.3f} s   {reference / t:12.2f}   {c:6.2f} s   {cpu_reference / c:12.2f}   "
              f"{tree_medians[key]:6.2f} s")
    return {**medians, **{f"{k} jvm cpu": v for k, v in cpu_medians.items()},
            **{f"{k} tree cpu": v for k, v in tree_medians.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="laketide-write-floors-"))
    try:
        run(args.rows, repeat=args.repeat, work=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
