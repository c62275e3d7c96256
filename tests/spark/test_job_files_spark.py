"""Spark jobs name every file their tasks create (laketide.spark.job_files): a failed job leaves nothing but its end
flag, a committed one no record, whichever write path ran (laketide.spark.write, df.write.format("laketide"),
write_stream, the compaction job)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide.spark as lts
from laketide.meta.paths import JOBS_DIR

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("op", pa.string())])


def _files(path: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs}


def _job_entries(t) -> list[str]:  # noqa: ANN001
    jobs = os.path.join(t.path, JOBS_DIR)
    return sorted(os.listdir(jobs)) if os.path.isdir(jobs) else []


def _pk_rows(spark, rows: list[tuple]):  # noqa: ANN001, ANN202
    return spark.sparkContext.parallelize(rows, 4).toDF("id long, v long, op string")


def test_a_failed_fixed_bucket_write_leaves_only_its_end_flag_and_a_retry_lands(spark, cat, wh: str) -> None:  # noqa: ANN001
    from pyspark.errors import PySparkException

    cat.create_table("db.t", PK_SCHEMA, primary_key=["id"], options={"bucket": "4", "rowkind.field": "op"})
    lts.write(_pk_rows(spark, [(k, k, "+I") for k in range(40)]), "db.t", warehouse=wh)
    t = cat.table("db.t")
    snapshot, on_disk = t.latest_snapshot(), _files(t.path)
    assert len(_job_entries(t)) == 1 and _job_entries(t)[0].endswith(".ended")  # committed: no record left
    rows = [(k, -k, "+I") for k in range(20, 60)] + [(7, 0, "bogus")]  # one task fails in its writer
    with pytest.raises((PySparkException, Exception), match="invalid row kinds"):
        lts.write(_pk_rows(spark, rows), "db.t", warehouse=wh)
    t = cat.table("db.t")
    assert t.latest_snapshot() == snapshot
    left = _files(t.path) - on_disk
    assert len(left) == 1 and all(p.endswith(".ended") and f"/{JOBS_DIR}/" in p for p in left)
    lts.write(_pk_rows(spark, rows[:-1]), "db.t", warehouse=wh)
    got = {r["id"]: r["v"] for r in cat.table("db.t").read().to_pylist()}
    assert got == {k: k for k in range(20)} | {k: -k for k in range(20, 60)}
    assert all(e.endswith(".ended") for e in _job_entries(t)) and len(_job_entries(t)) == 3


def test_a_failed_dataframe_write_to_an_append_table_leaves_only_its_end_flag(spark, cat, wh: str) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.a", schema)
    on_disk = _files(t.path)
    df = spark.sparkContext.parallelize([(k, "x") for k in range(30)] + [(None, "bad")], 4).toDF("id long, v string")
    with pytest.raises(Exception, match="id"):
        df.write.format("laketide").option("warehouse", wh).mode("append").save("db.a")
    t = cat.table("db.a")
    assert t.latest_snapshot() is None
    left = _files(t.path) - on_disk
    assert len(left) == 1 and all(p.endswith(".ended") for p in left)


def test_stream_and_compaction_jobs_leave_no_records(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.s", schema, primary_key=["id"], options={"bucket": "2"})
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"id": list(range(i * 10, i * 10 + 20)), "v": [f"f{i}"] * 20}, schema=schema),
                       inbox / f"part-{i}.parquet")
    src = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(str(inbox))
    q = lts.write_stream(src, "db.s", warehouse=wh, checkpoint=str(tmp_path / "cp"), trigger={"availableNow": True})
    q.awaitTermination()
    assert q.exception() is None
    assert len(list(t.snapshot_manager.snapshots())) >= 3
    assert not [p for p in _files(os.path.join(t.path, JOBS_DIR)) if p.endswith(".intent")]
    assert lts.compact(spark, "db.s", warehouse=wh, full=True) is not None
    t = cat.table("db.s")
    assert t.read().num_rows == 40
    # The stream's job (the query's run) swept its records at each commit; the compaction ended its job.
    entries = _job_entries(t)
    assert len(entries) == 1 and entries[0].endswith(".ended")
