"""Format tables between laketide (Python) and Spark's file sources, in all four formats, partitioned."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.spark.format_tables import read_format_table, write_format_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("day", pa.date32()), ("dt", pa.string())])


def rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" if i % 2 else None for i in ids],
                     "day": [datetime.date(2024, 1, i) for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "csv", "json"])
def test_laketide_and_spark_share_a_format_table(spark, tmp_path: Path, fmt: str) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=f"jdbc:sqlite:{tmp_path / 'm.sqlite'}")
    cat.create_database("db")
    t = cat.create_table("db.f", SCHEMA, partition_keys=["dt"], options={"type": "format-table", "file.format": fmt})
    t.write(pa.concat_tables([rows([1, 2], "a"), rows([3], "b")]))
    # Spark reads what laketide wrote.
    got = {r["id"]: (r["v"], r["day"], r["dt"]) for r in read_format_table(spark, t).collect()}
    assert got == {1: ("v1", datetime.date(2024, 1, 1), "a"), 2: (None, datetime.date(2024, 1, 2), "a"),
                   3: ("v3", datetime.date(2024, 1, 3), "b")}
    assert read_format_table(spark, t).where("dt = 'b'").count() == 1
    # Spark appends to one partition and overwrites another; laketide reads the result.
    write_format_table(spark.createDataFrame(rows([4], "a").to_pandas()), t)
    write_format_table(spark.createDataFrame(rows([5, 6], "b").to_pandas()), t, mode="overwrite")
    table = cat.table("db.f")
    assert sorted(table.read().column("id").to_pylist()) == [1, 2, 4, 5, 6]
    assert sorted(table.read(partition={"dt": "b"}).column("id").to_pylist()) == [5, 6]
    assert table.read(partition={"dt": "a"}).sort_by("id").column("v").to_pylist() == ["v1", None, None]


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_column_names_holding_a_dot(spark, tmp_path: Path, fmt: str) -> None:  # noqa: ANN001
    """A dot in a column name is part of the name, not a field access, both ways."""
    schema = pa.schema([("id", pa.int64()), ("a.b", pa.string()), ("dt", pa.string())])
    cat = laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=f"jdbc:sqlite:{tmp_path / 'm.sqlite'}")
    cat.create_database("db")
    t = cat.create_table("db.f", schema, partition_keys=["dt"], options={"type": "format-table", "file.format": fmt})
    t.write(pa.table({"id": [1], "a.b": ["x"], "dt": ["a"]}, schema=schema))
    assert [tuple(r) for r in read_format_table(spark, t).collect()] == [(1, "x", "a")]
    write_format_table(spark.createDataFrame([(2, "y", "b")], ["id", "a.b", "dt"]), t)
    assert cat.table("db.f").read().sort_by("id").to_pylist() == [
        {"id": 1, "a.b": "x", "dt": "a"}, {"id": 2, "a.b": "y", "dt": "b"}]
