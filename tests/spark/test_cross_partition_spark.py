"""Cross-partition upsert through Spark: the assigners look their keys up in the table; checked against a dict
oracle."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import laketide.spark as lts
from laketide.spark.cross_partition import cross_partition_routed
from laketide.meta.paths import JOBS_DIR
from tests.table_checks import key_locations

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64()), ("op", pa.string())])
DDL = "id long, dt string, v long, op string"


def _df(spark, rows: list[tuple], slices: int = 4):
    """A DataFrame whose order is the list's (slices keep it; monotonically_increasing_id follows it)."""
    return spark.sparkContext.parallelize(rows, slices).toDF(DDL)


def _state(t) -> dict[int, tuple]:
    return {r["id"]: (r["dt"], r["v"]) for r in t.read(columns=["id", "dt", "v"]).to_pylist()}


def _locations(t) -> dict[int, list[tuple]]:
    return key_locations(t, "id")


@pytest.mark.parametrize("seed", [1, 2])
def test_random_upserts_moves_and_deletes_match_oracle(spark, cat, wh: str, seed: int) -> None:
    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                         options={"dynamic-bucket.target-row-num": "8", "rowkind.field": "op"})
    rnd = random.Random(seed)
    oracle: dict[int, tuple] = {}
    for _ in range(4):
        rows = []
        for _ in range(rnd.randint(30, 120)):
            k, dt, v = rnd.randint(0, 80), rnd.choice("abcd"), rnd.randint(0, 999)
            op = "-D" if rnd.random() < 0.15 else "+I"
            rows.append((k, dt, v, op))
            if op == "+I":
                oracle[k] = (dt, v)
            else:
                oracle.pop(k, None)  # a delete may name any partition: the key goes wherever it is
        lts.write(_df(spark, rows), "db.x", warehouse=wh)
        t = cat.table("db.x")
        assert _state(t) == oracle
        where = _locations(t)
        assert set(where) == set(oracle)
        assert all(len(places) == 1 and places[0][0] == (oracle[k][0],) for k, places in where.items())
    # 4 assigners (spark.sql.shuffle.partitions) filled buckets of their own, none beyond target-row-num
    sizes: dict[tuple, int] = {}
    for places in _locations(t).values():
        sizes[places[0]] = sizes.get(places[0], 0) + 1
    assert max(sizes.values()) <= 8 and len(sizes) >= len(oracle) / 8


def test_keys_are_looked_up_by_the_assigners_and_the_plan_reported(spark, cat, wh: str) -> None:
    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                         options={"dynamic-bucket.target-row-num": "50"})
    lts.write(_df(spark, [(k, "ab"[k % 2], k, None) for k in range(300)]), "db.x", warehouse=wh)
    t = cat.table("db.x")
    incoming = _df(spark, [(k, "c", -k, None) for k in range(250, 350)])
    with cross_partition_routed(incoming, t) as (routed, report):
        plan = routed._jdf.queryExecution().executedPlan().toString()
        # no job reads every key of the table: the assigners read only the keys they are given
        assert "Join" not in plan and "InMemoryTableScan" not in plan
        assert report.keys == 300 and report.buckets == len({(p, b) for p, b in
                                                              (x[0] for x in _locations(t).values())})
        kinds = {(r["dt"], r["__laketide_row_kind"]) for r in routed.select("dt", "__laketide_row_kind").collect()}
    # 50 keys move from a/b to c: deletes (3) in the old partitions, inserts (0) in the new one
    assert kinds == {("a", 3), ("b", 3), ("c", 0)}
    assert not spark.sparkContext._jsc.getPersistentRDDs()  # the cached keys are released


def test_last_row_of_the_dataframe_wins_across_tasks(spark, cat, wh: str) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    rows = [(1, "a", 1, None)] + [(k, "b", k, None) for k in range(100, 140)] + [(1, "c", 2, None)]
    lts.write(_df(spark, rows, slices=2), "db.x", warehouse=wh)  # the two rows of key 1 start in two tasks
    got = _state(cat.table("db.x"))
    assert got[1] == ("c", 2) and len(got) == 41


