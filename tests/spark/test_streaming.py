"""Structured Streaming: the exactly-once sink across a crash, the snapshot source and a two-hop chain."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide.spark as ls
from laketide.expr import col
from laketide.meta.paths import JOBS_DIR
from laketide.spark.writer import TEST_FAIL_AFTER_COMMIT


def test_sink_crash_between_laketide_commit_and_spark_commit_log(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    from pyspark.errors import StreamingQueryException

    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.sink", schema)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for i in range(6):
        pq.write_table(pa.table({"id": list(range(i * 100, i * 100 + 100)), "v": [f"f{i}"] * 100}, schema=schema),
                       inbox / f"part-{i}.parquet")
    checkpoint = str(tmp_path / "checkpoint")

    def start(**options: str):  # noqa: ANN202
        src = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(str(inbox))
        return ls.write_stream(src, "db.sink", warehouse=wh, checkpoint=checkpoint,
                               trigger={"availableNow": True}, options=options)

    crashed = start(**{TEST_FAIL_AFTER_COMMIT: "2"})
    with pytest.raises(StreamingQueryException, match="failing after the laketide commit of batch 2"):
        crashed.awaitTermination()
    # Batch 2 is in the table but not in Spark's commit log: the crash window of an exactly-once sink.
    assert t.read().num_rows == 300
    assert sorted(p.name for p in (Path(checkpoint) / "commits").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    commit_user = t.latest_snapshot().commit_user

    restarted = start()
    restarted.awaitTermination()
    assert restarted.exception() is None
    got = t.read().sort_by("id")
    assert got.column("id").to_pylist() == list(range(600))  # no duplicates, no gaps
    snaps = list(t.snapshot_manager.snapshots())
    assert [s.commit_identifier for s in snaps] == [0, 1, 2, 3, 4, 5]  # the replayed batch 2 committed nothing
    assert {s.commit_user for s in snaps} == {commit_user}
    # Each micro-batch was a job (laketide.spark.job_files): the crashed batch 2 left its end flag, which its
    # replay's tasks (started after it) ignored; the replay's files went, no record is left.
    jobs = Path(t.path) / JOBS_DIR
    assert [p.name.endswith(".ended") for p in jobs.iterdir()] == [True]
    live = {p for s in t.scan().plan() for p in s.file_paths()}
    assert {str(p) for p in Path(t.path).rglob("*.parquet")} == live


def test_source_scan_modes_limits_and_available_now(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64())])
    t = cat.create_table("db.src", schema)
    for i in range(5):
        t.write(pa.table({"id": list(range(i * 10, i * 10 + 10))}, schema=schema))

    def run(name: str, **options: str) -> tuple[list[int], int]:
        stream = ls.read_stream(spark, "db.src", warehouse=wh, options=options)
        q = (stream.writeStream.format("memory").queryName(name).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / name)).start())
        q.awaitTermination()
        batches = len([p for p in q.recentProgress if p["numInputRows"] > 0])
        return sorted(r["id"] for r in spark.table(name).collect()), batches

    assert run("full") == (list(range(50)), 1)  # latest-full: the snapshot as one batch
    ids, batches = run("limited", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2",
                                     "read.stream.maxFilesPerTrigger": "2"})
    assert ids == list(range(10, 50)) and batches == 2  # snapshots 2..5, two per micro-batch
    ids, batches = run("rows", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "maxRowsPerTrigger": "10"})
    assert ids == list(range(50)) and batches == 5
    ids, batches = run("rows2", **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                                   "read.stream.maxRowsPerTrigger": "20"})
    assert ids == list(range(50)) and batches == 3
    assert run("latest", **{"scan.mode": "latest"}) == ([], 0)
    ts = t.snapshot(3).time_millis
    ids, _ = run("ts", **{"scan.mode": "from-timestamp", "scan.timestamp-millis": str(ts)})
    assert ids == list(range(30, 50))


AGG_SCHEMA = pa.schema([pa.field("cat", pa.string(), nullable=False), ("total", pa.int64()), ("n", pa.int64())])


def _aggregate(rows: pa.Table) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for r in rows.to_pylist():
        total, n = out.get(r["cat"], (0, 0))
        out[r["cat"]] = (total + r["amount"], n + 1)
    return out


def test_chain_ods_to_dwd_to_aggregation_equals_batch(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    ods_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()), ("amount", pa.int64())])
    ods = cat.create_table("db.ods", ods_schema, primary_key=["id"], options={"bucket": "2"})
    dwd_schema = pa.schema([("op", pa.string()), *ods_schema])
    dwd = cat.create_table("db.dwd", dwd_schema, primary_key=["id"], options={"bucket": "2", "rowkind.field": "op"})
    state = cat.create_table("db.state", ods_schema, primary_key=["id"], options={"bucket": "1"})
    agg = cat.create_table("db.agg", AGG_SCHEMA, primary_key=["cat"], options={"bucket": "1"})

    # hop 1: ODS changes -> DWD through the laketide sink, row kinds applied by the DWD writer
    changes = ls.read_stream(spark, "db.ods", warehouse=wh).withColumnRenamed("rowkind", "op")
    hop1 = ls.write_stream(changes, "db.dwd", warehouse=wh, checkpoint=str(tmp_path / "cp1"))

    # hop 2: DWD changes -> per-category totals; upserts carry no before-image, so keep the last row per key
    def apply(batch_df, batch_id: int) -> None:  # noqa: ANN001
        rows = batch_df.toArrow()
        if rows.num_rows == 0:
            return
        ids = rows.column("id").to_pylist()
        before = state.read(where=col("id").isin(sorted(set(ids))))
        touched = set(before.column("cat").to_pylist()) | {c for c in rows.column("cat").to_pylist() if c}
        w = state.new_write()
        for kind, r in zip(rows.column("rowkind").to_pylist(), rows.select(["id", "cat", "amount"]).to_pylist()):
            w.write(pa.Table.from_pylist([r], schema=ods_schema)) if kind in ("+I", "+U") else \
                w.delete(pa.table({"id": [r["id"]]}))
        state.commit(w.prepare_commit())
        now = _aggregate(state.read(where=col("cat").isin(sorted(touched))))
        agg_w = agg.new_write()
        agg_w.write(pa.Table.from_pylist([{"cat": c, "total": s, "n": n} for c, (s, n) in now.items()],
                                         schema=AGG_SCHEMA))
        gone = sorted(touched - set(now))
        if gone:
            agg_w.delete(pa.table({"cat": gone}))
        agg.commit(agg_w.prepare_commit())

    # latest-full, not latest: the query may plan its first batch after step 1 has reached the DWD table already
    hop2 = (ls.read_stream(spark, "db.dwd", warehouse=wh, scan_mode="latest-full").writeStream.foreachBatch(apply)
            .option("checkpointLocation", str(tmp_path / "cp2")).start())

    def upsert(rows: list[tuple[int, str, int]]) -> None:
        df = spark.createDataFrame(rows, "id long, cat string, amount long").repartition(3)
        ls.write(df, "db.ods", warehouse=wh)

    def delete(ids: list[int]) -> None:
        w = ods.new_write()
        w.delete(pa.table({"id": ids}))
        ods.commit(w.prepare_commit())

    steps = [
        lambda: upsert([(i, f"c{i % 4}", i) for i in range(200)]),
        lambda: upsert([(i, f"c{(i + 1) % 5}", 10 * i) for i in range(150, 260)]),  # updates move categories
        lambda: delete(list(range(0, 200, 7))),
        lambda: upsert([(i, "c9", 1) for i in range(0, 30)]),  # re-insert some deleted keys
        lambda: delete([x for x in range(200, 260) if x % 4 == 0]),  # every c4-bound row
    ]
    try:
        for step in steps:
            step()
            hop1.processAllAvailable()
            hop2.processAllAvailable()
    finally:
        hop1.stop()
        hop2.stop()
    final = ods.read()
    assert sorted(dwd.read().select(["id", "cat", "amount"]).to_pylist(), key=lambda r: r["id"]) == \
        sorted(final.to_pylist(), key=lambda r: r["id"])
    got = {r["cat"]: (r["total"], r["n"]) for r in agg.read().to_pylist()}
    batch = {r["cat"]: (r["total"], r["n"]) for r in ls.read(spark, "db.ods", warehouse=wh)
             .groupBy("cat").agg({"amount": "sum", "id": "count"})
             .withColumnRenamed("sum(amount)", "total").withColumnRenamed("count(id)", "n").collect()}
    assert got == batch == _aggregate(final)


def test_audit_log_stream_equals_read_changes(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    """The same changes through Spark's stream source and through Python's Table.read_changes."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.cdc", schema, primary_key=["id"], options={"bucket": "2", "write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.write(pa.table({"id": [2], "v": ["b2"]}, schema=schema))
    w = t.new_write()
    w.delete(pa.table({"id": [3]}))
    t.commit(w.prepare_commit())
    stream = ls.read_stream(spark, "db.cdc$audit_log", warehouse=wh, options={"scan.mode": "from-snapshot",
                                                                           "scan.snapshot-id": "1"})
    q = (stream.writeStream.format("memory").queryName("cdc").trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "cdc")).start())
    q.awaitTermination()
    via_spark = sorted((r["rowkind"], r["id"], r["v"]) for r in spark.table("cdc").collect())
    python = t.read_changes(0)
    via_python = sorted(zip(python["rowkind"].to_pylist(), python["id"].to_pylist(), python["v"].to_pylist()))
    assert via_spark == via_python
    assert [k for k, i, _ in via_python if i == 3] == ["+I", "-D"]
