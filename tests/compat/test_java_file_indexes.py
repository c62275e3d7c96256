"""File indexes written by Java Paimon: laketide parses each one, answers predicates without ever dropping a
matching row, and writes the same bytes for the same values.

Tables (../shared/compat/tables, each README lists its rows): bloom filters, BSI and bitmaps (v1, v2, embedded
in the manifest entry or in a ``<data file>.index`` sidecar), all three on one file, and a primary-key table
with deletion vectors. Vectors: bitmap-index-v1 / -v2 (100,000 strings, 10,000 distinct values).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laketide.expr.arrow import filter_table
from laketide.expr.predicate import Leaf, Not, Op, Predicate, and_, col, or_
from laketide.index.file_index import (
    BITMAP,
    BLOOM_FILTER,
    BSI,
    BitmapIndexReader,
    BitmapIndexWriter,
    BloomFilterWriter,
    BsiIndexWriter,
    FileIndexContainer,
    FileIndexResult,
    ResultKind,
    evaluate_file_index,
    java_container_order,
    parse_file_index_options,
    write_container,
)
from laketide.index.file_index.bloom import BloomFilterReader, value_hashes
from laketide.meta.manifest import FileKind, ManifestEntry
from laketide.meta.manifest_io import decode_records
from laketide.types import DataType, VarCharType, parse_type

TABLES = (
    "append_with_bloomfilter",
    "append_with_bsi",
    "append_with_bitmap",
    "append_with_bitmap_v1",
    "append_with_bitmap_no_embedding",
    "append_with_bsi_bitmap_bloomfilter",
    "pk_with_bitmap_dv",
)
# Where each table keeps its indexes (README: threshold 1B forces sidecars; the default embeds small ones).
EMBEDDED = {"append_with_bitmap", "append_with_bitmap_v1"}


@dataclass(frozen=True)
class IndexedFile:
    table: str
    file_name: str
    data: pa.Table  # the data file's rows, in file order
    container: bytes
    embedded: bool
    fields: dict[str, DataType]
    options: dict[str, str]


def _table_dir(compat_dir: Path, table: str) -> Path:
    return compat_dir / "tables" / f"{table}.db" / table


def _indexed_files(compat_dir: Path, table: str) -> list[IndexedFile]:
    """Every data file an ADD entry of the table's manifests names, with its index container."""
    tdir = _table_dir(compat_dir, table)
    schema = json.loads((tdir / "schema" / "schema-0").read_text())
    fields = {f["name"]: parse_type(f["type"]) for f in schema["fields"]}
    out: dict[str, IndexedFile] = {}
    for manifest in sorted((tdir / "manifest").glob("manifest-*")):
        if manifest.name.startswith("manifest-list"):
            continue
        for record in decode_records(manifest.read_bytes(), path=str(manifest)):
            entry = ManifestEntry.from_record(record)
            meta = entry.file
            if entry.kind is not FileKind.ADD or meta.file_name in out:
                continue
            bucket = tdir / f"bucket-{entry.bucket}"
            if meta.embedded_index is not None:
                container, embedded = meta.embedded_index, True
            else:
                sidecars = [name for name in meta.extra_files if name.endswith(".index")]
                assert sidecars == [f"{meta.file_name}.index"], meta.extra_files
                container, embedded = (bucket / sidecars[0]).read_bytes(), False
            out[meta.file_name] = IndexedFile(
                table=table,
                file_name=meta.file_name,
                data=pq.read_table(bucket / meta.file_name),
                container=container,
                embedded=embedded,
                fields=fields,
                options=schema["options"],
            )
    assert out, f"{table} has no data files"
    return list(out.values())


def _truth(data: pa.Table, p: Predicate) -> set[int]:
    """Row positions where ``p`` is true (SQL semantics, via laketide's Arrow filter)."""
    numbered = data.append_column("__row", pa.array(np.arange(data.num_rows), pa.int64()))
    return set(filter_table(numbered, p).column("__row").to_pylist())


def _check(result: FileIndexResult, truth: set[int], what: str) -> None:
    """An index answer never loses a matching row; an exact one holds no other."""
    if result.kind is ResultKind.SKIP:
        assert not truth, f"{what}: skipped, but rows {sorted(truth)} match"
    elif result.kind is ResultKind.ROWS:
        assert result.rows is not None
        rows = set(result.rows)
        assert truth <= rows, f"{what}: rows {sorted(truth - rows)} match but were not selected"
        if result.exact:
            assert rows == truth, f"{what}: exact selection {sorted(rows)} != {sorted(truth)}"


# ---------------------------------------------------------------------------------------------------------
# Predicates per column: every value in the file, its neighbours, values the file does not hold.


