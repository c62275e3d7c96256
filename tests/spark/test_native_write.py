"""The Spark-native write path (Spark's Parquet writer encodes, laketide describes and commits) against the Python
writer on the same rows: same table content (laketide and pypaimon), same file layout, names and metadata."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide.spark as ls
from laketide.exceptions import LaketideError, UnsupportedFeatureError
from laketide.format.footer_stats import footer_column_stats

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("f32", pa.float32()),
    ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("ts", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
    pa.field("dt", pa.string(), nullable=False),
])
DATA_FILE = re.compile(r"data-[0-9a-f-]{36}-\d+\.parquet")

# (primary key, partition keys, options) of the table kinds the native path writes.
KINDS = {
    "pk-partitioned": (["id", "dt"], ["dt"], {"bucket": "3"}),
    "pk-unpartitioned": (["id"], None, {"bucket": "2"}),
    "append-fixed-bucket": (None, ["dt"], {"bucket": "2", "bucket-key": "id"}),
    "append-unaware": (None, ["dt"], {}),
}


def rows(n: int, *, offset: int = 0, tag: str = "a") -> pa.Table:
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
        "s": [f"{tag}{i}-{'x' * (i % 40)}" if i % 6 else None for i in ids],
        "bin": [bytes([i % 256, 7]) for i in ids],
        "d": [dt.date(2026, 1, 1) + dt.timedelta(days=i % 50) for i in ids],
        "ts": [base + dt.timedelta(seconds=i) for i in ids],
        "ltz": [dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=i) for i in ids],
        "dt": [f"p{i % 3}" for i in ids],
    }, schema=SCHEMA)


def frame(spark, t: pa.Table, partitions: int = 1):  # noqa: ANN001, ANN201
    """``t`` as a DataFrame of the table's Spark types (zone-less timestamps as TIMESTAMP_NTZ)."""
    from laketide.spark.types import spark_schema

    return spark.createDataFrame(t, schema=spark_schema(SCHEMA)).repartition(partitions)


def by_id(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["id"], r["dt"]))


def files_of(table) -> dict[tuple[bytes, int], list]:  # noqa: ANN001
    out: dict[tuple[bytes, int], list] = {}
    for split in table.scan().plan():
        out.setdefault((split.partition, split.bucket), []).extend(split.files)
    return out


def meta_view(f) -> dict:  # noqa: ANN001
    """What must equal between the native and the Python writer's metadata of the same rows."""
    return {"rows": f.row_count, "min_key": f.min_key, "max_key": f.max_key, "key_stats": f.key_stats,
            "value_stats": f.value_stats, "value_stats_cols": f.value_stats_cols, "level": f.level,
            "schema_id": f.schema_id, "deletes": f.delete_row_count, "source": f.file_source,
            "seq": (f.min_sequence_number, f.max_sequence_number)}


def physical(path: str) -> list[tuple]:
    schema = pq.ParquetFile(path.replace("file://", "", 1)).schema
    return [(c.path, c.physical_type, str(c.logical_type), c.max_definition_level) for c in schema] + [
        (f.name, (f.metadata or {}).get(b"PARQUET:field_id")) for f in schema.to_arrow_schema()]


def create(cat, name: str, kind: str):  # noqa: ANN001, ANN201
    pk, parts, options = KINDS[kind]
    return cat.create_table(name, SCHEMA, primary_key=pk, partition_keys=parts, options=options)


