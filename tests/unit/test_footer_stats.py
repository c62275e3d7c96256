"""A data file described from its Parquet footer equals the description that reads every column back
(``describe_written_file``): byte for byte in the manifest, over the types, nulls, NaN, strings and stats modes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import FileIOError, SchemaError
from laketide.format.footer_stats import footer_column_stats
from laketide.meta.manifest import DataFileMeta

VALUES = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("ts", pa.timestamp("us")), ("tsm", pa.timestamp("ms")), ("ltz", pa.timestamp("us", tz="UTC")),
])
MODES = ["none", "counts", "full", "truncate(1)", "truncate(3)", "truncate(16)"]
_BASE = dt.datetime(2026, 1, 2, 3, 4, 5, 123456)


def _table(wh: str, *, pk: bool, modes: dict[str, str], key_type: pa.DataType | None = None) -> Any:
    cat = laketide.load_catalog(warehouse=wh)
    cat.create_database("db", exist_ok=True)
    schema = pa.schema([pa.field("id", key_type or pa.int64(), nullable=False), *VALUES,
                        pa.field("p", pa.string(), nullable=False)])
    options = {f"fields.{c}.stats-mode": m for c, m in modes.items() if c != "*"}
    if "*" in modes:
        options["metadata.stats-mode"] = modes["*"]
    return cat.create_table("db.t", schema, primary_key=["id", "p"] if pk else None, partition_keys=["p"],
                            options={"bucket": "1", **options} if pk else options)


def _file_rows(table: Any, values: pa.Table, *, kinds: list[int] | None = None, seq_base: int = 5) -> pa.Table:
    """``values`` (sorted by id) in the table's data-file layout: key-value columns for primary-key tables."""
    writer = table.store.new_write()
    if not table.primary_keys:
        return values.cast(writer.arrow_schema)
    n = values.num_rows
    cols: dict[str, Any] = {"_KEY_id": values.column("id"), "_SEQUENCE_NUMBER": pa.array(range(seq_base, seq_base + n),
                                                                                           pa.int64()),
                            "_VALUE_KIND": pa.array(kinds if kinds is not None else [0] * n, pa.int8())}
    cols.update({c: values.column(c) for c in values.column_names})
    return pa.table(cols).cast(writer.kv_schema)


def _meta(m: DataFileMeta) -> DataFileMeta:
    return dataclasses.replace(m, creation_time_ms=0)


def _assert_same(table: Any, path: str, *, first_seq: int = 0) -> Any:
    full = table.store.describe_written_file(path, first_sequence_number=first_seq)
    footer = table.store.describe_written_file_from_footer(path, first_sequence_number=first_seq)
    assert _meta(footer.meta) == _meta(full.meta)
    assert footer.partition_values == full.partition_values
    # Byte for byte as the manifest stores them.
    for attr in ("min_key", "max_key"):
        assert getattr(footer.meta, attr) == getattr(full.meta, attr)
    for attr in ("value_stats", "key_stats"):
        a, b = getattr(footer.meta, attr), getattr(full.meta, attr)
        assert (a.min_values, a.max_values, a.null_counts) == (b.min_values, b.max_values, b.null_counts)
    return footer


# --- random tables ------------------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=24) | st.sampled_from(
    ["", "a" * 17, "\U0010ffff" * 20, "\ud7ff" * 18, "é" * 16 + "z", "zzzz"])
_floats = st.floats(allow_nan=True, width=32) | st.sampled_from([0.0, -0.0, math.nan])