def _literals(values: list[object], arrow_type: pa.DataType) -> list[object]:
    present = sorted({v for v in values if v is not None}, key=repr)
    if pa.types.is_string(arrow_type):
        return [*present, "Zed", "", "alice"]
    if pa.types.is_integer(arrow_type):
        ints = [int(v) for v in present]  # type: ignore[call-overload]
        extra = {i + d for i in ints for d in (-1, 1)} | {min(ints) - 100, max(ints) + 100, 0}
        return sorted(set(ints) | extra) + [10.5]
    if pa.types.is_floating(arrow_type):
        return [*present, 99.5, -1.25]
    if pa.types.is_timestamp(arrow_type):
        stamps = [pd.Timestamp(v) for v in present]
        near = [s + pd.Timedelta(n, unit="ns") for s in stamps for n in (-1, 1, 1000, -1000)]
        return stamps + near + [pd.Timestamp("2030-01-01"), dt.datetime(2025, 4, 25, 1, 0, 2, 123)]
    return present


def _leaves(name: str, data: pa.Table) -> list[Predicate]:
    column = data.column(name)
    lits = _literals(column.to_pylist(), column.type)
    out: list[Predicate] = [col(name).is_null(), col(name).is_not_null()]
    for v in lits:
        out += [col(name) == v, col(name) != v, col(name) < v, col(name) <= v, col(name) > v, col(name) >= v]
    for a, b in itertools.islice(itertools.combinations(lits, 2), 40):
        out += [col(name).isin([a, b]), col(name).notin([a, b])]
    out += [col(name).isin([lits[0], None]), col(name).notin([lits[0], None]), Leaf(Op.EQ, name, (None,))]
    if pa.types.is_string(column.type):
        out += [col(name).startswith("A"), Not(col(name).startswith("A"))]
    return out


def _indexed_columns(f: IndexedFile) -> list[str]:
    return list(FileIndexContainer(f.container, path=f.file_name).columns())


def _all_files(compat_dir: Path) -> list[IndexedFile]:
    return [f for t in TABLES for f in _indexed_files(compat_dir, t)]


# ---------------------------------------------------------------------------------------------------------
# Parsing


@pytest.mark.parametrize("table", TABLES)
def test_every_index_parses_and_holds_the_data(compat_dir: Path, table: str) -> None:
    files = _indexed_files(compat_dir, table)
    spec = parse_file_index_options(files[0].options, fields=files[0].fields)
    declared = {(s.column, s.index_type) for s in spec.indexes}
    for f in files:
        assert f.embedded == (table in EMBEDDED)
        c = FileIndexContainer(f.container, path=f.file_name)
        assert {(e.column, e.index_type) for e in c.entries} == declared
        for e in c.entries:
            dt_ = f.fields[e.column]
            values = f.data.column(e.column).to_pylist()
            reader = c.reader(e.column, e.index_type, dt_)
            if e.index_type == BITMAP:
                assert isinstance(reader, BitmapIndexReader)
                decoded = {k: sorted(v) for k, v in reader.decode_all().items()}
                assert decoded.get(None, []) == [i for i, v in enumerate(values) if v is None]
                assert sum(len(rows) for rows in decoded.values()) == len(values)
                assert reader.row_count == f.data.num_rows
            elif e.index_type == BLOOM_FILTER:
                assert isinstance(reader, BloomFilterReader)
                for h in value_hashes(f.data.column(e.column), dt_):
                    assert reader.might_contain_hash(int(h))
            else:
                assert e.index_type == BSI
                result = reader.evaluate(col(e.column).is_not_null())  # type: ignore[union-attr]
                assert set(result.rows or ()) == {i for i, v in enumerate(values) if v is not None}


def test_sidecar_beside_an_external_data_file_is_the_same_index(compat_dir: Path) -> None:
    (f,) = _indexed_files(compat_dir, "append_with_bitmap_no_embedding")
    external = compat_dir / "tables" / "append_with_bitmap_no_embedding.db" / "external-path" / "bucket-0"
    assert (external / f"{f.file_name}.index").read_bytes() == f.container
    assert pq.read_table(external / f.file_name).equals(f.data)


# ---------------------------------------------------------------------------------------------------------
# Bytes: laketide's index for the same values is Java's, byte for byte.


def _rebuild(f: IndexedFile, c: FileIndexContainer) -> dict[str, dict[str, bytes | None]]:
    built: dict[str, dict[str, bytes | None]] = {}
    for e in c.entries:
        dt_ = f.fields[e.column]
        w: BitmapIndexWriter | BsiIndexWriter | BloomFilterWriter
        if e.index_type == BITMAP:
            w = BitmapIndexWriter(dt_, version=int(f.options.get(f"file-index.bitmap.{e.column}.version", 2)))
        elif e.index_type == BSI:
            w = BsiIndexWriter(dt_)
        else:
            w = BloomFilterWriter(dt_)
        # In two batches, as a rolling writer would hand them over.
        half = f.data.num_rows // 2
        w.write(f.data.column(e.column).slice(0, half))
        w.write(f.data.column(e.column).slice(half))
        built.setdefault(e.column, {})[e.index_type] = w.serialize()
        assert built[e.column][e.index_type] == bytes(c.index_bytes(e)), (f.table, e)
    return built


