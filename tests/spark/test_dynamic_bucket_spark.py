"""Dynamic-bucket writes through Spark: key-hash shuffle to the assigners, then (partition, bucket) to writers."""

from __future__ import annotations

import pyarrow as pa

import laketide.spark as lts
from tests.table_checks import key_buckets

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def test_spark_dynamic_bucket_upserts(spark, cat, wh: str) -> None:
    cat.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "100"})
    first = spark.createDataFrame([(k, f"d{k % 2}", "a") for k in range(1000)], "k long, dt string, v string")
    lts.write(first, "db.t", warehouse=wh)
    second = spark.createDataFrame([(k, f"d{k % 2}", "b") for k in range(500, 1500)], "k long, dt string, v string")
    lts.write(second, "db.t", warehouse=wh)
    t = cat.table("db.t")
    got = {(r["k"], r["dt"]): r["v"] for r in t.read().to_pylist()}
    assert got == {(k, f"d{k % 2}"): ("a" if k < 500 else "b") for k in range(1500)}
    buckets = key_buckets(t, "k")
    assert all(len(s) == 1 for s in buckets.values())
    assert len({b for s in buckets.values() for b in s}) >= 8  # ~750 keys a partition, 100 a bucket
    hashes = sum(e.index_file.row_count for e in t.file_scan().index_entries(t.latest_snapshot()))
    assert hashes == 1500


def test_spark_cross_partition_upsert(spark, cat, wh: str) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["k"], partition_keys=["dt"])
    lts.write(spark.createDataFrame([(k, "a", "old") for k in range(20)], "k long, dt string, v string"),
              "db.x", warehouse=wh)
    lts.write(spark.createDataFrame([(k, "b", "new") for k in range(10, 30)], "k long, dt string, v string"),
              "db.x", warehouse=wh)
    got = {r["k"]: (r["dt"], r["v"]) for r in cat.table("db.x").read().to_pylist()}
    assert got == {k: ("a", "old") if k < 10 else ("b", "new") for k in range(30)}
