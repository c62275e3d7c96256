"""MERGE INTO through laketide.spark.sql vs the same upsert through laketide.spark.write, and vs deltalake's merge
on the same data (timings printed, never asserted).

    .venv/bin/python -m bench.spark_sql --rows 2000000      # merges rows/4 rows, half new keys

Each measurement is a fresh primary-key table (``bucket`` 4) built outside the timed part. The SQL MERGE collects
its source through Spark as Arrow and runs laketide's merge (a hash join in Arrow, one commit); the Spark-evaluated
variant (``spark.laketide.sql.evaluate-in-spark``, the path of statements with Spark functions) joins in Spark and
writes through the Spark write path; ``lts.write`` routes the same rows by bucket in Spark and writes them in Spark
tasks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.dml import data, source


def _table(base: pa.Table) -> tuple[str, Any]:
    import laketide

    wh = tempfile.mkdtemp(prefix="bench-sparksql-")
    cat = laketide.load_catalog(warehouse=wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()), ("name", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["id"], options={"bucket": "4"})
    t.write(base.cast(schema))
    return wh, t


def run(rows: int) -> dict[str, float]:
    import laketide.spark as lts
    from bench import delta_peer

    spark = lts.session("local[2]", app_name="laketide-bench-sql")
    base, src = data(rows), source(rows)
    src_df = spark.createDataFrame(src.to_pandas())
    src_df.cache().count()
    src_df.createOrReplaceTempView("bench_src")
    out: dict[str, float] = {}
    # Warm up Spark's Python workers (reader and writer: each new worker imports laketide) outside the timings,
    # so that no variant pays for it.
    wh, _ = _table(base.slice(0, 1000))
    lts.write(src_df.limit(1000), "db.t", warehouse=wh, mode="append")
    lts.read(spark, "db.t", warehouse=wh).count()

    wh, _ = _table(base)
    t0 = time.perf_counter()
    lts.sql(spark, "MERGE INTO db.t t USING bench_src s ON t.id = s.id "
                   "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", warehouse=wh)
    out["merge sql laketide+spark s"] = time.perf_counter() - t0

    # The same merge evaluated by Spark (as a statement with Spark functions is): Spark joins, the changed rows go
    # through the Spark write path (nothing collected to the driver).
    wh, t = _table(base)
    spark.conf.set("spark.laketide.sql.evaluate-in-spark", "true")
    t0 = time.perf_counter()
    lts.sql(spark, "MERGE INTO db.t t USING bench_src s ON t.id = s.id "
                   "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", warehouse=wh)
    out["merge sql spark-evaluated s"] = time.perf_counter() - t0
    spark.conf.unset("spark.laketide.sql.evaluate-in-spark")
    check = t.read()
    assert check.num_rows == rows + len(src) // 2, check.num_rows  # half the source keys are new

    wh, _ = _table(base)
    t0 = time.perf_counter()
    lts.write(src_df, "db.t", warehouse=wh, mode="append")
    out["upsert lts.write laketide+spark s"] = time.perf_counter() - t0

    if delta_peer.available() is None:
        path = Path(tempfile.mkdtemp(prefix="bench-delta-"))
        delta_peer.write(path, base)
        t0 = time.perf_counter()
        delta_peer.merge(path, src, key="id")
        out["merge deltalake s"] = time.perf_counter() - t0
    spark.stop()
    return out


def collect(rows: int, *, repeat: int, work: Path, peers: Any) -> Any:
    """The bench suite ``spark_sql`` (bench.worker)."""
    from bench.harness import Result
    from bench.suite import SuiteRun

    out = SuiteRun()
    raw = run(rows)
    out.meta["spark_sql_raw"] = raw
    for key, engine in (("merge sql laketide+spark s", "laketide+spark"),
                        ("merge sql spark-evaluated s", "laketide+spark"),
                        ("upsert lts.write laketide+spark s", "laketide+spark"), ("merge deltalake s", "deltalake")):
        if key in raw:
            name = ("spark sql merge (spark-evaluated)" if "evaluated" in key else
                    "spark sql merge" if "merge" in key else "spark lts.write upsert")
            out.results.append(Result(name, engine, rows // 4, seconds=[raw[key]], scale=rows))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    raw = run(args.rows)
    for k, v in raw.items():
        print(f"{k:40s} {v:8.2f}")
    sql, api = raw["merge sql laketide+spark s"], raw["upsert lts.write laketide+spark s"]
    print(f"SQL MERGE vs lts.write: {api / sql:.2f}x the speed")
    evaluated = raw["merge sql spark-evaluated s"]
    print(f"SQL MERGE (Spark-evaluated) vs lts.write: {api / evaluated:.2f}x the speed")
    if "merge deltalake s" in raw:
        print(f"SQL MERGE vs deltalake merge: {raw['merge deltalake s'] / sql:.2f}x the speed")


if __name__ == "__main__":
    main()
