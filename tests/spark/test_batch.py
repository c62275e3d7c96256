"""Batch reads and writes through a real local SparkSession."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
import laketide.spark as ls

ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("f32", pa.float32()),
    ("f64", pa.float64()), ("dec", pa.decimal128(12, 3)), ("s", pa.string()), ("bin", pa.binary()),
    ("d", pa.date32()), ("ts", pa.timestamp("us")), ("ts_ms", pa.timestamp("ms")),
    ("ltz", pa.timestamp("us", tz="UTC")), ("dt", pa.string()),
])


def all_types_rows(n: int, *, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    base = dt.datetime(2026, 1, 2, 3, 4, 5, 123456)
    return pa.table({
        "id": ids,
        "b": [i % 3 == 0 if i % 7 else None for i in ids],
        "i8": [i % 100 - 50 for i in ids],
        "i16": [i * 3 % 30000 for i in ids],
        "i32": [i * 7 for i in ids],
        "f32": [i / 4 for i in ids],
        "f64": [i / 3 if i % 5 else None for i in ids],
        "dec": [Decimal(i) / 1000 for i in ids],
        "s": [f"s{i}" if i % 6 else None for i in ids],
        "bin": [bytes([i % 256, 7]) for i in ids],
        "d": [dt.date(2026, 1, 1) + dt.timedelta(days=i % 40) for i in ids],
        "ts": [base + dt.timedelta(seconds=i) for i in ids],
        "ts_ms": [dt.datetime(2026, 1, 1) + dt.timedelta(milliseconds=i) for i in ids],
        "ltz": [dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i) for i in ids],
        "dt": [f"p{i % 3}" for i in ids],
    }, schema=ALL_TYPES)


def sorted_rows(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def to_spark(spark, t: pa.Table, *, partitions: int = 4):  # noqa: ANN001, ANN201
    return spark.createDataFrame(t).repartition(partitions)


def spark_rows(df) -> list[dict]:  # noqa: ANN001
    return sorted_rows(df.toArrow())


def normalise(rows: list[dict]) -> list[dict]:
    """Spark hands timestamps out at microsecond precision; compare on values."""
    return [{k: (v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
def test_round_trip_all_scalar_types(spark, cat, wh: str, pk: bool, pypaimon) -> None:  # noqa: ANN001
    kwargs = {"primary_key": ["id", "dt"], "options": {"bucket": "3"}} if pk else {"options": {"bucket": "2",
                                                                                               "bucket-key": "id"}}
    table = cat.create_table("db.t", ALL_TYPES, partition_keys=["dt"], **kwargs)
    data = all_types_rows(300)
    ls.write(to_spark(spark, data), "db.t", warehouse=wh)

    assert table.latest_snapshot().id == 1  # one job, one commit
    assert sorted_rows(table.read()) == sorted_rows(data)
    back = spark_rows(ls.read(spark, "db.t", warehouse=wh))
    assert normalise(back) == normalise(sorted_rows(data))
    theirs = pypaimon.read(wh, "db.t")
    assert sorted(theirs.column("id").to_pylist()) == list(range(300))
    assert sorted_rows(theirs.select(["id", "s", "i32", "dt"])) == sorted_rows(data.select(["id", "s", "i32", "dt"]))


def test_dataframe_writer_and_reader_api(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    cat.create_table("db.a", schema)
    df = spark.createDataFrame([(i, f"v{i}") for i in range(50)], "id long, v string")
    df.write.format("laketide").option("warehouse", wh).mode("append").save("db.a")
    df.write.format("laketide").option("warehouse", wh).mode("append").save("db.a")
    back = spark.read.format("laketide").option("warehouse", wh).load("db.a")
    assert back.count() == 100
    assert back.schema.simpleString() == "struct<id:bigint,v:string>"
    cols = spark.read.format("laketide").option("warehouse", wh).option("columns", "v").load("db.a")
    assert cols.columns == ["v"]


def test_overwrite_whole_table_and_dynamic_partitions(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    t = cat.create_table("db.o", schema, partition_keys=["dt"])
    first = spark.createDataFrame([(i, "old", f"d{i % 3}") for i in range(30)], "id long, v string, dt string")
    ls.write(first, "db.o", warehouse=wh)
    second = spark.createDataFrame([(i, "new", "d1") for i in range(5)], "id long, v string, dt string")
    ls.write(second, "db.o", warehouse=wh, mode="overwrite", dynamic_partition_overwrite=True)
    rows = t.read().to_pylist()
    assert sorted((r["dt"], r["v"]) for r in rows if r["dt"] == "d1") == [("d1", "new")] * 5
    assert len([r for r in rows if r["dt"] != "d1"]) == 20
    ls.write(second, "db.o", warehouse=wh, mode="overwrite")
    assert t.read().num_rows == 5
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"


def test_pk_table_many_jobs_many_tasks_later_job_wins(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("job", pa.int32()), ("dt", pa.string())])
    t = cat.create_table("db.pk", schema, primary_key=["k", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    expected: dict[tuple[int, str], int] = {}
    for job, keys in enumerate([range(0, 2000), range(1000, 3000), range(0, 3000, 3), range(2500, 2600)]):
        rows = [(k, job, f"d{k % 2}") for k in keys]
        expected.update({(k, d): j for k, j, d in rows})
        df = spark.createDataFrame(rows, "k long, job int, dt string").repartition(8)  # many upstream tasks
        ls.write(df, "db.pk", warehouse=wh)
    got = t.read()
    keys = list(zip(got.column("k").to_pylist(), got.column("dt").to_pylist()))
    assert len(keys) == len(set(keys))  # no duplicate keys
    assert dict(zip(keys, got.column("job").to_pylist())) == expected
    # one writer per bucket per job: sequence-number ranges of the files of a bucket never overlap
    for split in t.scan().plan():
        ranges = sorted((f.min_sequence_number, f.max_sequence_number) for f in split.files)
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))
    via_spark = ls.read(spark, "db.pk", warehouse=wh)
    assert via_spark.count() == len(expected)


def test_where_option_prunes_groups_and_files(spark, cat, wh: str) -> None:  # noqa: ANN001
    # Spark 4.3 shares a pushdown's plan with every later scan of a DataFrame, so Spark's filters are not pushed
    # (laketide.spark.reader); the ``where`` of the read (part of the DataFrame) prunes partitions and files.
    from laketide.spark.reader import GroupPartition

    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
    t = cat.create_table("db.f", schema, partition_keys=["dt"])
    for lo in range(0, 400, 100):  # four commits with disjoint id ranges in each of four partitions
        t.write(pa.table({"id": list(range(lo, lo + 100)), "v": ["x"] * 100,
                          "dt": [f"d{i % 4}" for i in range(100)]}, schema=schema))

    everything = ls.read(spark, "db.f", warehouse=wh)
    assert everything.rdd.getNumPartitions() == 4  # one per (partition, bucket)
    pruned = ls.read(spark, "db.f", warehouse=wh, where="dt = 'd1'")
    assert pruned.rdd.getNumPartitions() == 1
    assert pruned.count() == 100
    assert everything.where("dt = 'd1'").count() == 100  # Spark's own filter on the same data
    assert ls.read(spark, "db.f", warehouse=wh, where="dt IN ('d1', 'd2') AND id > 250").count() == 74
    assert everything.where("v LIKE 'x%' AND dt IS NOT NULL AND NOT (dt = 'd0')").count() == 300
    # Spark SQL laketide's parser does not read: Spark alone filters, same rows
    assert ls.read(spark, "db.f", warehouse=wh, where="dt = 'd1' AND length(v) = 1").count() == 100

    # file-level: file stats drop the three files of other id ranges in the one remaining partition
    source = ls.LaketideDataSource({"path": "db.f", "warehouse": wh})
    reader = source.reader(source.schema())
    assert sum(len(s.files) for p in reader.partitions() for s in p.splits) == 16
    source = ls.LaketideDataSource({"path": "db.f", "warehouse": wh, "where": "dt = 'd1' AND id > 350"})
    reader = source.reader(source.schema())
    parts = reader.partitions()
    assert all(isinstance(p, GroupPartition) for p in parts)
    assert sum(len(s.files) for p in parts for s in p.splits) == 1
    rows = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == [i for i in range(351, 400) if i % 4 == 1]


def test_time_travel_system_tables_audit_log_and_sql(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.tt", schema, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=schema))
    w = t.new_write()
    w.delete(pa.table({"id": [1]}))
    t.commit(w.prepare_commit())

    def ids(df) -> dict[int, str]:  # noqa: ANN001
        return {r["id"]: r["v"] for r in df.collect()}

    assert ids(ls.read(spark, "db.tt", warehouse=wh, snapshot_id=1)) == {1: "a", 2: "b", 3: "c"}
    assert ids(ls.read(spark, "db.tt", warehouse=wh)) == {2: "B", 3: "c", 4: "d"}
    s2 = t.snapshot(2).time_millis
    assert ids(ls.read(spark, "db.tt", warehouse=wh, timestamp_ms=s2)) == {1: "a", 2: "B", 3: "c", 4: "d"}
    snaps = ls.read(spark, "db.tt$snapshots", warehouse=wh).orderBy("snapshot_id").collect()
    assert [r["snapshot_id"] for r in snaps] == [1, 2, 3]
    audit = ls.read(spark, "db.tt$audit_log", warehouse=wh)
    assert audit.columns == ["rowkind", "id", "v"]
    assert {r["rowkind"] for r in audit.collect()} == {"+I"}

    views = ls.register_views(spark, warehouse=wh)
    assert "db.tt" in views and "db.tt$snapshots" in views
    assert spark.sql("SELECT count(*) AS n FROM `db.tt` WHERE id > 2").collect()[0]["n"] == 2
    assert spark.sql("SELECT max(snapshot_id) AS m FROM `db.tt$snapshots`").collect()[0]["m"] == 3
    assert ls.sql(spark, "SELECT sum(id) AS s FROM `db.tt`", warehouse=wh).collect()[0]["s"] == 9


def data_files(t: laketide.Table) -> list[str]:
    return [f for _, _, fs in os.walk(Path(t.path)) for f in fs if f.startswith("data-")]


def test_failed_task_leaves_no_files_and_no_snapshot(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.fail", schema)  # unaware buckets: no shuffle, the failure hits the writer task

    def fail_late(batches):  # noqa: ANN001, ANN202
        for batch in batches:
            yield batch  # the writer has this batch before the failure
            if 9_999 in batch.column("k").to_pylist():
                raise ValueError("boom")

    df = (spark.range(0, 10_000, numPartitions=1).selectExpr("id AS k", "id AS v")
          .mapInArrow(fail_late, "k long, v long"))
    with pytest.raises(Exception, match="boom"):
        ls.write(df, "db.fail", warehouse=wh)
    assert t.latest_snapshot() is None
    assert data_files(t) == []


def test_aborted_job_deletes_the_files_of_finished_tasks(cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.ab", schema, primary_key=["k"], options={"bucket": "2"})
    source = ls.LaketideDataSource({"path": "db.ab", "warehouse": wh})
    writer = source.writer(source.schema(), overwrite=False)
    batch = pa.record_batch({"k": list(range(100)), "v": list(range(100))})
    done = [writer.write(iter([batch])), writer.write(iter([batch.slice(0, 10)])), None]
    assert len(data_files(t)) == 4
    writer.abort(done)  # what Spark calls on the driver when another task failed
    assert data_files(t) == []
    assert t.latest_snapshot() is None
