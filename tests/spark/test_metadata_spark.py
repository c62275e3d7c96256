"""Spark reads the metadata system tables and branches through the laketide source."""

from __future__ import annotations

import pyarrow as pa

import laketide.spark as ls


def test_spark_reads_system_tables_and_a_branch(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = cat.create_table("db.m", schema, partition_keys=["dt"], options={"bucket": "1", "bucket-key": "id"})
    t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]}, schema=schema))
    t.tags.create("t1")
    parts = ls.read(spark, "db.m$partitions", warehouse=wh).orderBy("partition").collect()
    assert [(r["partition"], r["record_count"]) for r in parts] == [("dt=a", 2), ("dt=b", 1)]
    files = ls.read(spark, "db.m$files", warehouse=wh).collect()
    assert sum(r["record_count"] for r in files) == 3
    assert [r["tag_name"] for r in ls.read(spark, "db.m$tags", warehouse=wh).collect()] == ["t1"]
    views = ls.register_views(spark, warehouse=wh, databases=["db"], system_tables=("partitions", "files"))
    assert "db.m$partitions" in views
    by_sql = spark.sql("SELECT partition, record_count FROM `db.m$partitions` ORDER BY partition").collect()
    grouped = spark.sql("SELECT concat('dt=', dt) AS p, count(*) AS n FROM `db.m` GROUP BY dt ORDER BY p").collect()
    assert [(r["partition"], r["record_count"]) for r in by_sql] == [(r["p"], r["n"]) for r in grouped]
    t.branches.create("b1", tag="t1")
    t.branch_table("b1").write(pa.table({"id": [9], "dt": ["c"]}, schema=schema))
    got = ls.read(spark, "db.m$branch_b1", warehouse=wh).collect()
    assert sorted(r["id"] for r in got) == [1, 2, 3, 9]
    df = spark.createDataFrame([(10, "c")], "id long, dt string")
    ls.write(df, "db.m$branch_b1", warehouse=wh)  # Spark writes go to the branch
    assert sorted(t.branch_table("b1").read()["id"].to_pylist()) == [1, 2, 3, 9, 10]
    assert sorted(t.read()["id"].to_pylist()) == [1, 2, 3]


def test_spark_time_travel_by_version_and_timestamp(spark, cat, wh: str) -> None:  # noqa: ANN001
    import datetime as _dt

    import pytest

    from laketide.exceptions import ReadOnlyTableError

    schema = pa.schema([("id", pa.int64())])
    t = cat.create_table("db.tv", schema, options={"bucket": "1", "bucket-key": "id"})
    for i in range(3):
        t.write(pa.table({"id": [i]}, schema=schema))
    t.tags.create("first", 1)

    def ids(**options: str) -> list[int]:
        df = spark.read.format("laketide").option("warehouse", wh)
        for k, v in options.items():
            df = df.option(k, v)
        return sorted(r["id"] for r in df.load("db.tv").collect())

    assert ids(**{"scan.version": "first"}) == [0]
    assert ids(**{"scan.version": "2"}) == [0, 1]
    wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=t.snapshot(2).time_millis)
    assert ids(**{"scan.timestamp": wall.strftime("%Y-%m-%d %H:%M:%S.%f")}) == [0, 1]
    with pytest.raises(ReadOnlyTableError, match="scan.version"):
        ls.write(spark.createDataFrame([(9,)], "id long"), "db.tv", warehouse=wh, options={"scan.version": "1"})


def test_spark_reads_the_fallback_branch(spark, cat, wh: str) -> None:  # noqa: ANN001
    import laketide
    from laketide.types import IntType

    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = cat.create_table("db.fb", schema, partition_keys=["dt"], options={"bucket": "1", "bucket-key": "id"})
    t.write(pa.table({"id": [1, 2], "dt": ["a", "a"]}, schema=schema))
    fb = t.branches.create("stream")
    fb.alter(laketide.AddColumn(name="extra", type=IntType()))  # the fallback branch's schema differs from main's
    fb.write(pa.table({"id": [5, 6], "dt": ["a", "b"], "extra": pa.array([1, 2], pa.int32())}))
    t.alter(laketide.SetOption("scan.fallback-branch", "stream"))
    expected = sorted(zip(t.read()["id"].to_pylist(), t.read()["dt"].to_pylist()))
    assert expected == [(1, "a"), (2, "a"), (6, "b")]
    got = ls.read(spark, "db.fb", warehouse=wh).collect()
    assert sorted((r["id"], r["dt"]) for r in got) == expected
    assert ls.read(spark, "db.fb", warehouse=wh).columns == ["id", "dt"]


def test_spark_files_at_a_snapshot(spark, cat, wh: str) -> None:  # noqa: ANN001
    import pytest

    schema = pa.schema([("id", pa.int64())])
    t = cat.create_table("db.fs", schema, options={"bucket": "1", "bucket-key": "id"})
    t.write(pa.table({"id": [1]}, schema=schema))
    t.write(pa.table({"id": [2]}, schema=schema))
    at_one = ls.read(spark, "db.fs$files", warehouse=wh, snapshot_id=1).collect()
    assert {r["file_path"] for r in at_one} == {p for s in t.scan(snapshot_id=1).plan() for p in s.file_paths()}
    assert len(ls.read(spark, "db.fs$files", warehouse=wh).collect()) == 2
    with pytest.raises(Exception, match="takes no where"):
        ls.read(spark, "db.fs$tags", warehouse=wh, snapshot_id=1).collect()
