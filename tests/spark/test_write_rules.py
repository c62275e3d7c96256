"""Writes through Spark follow Spark's rules: save modes, partition overwrite modes, read-only targets, options,
sessions and errors. Every refused write leaves the table as it was (no snapshot, no file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
import laketide.spark as ls
from laketide.exceptions import (
    InvalidOptionError,
    NoSuchTableError,
    ReadOnlyTableError,
    SchemaError,
    TableAlreadyExistsError,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
DDL = "id long, v string, dt string"


def frame(spark, rows: list[tuple]):  # noqa: ANN001, ANN201
    return spark.createDataFrame(rows, DDL)


def state(t: laketide.Table) -> tuple[int | None, list[str]]:
    """The latest snapshot and the data files on disk: what a refused write must leave unchanged."""
    snap = t.latest_snapshot()
    files = sorted(f for _, _, fs in os.walk(t.path) for f in fs if f.startswith("data-"))
    return (snap.id if snap else None), files


def by_dt(t: laketide.Table) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in t.read().to_pylist():
        out.setdefault(r["dt"], []).append(r["v"])
    return {k: sorted(v) for k, v in sorted(out.items())}


@pytest.fixture()
def parted(cat):  # noqa: ANN001, ANN201
    t = cat.create_table("db.p", SCHEMA, partition_keys=["dt"])
    t.write(pa.table({"id": [1, 2, 3], "v": ["old"] * 3, "dt": ["a", "b", "c"]}, schema=SCHEMA))
    return t


# -- save modes -----------------------------------------------------------------------------------------------------
def test_save_modes_of_the_write_helper(spark, cat, wh: str) -> None:  # noqa: ANN001
    df = frame(spark, [(1, "x", "a"), (2, "y", "b")])
    ls.write(df, "db.new", warehouse=wh, mode="errorifexists", primary_key=["id", "dt"], partition_keys=["dt"],
             table_options={"bucket": "2"})
    t = cat.table("db.new")
    assert t.primary_keys == ("id", "dt") and t.partition_keys == ("dt",) and t.options.bucket == 2
    assert t.read().num_rows == 2
    before = state(t)
    with pytest.raises(TableAlreadyExistsError, match="db.new"):
        ls.write(df, "db.new", warehouse=wh, mode="errorifexists")
    with pytest.raises(TableAlreadyExistsError):
        ls.write(df, "db.new", warehouse=wh, mode="error")
    ls.write(df, "db.new", warehouse=wh, mode="ignore")  # exists: nothing happens
    assert state(t) == before
    ls.write(df, "db.ign", warehouse=wh, mode="ignore")  # absent: created and written
    assert cat.table("db.ign").read().num_rows == 2
    for mode in ("append", "overwrite"):  # a misspelled name never creates a table
        with pytest.raises(NoSuchTableError, match="db.typo"):
            ls.write(df, "db.typo", warehouse=wh, mode=mode)
    assert not cat.table_exists("db.typo")
    with pytest.raises(InvalidOptionError, match="mode"):
        ls.write(df, "db.new", warehouse=wh, mode="upsert")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="primary_key"):  # describes another table: refused, not ignored
        ls.write(df, "db.new", warehouse=wh, mode="append", primary_key=["v"])
    assert state(t) == before
    # a write that fails after creating the table leaves no table behind
    bad = spark.createDataFrame([(None, "x", "a")], DDL)
    with pytest.raises(Exception):  # noqa: B017 - a null primary key, reported by the task
        ls.write(bad, "db.failed", warehouse=wh, mode="errorifexists", primary_key=["id"],
                 table_options={"bucket": "1"})
    assert not cat.table_exists("db.failed")


def test_raw_save_modes(spark, parted, wh: str) -> None:  # noqa: ANN001
    from pyspark.errors import AnalysisException

    df = frame(spark, [(9, "new", "a")])
    before = state(parted)
    for mode in (None, "errorifexists", "ignore"):  # Spark refuses them for Python sources, before laketide runs
        writer = df.write.format("laketide").option("warehouse", wh)
        with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            (writer.mode(mode) if mode else writer).save("db.p")
    assert state(parted) == before
    df.write.format("laketide").option("warehouse", wh).mode("append").save("db.p")
    assert parted.read().num_rows == 4
    df.write.format("laketide").option("warehouse", wh).mode("overwrite").save("db.p")
    assert by_dt(parted) == {"a": ["new"]}


# -- partition overwrite ----------------------------------------------------------------------------------------------
def test_dynamic_partition_overwrite_from_conf_option_and_argument(spark, parted, wh: str) -> None:  # noqa: ANN001
    df = frame(spark, [(10, "new", "a"), (11, "new", "d")])
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        ls.write(df, "db.p", warehouse=wh, mode="overwrite")  # the session conf (was: the whole table)
        assert by_dt(parted) == {"a": ["new"], "b": ["old"], "c": ["old"], "d": ["new"]}
        ls.write(frame(spark, [(12, "static", "b")]), "db.p", warehouse=wh, mode="overwrite",
                 dynamic_partition_overwrite=False)  # the argument wins over the conf
        assert by_dt(parted) == {"b": ["static"]}
        ls.write(frame(spark, [(13, "s2", "e")]), "db.p", warehouse=wh, mode="overwrite",
                 options={"partitionOverwriteMode": "static"})  # so does the option
        assert by_dt(parted) == {"e": ["s2"]}
        ls.write(frame(spark, [(14, "x", "z")]), "db.p", warehouse=wh)  # append: the conf does not apply
        assert by_dt(parted) == {"e": ["s2"], "z": ["x"]}
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    ls.write(frame(spark, [(15, "kw", "z")]), "db.p", warehouse=wh, mode="overwrite", dynamic_partition_overwrite=True)
    assert by_dt(parted) == {"e": ["s2"], "z": ["kw"]}
    frame(spark, [(16, "raw", "e")]).write.format("laketide").option("warehouse", wh) \
        .option("partitionOverwriteMode", "dynamic").mode("overwrite").save("db.p")
    assert by_dt(parted) == {"e": ["raw"], "z": ["kw"]}
    before = state(parted)
    ls.write(frame(spark, [])[["id", "v", "dt"]], "db.p", warehouse=wh, mode="overwrite",
             dynamic_partition_overwrite=True)  # no rows: no partition replaced
    assert by_dt(parted) == {"e": ["raw"], "z": ["kw"]}
    assert state(parted)[1] == before[1]


def test_static_partition_overwrite_refuses_rows_of_other_partitions(spark, parted, wh: str) -> None:  # noqa: ANN001
    before = state(parted)
    mixed = frame(spark, [(20, "new", "a"), (21, "stray", "b")])
    with pytest.raises(SchemaError, match="other partitions"):
        ls.write(mixed, "db.p", warehouse=wh, mode="overwrite", partition={"dt": "a"})
    with pytest.raises(Exception, match="belong to other partitions"):
        mixed.write.format("laketide").option("warehouse", wh).option("overwrite-partition", "dt=a") \
            .mode("overwrite").save("db.p")
    assert state(parted) == before  # nothing written: no snapshot, no file
    ls.write(frame(spark, [(20, "new", "a")]), "db.p", warehouse=wh, mode="overwrite", partition={"dt": "a"})
    assert by_dt(parted) == {"a": ["new"], "b": ["old"], "c": ["old"]}
    # SQL: Spark itself refuses a PARTITION clause (a Python source declares no partitioning); nothing is written
    from pyspark.errors import AnalysisException

    ls.read(spark, "db.p", warehouse=wh).createOrReplaceTempView("p_view")
    before = state(parted)
    with pytest.raises(AnalysisException):
        spark.sql("INSERT OVERWRITE p_view PARTITION (dt = 'a') VALUES (30, 'sql')")
    assert state(parted) == before


def test_wrong_mode_combinations_are_refused(spark, parted, wh: str) -> None:  # noqa: ANN001
    df = frame(spark, [(40, "x", "a")])
    before = state(parted)
    cases = [
        dict(mode="append", partition={"dt": "a"}),
        dict(mode="append", dynamic_partition_overwrite=True),
        dict(mode="append", options={"partitionOverwriteMode": "dynamic"}),
        dict(mode="overwrite", partition={"dt": "a"}, dynamic_partition_overwrite=True),
        dict(mode="overwrite", partition={"nope": "a"}),
        dict(mode="overwrite", options={"partitionOverwriteMode": "sometimes"}),
        dict(mode="append", num_tasks=0),
        dict(mode="append", options={"commit.user": "me"}),  # without commit.identifier it would do nothing
    ]
    for kwargs in cases:
        with pytest.raises(InvalidOptionError):
            ls.write(df, "db.p", warehouse=wh, **kwargs)  # type: ignore[arg-type]
    raw = df.write.format("laketide").option("warehouse", wh)
    for key, value, mode in [("partitionOverwriteMode", "dynamic", "append"),
                             ("overwrite-partition", "dt=a", "append"),
                             ("overwrite-partition", "dt", "overwrite"),
                             ("overwrite-partition", "nope=1", "overwrite")]:
        with pytest.raises(Exception, match="InvalidOptionError"):
            raw.option(key, value).mode(mode).save("db.p")
        raw = df.write.format("laketide").option("warehouse", wh)
    assert state(parted) == before


# -- targets ---------------------------------------------------------------------------------------------------------
def test_system_tables_and_time_travel_are_read_only(spark, parted, wh: str) -> None:  # noqa: ANN001
    df = frame(spark, [(50, "x", "a")])
    before = state(parted)
    for target in ("db.p$snapshots", "db.p$files", "db.p$audit_log", "db.p$options"):
        with pytest.raises(ReadOnlyTableError, match="read-only"):
            ls.write(df, target, warehouse=wh)
        with pytest.raises(Exception, match="ReadOnlyTableError"):  # was: appended into db.p
            df.write.format("laketide").option("warehouse", wh).mode("append").save(target)
    for key in ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis"):
        with pytest.raises(ReadOnlyTableError, match=key):
            ls.write(df, "db.p", warehouse=wh, options={key: "1"})
        with pytest.raises(Exception, match="ReadOnlyTableError"):
            df.write.format("laketide").option("warehouse", wh).option(key, "1").mode("append").save("db.p")
    with pytest.raises(ReadOnlyTableError):
        ls.compact(spark, "db.p$files", warehouse=wh)
    assert state(parted) == before


# -- options ---------------------------------------------------------------------------------------------------------
def test_options_laketide_does_not_honour_are_refused(spark, parted, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    df = frame(spark, [(60, "x", "a")])
    before = state(parted)
    with pytest.raises(InvalidOptionError, match="changelog-producer"):
        ls.write(df, "db.p", warehouse=wh, options={"changelog-producer": "input"})
    with pytest.raises(InvalidOptionError, match="where"):  # a read option on a write
        ls.write(df, "db.p", warehouse=wh, options={"where": "dt = 'a'"})
    with pytest.raises(InvalidOptionError, match="laketide.routed"):  # internal
        ls.write(df, "db.p", warehouse=wh, options={"laketide.routed": "bucket"})
    with pytest.raises(Exception, match="InvalidOptionError.*bogus"):
        df.write.format("laketide").option("warehouse", wh).option("bogus", "1").mode("append").save("db.p")
    with pytest.raises(InvalidOptionError, match="overwrite-partition.* is a write option"):
        ls.read(spark, "db.p", warehouse=wh, options={"overwrite-partition": "dt=a"})
    with pytest.raises(Exception, match="InvalidOptionError.*scan.mode"):  # a streaming option on a batch read
        spark.read.format("laketide").option("warehouse", wh).option("scan.mode", "latest").load("db.p").count()
    with pytest.raises(InvalidOptionError, match="tag"):  # streams do not take it
        ls.read_stream(spark, "db.p", warehouse=wh, options={"scan.tag-name": "t1"})
    with pytest.raises(InvalidOptionError, match="where"):
        ls.compact(spark, "db.p", warehouse=wh, options={"where": "dt = 'a'"})
    with pytest.raises(InvalidOptionError, match="__laketide_bucket"):  # laketide's routing columns are its own
        ls.write(df.withColumnRenamed("v", "__laketide_bucket"), "db.p", warehouse=wh)
    with pytest.raises(Exception, match="SchemaError.*__laketide_bucket"):  # never taken as routing from user rows
        df.withColumnRenamed("v", "__laketide_bucket").write.format("laketide").option("warehouse", wh) \
            .mode("append").save("db.p")
    with pytest.raises(InvalidOptionError, match="system table"):
        ls.read(spark, "db.p$snapshots", warehouse=wh, snapshot_id=1)
    assert state(parted) == before


def test_every_supported_option_is_listed_with_the_test_that_shows_it_works() -> None:
    from laketide.spark.options import SUPPORTED_OPTIONS

    here = Path(__file__).parent
    honoured = {
        "path": "test_batch.py::test_dataframe_writer_and_reader_api",
        "table": "test_write_rules.py::test_table_and_catalog_options",
        "warehouse": "test_batch.py::test_dataframe_writer_and_reader_api",
        "metastore": "test_write_rules.py::test_table_and_catalog_options",
        "columns": "test_batch.py::test_dataframe_writer_and_reader_api",
        "where": "test_batch.py::test_where_option_prunes_groups_and_files",
        "scan.snapshot-id": "test_scans.py::test_a_pinned_read_stays_pinned",
        "scan.timestamp-millis": "test_scans.py::test_a_pinned_read_stays_pinned",
        "scan.tag-name": "test_write_rules.py::test_table_and_catalog_options",
        "scan.mode": "test_streaming.py::test_source_scan_modes_limits_and_available_now",
        "scan.timestamp": "test_metadata_spark.py::test_spark_time_travel_by_version_and_timestamp",
        "scan.version": "test_metadata_spark.py::test_spark_time_travel_by_version_and_timestamp",
        "consumer-id": "test_consumer_stream.py::test_spark_consumer_resumes_with_new_checkpoint",
        "consumer.ignore-progress": "test_consumer_stream.py::test_spark_consumer_resumes_with_new_checkpoint",
        "read.stream.maxfilespertrigger": "test_streaming.py::test_source_scan_modes_limits_and_available_now",
        "maxfilespertrigger": "test_cross_partition_spark.py::test_stream_into_cross_partition_table",
        "read.stream.maxrowspertrigger": "test_streaming.py::test_source_scan_modes_limits_and_available_now",
        "maxrowspertrigger": "test_streaming.py::test_source_scan_modes_limits_and_available_now",
        "partitionoverwritemode": "test_write_rules.py::test_dynamic_partition_overwrite_from_conf_option_and_argument",
        "overwrite-partition": "test_write_rules.py::test_static_partition_overwrite_refuses_rows_of_other_partitions",
        "commit.user": "test_cross_partition_spark.py::test_stream_replay_after_crash_commits_once",
        "commit.identifier": "test_cross_partition_spark.py::test_stream_replay_after_crash_commits_once",
        "checkpointlocation": "test_streaming.py::test_sink_crash_between_laketide_commit_and_spark_commit_log",
        "queryname": "test_demo_pipeline.py::test_streaming_chain_equals_batch_computation",
        "laketide.routed": "test_dynamic_bucket_spark.py::test_spark_dynamic_bucket_upserts",
        "laketide.key-index-base": "test_cross_partition_spark.py::test_another_job_writing_meanwhile_fails_the_commit",
        "laketide.assign": "test_cross_partition_spark.py::test_random_upserts_moves_and_deletes_match_oracle",
        "laketide.read.groups": "test_native_read.py::test_partially_compacted_pk_table_unions_both_readers",
        "laketide.read-base-snapshot":
            "test_sql_spark_eval.py::test_pk_change_conflicts_with_a_write_after_its_snapshot",
        "laketide.test.fail-after-commit-batch":
            "test_streaming.py::test_sink_crash_between_laketide_commit_and_spark_commit_log",
    }
    listed = {k for keys in SUPPORTED_OPTIONS.values() for k in keys}
    assert listed == set(honoured), "every option the source takes needs a test that shows it works"
    for where in set(honoured.values()):
        module, name = where.split("::")
        assert f"def {name}(" in (here / module).read_text(), where


def test_table_and_catalog_options(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.o", SCHEMA)
    first = t.write(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "v": ["b"], "dt": ["x"]}, schema=SCHEMA))
    df = spark.read.format("laketide").options(warehouse=wh, metastore="filesystem", table="db.o").load()
    assert df.count() == 2
    tag_dir = Path(t.path) / "tag"
    tag_dir.mkdir()
    (tag_dir / "tag-v1").write_bytes((Path(t.path) / "snapshot" / f"snapshot-{first}").read_bytes())
    tagged = spark.read.format("laketide").options(warehouse=wh, table="db.o").option("scan.tag-name", "v1").load()
    assert tagged.count() == 1
    with pytest.raises(Exception, match="metastore"):
        spark.read.format("laketide").options(warehouse=wh, metastore="hive").load("db.o").count()


# -- sessions --------------------------------------------------------------------------------------------------------
def test_writes_from_another_thread_and_another_session(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.s", SCHEMA)
    errors: list[BaseException] = []

    def write_in_thread() -> None:
        try:
            ls.write(frame(spark, [(1, "thread", "x")]), "db.s", warehouse=wh)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    th = threading.Thread(target=write_in_thread)
    th.start()
    th.join()
    assert errors == []
    # a session laketide never saw finds the source (the pyspark_laketide package), with an explicit warehouse
    untouched = spark.newSession()
    assert untouched.read.format("laketide").option("warehouse", wh).load("db.s").count() == 1
    with pytest.raises(Exception, match="InvalidOptionError.*warehouse"):
        untouched.read.format("laketide").load("db.s")
    other = spark.newSession()  # another SparkSession: the source was never registered there
    ls.write(other.createDataFrame([(2, "session", "x")], DDL), "db.s", warehouse=wh)
    other.createDataFrame([(3, "raw", "x")], DDL).write.format("laketide").option("warehouse", wh) \
        .mode("append").save("db.s")
    assert other.read.format("laketide").option("warehouse", wh).load("db.s").count() == 3
    # the first session still writes after the other one became active
    frame(spark, [(4, "first", "x")]).write.format("laketide").option("warehouse", wh).mode("append").save("db.s")
    assert ls.read(spark, "db.s", warehouse=wh).count() == 4
    assert sorted(r["v"] for r in t.read().to_pylist()) == ["first", "raw", "session", "thread"]
    spark.sql("SELECT 1").collect()  # leave the fixture's session active for the next tests
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def test_relative_and_misspelled_warehouses(spark, cat, wh: str, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    cat.create_table("db.r", SCHEMA)
    monkeypatch.chdir(Path(wh).parent)
    relative = Path(wh).name
    ls.write(frame(spark, [(1, "rel", "x")]), "db.r", warehouse=relative)
    df = ls.read(spark, "db.r", warehouse=relative)
    monkeypatch.chdir(tmp_path.parent)  # the driver moves on; the DataFrame keeps the absolute warehouse
    assert df.count() == 1
    typo = str(Path(wh).parent / "warehuose")
    with pytest.raises(NoSuchTableError, match="warehuose"):
        ls.read(spark, "db.r", warehouse=typo)
    with pytest.raises(NoSuchTableError, match="warehuose"):
        ls.write(frame(spark, [(1, "x", "x")]), "db.r", warehouse=typo)
    with pytest.raises(Exception, match="NoSuchTableError: Table db.r does not exist: warehouse .*warehuose"):
        spark.read.format("laketide").option("warehouse", typo).load("db.r")
    assert not Path(typo).exists()  # not created as an empty directory
    with pytest.raises(NoSuchTableError, match=f"db.rr does not exist in {wh}"):
        ls.read(spark, "db.rr", warehouse=wh)


# -- errors ----------------------------------------------------------------------------------------------------------
def test_errors_carry_the_laketide_message_first(spark, cat, wh: str) -> None:  # noqa: ANN001
    from pyspark.errors import AnalysisException

    cat.create_table("db.e", SCHEMA, partition_keys=["dt"])
    with pytest.raises(AnalysisException) as raw:
        spark.read.format("laketide").option("warehouse", wh).load("db.nope")
    first = str(raw.value).splitlines()[0]
    assert "laketide.exceptions.NoSuchTableError: Table db.nope does not exist" in first, first
    with pytest.raises(AnalysisException) as raw_write:
        frame(spark, [(1, "x", "a")]).write.format("laketide").option("warehouse", wh).option("nope", "1") \
            .mode("append").save("db.e")
    assert "laketide.exceptions.InvalidOptionError: laketide: write of table db.e" in \
        str(raw_write.value).splitlines()[0]
    # the helpers raise the laketide error itself, Spark's exception as its cause
    with pytest.raises(NoSuchTableError) as typed:
        ls.write(frame(spark, [(1, "x", "a")]), "db.nope", warehouse=wh)
    assert "db.nope" in str(typed.value)
    with pytest.raises(SchemaError, match="other partitions") as from_task:  # raised in an executor task
        ls.write(frame(spark, [(1, "x", "b")]), "db.e", warehouse=wh, mode="overwrite", partition={"dt": "a"})
    assert from_task.value.__cause__ is not None
    with pytest.raises(InvalidOptionError, match="bogus"):
        ls.read(spark, "db.e", warehouse=wh, options={"bogus": "1"})


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "-1"}, {"bucket": "2", "rowkind.field": "op"}])
def test_spark_writes_carry_no_routing_columns_into_data_files(spark, cat, wh: str, options: dict) -> None:  # noqa: ANN001
    """laketide's routing columns (bucket, row kind, assigner) stay between Spark stages: the data files hold the
    table's columns and Paimon's key-value fields only, whichever way the rows came."""
    import pyarrow.parquet as pq

    schema = SCHEMA.append(pa.field("op", pa.string())) if "rowkind.field" in options else SCHEMA
    t = cat.create_table("db.h", schema, primary_key=["id"], options=options)
    cols = "id long, v string, dt string" + (", op string" if "rowkind.field" in options else "")
    extra = ("+I",) if "rowkind.field" in options else ()
    df = spark.createDataFrame([(i, f"v{i}", "x", *extra) for i in range(30)], cols)
    ls.write(df, "db.h", warehouse=wh)
    # A dynamic-bucket table takes format("laketide") writes from one task (several would each assign buckets).
    direct = df.coalesce(1) if options["bucket"] == "-1" else df
    direct.write.format("laketide").option("warehouse", wh).mode("append").save("db.h")
    allowed = {"_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", *schema.names}
    files = [p for p in Path(t.path).rglob("data-*.parquet")]
    assert files
    for f in files:
        assert set(pq.read_schema(f).names) == allowed, f
    assert t.read().num_rows == 30