def test_repeated_key_in_one_partition_last_wins_across_tasks(spark, cat, wh: str) -> None:
    """Rows of one key that stay in one (partition, bucket) reach its writer in arrival order (no sort there)."""
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    lts.write(_df(spark, [(1, "a", 0, None), (2, "b", 0, None)]), "db.x", warehouse=wh)
    rows = ([(1, "a", 1, None)] + [(k, "a", k, None) for k in range(100, 130)] + [(1, "a", 2, None)]
            + [(k, "b", k, None) for k in range(200, 230)] + [(1, "a", 3, None), (2, "b", 5, None)])
    lts.write(_df(spark, rows, slices=3), "db.x", warehouse=wh)  # key 1 three times, in three tasks
    got = _state(cat.table("db.x"))
    assert got[1] == ("a", 3) and got[2] == ("b", 5) and len(got) == 2 + 60


@pytest.mark.parametrize("engine,options,expected", [
    ("partial-update", {}, {1: ("a", 5), 2: ("b", 7)}),
    ("aggregation", {"fields.v.aggregate-function": "sum"}, {1: ("a", 6), 2: ("b", 7)}),
    ("first-row", {}, {1: ("a", 1), 2: ("b", 7)}),
])
def test_other_engines_keep_the_old_partition(spark, cat, wh: str, engine, options, expected) -> None:
    cat.create_table("db.e", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"merge-engine": engine, **options})
    lts.write(_df(spark, [(1, "a", 1, None)]), "db.e", warehouse=wh)
    lts.write(_df(spark, [(1, "b", 5, None), (2, "b", 7, None)]), "db.e", warehouse=wh)
    t = cat.table("db.e")
    if engine == "first-row":
        t.compact(full=True)  # first-row reads skip level 0
    assert _state(t) == expected
    assert all(len(p) == 1 for p in _locations(t).values())


def test_index_ttl_through_spark(spark, cat, wh: str) -> None:
    # every bucket is older than 1 ms by the time the next job plans: its keys count as new (Paimon's TTL trade)
    cat.create_table("db.ttl", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"cross-partition-upsert.index-ttl": "1 ms"})
    lts.write(_df(spark, [(1, "a", 1, None), (2, "b", 2, None)]), "db.ttl", warehouse=wh)
    t = cat.table("db.ttl")
    with cross_partition_routed(_df(spark, [(1, "c", 3, None)]), t) as (routed, report):
        assert report.keys == 0 and report.buckets_skipped_by_ttl == 2
        assert {r["dt"] for r in routed.collect()} == {"c"}  # no delete in "a": the stale key is not known


def test_stream_into_cross_partition_table(spark, cat, wh: str, tmp_path) -> None:
    src = cat.create_table("db.src", SCHEMA)
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "10", "rowkind.field": "op"})
    oracle: dict[int, tuple] = {}
    rnd = random.Random(7)
    for _ in range(3):  # three snapshots of the source: three micro-batches with maxFilesPerTrigger = 1
        rows = [(rnd.randint(0, 30), rnd.choice("ab"), rnd.randint(0, 99), "+I") for _ in range(25)]
        src.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
        for k, dt, v, _ in rows:
            oracle[k] = (dt, v)
    stream = lts.read_stream(spark, "db.src", warehouse=wh, scan_mode="from-snapshot",
                             options={"scan.snapshot-id": "1", "maxFilesPerTrigger": "1"})
    query = lts.write_stream(stream, "db.x", warehouse=wh, checkpoint=str(tmp_path / "cp"),
                             trigger={"availableNow": True})
    query.awaitTermination()
    t = cat.table("db.x")
    assert _state(t) == oracle
    assert all(len(p) == 1 for p in _locations(t).values())
    snaps = [s for s in t.snapshot_manager.snapshots() if s.commit_kind.value == "APPEND"]
    assert [s.commit_identifier for s in snaps] == [0, 1, 2]  # one commit per micro-batch
    assert len({s.commit_user for s in snaps}) == 1 and snaps[0].commit_user.startswith("spark-query-")


