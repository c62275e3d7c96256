"""Arrow C streams, polars (eager / lazy with pushdown) and DuckDB over laketide tables."""

from __future__ import annotations

from typing import BinaryIO

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import laketide
from laketide.fs.local import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.float64())])


class CountingFileIO(LocalFileIO):
    """The local file system, remembering which data files were opened."""

    def __init__(self) -> None:
        self.opened: list[str] = []

    def open_input(self, path: str) -> BinaryIO:
        if "/bucket-" in path:
            self.opened.append(path)
        return super().open_input(path)


@pytest.fixture()
def table(catalog) -> laketide.Table:  # noqa: ANN001
    """Four partitions, one file each, disjoint id ranges."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    for i in range(4):
        ids = list(range(i * 100, i * 100 + 100))
        t.write(pa.table({"id": ids, "p": [f"p{i}"] * 100, "v": [x / 2 for x in ids]}, schema=SCHEMA))
    return t


def counting(t: laketide.Table) -> tuple[laketide.Table, CountingFileIO]:
    io = CountingFileIO()
    return laketide.Table(name=t.name, path=t.path, file_io=io), io


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def test_arrow_c_stream_of_table_and_scan(table) -> None:  # noqa: ANN001
    assert sort(pa.table(table)).equals(sort(table.read()))
    scan = table.scan(columns=["id", "v"], where="id >= 250")
    assert sort(pa.table(scan)).equals(sort(table.read(columns=["id", "v"], where="id >= 250")))
    assert pl.DataFrame(table).sort("id").equals(pl.from_arrow(table.read()).sort("id"))


def test_batch_reader_streams(table) -> None:  # noqa: ANN001
    t, io = counting(table)
    reader = t.to_arrow_batch_reader(columns=["id"])
    assert io.opened == []  # nothing is read before the consumer pulls
    first = reader.read_next_batch()
    assert first.num_rows > 0 and len(io.opened) == 1
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == 400 and len(io.opened) == 4


def test_polars_eager_and_lazy(table) -> None:  # noqa: ANN001
    eager = table.to_polars()
    assert isinstance(eager, pl.DataFrame) and eager.height == 400
    lazy = table.to_polars(lazy=True)
    assert isinstance(lazy, pl.LazyFrame)
    query = lazy.filter((pl.col("v") > 20) & pl.col("p").is_in(["p0", "p3"])).select(["v", "id"])
    expected = eager.filter((pl.col("v") > 20) & pl.col("p").is_in(["p0", "p3"])).select(["v", "id"])
    assert query.collect().sort("id").equals(expected.sort("id"))
    assert lazy.head(7).collect().height == 7
    assert lazy.select(pl.len()).collect().item() == 400


@pytest.mark.parametrize(("expr", "files"), [
    (pl.col("p") == "p2", 1),                              # partition pruning
    ((pl.col("id") >= 310) & (pl.col("id") < 320), 1),     # min/max statistics
    (pl.col("id").is_between(150, 250), 2),
    ((pl.col("p") == "p1") | (pl.col("p") == "p2"), 2),
    (pl.col("id").cast(pl.Utf8).str.len_chars() > 1, 4),   # untranslatable: polars filters, all files read
])
def test_lazy_filter_opens_only_the_files_it_keeps(table, expr, files: int) -> None:  # noqa: ANN001
    t, io = counting(table)
    got = t.to_polars(lazy=True).filter(expr).collect()
    assert len(set(io.opened)) == files
    assert got.sort("id").equals(table.to_polars().filter(expr).sort("id"))


def test_lazy_frame_is_pinned_to_its_snapshot(table) -> None:  # noqa: ANN001
    lazy = table.to_polars(lazy=True)
    table.write(pa.table({"id": [1000], "p": ["p9"], "v": [1.0]}, schema=SCHEMA))
    assert lazy.collect().height == 400
    assert table.to_polars(lazy=True).collect().height == 401


def test_duckdb_over_the_stream_equals_read(table) -> None:  # noqa: ANN001
    t = table  # DuckDB's replacement scan finds the local variable by name and reads its Arrow stream
    got = duckdb.sql("select * from t").arrow()
    got = got.read_all() if isinstance(got, pa.RecordBatchReader) else got
    assert sort(got).to_pydict() == sort(t.read()).to_pydict()
    con = table.to_duckdb(name="events")
    got = con.sql("select p, count(*) as n, sum(id) as s from events group by p order by p").fetchall()
    assert got == [(f"p{i}", 100, sum(range(i * 100, i * 100 + 100))) for i in range(4)]
    table.write(pa.table({"id": [1000], "p": ["p0"], "v": [1.0]}, schema=SCHEMA))
    assert con.sql("select count(*) from events").fetchone() == (401,)  # each query reads the latest snapshot


def test_write_accepts_lazy_frames_and_streams(catalog, table) -> None:  # noqa: ANN001
    copy = catalog.create_table("db.copy", SCHEMA)
    copy.write(table)                                              # a table's Arrow stream
    copy.write(table.scan(where="id < 10"))                        # a scan's
    copy.write(table.to_polars(lazy=True).filter(pl.col("id") >= 390))  # a LazyFrame
    assert copy.read().num_rows == 400 + 10 + 10
    assert copy.write(table.scan(where="id < 0")) is None           # an empty stream commits nothing
