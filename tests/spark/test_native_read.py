"""``laketide.spark.read(native=True)``: Spark's Parquet reader for splits that need no merge, the laketide source
pinned to the same snapshot for the rest; always the rows the Python path returns."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import laketide
import laketide.spark as ls
from laketide.exceptions import InvalidOptionError
from laketide.spark.options import GROUPS_OPTION
from laketide.types import BigIntType

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), pa.field("dt", pa.string(), nullable=False),
    ("ts", pa.timestamp("ms")), ("ts_us", pa.timestamp("us")), ("ltz", pa.timestamp("us", tz="UTC")),
    ("d", pa.decimal128(12, 3)), ("day", pa.date32()), ("b", pa.binary()), ("f", pa.float64()),
])


def _rows(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    base = dt.datetime(2026, 1, 1, 12, 30)
    return pa.table({
        "id": ids, "v": [None if i % 11 == 0 else f"{tag}{i}" for i in ids], "dt": [f"d{i % 3}" for i in ids],
        "ts": [base + dt.timedelta(seconds=i, milliseconds=7) for i in ids],
        "ts_us": [base + dt.timedelta(microseconds=i * 13) for i in ids],
        "ltz": [dt.datetime(2026, 3, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i) for i in ids],
        "d": [decimal.Decimal(i) / 1000 for i in ids], "day": [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in ids],
        "b": [bytes([i % 256, 1]) for i in ids], "f": [i / 3 for i in ids],
    }, schema=SCHEMA)


def _sources(df) -> tuple[bool, bool]:  # noqa: ANN001
    """(Spark's parquet scan, the laketide Python source) in the DataFrame's plan."""
    plan = df._jdf.queryExecution().analyzed().toString()
    return "parquet" in plan.lower(), "laketide" in plan.lower()


def _collect(df) -> list[tuple]:  # noqa: ANN001
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _same_as_python(spark, name: str, **kw) -> object:  # noqa: ANN001, ANN003
    native = ls.read(spark, name, native=True, **kw)
    python = ls.read(spark, name, **kw)
    assert [(f.name, f.dataType) for f in native.schema] == [(f.name, f.dataType) for f in python.schema]
    assert _collect(native) == _collect(python)
    return native


def test_compacted_pk_table_is_read_by_spark_alone(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.pk", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "write-only": "true"})
    t.write(_rows(0, 120, "a"))
    t.write(_rows(60, 200, "b"))  # overlapping upserts: two sorted runs per bucket
    assert _sources(ls.read(spark, "db.pk", warehouse=wh, native=True)) == (False, True)  # needs a merge everywhere
    t.compact(full=True)

    native = _same_as_python(spark, "db.pk", warehouse=wh)
    assert _sources(native) == (True, False)
    assert native.columns == SCHEMA.names  # _KEY_*, _SEQUENCE_NUMBER, _VALUE_KIND stay out
    want = t.read()
    assert {r["id"]: (r["v"], r["ts"], r["d"]) for r in native.collect()} == dict(
        zip(want["id"].to_pylist(), zip(want["v"].to_pylist(), want["ts"].to_pylist(), want["d"].to_pylist())))
    assert native.count() == 200
    # projection and a filter on a non-key column
    _same_as_python(spark, "db.pk", warehouse=wh, columns=["v", "id", "f"], where="f > 30")


def test_partially_compacted_pk_table_unions_both_readers(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "4", "write-only": "true"})
    t.write(_rows(0, 200, "a"))
    t.compact(full=True)
    t.write(_rows(0, 3, "late"))  # level-0 files in the buckets of ids 0..2 only
    splits = t.scan().plan()
    assert {s.raw_convertible for s in splits} == {True, False}

    native = _same_as_python(spark, "db.pk", warehouse=wh)
    assert _sources(native) == (True, True)
    got = {r["id"]: r["v"] for r in native.collect()}
    assert len(got) == 200 and got[1] == "late1" and got[199] == "a199"
    # The Python part reads only the groups that need a merge: no row is read twice.
    assert native.count() == 200


def test_native_read_is_pinned_to_the_planned_snapshot(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.ap", SCHEMA, options={"bucket": "-1"})
    t.write(_rows(0, 50, "a"))
    native = ls.read(spark, "db.ap", warehouse=wh, native=True)
    default = ls.read(spark, "db.ap", warehouse=wh)
    t.write(_rows(50, 80, "b"))
    assert native.count() == 50  # a fixed file list: the snapshot planned when it was made
    assert default.count() == 80  # the default reader re-plans at every action
    old = ls.read(spark, "db.ap", warehouse=wh, native=True, snapshot_id=1)
    assert _sources(old) == (True, False) and old.count() == 50


def test_renamed_added_and_readded_columns_map_by_field_id(spark, cat, wh: str) -> None:  # noqa: ANN001
    e = cat.create_table("db.e", pa.schema([("id", pa.int32()), ("v", pa.string()), ("x", pa.string())]),
                         partition_keys=[])
    e.write(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"], "x": ["x1", "x2"]}))
    e.alter(laketide.RenameColumn(old_name="v", new_name="w"))
    e.alter(laketide.DropColumn(name="x"))
    e.alter(laketide.AddColumn(name="x", type=BigIntType()))  # a new field id: the old files' "x" is not it
    e.write(pa.table({"id": pa.array([3], pa.int32()), "w": ["c"], "x": [7]}))

    native = _same_as_python(spark, "db.e", warehouse=wh)
    assert _sources(native) == (True, False)
    assert _collect(native) == [(1, "a", None), (2, "b", None), (3, "c", 7)]

    e.alter(laketide.UpdateColumnType(name="id", new_type=BigIntType()))  # old files need laketide's cast
    e.write(pa.table({"id": [4], "w": ["d"], "x": [8]}))
    native = _same_as_python(spark, "db.e", warehouse=wh)
    assert native.count() == 4


def test_an_added_column_never_reads_a_file_column_of_the_same_placeholder_name(spark, cat, wh: str) -> None:  # noqa: ANN001
    # An added column is read under a name the older files do not hold (Spark's reader gives nulls for it); the
    # old files here hold a dropped column spelled like that name in another case, and a renamed column whose old
    # and new names hold a dot and a backtick.
    e = cat.create_table("db.ph", pa.schema([("id", pa.int32()), ("a.b`c", pa.string()),
                                             ("__LT_ADDED_2", pa.string())]))
    e.write(pa.table({"id": pa.array([1, 2], pa.int32()), "a.b`c": ["a", "b"], "__LT_ADDED_2": ["old1", "old2"]}))
    e.alter(laketide.RenameColumn(old_name="a.b`c", new_name="x.y`z"))
    e.alter(laketide.DropColumn(name="__LT_ADDED_2"))
    e.alter(laketide.AddColumn(name="n", type=BigIntType()))  # output position 2
    e.write(pa.table({"id": pa.array([3], pa.int32()), "x.y`z": ["c"], "n": [7]}))

    native = _same_as_python(spark, "db.ph", warehouse=wh)
    assert _sources(native) == (True, False)
    assert native.columns == ["id", "x.y`z", "n"]
    assert _collect(native) == [(1, "a", None), (2, "b", None), (3, "c", 7)]
    assert _collect(native.where("n IS NULL").select("`x.y``z`")) == [("a",), ("b",)]


def test_changed_type_sends_those_files_to_laketide(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.ty", pa.schema([("id", pa.int32()), ("v", pa.string())]), options={"bucket": "2",
                                                                                                "bucket-key": "v"})
    t.write(pa.table({"id": pa.array(range(20), pa.int32()), "v": [f"k{i}" for i in range(20)]}))
    t.alter(laketide.UpdateColumnType(name="id", new_type=BigIntType()))
    native = _same_as_python(spark, "db.ty", warehouse=wh)
    assert _sources(native) == (False, True)  # every bucket holds an int file: all through laketide's cast


def test_partition_filter_prunes_the_planned_files(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.p", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    t.write(_rows(0, 90, "a"))
    t.write(_rows(90, 150, "b"))
    native = _same_as_python(spark, "db.p", warehouse=wh, where="dt = 'd1' AND id >= 30")
    files = native.inputFiles()
    assert files and all("/dt=d1/" in f for f in files)  # d0 and d2 were never listed
    assert native.count() == len([i for i in range(30, 150) if i % 3 == 1])
    # A filter laketide's syntax does not read: Spark alone filters, nothing is pruned, the rows are the same.
    spark_only = _same_as_python(spark, "db.p", warehouse=wh, where="length(v) > 3")
    assert _sources(spark_only) == (True, False)


# The second: value columns named like the row tags the deletion vectors are applied with (case-insensitively).
@pytest.mark.parametrize("extra", [[], ["__LT_FILE", "__lt_row"]])
def test_deletion_vectors_are_applied_on_the_row_index(spark, cat, wh: str, extra: list[str]) -> None:  # noqa: ANN001
    s = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), *[(c, pa.int64()) for c in extra]])

    def rows(ids: list[int], v: str) -> pa.Table:
        return pa.table({"id": ids, "v": [v] * len(ids), **{c: [i * 3 for i in ids] for c in extra}}, schema=s)

    p = cat.create_table("db.dv", s, primary_key=["id"], options={"deletion-vectors.enabled": "true", "bucket": "2"})
    p.write(rows(list(range(100)), "a"))
    p.compact(full=True)
    p.write(rows(list(range(0, 100, 7)), "b"))
    p.compact()  # the new rows land above level 0 and mark the older copies deleted
    assert any(d is not None for sp in p.scan().plan() for d in (sp.deletion_files or ()))

    native = _same_as_python(spark, "db.dv", warehouse=wh)
    assert _sources(native) == (True, False)
    assert native.columns == ["id", "v", *extra]
    got = {r["id"]: r["v"] for r in native.collect()}
    assert len(got) == 100 and native.count() == 100
    assert all(r[c] == r["id"] * 3 for r in native.collect() for c in extra)
    assert {i for i, v in got.items() if v == "b"} == set(range(0, 100, 7))

    p.delete("id < 10")  # retract rows, compacted above level 0: never shown by either reader
    p.compact()
    native = _same_as_python(spark, "db.dv", warehouse=wh)
    assert sorted(r["id"] for r in native.collect()) == list(range(10, 100))


def test_empty_and_unreadable_inputs(spark, cat, wh: str) -> None:  # noqa: ANN001
    cat.create_table("db.none", SCHEMA)
    assert ls.read(spark, "db.none", warehouse=wh, native=True).collect() == []
    t = cat.create_table("db.orc", SCHEMA, options={"file.format": "orc"})
    t.write(_rows(0, 10, "o"))
    orc = _same_as_python(spark, "db.orc", warehouse=wh)
    assert _sources(orc) == (False, True)
    # the internal group option is laketide's own: given by hand it fails clearly and reads nothing
    with pytest.raises(Exception, match=GROUPS_OPTION) as info:
        ls.read(spark, "db.orc", warehouse=wh, options={GROUPS_OPTION: "zz:1"}).collect()
    assert "InvalidOptionError" in str(info.value) or isinstance(info.value, InvalidOptionError)


@pytest.mark.parametrize("name", ["append_09", "pk_09", "pk_with_bitmap_dv"])
def test_java_written_tables(spark, java_table, name: str) -> None:  # noqa: ANN001
    wh = java_table(name)
    table = laketide.load_catalog(warehouse=wh).table(f"{name}.{name}")
    native = _same_as_python(spark, f"{name}.{name}", warehouse=wh)
    want = sorted((tuple(r.values()) for r in table.read().to_pylist()), key=repr)
    assert _collect(native) == want


def test_a_tag_whose_snapshot_expired(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.tg", SCHEMA, primary_key=["id"], options={"bucket": "4", "write-only": "true"})
    t.write(_rows(0, 100, "a"))
    t.compact(full=True)
    t.write(_rows(0, 2, "late"))  # two buckets need a merge, two do not
    t.tags.create("mixed")
    t.write(_rows(100, 120, "c"))
    t.write(_rows(120, 140, "d"))
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_snapshot_id() > t.tag_snapshot("mixed").id  # only the tag keeps it

    native = _same_as_python(spark, "db.tg", warehouse=wh, tag="mixed")
    assert _sources(native) == (True, True)
    got = {r["id"]: r["v"] for r in native.collect()}
    assert len(got) == 100 and got[1] == "late1" and got[98] == "a98"