def test_plain_datasource_write_of_dynamic_table_from_many_tasks_is_refused(spark, cat, wh: str) -> None:
    cat.create_table("db.h", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"])
    df = _df(spark, [(k, "a", k, None) for k in range(40)])
    with pytest.raises(Exception, match="dynamic buckets"):
        df.write.format("laketide").option("warehouse", wh).mode("append").save("db.h")
    assert cat.table("db.h").latest_snapshot() is None
    df.coalesce(1).write.format("laketide").option("warehouse", wh).mode("append").save("db.h")
    assert len(cat.table("db.h").read()) == 40


def test_stream_replay_after_crash_commits_once(spark, cat, wh: str, tmp_path) -> None:
    from pyspark.errors import StreamingQueryException

    from laketide.spark.writer import TEST_FAIL_AFTER_COMMIT

    src = cat.create_table("db.src", SCHEMA)
    cat.create_table("db.agg", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    for i in range(3):
        rows = [{"id": k, "dt": "ab"[(k + i) % 2], "v": 1, "op": None} for k in range(10)]
        src.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    checkpoint = str(tmp_path / "cp")

    def start(**options: str):  # noqa: ANN202
        stream = lts.read_stream(spark, "db.src", warehouse=wh, scan_mode="from-snapshot",
                                 options={"scan.snapshot-id": "1", "maxFilesPerTrigger": "1"})
        return lts.write_stream(stream, "db.agg", warehouse=wh, checkpoint=checkpoint,
                                trigger={"availableNow": True}, options=options)

    crashed = start(**{TEST_FAIL_AFTER_COMMIT: "1"})
    with pytest.raises(StreamingQueryException, match="failing after the laketide commit of batch 1"):
        crashed.awaitTermination()
    start().awaitTermination()
    t = cat.table("db.agg")
    # every key was counted once per source snapshot, in the partition of its first row (aggregation keeps it)
    assert _state(t) == {k: ("ab"[k % 2], 3) for k in range(10)}
    assert [s.commit_identifier for s in t.snapshot_manager.snapshots()] == [0, 1, 2]


def test_another_job_writing_meanwhile_fails_the_commit(spark, cat, wh: str) -> None:
    from laketide.spark.api import _save
    from laketide.spark.writer import KEY_INDEX_BASE, ROUTED, key_index_option

    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    lts.write(_df(spark, [(1, "a", 1, None)]), "db.x", warehouse=wh)
    with cross_partition_routed(_df(spark, [(1, "b", 2, None)]), cat.table("db.x")) as (routed, report):
        t.write(pa.Table.from_pylist([{"id": 1, "dt": "c", "v": 3, "op": None}], schema=SCHEMA))  # another job
        before = cat.table("db.x").latest_snapshot()
        with pytest.raises(Exception, match="written by another job"):
            _save(routed, "db.x", "append", {"warehouse": wh, KEY_INDEX_BASE: key_index_option(report.key_index_base),
                                             ROUTED: "bucket,row-kind"})
    assert cat.table("db.x").latest_snapshot() == before
    assert _state(cat.table("db.x")) == {1: ("c", 3)}


def test_empty_dataframe_changes_no_row(spark, cat, wh: str) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    lts.write(_df(spark, []), "db.x", warehouse=wh)  # into an empty table
    lts.write(_df(spark, [(1, "a", 1, None), (2, "b", 2, None)]), "db.x", warehouse=wh)
    lts.write(_df(spark, []), "db.x", warehouse=wh)  # into a populated one
    assert _state(cat.table("db.x")) == {1: ("a", 1), 2: ("b", 2)}


def test_a_key_moving_twice_within_one_write_ends_once_where_its_last_row_says(spark, cat, wh: str) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "3"})
    lts.write(_df(spark, [(k, "d", k, None) for k in range(10)]), "db.x", warehouse=wh)
    rows = ([(1, "a", 100, None)] + [(k, "e", k, None) for k in range(20, 40)] + [(1, "b", 101, None)]
            + [(k, "e", k, None) for k in range(40, 60)] + [(1, "c", 102, None), (2, "a", 200, None)])
    lts.write(_df(spark, rows, slices=3), "db.x", warehouse=wh)  # key 1: d -> a -> b -> c across three tasks
    t = cat.table("db.x")
    got = _state(t)
    assert got[1] == ("c", 102) and got[2] == ("a", 200) and len(got) == 10 + 40
    assert all(len(p) == 1 for p in _locations(t).values())