@pytest.mark.parametrize("kind", list(KINDS))
def test_native_files_equal_python_files(spark, cat, wh: str, kind: str, pypaimon) -> None:  # noqa: ANN001
    native, python = create(cat, "db.native", kind), create(cat, "db.python", kind)
    # Unaware-bucket tables get a file per writing task and partition, from either writer: one task here.
    df = frame(spark, rows(240), 1 if kind == "append-unaware" else 3)
    ls.write(df, "db.native", warehouse=wh, native=True)
    ls.write(df, "db.python", warehouse=wh, native=False)

    assert native.latest_snapshot().id == 1
    assert by_id(native.read()) == by_id(python.read()) == by_id(rows(240))
    theirs = pypaimon.read(wh, "db.native")
    assert by_id(theirs.cast(SCHEMA)) == by_id(rows(240))

    mine, ref = files_of(native), files_of(python)
    assert set(mine) == set(ref)  # same (partition, bucket)s
    for key, files in mine.items():
        assert len(files) == 1 and len(ref[key]) == 1
        assert meta_view(files[0]) == meta_view(ref[key][0])
        assert DATA_FILE.fullmatch(files[0].file_name)
    paths = [p for s in native.scan().plan() for p in s.file_paths()]
    ref_paths = [p for s in python.scan().plan() for p in s.file_paths()]
    # Paimon's layout: <table>/dt=p0/bucket-N/data-...parquet, the same directories as the Python writer's.
    assert sorted(os.path.relpath(os.path.dirname(p), native.path) for p in paths) == sorted(
        os.path.relpath(os.path.dirname(p), python.path) for p in ref_paths)
    # Same Parquet columns: names, physical and logical types, required-ness, Paimon's field ids.
    assert physical(paths[0]) == physical(ref_paths[0])
    assert not [n for n in os.listdir(native.path.replace("file://", "", 1)) if n.startswith("_spark-staging")]


def test_native_upsert_keeps_the_latest_row(spark, cat, wh: str, pypaimon) -> None:  # noqa: ANN001
    table = create(cat, "db.t", "pk-partitioned")
    ls.write(frame(spark, rows(200)), "db.t", warehouse=wh, native=True)
    second = rows(100, offset=150, tag="b")
    # Each key twice in one DataFrame, same rows: one row per key in the level-0 file.
    ls.write(frame(spark, pa.concat_tables([second, second]), 2), "db.t", warehouse=wh,
             native=True)
    expected = {(r["id"], r["dt"]): r for r in rows(200).to_pylist()}
    expected.update({(r["id"], r["dt"]): r for r in second.to_pylist()})
    want = sorted(expected.values(), key=lambda r: (r["id"], r["dt"]))
    assert by_id(table.read()) == want
    assert by_id(pypaimon.read(wh, "db.t").cast(SCHEMA)) == want
    files = [f for fs in files_of(table).values() for f in fs]
    assert sum(f.row_count for f in files) == 200 + 100  # deduplicated within the write
    first = {f.file_name for s in table.scan(snapshot_id=1).plan() for f in s.files}
    first_max = max(f.max_sequence_number for f in files if f.file_name in first)
    later = [f for f in files if f.file_name not in first]
    assert later and all(f.min_sequence_number > first_max for f in later)  # above every restored number


