"""Scans through Spark return what a fresh load returns: reused DataFrames, new commits, empty results."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide.spark as ls

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def rows(n: int, *, offset: int = 0, parts: int = 3) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [f"d{i % parts}" for i in ids]}, schema=SCHEMA)


def ids(df) -> list[int]:  # noqa: ANN001
    return sorted(r["id"] for r in df.select("id").collect())


def load(spark, wh: str, name: str = "db.t", **options: str):  # noqa: ANN001, ANN201
    return spark.read.format("laketide").option("warehouse", wh).options(**options).load(name)


def test_filters_of_one_query_never_reach_another(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"])
    t.write(rows(100))
    df = load(spark, wh)
    assert df.where("id < 10").count() == 10
    assert df.where("id >= 50").count() == 50
    assert df.count() == 100  # the example: was 50
    assert len(df.collect()) == 100
    assert df.where("dt = 'd1'").count() == 33
    assert ids(df) == list(range(100))
    # one query, the same DataFrame twice with different filters (Spark shares the relation's plan)
    both = df.where("id < 10").join(df.where("id >= 95"), "id", "full_outer")
    assert both.count() == 15
    df.createOrReplaceTempView("t_view")
    assert spark.sql("SELECT count(*) AS n FROM t_view WHERE id > 90").collect()[0]["n"] == 9
    assert spark.sql("SELECT count(*) AS n FROM t_view").collect()[0]["n"] == 100
    assert df.select("v").where("v = 'v7'").collect()[0]["v"] == "v7"
    assert df.select("dt").distinct().count() == 3


def test_an_action_after_a_commit_sees_it(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(rows(100))
    df = load(spark, wh)
    filtered = df.where("id >= 50")
    assert df.count() == 100
    t.write(rows(10, offset=100))
    assert df.count() == 110  # the example: was 100
    assert ids(df) == list(range(110))
    assert len(df.collect()) == 110  # the loaded DataFrame's own query, planned before the commit
    assert filtered.count() == 60
    df.createOrReplaceTempView("t_live")
    t.write(rows(5, offset=200))
    assert spark.sql("SELECT count(*) AS n FROM t_live").collect()[0]["n"] == 115
    # upserts, a delete, an overwrite and a compaction: each seen by the next action
    t.write(pa.table({"id": [1, 2], "v": ["new", "new"], "dt": ["x", "x"]}, schema=SCHEMA))
    assert sorted(r["v"] for r in df.where("id < 3").collect()) == ["new", "new", "v0"]
    w = t.new_write()
    w.delete(pa.table({"id": [0]}))
    t.commit(w.prepare_commit())
    assert df.count() == 114
    t.compact(full=True)
    assert df.count() == 114 and filtered.count() == 65
    t.write(rows(3), mode="overwrite")
    assert ids(df) == [0, 1, 2]
    # the cached DataFrame keeps what it read (Spark's cache), the live one moves on
    cached = df.cache()
    assert cached.count() == 3
    t.write(rows(1, offset=7))
    assert cached.count() == 3
    cached.unpersist()
    assert df.count() == 4


def test_a_pinned_read_stays_pinned(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA)
    first = t.write(rows(10))
    pinned = load(spark, wh, **{"scan.snapshot-id": str(first)})
    t.write(rows(5, offset=10))
    assert pinned.count() == 10
    assert ids(pinned) == list(range(10))
    assert load(spark, wh).count() == 15
    at = ls.read(spark, "db.t", warehouse=wh, timestamp_ms=t.snapshot(first).time_millis)
    t.write(rows(5, offset=20))
    assert at.count() == 10


def test_empty_results_have_the_schema(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"])
    fresh = load(spark, wh)  # no snapshot yet
    assert fresh.count() == 0
    assert fresh.collect() == []
    assert fresh.schema.simpleString() == "struct<id:bigint,v:string,dt:string>"
    assert fresh.toArrow().num_rows == 0
    t.write(rows(30))
    assert load(spark, wh).where("id > 1000").count() == 0  # no matching row (was an AssertionError)
    assert load(spark, wh).where("id > 1000").collect() == []
    none = ls.read(spark, "db.t", warehouse=wh, where="dt = 'nowhere'")  # an empty partition
    assert none.rdd.getNumPartitions() == 1
    assert none.collect() == [] and none.columns == ["id", "v", "dt"]
    assert fresh.count() == 30  # the DataFrame loaded before the first commit sees it now
    pk = cat.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    assert load(spark, wh, "db.pk").where("id = 3").count() == 0
    pk.write(rows(3))
    assert load(spark, wh, "db.pk").where("id > 5").toArrow().num_rows == 0
    assert ls.read(spark, "db.pk$audit_log", warehouse=wh).where("id < 0").count() == 0
    empty_sys = ls.read(spark, "db.t$snapshots", warehouse=wh).where("snapshot_id > 99")
    assert empty_sys.count() == 0


@pytest.mark.parametrize("engine", ["first-row", "deletion-vectors"])
def test_merge_engines_written_by_spark_are_readable_at_once(spark, cat, wh: str, engine: str) -> None:  # noqa: ANN001
    options = {"merge-engine": "first-row"} if engine == "first-row" else {"deletion-vectors.enabled": "true"}
    t = cat.create_table("db.m", SCHEMA, primary_key=["id"], options={"bucket": "2", **options})
    first = spark.createDataFrame(rows(50).to_pylist(), "id long, v string, dt string")
    ls.write(first, "db.m", warehouse=wh)
    assert t.read().num_rows == 50  # was 0 until a compaction
    assert load(spark, wh, "db.m").count() == 50
    again = spark.createDataFrame([(i, "second", "x") for i in range(40, 60)], "id long, v string, dt string")
    again.write.format("laketide").option("warehouse", wh).mode("append").save("db.m")
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert len(got) == 60
    expected_40 = "v40" if engine == "first-row" else "second"  # first-row keeps the first, DV the last
    assert got[40] == expected_40 and got[59] == "second"
    assert all(f.level > 0 for s in t.scan().plan() for f in s.files)  # compacted by the writers, as Java's


def test_spark_writers_compact_like_paimon_writers(spark, cat, wh: str) -> None:  # noqa: ANN001
    opts = {"bucket": "1", "num-sorted-run.compaction-trigger": "3", "num-sorted-run.stop-trigger": "4"}
    t = cat.create_table("db.c", SCHEMA, primary_key=["id"], options=opts)
    wo = cat.create_table("db.wo", SCHEMA, primary_key=["id"], options={**opts, "write-only": "true"})
    for i in range(7):
        df = spark.createDataFrame([(j, f"r{i}", "x") for j in range(i, i + 20)], "id long, v string, dt string")
        ls.write(df, "db.c", warehouse=wh)
        ls.write(df, "db.wo", warehouse=wh)

    def runs(table) -> int:  # noqa: ANN001
        files = [f for s in table.scan().plan() for f in s.files]
        return len([f for f in files if f.level == 0]) + len({f.level for f in files if f.level > 0})

    assert runs(t) <= 4  # never more than num-sorted-run.stop-trigger sorted runs
    assert runs(wo) == 7  # write-only: no compaction, one level-0 run per commit
    assert t.read().num_rows == wo.read().num_rows == 26
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {r["id"]: r["v"] for r in wo.read().to_pylist()}


def test_live_reads_spread_over_tasks_before_and_after_a_commit(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"})
    t.write(rows(80, parts=4))
    df = load(spark, wh)

    def per_task() -> list[int]:
        return sorted(df.rdd.glom().map(len).collect())

    def per_group() -> list[int]:
        sizes: dict[tuple[bytes, int], int] = {}
        for split in t.scan().plan():
            key = (split.partition, split.bucket)
            sizes[key] = sizes.get(key, 0) + split.row_count
        return sorted(sizes.values())

    assert len(per_group()) == 8
    assert per_task() == per_group()  # 4 partitions x 2 buckets: one task each, as planned
    t.write(rows(80, offset=100, parts=4))  # the same groups, a newer snapshot: each task re-plans its own
    assert per_task() == per_group()
    t.write(pa.table({"id": [500, 501], "v": ["n", "n"], "dt": ["new", "new"]}, schema=SCHEMA))  # new groups
    sizes = per_task()
    assert len(sizes) == 8 and sum(sizes) == 162 and sizes.count(0) == 0
    assert ids(df) == sorted([*range(80), *range(100, 180), 500, 501])