def test_reused_dataframe_written_twice(spark, cat, wh: str) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "16"})
    lts.write(_df(spark, [(k, "ab"[k % 2], k, None) for k in range(60)]), "db.x", warehouse=wh)
    df = _df(spark, [(k, "abc"[k % 3], -k, None) for k in range(30, 90)])
    lts.write(df, "db.x", warehouse=wh)
    lts.write(df, "db.x", warehouse=wh)  # the second time every key is known, in the partition the first put it
    t = cat.table("db.x")
    expected = {k: ("ab"[k % 2], k) for k in range(30)} | {k: ("abc"[k % 3], -k) for k in range(30, 90)}
    assert _state(t) == expected
    assert all(len(p) == 1 for p in _locations(t).values())
    sizes: dict[tuple, int] = {}
    for places in _locations(t).values():
        sizes[places[0]] = sizes.get(places[0], 0) + 1
    assert max(sizes.values()) <= 16  # bucket counts of overlapping (uncompacted) buckets were read exactly


def test_composite_string_key(spark, cat, wh: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string(), nullable=False),
                        pa.field("dt", pa.string(), nullable=False), ("v", pa.int64())])
    cat.create_table("db.c", schema, primary_key=["id", "name"], partition_keys=["dt"])
    first = [(k % 5, f"n/{k // 5}..", "a", k) for k in range(30)]
    lts.write(spark.createDataFrame(first, "id long, name string, dt string, v long"), "db.c", warehouse=wh)
    # known pairs move to b; pairs of a known id and a known name that were never together are new keys
    second = [(k % 5, f"n/{(k // 5 + 1) % 7}..", "b", -k) for k in range(30)]
    lts.write(spark.createDataFrame(second, "id long, name string, dt string, v long"), "db.c", warehouse=wh)
    expected = {(i, n): ("a", v) for i, n, _, v in first} | {(i, n): ("b", v) for i, n, _, v in second}
    got = {(r["id"], r["name"]): (r["dt"], r["v"]) for r in cat.table("db.c").read().to_pylist()}
    assert got == expected


def test_pypaimon_reads_what_the_assigners_routed(spark, cat, wh: str, pypaimon) -> None:
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "10", "rowkind.field": "op"})
    rnd = random.Random(11)
    oracle: dict[int, tuple] = {}
    for _ in range(3):  # moves between partitions, deletes, buckets filled to the target
        rows = [(rnd.randint(0, 50), rnd.choice("abc"), rnd.randint(0, 99), "-D" if rnd.random() < 0.1 else "+I")
                for _ in range(60)]
        for k, dt, v, op in rows:
            if op == "+I":
                oracle[k] = (dt, v)
            else:
                oracle.pop(k, None)
        lts.write(_df(spark, rows), "db.x", warehouse=wh)
    theirs = {r["id"]: (r["dt"], r["v"]) for r in pypaimon.read(wh, "db.x").to_pylist()}
    assert theirs == oracle == _state(cat.table("db.x"))


def _new_files(t, before: set[str]) -> dict[tuple, list[str]]:
    """(partition, bucket) -> the data files of ``t`` that are not in ``before``."""
    out: dict[tuple, list[str]] = {}
    for split in t.scan().plan():
        for path in split.file_paths():
            if path not in before:
                out.setdefault((split.partition_values, split.bucket), []).append(path)
    return out


def _all_files(t) -> set[str]:
    return {p for split in t.scan().plan() for p in split.file_paths()}


