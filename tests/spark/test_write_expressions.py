"""The routing expressions of Spark writes are built as parsed SQL text (fewer py4j round trips): they must route
every row exactly as the Column-API expressions they replaced, also for column names SQL would misread."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide.spark as ls
from laketide.spark.api import with_buckets
from laketide.spark.types import spark_column
from laketide.spark.writer import BUCKET_COLUMN

NAMES = ["plain", "with.dot", "with`tick"]


@pytest.mark.parametrize("part", NAMES)
def test_rows_go_to_the_task_the_column_expression_names(spark, cat, part: str) -> None:  # noqa: ANN001
    from pyspark.sql import functions as F  # noqa: N812

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.date32(), nullable=False),
                        pa.field(part, pa.string(), nullable=False)])
    t = cat.create_table("db.x", schema, primary_key=["id", "day", part], partition_keys=[part],
                         options={"bucket": "5"})
    rows = [(i, dt.date(2026, 1, 1) + dt.timedelta(days=i % 40), f"p{i % 7}") for i in range(3000)]
    df = spark.createDataFrame(rows, ["id", "day", part])
    routed = with_buckets(df, t, num_tasks=6)
    # The expression the Column API built before (Spark's hash of the partition, then the bucket).
    old_task = F.pmod(F.hash(spark_column(part)).cast("bigint") * 5 + F.col(BUCKET_COLUMN), F.lit(6)).cast("int")
    checked = routed.select(F.spark_partition_id().alias("task"), old_task.alias("old"), BUCKET_COLUMN)
    got = checked.collect()
    assert len(got) == 3000
    assert all(r["task"] == r["old"] for r in got)
    assert {r[BUCKET_COLUMN] for r in got} <= set(range(5))


@pytest.mark.parametrize("key", NAMES)
def test_writes_through_the_sql_built_expressions_read_back(spark, cat, wh: str, key: str) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field(key, pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = cat.create_table("db.k", schema, primary_key=[key], options={"bucket": "3"})
    first = [(i, f"a{i}") for i in range(500)]
    again = [(i, f"b{i}") for i in range(250, 750)]
    ls.write(spark.createDataFrame(first, [key, "v"]), "db.k", warehouse=wh)
    ls.write(spark.createDataFrame(again, [key, "v"]), "db.k", warehouse=wh)
    expected = {**dict(first), **dict(again)}
    got = t.read().to_pylist()
    assert {r[key]: r["v"] for r in got} == expected and len(got) == len(expected)
    # every data file holds only keys the table's own router puts in its bucket
    router = t.store.bucket_router()
    for split in t.scan().plan():
        for path in split.file_paths():
            keys = pq.read_table(path, columns=[key]).column(key).combine_chunks()
            assert set(router.buckets(keys).to_pylist()) == {split.bucket}