def test_native_duplicate_keys_across_tasks_last_wins(spark, cat, wh: str, pypaimon) -> None:  # noqa: ANN001
    """One write holding keys several times with different values, spread over four input tasks: the row that
    comes last in the DataFrame's order wins, one row per key in the files; the same DataFrame written again
    gives the same content in a new snapshot."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("part", pa.int64())])
    table = cat.create_table("db.t", schema, primary_key=["id"], options={"bucket": "2"})
    # Task j holds positions 60j .. 60j + 59, i.e. keys 20j .. 20j + 59 with version j.
    df = spark.range(0, 240, 1, 4).selectExpr("20 * (id div 60) + id % 60 AS id",
                                              "concat('v', CAST(id div 60 AS STRING)) AS v", "id div 60 AS part")
    assert df.rdd.getNumPartitions() == 4
    ls.write(df, "db.t", warehouse=wh, native=True)
    ls.write(df, "db.t", warehouse=wh, native=True)
    want = [{"id": k, "v": f"v{min(k // 20, 3)}", "part": min(k // 20, 3)} for k in range(120)]
    assert table.latest_snapshot().id == 2
    assert sorted(table.read().to_pylist(), key=lambda r: r["id"]) == want
    assert sorted(pypaimon.read(wh, "db.t").to_pylist(), key=lambda r: r["id"]) == want
    files = [f for fs in files_of(table).values() for f in fs]
    assert sum(f.row_count for f in files) == 240  # keys 0 .. 119 once per write
    for f in files:  # ascending, gap-free sequence numbers per file: one per row
        assert f.max_sequence_number - f.min_sequence_number + 1 == f.row_count


def test_retried_commit_is_not_duplicated(spark, cat, wh: str) -> None:  # noqa: ANN001
    table = create(cat, "db.t", "append-unaware")
    df = frame(spark, rows(60))
    opts = {"commit.user": "job-1", "commit.identifier": "7"}
    ls.write(df, "db.t", warehouse=wh, options=opts, native=True)
    ls.write(df, "db.t", warehouse=wh, options=opts, native=True)  # the retry of a job that already landed
    assert table.latest_snapshot().id == 1
    assert table.read().num_rows == 60
    assert table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True).count == 0  # the retry's files went


def test_empty_dataframe_writes_nothing(spark, cat, wh: str) -> None:  # noqa: ANN001
    table = create(cat, "db.t", "pk-partitioned")
    ls.write(frame(spark, rows(0)), "db.t", warehouse=wh, native=True)
    assert table.latest_snapshot() is None
    assert sorted(os.listdir(table.path.replace("file://", "", 1))) == ["schema"]


def test_failed_job_leaves_no_snapshot_and_no_files(spark, cat, wh: str) -> None:  # noqa: ANN001
    table = create(cat, "db.t", "pk-unpartitioned")
    ls.write(frame(spark, rows(30)), "db.t", warehouse=wh, native=True)
    bad = frame(spark, rows(30, offset=100)).selectExpr(
        "CASE WHEN id = 120 THEN NULL ELSE id END AS id", *[c for c in SCHEMA.names if c != "id"])
    with pytest.raises(Exception, match="NOT NULL"):  # a null key fails Spark's job
        ls.write(bad, "db.t", warehouse=wh, native=True)
    assert table.latest_snapshot().id == 1
    assert table.read().num_rows == 30
    root = Path(table.path.replace("file://", "", 1))
    assert not [p for p in root.iterdir() if p.name.startswith("_spark-staging")]
    assert table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True).count == 0


def test_tables_the_native_path_cannot_write_exactly(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.pu", SCHEMA, primary_key=["id", "dt"], options={"bucket": "2",
                                                                           "merge-engine": "partial-update"})
    df = frame(spark, rows(20))
    with pytest.raises(UnsupportedFeatureError, match="merge-engine partial-update"):
        ls.write(df, "db.pu", warehouse=wh, native=True)
    assert t.latest_snapshot() is None
    ls.write(df, "db.pu", warehouse=wh)  # the default takes the Python writer
    assert t.read().num_rows == 20
    create(cat, "db.cast", "append-unaware")
    narrower = df.selectExpr("CAST(id AS INT) AS id", *[c for c in SCHEMA.names if c != "id"])
    with pytest.raises(LaketideError, match="column id is int"):
        ls.write(narrower, "db.cast", warehouse=wh, native=True)


def tricky_rows(n: int) -> pa.Table:
    """Rows whose stats are easy to get wrong from a footer: NaN and -0.0, strings longer than 16 characters and
    than the footer's 4096-byte statistics limit, unicode near the top code point, empty strings and binaries,
    0xFF bytes, an all-null column."""
    t = rows(n)
    ids = t.column("id").to_pylist()
    long = "\U0010ffff" * 1100  # 4400 UTF-8 bytes: parquet-mr leaves such row groups without min / max
    s = [None if i % 5 == 0 else "" if i % 5 == 1 else long if i == 7 else f"é{'ü' * (i % 30)}{i}" for i in ids]
    f32 = [math.nan if i % 11 == 0 else -0.0 if i % 11 == 1 else i / 4 for i in ids]
    f64 = [None if i % 3 == 0 else -0.0 if i % 3 == 1 else -i / 3 for i in ids]
    binary = [b"" if i % 4 == 0 else b"\xff" * (17 + i % 3) if i % 4 == 1 else bytes([i % 256]) for i in ids]
    return (t.set_column(t.schema.get_field_index("s"), SCHEMA.field("s"), pa.array(s, pa.string()))
             .set_column(t.schema.get_field_index("f32"), SCHEMA.field("f32"), pa.array(f32, pa.float32()))
             .set_column(t.schema.get_field_index("f64"), SCHEMA.field("f64"), pa.array(f64, pa.float64()))
             .set_column(t.schema.get_field_index("bin"), SCHEMA.field("bin"), pa.array(binary, pa.binary()))
             .set_column(t.schema.get_field_index("i16"), SCHEMA.field("i16"), pa.nulls(n, pa.int16())))


STATS_MODES = {
    "default": {},
    "none": {"metadata.stats-mode": "none"},
    "counts": {"metadata.stats-mode": "counts", "fields.s.stats-mode": "truncate(3)"},
    "full": {"metadata.stats-mode": "full", "fields.bin.stats-mode": "truncate(1)", "fields.id.stats-mode": "none"},
    "truncate(2)": {"metadata.stats-mode": "truncate(2)", "fields.ts.stats-mode": "counts"},
}


@pytest.mark.parametrize("modes", list(STATS_MODES))
@pytest.mark.parametrize("kind", ["pk-partitioned", "append-unaware"])
def test_footer_metadata_equals_the_read_back_metadata(spark, cat, wh: str, kind: str, modes: str,
                                                       pypaimon) -> None:  # noqa: ANN001
    """The native path's files described from their footers (several row groups each, and a session that asks
    parquet-mr to truncate statistics) carry the metadata of reading them back and of the Python writer."""
    check_footer_metadata(spark, cat, wh, kind, modes, pypaimon)


@pytest.mark.parametrize("kind", ["pk-partitioned", "append-unaware"])
def test_footer_metadata_described_by_spark_tasks(spark, cat, wh: str, kind: str, pypaimon,
                                                  monkeypatch) -> None:  # noqa: ANN001
    """The cluster path: Python tasks next to the files describe them (local mode describes in the driver)."""
    import laketide.spark.native_write as nw

    monkeypatch.setattr(nw, "_describe_in_driver", lambda spark: False)
    check_footer_metadata(spark, cat, wh, kind, "full", pypaimon)


def check_footer_metadata(spark, cat, wh: str, kind: str, modes: str, pypaimon) -> None:  # noqa: ANN001
    pk, parts, options = KINDS[kind]
    options = {**options, **STATS_MODES[modes]}
    native = cat.create_table("db.native", SCHEMA, primary_key=pk, partition_keys=parts, options=options)
    python = cat.create_table("db.python", SCHEMA, primary_key=pk, partition_keys=parts, options=options)
    data = tricky_rows(900)
    df = frame(spark, data, 1 if kind == "append-unaware" else 2)
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - the session's Parquet writer settings
    saved = {k: hadoop.get(k) for k in ("parquet.block.size", "parquet.statistics.truncate.length")}
    hadoop.set("parquet.block.size", "4096")  # row groups of ~100 rows: the footer holds several per column
    hadoop.set("parquet.statistics.truncate.length", "8")
    try:
        ls.write(df, "db.native", warehouse=wh, native=True)
    finally:
        for k, v in saved.items():
            if v is None:
                hadoop.unset(k)
            else:
                hadoop.set(k, v)
    ls.write(df, "db.python", warehouse=wh, native=False)

    mine, ref = files_of(native), files_of(python)
    assert set(mine) == set(ref)
    groups = unbounded = 0
    for key, files in mine.items():
        assert len(files) == 1 and len(ref[key]) == 1
        committed = files[0]
        assert meta_view(committed) == meta_view(ref[key][0])
        path = next(p for s in native.scan().plan() for p in s.file_paths() if p.endswith(committed.file_name))
        local = path.replace("file://", "", 1)
        parquet = pq.ParquetFile(local)
        groups = max(groups, parquet.metadata.num_row_groups)
        unbounded += not footer_column_stats(parquet.metadata, parquet.schema_arrow, ["s"])["s"].bounded
        read_back = native.store.describe_written_file(local)
        footer = native.store.describe_written_file_from_footer(local)
        if pk:
            assert meta_view(footer.meta) == meta_view(read_back.meta) == meta_view(committed)
        else:  # append files get their sequence numbers at adoption
            def unnumbered(m) -> dict:  # noqa: ANN001
                return {**meta_view(m), "seq": None}

            assert unnumbered(footer.meta) == unnumbered(read_back.meta) == unnumbered(committed)
        assert footer.partition_values == read_back.partition_values
    assert groups > 1
    assert unbounded == 1  # the file with the 4400-byte string: its row group has no min / max of s
    assert nan_safe(by_id(native.read())) == nan_safe(by_id(python.read())) == nan_safe(by_id(data))
    assert nan_safe(by_id(pypaimon.read(wh, "db.native").cast(SCHEMA))) == nan_safe(by_id(data))


def nan_safe(table_rows: list[dict]) -> list[dict]:
    """Rows comparable with ``==`` (NaN is not equal to itself)."""
    return [{k: "NaN" if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()} for r in table_rows]


def test_footer_metadata_of_millisecond_timestamps(spark, cat, wh: str) -> None:  # noqa: ANN001
    """Tables whose timestamps are all TIMESTAMP_LTZ(3): Spark writes them as TIMESTAMP_MILLIS, and the footer's
    bounds are millisecond values. A TIMESTAMP(3) without time zone is refused (Spark writes TIMESTAMP_NTZ in
    microseconds; Paimon stores millis)."""
    schema = pa.schema([("k", pa.timestamp("ms", tz="UTC")), ("v", pa.timestamp("ms", tz="UTC")),
                        pa.field("n", pa.int32(), nullable=False)])
    base = dt.datetime(2026, 3, 4, 5, 6, 7, 891000)
    data = pa.table({"k": [(base + dt.timedelta(milliseconds=7 * i)).replace(tzinfo=dt.timezone.utc)
                           for i in range(300)],
                     "v": [None if i % 4 else (base + dt.timedelta(days=i)).replace(tzinfo=dt.timezone.utc)
                           for i in range(300)],
                     "n": list(range(300))}, schema=schema)
    tables = {n: cat.create_table(f"db.{n}", schema, primary_key=["n"], options={"bucket": "2"})
              for n in ("native", "python")}
    from laketide.spark.types import spark_schema

    df = spark.createDataFrame(data, schema=spark_schema(schema)).repartition(2)
    ls.write(df, "db.native", warehouse=wh, native=True)
    ls.write(df, "db.python", warehouse=wh, native=False)
    mine, ref = files_of(tables["native"]), files_of(tables["python"])
    assert set(mine) == set(ref) and len(mine) == 2
    for key, files in mine.items():
        assert meta_view(files[0]) == meta_view(ref[key][0])
        path = next(p for s in tables["native"].scan().plan() for p in s.file_paths()
                    if p.endswith(files[0].file_name)).replace("file://", "", 1)
        for name in ("k", "v"):  # TIMESTAMP_LTZ(3) as Spark's TIMESTAMP_MILLIS
            assert pq.ParquetFile(path).schema_arrow.field(name).type == pa.timestamp("ms", tz="UTC")
        assert meta_view(tables["native"].store.describe_written_file_from_footer(path).meta) == meta_view(files[0])
    assert tables["native"].read().sort_by("n").equals(tables["python"].read().sort_by("n"))

    ntz_schema = pa.schema([("k", pa.timestamp("ms")), pa.field("n", pa.int32(), nullable=False)])
    ntz_table = cat.create_table("db.ntz", ntz_schema, primary_key=["n"], options={"bucket": "2"})
    ntz = pa.table({"k": [base], "n": [1]}, schema=ntz_schema)
    with pytest.raises(UnsupportedFeatureError, match="column k is TIMESTAMP.3. without time zone"):
        ls.write(spark.createDataFrame(ntz, schema=spark_schema(ntz_schema)), "db.ntz", warehouse=wh, native=True)
    assert ntz_table.read().num_rows == 0  # nothing written