def test_python_written_table_gets_one_writer_per_bucket_and_the_python_answer(spark, cat, wh: str) -> None:
    """Keys the Python path put into buckets in fill order (not by the Spark assigners' ownership) are routed to
    the task owning their bucket: each bucket gets one new file (one writer, its own sequence numbers), and the
    table ends as the same rows written through Python."""
    first = [{"id": k, "dt": "ab"[k % 2], "v": k, "op": None} for k in range(120)]
    second = [(k, "abc"[k % 3], -k, None) for k in range(60, 180)] + [(61, "c", 7, None), (62, "a", 8, None)]
    options = {"dynamic-bucket.target-row-num": "25"}
    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"], options=options)
    t.write(pa.Table.from_pylist(first, schema=SCHEMA))
    before = _all_files(t)
    lts.write(_df(spark, second), "db.x", warehouse=wh)
    t = cat.table("db.x")
    new = _new_files(t, before)
    assert new and all(len(files) == 1 for files in new.values()), new
    py = cat.create_table("db.py", SCHEMA, primary_key=["id"], partition_keys=["dt"], options=options)
    py.write(pa.Table.from_pylist(first, schema=SCHEMA))
    py.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in second], schema=SCHEMA))
    expected = {r["id"]: (r["dt"], r["v"]) for r in first} | {k: (dt, v) for k, dt, v, _ in second}
    assert _state(t) == _state(py) == expected
    assert all(len(p) == 1 for p in _locations(t).values())


def test_failed_job_commits_nothing_leaves_no_files_and_a_retry_lands(spark, cat, wh: str) -> None:
    import os

    from pyspark.errors import PySparkException

    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "10", "rowkind.field": "op"})
    lts.write(_df(spark, [(k, "ab"[k % 2], k, "+I") for k in range(40)]), "db.x", warehouse=wh)
    t = cat.table("db.x")
    snapshot, state = t.latest_snapshot(), _state(t)
    on_disk = {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs}
    rows = [(k, "c", -k, "+I") for k in range(20, 60)] + [(7, "a", 0, "bogus")]  # one task fails in its writer
    with pytest.raises((PySparkException, Exception), match="invalid row kinds"):
        lts.write(_df(spark, rows), "db.x", warehouse=wh)
    t = cat.table("db.x")
    assert t.latest_snapshot() == snapshot and _state(t) == state
    # the other tasks' files too, also of a task finishing after Spark's abort: the job leaves only its abort flag
    # (laketide.spark.job_files), for such a task to find
    left = {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs} - on_disk
    assert {os.path.relpath(p, t.path).split(os.sep)[0] for p in left} <= {JOBS_DIR}
    assert len(left) == 1 and all(p.endswith(".ended") for p in left)
    fixed = rows[:-1] + [(7, "a", 0, "-D")]
    lts.write(_df(spark, fixed), "db.x", warehouse=wh)
    expected = {k: ("ab"[k % 2], k) for k in range(20) if k != 7} | {k: ("c", -k) for k in range(20, 60)}
    t = cat.table("db.x")
    assert _state(t) == expected
    assert all(len(p) == 1 for p in _locations(t).values())


def test_another_job_writing_between_lookup_and_commit_fails_the_writers_that_assign(spark, cat, wh: str) -> None:
    from laketide.spark.api import _save
    from laketide.spark.cross_partition import cross_partition_keyed

    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    lts.write(_df(spark, [(1, "a", 1, None)]), "db.x", warehouse=wh)
    with cross_partition_keyed(_df(spark, [(1, "b", 2, None)]), cat.table("db.x")) as (by_owner, routing, report):
        assert report.keys == 1
        t.write(pa.Table.from_pylist([{"id": 1, "dt": "c", "v": 3, "op": None}], schema=SCHEMA))  # another job
        before = cat.table("db.x").latest_snapshot()
        with pytest.raises(Exception, match="written by another job"):
            _save(by_owner, "db.x", "append", {"warehouse": wh, **routing})
    assert cat.table("db.x").latest_snapshot() == before
    assert _state(cat.table("db.x")) == {1: ("c", 3)}


def test_malformed_assign_option_is_refused(spark, cat, wh: str) -> None:
    from laketide.spark.api import _save
    from laketide.spark.cross_partition import cross_partition_keyed
    from laketide.spark.options import ASSIGN

    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    with cross_partition_keyed(_df(spark, [(1, "b", 2, None)]), cat.table("db.x")) as (by_owner, routing, _):
        with pytest.raises(Exception, match="assign option of the write to db.x is malformed"):
            _save(by_owner, "db.x", "append", {"warehouse": wh, **routing, ASSIGN: "{not json"})
    assert cat.table("db.x").latest_snapshot() is None


