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
  Python sort / dedupe / encode (~0.1 s per 125k rows).
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
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeat + 1):  # the first round warms the JVM and the Python workers up
        for key, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    spark.stop()
    medians = {k: statistics.median(v[1:] or v) for k, v in times.items()}
    reference = medians["df.write.parquet"]
    print("\n".join(breakdown))
    for key, t in medians.items():
        print(f"{key:40s} {t:7.3f} s   parquet/this {reference / t:5.2f}")
    return medians


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
