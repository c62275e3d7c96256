"""Every Parquet file a table writes - append data, key-value data, changelog - chooses dictionary encoding per
column from its rows; ``parquet.enable.dictionary`` set on the table wins; a bad value fails at create time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laketide.exceptions import InvalidOptionError

ROWS = 30_000


def _rows(offset: int = 0) -> pa.Table:
    rng = np.random.default_rng(offset + 1)
    return pa.table({
        "id": pa.array(np.arange(offset, offset + ROWS, dtype=np.int64)),
        "status": pa.array(np.array(["new", "paid", "done"])[rng.integers(0, 3, ROWS)]),
        "amount": pa.array(rng.uniform(0, 100, ROWS)),
    })


def _dictionary_pages(path: Path) -> dict[str, bool]:
    meta = pq.ParquetFile(path).metadata
    return {
        meta.row_group(0).column(i).path_in_schema: all(
            meta.row_group(rg).column(i).has_dictionary_page for rg in range(meta.num_row_groups))
        for i in range(meta.num_columns)
    }


def _files(warehouse: str, prefix: str) -> list[Path]:
    return sorted(p for p in Path(warehouse).rglob(f"{prefix}*.parquet"))


def test_key_value_and_changelog_files(catalog, warehouse: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", _rows().schema, primary_key=["id"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write(_rows())
    t.write(_rows(ROWS // 2))
    assert t.read().num_rows == ROWS + ROWS // 2
    for prefix in ("data-", "changelog-"):
        files = _files(warehouse, prefix)
        assert len(files) == 2, prefix
        for f in files:
            pages = _dictionary_pages(f)
            assert pages["status"] and pages["_VALUE_KIND"], (f, pages)
            assert not pages["_KEY_id"] and not pages["id"] and not pages["_SEQUENCE_NUMBER"], (f, pages)
            assert not pages["amount"], (f, pages)
            assert pq.ParquetFile(f).metadata.num_row_groups >= 1


def test_append_files(catalog, warehouse: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.app", _rows().schema)
    t.write(_rows())
    (f,) = _files(warehouse, "data-")
    pages = _dictionary_pages(f)
    assert pages["status"] and not pages["id"] and not pages["amount"]
    assert t.read().sort_by("id").equals(_rows())


@pytest.mark.parametrize("value,expected", [("false", False), ("true", True)])
def test_table_option_wins(catalog, warehouse: str, value: str, expected: bool) -> None:  # noqa: ANN001
    t = catalog.create_table("db.opt", _rows().schema, primary_key=["id"],
                             options={"bucket": "1", "parquet.enable.dictionary": value})
    t.write(_rows())
    (f,) = _files(warehouse, "data-")
    assert set(_dictionary_pages(f).values()) == {expected}
    assert t.read().num_rows == ROWS


def test_bad_option_value_fails_at_create(catalog, warehouse: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match="parquet.enable.dictionary") as info:
        catalog.create_table("db.bad", _rows().schema, options={"parquet.enable.dictionary": "sometimes"})
    assert "db.bad" in str(info.value)
    assert not catalog.table_exists("db.bad")