def _column(draw: Any, name: str, t: pa.DataType, n: int) -> pa.Array:
    all_null = draw(st.booleans()) if draw(st.integers(0, 5)) == 0 else False
    values: list[Any]
    if pa.types.is_boolean(t):
        values = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif pa.types.is_integer(t):
        bits = t.bit_width
        values = draw(st.lists(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1), min_size=n, max_size=n))
    elif pa.types.is_floating(t):
        values = draw(st.lists(_floats, min_size=n, max_size=n))
    elif pa.types.is_string(t):
        values = draw(st.lists(_text, min_size=n, max_size=n))
    elif pa.types.is_binary(t):
        values = draw(st.lists(st.binary(max_size=20) | st.just(b"\xff" * 18), min_size=n, max_size=n))
    elif pa.types.is_date(t):
        values = [dt.date(2026, 1, 1) + dt.timedelta(days=d) for d in draw(st.lists(st.integers(-9000, 9000),
                                                                                 min_size=n, max_size=n))]
    else:
        offsets = draw(st.lists(st.integers(-10**12, 10**12), min_size=n, max_size=n))
        step = dt.timedelta(milliseconds=1) if t.unit == "ms" else dt.timedelta(microseconds=1)
        base = _BASE.replace(microsecond=123000) if t.unit == "ms" else _BASE
        values = [(base + o * step).replace(tzinfo=dt.timezone.utc if t.tz else None) for o in offsets]
    nulls = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return pa.array([None if all_null or z else v for v, z in zip(values, nulls)], t)


@st.composite
def _cases(draw: Any) -> tuple[pa.Table, dict[str, str], int, list[int] | None, bool]:
    n = draw(st.integers(1, 40))
    ids = sorted(draw(st.sets(st.integers(-10**6, 10**6), min_size=n, max_size=n)))
    cols = {"id": pa.array(ids, pa.int64())}
    for f in VALUES:
        cols[f.name] = _column(draw, f.name, f.type, n)
    cols["p"] = pa.array(["p1"] * n)
    modes = {c: draw(st.sampled_from(MODES)) for c in draw(st.sets(st.sampled_from(["id", *VALUES.names])))}
    if draw(st.booleans()):
        modes["*"] = draw(st.sampled_from(MODES))
    pk = draw(st.booleans())
    kinds = draw(st.one_of(st.none(), st.lists(st.sampled_from([0, 1, 2, 3]), min_size=n, max_size=n)))
    return pa.table(cols), modes, draw(st.integers(1, 12)), kinds, pk


@settings(max_examples=60, deadline=None)
@given(_cases())
def test_random_files_describe_the_same_from_the_footer(case: Any) -> None:
    values, modes, group_rows, kinds, pk = case
    with tempfile.TemporaryDirectory() as tmp:
        table = _table(f"{tmp}/wh", pk=pk, modes=modes)
        path = f"{tmp}/f.parquet"
        pq.write_table(_file_rows(table, values, kinds=kinds), path, row_group_size=group_rows)
        _assert_same(table, path, first_seq=7)


# --- what the footer cannot answer -------------------------------------------------------------------


def _simple_values(n: int, *, s: list[Any] | None = None) -> pa.Table:
    ids = list(range(n))
    cols: dict[str, Any] = {"id": pa.array(ids, pa.int64())}
    for f in VALUES:
        cols[f.name] = pa.nulls(n, f.type)
    cols["i32"] = pa.array([i * 3 for i in ids], pa.int32())
    cols["s"] = pa.array(s if s is not None else [f"v{i}" for i in ids], pa.string())
    cols["f64"] = pa.array([math.nan if i == 1 else -0.0 if i == 2 else float(i) for i in ids])
    cols["p"] = pa.array(["x"] * n)
    return pa.table(cols)


@pytest.mark.parametrize("pk", [True, False])
def test_values_past_the_statistics_size_are_read_back(tmp_path: Path, pk: bool) -> None:
    # Writers leave min / max of values over 4096 bytes out of a row group's statistics.
    long = "é" * 3000 + "end"
    table = _table(str(tmp_path / "wh"), pk=pk, modes={"s": "full"})
    path = str(tmp_path / "f.parquet")
    values = _simple_values(6, s=["b", long, None, "a", "c", ""])
    pq.write_table(_file_rows(table, values), path, row_group_size=2)
    footer = footer_column_stats(pq.ParquetFile(path).metadata, pq.ParquetFile(path).schema_arrow, ["s", "i32"])
    assert not footer["s"].bounded and footer["s"].null_count == 1
    assert footer["i32"].bounded and (footer["i32"].min, footer["i32"].max) == (0, 15)
    described = _assert_same(table, path)
    assert described.meta.row_count == 6


