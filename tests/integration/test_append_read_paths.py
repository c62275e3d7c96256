"""Append reads through both paths: ``to_arrow`` (files decoded whole, in parallel, local Parquet opened natively)
and the streamed ``to_batches`` (64k-row batches): same rows in the same order, with files of several row groups,
deletion vectors, file-index row selections, row tracking, schema evolution and every file format; and a broken
data file fails both with the typed error naming it, the table unchanged."""

from __future__ import annotations

import glob
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide
from laketide.exceptions import FileIOError, NotFoundError
from laketide.schema.changes import AddColumn

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "name": [f"n{i % 13}" for i in ids], "v": [i * 0.5 for i in ids]}, schema=SCHEMA)


def streamed(table: laketide.Table, **kwargs: object) -> pa.Table:
    scan = table.scan(**kwargs)  # type: ignore[arg-type]
    return pa.Table.from_batches(list(scan.to_batches()), schema=scan.output_schema)


def write_files(table: laketide.Table, *, files: int, per_file: int) -> list[int]:
    written: list[int] = []
    for i in range(files):
        table.write(rows(i * per_file, per_file))
        written += range(i * per_file, (i + 1) * per_file)
    return written


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_collected_read_keeps_file_and_row_order(catalog, file_format: str) -> None:  # noqa: ANN001
    # Small row groups: every Parquet file holds several, each decoded whole by to_arrow.
    table = catalog.create_table("db.t", SCHEMA, options={
        "file.format": file_format, "parquet.block.size": "8192", "file-index.bitmap.columns": "name",
        "row-tracking.enabled": "true",
    })
    written = write_files(table, files=5, per_file=3000)
    table.alter(AddColumn(name="extra", type=pa.int32()))
    table = catalog.table("db.t")
    table.write(pa.table({"id": [90_000, 90_001], "name": ["n1", "n2"], "v": [1.0, 2.0], "extra": [7, 8]}))
    written += [90_000, 90_001]
    if file_format == "parquet":
        paths = glob.glob(os.path.join(table.path, "bucket-0", "*.parquet"))
        groups = [pq.ParquetFile(p).metadata.num_row_groups for p in paths]
        assert len(groups) == 6 and max(groups) > 1
    whole = table.read()
    assert whole.column("id").to_pylist() == written  # file order, then row order within each file
    assert whole.column("extra").null_count == len(written) - 2
    for kwargs in ({}, {"columns": ["extra", "id"]}, {"where": "name = 'n3'"},
                   {"where": "id >= 2500 AND id < 9100"}, {"columns": ["_ROW_ID", "id"]}):
        assert table.scan(**kwargs).to_arrow().equals(streamed(table, **kwargs)), kwargs
    tracked = table.read(columns=["_ROW_ID", "id"])
    assert tracked.column("_ROW_ID").to_pylist() == list(range(len(written)))


def test_collected_read_applies_deletion_vectors(catalog) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, options={
        "deletion-vectors.enabled": "true", "parquet.block.size": "8192",
    })
    written = write_files(table, files=3, per_file=4000)
    gone = [i for i in written if i % 7 == 3]
    table.delete(f"id IN ({', '.join(map(str, gone))}) OR (id >= 3990 AND id < 4010)")
    alive = [i for i in written if not (i % 7 == 3 or 3990 <= i < 4010)]
    assert table.read().column("id").to_pylist() == alive
    assert table.read().equals(streamed(table))
    assert table.read(where="name = 'n5'").equals(streamed(table, where="name = 'n5'"))


def test_fsspec_store_reads_through_file_io() -> None:
    cat = laketide.load_catalog(warehouse=f"memory://wh-{uuid.uuid4().hex}")
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, options={"parquet.block.size": "8192"})
    written = write_files(table, files=3, per_file=2000)
    assert table.read().column("id").to_pylist() == written
    assert table.read().equals(streamed(table))


def _data_file(table: laketide.Table) -> str:
    (path,) = glob.glob(os.path.join(table.path, "bucket-0", "*.parquet"))
    return path


@pytest.mark.parametrize("damage", ["truncated", "zeroed pages", "garbage", "missing"])
def test_broken_data_file_names_the_file_and_changes_nothing(catalog, damage: str) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, options={"parquet.block.size": "8192"})
    table.write(rows(0, 5000))
    path = _data_file(table)
    with open(path, "rb") as f:
        good = f.read()
    if damage == "missing":
        os.remove(path)
    else:
        broken = {"truncated": good[: len(good) // 2], "zeroed pages": good[:4] + bytes(400) + good[404:],
                  "garbage": b"not parquet" * 20}[damage]
        with open(path, "wb") as f:
            f.write(broken)
    expected = NotFoundError if damage == "missing" else FileIOError
    name = os.path.basename(path)
    for read in (lambda: table.read(), lambda: streamed(table), lambda: table.read(where="id < 10")):
        with pytest.raises(expected, match=name):
            read()
    with open(path, "wb") as f:  # the same table reads again once the file is back: nothing else changed
        f.write(good)
    assert table.read().equals(rows(0, 5000))
    assert table.latest_snapshot().id == 1