def test_small_lookup_chunks_match_the_oracle(spark, cat, wh: str, monkeypatch) -> None:
    """Keys looked up a few at a time (the lookup UDF is pickled by value with the chunk size it sees here): a key
    repeated across lookup chunks and tasks, moving and deleted, still ends where its last row says."""
    import laketide.spark.cross_partition as cp

    monkeypatch.setattr(cp, "ASSIGN_CHUNK_ROWS", 7)
    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "5", "rowkind.field": "op"})
    rnd = random.Random(5)
    oracle: dict[int, tuple] = {}
    for _ in range(3):
        rows = []
        for _ in range(90):
            k, dt, v = rnd.randint(0, 40), rnd.choice("abc"), rnd.randint(0, 999)
            op = "-D" if rnd.random() < 0.1 else "+I"
            rows.append((k, dt, v, op))
            if op == "+I":
                oracle[k] = (dt, v)
            else:
                oracle.pop(k, None)
        lts.write(_df(spark, rows, slices=3), "db.x", warehouse=wh)
        t = cat.table("db.x")
        assert _state(t) == oracle
        assert all(len(p) == 1 for p in _locations(t).values())


def test_first_write_into_an_empty_table_looks_nothing_up(spark, cat, wh: str) -> None:
    from laketide.spark.cross_partition import cross_partition_keyed

    cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                     options={"dynamic-bucket.target-row-num": "10"})
    rows = [(k % 30, "abc"[k % 3], k, None) for k in range(75)]  # keys repeated: the last row of each wins
    with cross_partition_keyed(_df(spark, rows), cat.table("db.x")) as (by_owner, _, report):
        plan = by_owner._jdf.queryExecution().executedPlan().toString()
        assert report.keys == 0 and "ArrowEvalPython" not in plan and "BatchEvalPython" not in plan
    lts.write(_df(spark, rows), "db.x", warehouse=wh)
    t = cat.table("db.x")
    assert _state(t) == {k % 30: ("abc"[k % 3], k) for k in range(75)}
    assert all(len(p) == 1 for p in _locations(t).values())
    sizes: dict[tuple, int] = {}
    for places in _locations(t).values():
        sizes[places[0]] = sizes.get(places[0], 0) + 1
    assert max(sizes.values()) <= 10
    with cross_partition_keyed(_df(spark, rows), t) as (by_owner, _, report):  # now there are keys to look up
        assert report.keys == 30 and "ArrowEvalPython" in by_owner._jdf.queryExecution().executedPlan().toString()


def test_held_keys_of_one_bucket_partitions_spread_over_the_tasks(spark, cat, wh: str) -> None:
    """Partitions below dynamic-bucket.target-row-num hold one bucket each, all numbered 0: their keys go to
    different tasks (ownership spread by partition), not all to the task of bucket 0; every bucket still gets
    one writer, and buckets the tasks open in a partition do not collide."""
    from collections import Counter

    from pyspark.sql import functions as F  # noqa: N812

    from laketide.spark.cross_partition import cross_partition_keyed

    t = cat.create_table("db.x", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                         options={"dynamic-bucket.target-row-num": "60"})
    t.write(pa.Table.from_pylist([{"id": k, "dt": "abcd"[k % 4], "v": k, "op": None} for k in range(200)],
                                 schema=SCHEMA))
    assert {b for places in _locations(t).values() for _, b in places} == {0}
    before = _all_files(t)
    # every held key moves one partition on; 80 new keys fill new buckets next to the held ones
    rows = [(k, "abcd"[(k + 1) % 4], -k, None) for k in range(200)] + [(k, "abcd"[k % 4], k, None)
                                                                       for k in range(200, 280)]
    with cross_partition_keyed(_df(spark, rows), cat.table("db.x")) as (by_owner, _, _):
        per_task = Counter(r[0] for r in by_owner.select(F.spark_partition_id()).collect())
    assert len(per_task) == 4 and min(per_task.values()) >= 50, per_task
    lts.write(_df(spark, rows), "db.x", warehouse=wh)
    t = cat.table("db.x")
    assert _state(t) == {k: (dt, v) for k, dt, v, _ in rows}
    assert all(len(p) == 1 for p in _locations(t).values())
    new = _new_files(t, before)
    assert all(len(files) == 1 for files in new.values()), new
    sizes = Counter(places[0] for places in _locations(t).values())
    assert max(sizes.values()) <= 60