@pytest.mark.parametrize("table", TABLES)
def test_rebuilt_indexes_are_byte_identical(compat_dir: Path, table: str) -> None:
    for f in _indexed_files(compat_dir, table):
        c = FileIndexContainer(f.container, path=f.file_name)
        built = _rebuild(f, c)
        assert write_container(java_container_order(built)) == f.container


# ---------------------------------------------------------------------------------------------------------
# Answers


@pytest.mark.parametrize("table", TABLES)
def test_leaf_answers_never_drop_a_matching_row(compat_dir: Path, table: str) -> None:
    for f in _indexed_files(compat_dir, table):
        c = FileIndexContainer(f.container, path=f.file_name)
        for name in _indexed_columns(f):
            for p in _leaves(name, f.data):
                _check(evaluate_file_index(c, p, fields=f.fields).result, _truth(f.data, p), f"{f.file_name} {p}")


@pytest.mark.parametrize("table", TABLES)
def test_compound_answers_never_drop_a_matching_row(compat_dir: Path, table: str) -> None:
    rng = np.random.default_rng(17)
    for f in _indexed_files(compat_dir, table):
        c = FileIndexContainer(f.container, path=f.file_name)
        leaves = [p for name in f.data.column_names if name in f.fields for p in _leaves(name, f.data)]
        for _ in range(300):
            a, b, d = (leaves[i] for i in rng.integers(0, len(leaves), size=3))
            for p in (and_(a, b), or_(a, b), Not(and_(a, or_(b, d))), or_(Not(a), and_(b, Not(d)))):
                _check(evaluate_file_index(c, p, fields=f.fields).result, _truth(f.data, p), f"{f.file_name} {p}")


def _answer(table: str, compat_dir: Path, p: Predicate, file_index: int = 0) -> tuple[FileIndexResult, set[int]]:
    f = _indexed_files(compat_dir, table)[file_index]
    c = FileIndexContainer(f.container, path=f.file_name)
    return evaluate_file_index(c, p, fields=f.fields).result, _truth(f.data, p)


def test_bloom_filters_skip_values_the_file_lacks(compat_dir: Path) -> None:
    absent = [
        col("f0") == "Zed",
        col("f1") == 101,
        col("f2") == 7,
        col("f3") == 11.2,
        col("f4") == dt.datetime(2030, 1, 1),
        col("f0").isin(["Zed", "Ann"]),
    ]
    for p in absent:
        result, truth = _answer("append_with_bloomfilter", compat_dir, p)
        assert not truth and result.kind is ResultKind.SKIP, p
    for p in (col("f0") == "Bob", col("f1") == 100, col("f3") == 11.1, col("f0").isin(["Zed", "Tony"])):
        result, truth = _answer("append_with_bloomfilter", compat_dir, p)
        assert truth and result.kind is ResultKind.REMAIN, p
    # A bloom filter's "maybe" is not a row set: its negation keeps the file.
    result, _ = _answer("append_with_bloomfilter", compat_dir, Not(col("f0") == "Zed"))
    assert result.kind is ResultKind.REMAIN


@pytest.mark.parametrize("table", ["append_with_bitmap", "append_with_bitmap_v1", "append_with_bitmap_no_embedding"])
def test_bitmaps_select_exact_rows(compat_dir: Path, table: str) -> None:
    cases = [
        col("f0") == "Bob",
        col("f0") != "Bob",
        col("f0").isin(["Alice", "Lucy"]),
        col("f0").notin(["Alice", "Lucy"]),
        col("f1") == 20,
        col("f2").is_null(),
        col("f2").is_not_null(),
        and_(col("f1") == 10, col("f2") == 1),
        or_(col("f0") == "Emily", col("f2").is_null()),
        Not(or_(col("f0") == "Emily", col("f2") == 0)),
    ]
    for p in cases:
        result, truth = _answer(table, compat_dir, p)
        assert result.kind is ResultKind.ROWS and result.exact, p
        assert set(result.rows or ()) == truth, p
    result, _ = _answer(table, compat_dir, col("f0") == "Zed")
    assert result.kind is ResultKind.SKIP