@pytest.mark.parametrize("statistics", [False, ["i32"], ["_SEQUENCE_NUMBER"]])
def test_files_without_statistics(tmp_path: Path, statistics: Any) -> None:
    table = _table(str(tmp_path / "wh"), pk=True, modes={"*": "full"})
    path = str(tmp_path / "f.parquet")
    pq.write_table(_file_rows(table, _simple_values(9), kinds=[0, 3, 0, 1, 2, 0, 0, 0, 3]), path,
                   row_group_size=4, write_statistics=statistics)
    described = _assert_same(table, path)
    assert described.meta.delete_row_count == 3


def test_floats_are_read_back_nan_and_negative_zero(tmp_path: Path) -> None:
    table = _table(str(tmp_path / "wh"), pk=False, modes={"*": "full"})
    path = str(tmp_path / "f.parquet")
    pq.write_table(_file_rows(table, _simple_values(5)), path, row_group_size=2)
    footer = footer_column_stats(pq.ParquetFile(path).metadata, pq.ParquetFile(path).schema_arrow, ["f64"])
    assert not footer["f64"].bounded  # never from the footer: writers disagree on NaN and -0.0
    _assert_same(table, path, first_seq=3)


def test_one_kind_of_row_in_the_footer_gives_the_delete_count(tmp_path: Path) -> None:
    table = _table(str(tmp_path / "wh"), pk=True, modes={})
    for kind, deletes in ((3, 5), (1, 5), (2, 0), (0, 0)):
        path = str(tmp_path / f"f{kind}.parquet")
        pq.write_table(_file_rows(table, _simple_values(5), kinds=[kind] * 5), path)
        assert _assert_same(table, path).meta.delete_row_count == deletes


def test_string_keys_and_the_edge_rows_of_several_row_groups(tmp_path: Path) -> None:
    table = _table(str(tmp_path / "wh"), pk=True, modes={"*": "truncate(2)"}, key_type=pa.string())
    values = _simple_values(7).set_column(0, "id", pa.array(sorted(["", "a", "ab", "é", "\U0010ffff", "zz", "b"])))
    path = str(tmp_path / "f.parquet")
    pq.write_table(_file_rows(table, values), path, row_group_size=3)
    described = _assert_same(table, path)
    assert described.meta.min_key != described.meta.max_key


def test_empty_files_describe_as_before(tmp_path: Path) -> None:
    append = _table(str(tmp_path / "a"), pk=False, modes={})
    path = str(tmp_path / "f.parquet")
    pq.write_table(_file_rows(append, _simple_values(0)), path)
    assert _assert_same(append, path, first_seq=4).meta.row_count == 0
    pk = _table(str(tmp_path / "k"), pk=True, modes={})
    pq.write_table(_file_rows(pk, _simple_values(0)), path)
    for describe in (pk.store.describe_written_file, pk.store.describe_written_file_from_footer):
        with pytest.raises(SchemaError):  # a key-value file without a row has no min / max key
            describe(path)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing column"])
def test_unreadable_files_are_typed_errors_naming_the_file(tmp_path: Path, damage: str) -> None:
    table = _table(str(tmp_path / "wh"), pk=True, modes={})
    path = tmp_path / "f.parquet"
    rows = _file_rows(table, _simple_values(5))
    if damage == "missing column":
        rows = rows.drop_columns(["_VALUE_KIND"])
    pq.write_table(rows, path)
    if damage == "garbage":
        path.write_bytes(b"not parquet at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(FileIOError, match="f.parquet"):
        table.store.describe_written_file_from_footer(str(path))
