"""Format tables: plain directories of CSV / JSON / Parquet / ORC files with Hive-style partitions."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from laketide.catalog import Catalog
from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.table.format_table import FormatTable
from tests.catalog.conftest import Backend

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("amount", pa.float64()), ("day", pa.date32()),
                    ("dt", pa.string()), ("region", pa.string())])


def rows(ids: list[int], dt: str, region: str | None) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": ids, "v": [f"v,{i}\"" if i % 2 else None for i in ids], "amount": [i * 1.5 for i in ids],
        "day": [datetime.date(2024, 1, 1 + i % 28) for i in ids], "dt": [dt] * n, "region": [region] * n,
    }, schema=SCHEMA)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def make(catalog: Catalog, backend: Backend, fmt: str, tmp_path: Path) -> FormatTable | None:
    catalog.create_database("db")
    options = {"type": "format-table", "file.format": fmt, "path": str(tmp_path / "plain" / fmt)}
    if backend.kind == "filesystem":
        # Paimon's filesystem catalog keeps no format tables (its Hive and REST catalogs do).
        with pytest.raises(UnsupportedFeatureError, match="type"):
            catalog.create_table("db.f", SCHEMA, partition_keys=["dt", "region"], options=options)
        assert catalog.list_tables("db") == []
        return None
    catalog.create_table("db.f", SCHEMA, partition_keys=["dt", "region"], options=options)
    table = backend.open().table("db.f")
    assert isinstance(table, FormatTable)
    return table


@pytest.mark.parametrize("fmt", ["parquet", "orc", "csv", "json"])
def test_round_trip_append_overwrite_and_pruning(catalog: Catalog, backend_under_test: Backend, tmp_path: Path,
                                                 fmt: str) -> None:
    t = make(catalog, backend_under_test, fmt, tmp_path)
    if t is None:
        return
    a, b, c = rows([1, 2, 3], "2024-01-01", "eu"), rows([4, 5], "2024-01-01", "us"), rows([6], "2024-01-02", None)
    t.write(pa.concat_tables([a, b, c]))
    assert sort(t.read()).equals(sort(pa.concat_tables([a, b, c])))
    # Hive-style directories, one file per partition, a null partition value in the default partition.
    root = tmp_path / "plain" / fmt
    assert sorted(str(p.relative_to(root).parent) for p in root.rglob("data-*")) == [
        "dt=2024-01-01/region=eu", "dt=2024-01-01/region=us", "dt=2024-01-02/region=__DEFAULT_PARTITION__"]
    # Appending adds files; overwriting one partition replaces only it.
    t.write(rows([7], "2024-01-01", "eu"))
    t.write(rows([8, 9], "2024-01-01", "us"), overwrite=True, partition={"dt": "2024-01-01", "region": "us"})
    assert sort(t.read()).column("id").to_pylist() == [1, 2, 3, 6, 7, 8, 9]
    nulls = t.read(partition={"region": None}, columns=["id", "region"])
    assert nulls.to_pydict() == {"id": [6], "region": [None]}
    # Pruning: a broken file in another partition is never opened when reading one partition.
    (root / "dt=2024-01-02" / "region=__DEFAULT_PARTITION__" / "data-broken.x").write_bytes(b"\x00garbage{")
    eu = t.read(partition={"dt": "2024-01-01", "region": "eu"})
    assert sort(eu).equals(sort(pa.concat_tables([a, rows([7], "2024-01-01", "eu")])))
    with pytest.raises(SchemaError, match="data-broken"):
        t.read()
    assert sorted(t.read(partition={"region": "us"}).column("id").to_pylist()) == [8, 9]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_staging_files_are_skipped_and_bad_writes_change_nothing(catalog: Catalog, backend_under_test: Backend,
                                                                 tmp_path: Path, fmt: str) -> None:
    t = make(catalog, backend_under_test, fmt, tmp_path)
    if t is None:
        return
    t.write(rows([1, 2], "d1", "eu"))
    root = tmp_path / "plain" / fmt
    (root / "_SUCCESS").write_bytes(b"")
    (root / "dt=d1" / ".data-x.inprogress").write_bytes(b"partial")
    (root / "_temporary" / "0").mkdir(parents=True)
    (root / "_temporary" / "0" / "part-0").write_bytes(b"junk")
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(SchemaError, match="columns"):
        t.write(pa.table({"id": [1]}))
    with pytest.raises(SchemaError, match="outside partition"):
        t.write(rows([3], "d2", "eu"), overwrite=True, partition={"dt": "d1"})
    with pytest.raises(SchemaError, match="not partition keys"):
        t.read(partition={"id": 1})
    assert sorted(p.name for p in root.rglob("*")) == before
    assert sorted(t.read().column("id").to_pylist()) == [1, 2]


def test_a_parquet_format_table_is_a_plain_hive_dataset(catalog: Catalog, backend_under_test: Backend,
                                                        tmp_path: Path) -> None:
    t = make(catalog, backend_under_test, "parquet", tmp_path)
    if t is None:
        return
    t.write(pa.concat_tables([rows([1, 2], "d1", "eu"), rows([3], "d2", "us")]))
    # Any Hive-partitioned Parquet reader sees the same rows (here Arrow's own dataset reader).
    other = ds.dataset(str(tmp_path / "plain" / "parquet"), format="parquet", partitioning="hive").to_table()
    assert sorted(other.column("id").to_pylist()) == [1, 2, 3]
    assert sorted(set(other.column("dt").to_pylist())) == ["d1", "d2"]