def test_bsi_selects_exact_ranges(compat_dir: Path) -> None:
    cases = [
        col("f1") < 200,
        col("f1") >= 100,
        col("f1").between(50, 300),
        col("f2") < 0,
        col("f2") <= -2,
        col("f2") > -3,
        col("f2") == -2,
        col("f2") != 1,
        col("f1").is_null(),
        col("f4") < dt.datetime(1970, 1, 1),
        col("f4") >= dt.datetime(2025, 4, 25, 1, 0, 2),
    ]
    for p in cases:
        result, truth = _answer("append_with_bsi", compat_dir, p)
        assert result.kind is ResultKind.ROWS and result.exact, p
        assert set(result.rows or ()) == truth, p
    assert _answer("append_with_bsi", compat_dir, col("f1") > 500)[0].kind is ResultKind.SKIP
    assert _answer("append_with_bsi", compat_dir, col("f2") < -3)[0].kind is ResultKind.SKIP
    # TIMESTAMP(9) keys are micros: a nanosecond-precise equality selects a superset, never fewer rows.
    ns = pd.Timestamp(1745542802000123001, unit="ns")
    result, truth = _answer("append_with_bsi", compat_dir, col("f4") == ns)
    assert truth == {6} and result.kind is ResultKind.ROWS and not result.exact
    assert set(result.rows or ()) == {0, 6}


def test_all_three_indexes_on_one_column_combine(compat_dir: Path) -> None:
    # f1 carries bloom, bitmap and bsi: bloom skips an absent value, bitmap/BSI give exact rows together.
    result, truth = _answer("append_with_bsi_bitmap_bloomfilter", compat_dir, col("f1") == 100)
    assert result.exact and set(result.rows or ()) == truth == {0, 5}
    result, _ = _answer("append_with_bsi_bitmap_bloomfilter", compat_dir, col("f1") == 101)
    assert result.kind is ResultKind.SKIP
    f = _indexed_files(compat_dir, "append_with_bsi_bitmap_bloomfilter")[0]
    ev = evaluate_file_index(FileIndexContainer(f.container, path=f.file_name), col("f1") == 101, fields=f.fields)
    assert ev.skipped_by() == (BLOOM_FILTER,)


def test_pk_table_indexes_cover_value_columns_of_each_file(compat_dir: Path) -> None:
    files = {f.data.num_rows: f for f in _indexed_files(compat_dir, "pk_with_bitmap_dv")}
    deletes = files[2]  # snapshot 3's file: the two deleted keys (Alice / Lucy), value kind -D
    c = FileIndexContainer(deletes.container, path=deletes.file_name)
    result = evaluate_file_index(c, col("f0") == "Lucy", fields=deletes.fields).result
    assert set(result.rows or ()) == {1} and result.exact
    assert evaluate_file_index(c, col("f0") == "Bob", fields=deletes.fields).result.kind is ResultKind.SKIP


# ---------------------------------------------------------------------------------------------------------
# Vectors

_VECTOR_ROWS = {
    "asdfghjkl123_2500": {3127, 18654, 23615, 43768, 62555, 63261, 66284, 74708, 99268},
    "asdfghjkl123_5000": {2269, 21292, 23667, 35066, 42377, 46085, 64811, 79062, 96161},
    "asdfghjkl123_7500": {14856, 50768, 60230, 68792, 72208, 73800, 78261, 81346, 86520, 87420, 88501, 95131, 99401},
}


@pytest.mark.parametrize("version", [1, 2])
def test_bitmap_vectors_give_the_readme_rows(compat_dir: Path, version: int) -> None:
    data = (compat_dir / "vectors" / f"bitmap-index-v{version}").read_bytes()
    reader = BitmapIndexReader(data, VarCharType(2**31 - 1))
    for value, rows in _VECTOR_ROWS.items():
        result = reader.evaluate(col("x") == value)
        assert result.exact and set(result.rows or ()) == rows
    result = reader.evaluate(col("x").isin(list(_VECTOR_ROWS)))
    assert set(result.rows or ()) == set().union(*_VECTOR_ROWS.values())
    assert reader.evaluate(col("x") == "asdfghjkl123_x").kind is ResultKind.SKIP
    assert reader.evaluate(col("x").is_null()).kind is ResultKind.SKIP
    assert reader.row_count == 100_000


@pytest.mark.parametrize("version", [1, 2])
def test_bitmap_vectors_rebuilt_byte_identical(compat_dir: Path, version: int) -> None:
    data = (compat_dir / "vectors" / f"bitmap-index-v{version}").read_bytes()
    dt_ = VarCharType(2**31 - 1)
    reader = BitmapIndexReader(data, dt_)
    column: list[str | None] = [None] * 100_000
    for key, rows in reader.decode_all().items():
        assert isinstance(key, bytes)
        for r in rows:
            column[r] = key.decode()
    assert None not in column
    writer = BitmapIndexWriter(dt_, version=version)
    writer.write(pa.array(column))
    assert writer.serialize() == data
    assert writer.java_order_exact
