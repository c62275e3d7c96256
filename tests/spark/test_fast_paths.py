"""Spark fast paths: native Parquet reads of append tables, one task per bucket on writes."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide.spark as ls
from laketide.spark.api import with_buckets
from laketide.spark.writer import BUCKET_COLUMN
from tests.spark.test_batch import ALL_TYPES, all_types_rows, normalise, sorted_rows, spark_rows


@pytest.mark.parametrize("partitioned", [False, True])
def test_each_bucket_goes_to_exactly_one_task(spark, cat, partitioned: bool) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F  # noqa: N812

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    t = cat.create_table("db.b", schema, primary_key=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                         options={"bucket": "4"} if partitioned else {"bucket": "4", "bucket-key": "id"})
    df = spark.range(2000).selectExpr("id", "concat('d', id % 3) AS dt")
    placed = with_buckets(df, t).select("dt", BUCKET_COLUMN, F.spark_partition_id().alias("task")).distinct()
    rows = placed.collect()
    owners: dict[tuple, set[int]] = {}
    for r in rows:
        key = (r["dt"], r[BUCKET_COLUMN]) if partitioned else r[BUCKET_COLUMN]
        owners.setdefault(key, set()).add(r["task"])
    assert all(len(tasks) == 1 for tasks in owners.values())
    if not partitioned:  # bucket b is task b: four buckets keep four tasks busy
        assert {b: tasks.pop() for b, tasks in owners.items()} == {0: 0, 1: 1, 2: 2, 3: 3}


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("num_tasks", [None, 2])
def test_writes_route_by_the_bucket_without_carrying_it(spark, cat, partitioned: bool,  # noqa: ANN001
                                                        num_tasks: int | None) -> None:
    """laketide.spark.write shuffles fixed buckets by an expression: no bucket column crosses the shuffle or reaches
    the writer tasks, and each (partition, bucket) still has one task, the one with_buckets gives it."""
    from pyspark.sql import functions as F  # noqa: N812

    from laketide.meta.bucket import bucket_ids
    from laketide.spark.api import routed_to_owners
    from laketide.spark.writer import ROUTED_OWNED

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    t = cat.create_table("db.o", schema, primary_key=["id", "dt"], partition_keys=["dt"] if partitioned else [],
                         options={"bucket": "4"} if partitioned else {"bucket": "4", "bucket-key": "id"})
    df = spark.range(2000).selectExpr("id", "concat('d', id % 3) AS dt")
    routed, routing = routed_to_owners(df, t, num_tasks=num_tasks)
    assert routing == ROUTED_OWNED and routed.columns == ["id", "dt"]
    got = routed.select("id", "dt", F.spark_partition_id().alias("task")).toArrow()
    buckets = bucket_ids(got, ["id"], [t.schema.field("id").type], 4)
    owners: dict[tuple, set[int]] = {}
    for dt, b, task in zip(got.column("dt").to_pylist(), buckets, got.column("task").to_pylist()):
        owners.setdefault((dt if partitioned else None, int(b)), set()).add(task)
    assert all(len(tasks) == 1 for tasks in owners.values())
    reference = with_buckets(df, t, num_tasks=num_tasks).select("dt", BUCKET_COLUMN, F.spark_partition_id())
    expected = {((r[0] if partitioned else None), r[1]): {r[2]} for r in reference.distinct().collect()}
    assert owners == expected


@pytest.mark.parametrize("bucket", ["-1", "3"])
def test_native_read_of_an_append_table_equals_the_laketide_source(spark, cat, wh: str, bucket: str) -> None:  # noqa: ANN001
    schema = pa.schema([f for f in ALL_TYPES if f.name != "dt"])
    options = {"bucket": bucket} if bucket == "-1" else {"bucket": bucket, "bucket-key": "id"}
    t = cat.create_table("db.n", schema, options=options)
    t.write(all_types_rows(200).drop_columns(["dt"]))
    t.write(all_types_rows(100, offset=200).drop_columns(["dt"]))

    native = ls.read(spark, "db.n", warehouse=wh, native=True)  # opt-in: a fixed list of files
    assert "laketide" not in native._jdf.queryExecution().analyzed().toString().lower()  # Spark's parquet scan
    python = ls.read(spark, "db.n", warehouse=wh)
    # Spark's file sources declare every column nullable; names and types are the same.
    assert [(f.name, f.dataType) for f in native.schema] == [(f.name, f.dataType) for f in python.schema]
    assert normalise(spark_rows(native)) == normalise(spark_rows(python)) == normalise(sorted_rows(t.read()))
    assert native.where("i32 > 700").count() == python.where("i32 > 700").count() == 199
    assert ls.read(spark, "db.n", warehouse=wh, columns=["id", "s"]).columns == ["id", "s"]
    old = ls.read(spark, "db.n", warehouse=wh, snapshot_id=1)
    assert old.count() == 200  # time travel plans that snapshot's files


def test_native_read_after_an_added_column(spark, cat, wh: str) -> None:  # noqa: ANN001
    import laketide
    from laketide.types import DoubleType

    t = cat.create_table("db.e", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.alter(laketide.AddColumn(name="x", type=DoubleType()))
    df = ls.read(spark, "db.e", warehouse=wh, native=True)
    # altered since the last commit: no snapshot has this schema, the laketide source reads it
    assert "laketide" in df._jdf.queryExecution().analyzed().toString().lower()
    assert sorted((r["id"], r["x"]) for r in df.collect()) == [(1, None), (2, None)]
    t.write(pa.table({"id": [3], "v": ["c"], "x": [0.5]}))
    df = ls.read(spark, "db.e", warehouse=wh, native=True)
    # the older file maps by field id (the added column is null): Spark's parquet scan alone
    assert "laketide" not in df._jdf.queryExecution().analyzed().toString().lower()
    assert sorted((r["id"], r["x"]) for r in df.collect()) == [(1, None), (2, None), (3, 0.5)]
