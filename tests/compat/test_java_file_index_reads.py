"""Reads of the Java-written indexed tables use their indexes (embedded and sidecar) and return exactly the rows
of an unindexed read + filter, while the scan report shows the files and rows the indexes left out."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.expr.arrow import filter_table
from laketide.expr.predicate import Predicate, and_, col, or_
from laketide.table.table import Table

TABLES = (
    "append_with_bloomfilter",
    "append_with_bsi",
    "append_with_bitmap",
    "append_with_bitmap_v1",
    "append_with_bitmap_no_embedding",
    "append_with_bsi_bitmap_bloomfilter",
    "pk_with_bitmap_dv",
)


def load(java_table, name: str) -> Table:  # noqa: ANN001
    return laketide.load_catalog(warehouse=java_table(name)).table(f"{name}.{name}")


def canonical(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


def predicates(data: pa.Table) -> list[Predicate]:
    out: list[Predicate] = []
    for name in ("f0", "f1", "f2"):
        column = data.column(name)
        present = [v for v in dict.fromkeys(column.to_pylist()) if v is not None]
        absent: list[object] = ["Zed", ""] if pa.types.is_string(column.type) else [7777, -7777, 0]
        out += [col(name).is_null(), col(name).is_not_null()]
        for v in present + absent:
            out += [col(name) == v, col(name) != v, col(name) < v, col(name) >= v]
        out += [col(name).isin(present[:2] + absent[:1]), col(name).notin(present[:1])]
    # trees over several columns
    f0 = [v for v in data.column("f0").to_pylist() if v is not None]
    f1 = [v for v in data.column("f1").to_pylist() if v is not None]
    out += [
        and_(col("f0") == f0[0], col("f1") == f1[0]),
        or_(col("f0") == "Zed", col("f1") == f1[-1]),
        ~(col("f0") == f0[0]),
        and_(col("f1") >= f1[0], ~col("f2").is_null()),
    ]
    return out


@pytest.mark.parametrize("name", TABLES)
def test_indexed_reads_equal_unindexed_read_and_filter(java_table, name: str) -> None:  # noqa: ANN001
    t = load(java_table, name)
    everything = t.read()
    assert everything.num_rows > 0
    used = 0
    for p in predicates(everything):
        scan = t.scan(where=p)
        got = scan.to_arrow()
        assert canonical(got) == canonical(filter_table(everything, p)), f"{name}: {p}"
        report = scan.explain().file_index
        assert report.enabled
        assert report.files_with_index == report.files_planned, f"{name}: a file index was not read for {p}"
        assert not report.corrupt_indexes
        used += report.files_skipped + report.files_with_row_selection
    assert used > 0, f"{name}: the indexes never skipped a file or selected rows"


@pytest.mark.parametrize("name", ["append_with_bitmap", "append_with_bitmap_no_embedding",
                                  "append_with_bsi_bitmap_bloomfilter"])
def test_bitmap_selects_exactly_the_matching_rows(java_table, name: str) -> None:  # noqa: ANN001
    t = load(java_table, name)
    everything = t.read()
    value = everything.column("f0")[0].as_py()
    expected = filter_table(everything, col("f0") == value).num_rows
    scan = t.scan(where=col("f0") == value)
    report = scan.explain().file_index
    selected = report.rows_selected + sum(u.row_count for u in report.files if u.outcome == "kept")
    assert selected == expected  # every row read is a matching row
    assert report.rows_skipped == everything.num_rows - expected


@pytest.mark.parametrize("name", ["append_with_bloomfilter", "append_with_bsi", "append_with_bitmap"])
def test_absent_value_skips_every_indexed_file(java_table, name: str) -> None:  # noqa: ANN001
    t = load(java_table, name)
    p = col("f1") == 150 if name != "append_with_bitmap" else col("f0") == "Bz"  # inside the stats range
    scan = t.scan(where=p)
    report = scan.explain().file_index
    assert report.files_skipped == report.files_planned > 0
    assert scan.plan() == [] and scan.to_arrow().num_rows == 0


def test_read_enabled_false_reads_every_file(java_table) -> None:  # noqa: ANN001
    from laketide.schema.changes import SetOption

    t = load(java_table, "append_with_bitmap")
    t.alter(SetOption("file-index.read.enabled", "false"))
    scan = t.scan(where=col("f0") == "Bz")
    report = scan.explain().file_index
    assert not report.enabled and report.files_skipped == 0
    assert len(scan.plan()) > 0 and scan.to_arrow().num_rows == 0


def test_corrupt_sidecar_is_ignored_with_a_warning(java_table, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    t = load(java_table, "append_with_bitmap_no_embedding")
    everything = t.read()
    [sidecar] = list(Path(t.path).rglob("*.index"))
    sidecar.write_bytes(b"\x00garbage" * 5)
    with caplog.at_level(logging.WARNING):
        scan = t.scan(where=col("f0") == "Bz")
        report = scan.explain().file_index
        rows = scan.to_arrow()
    assert rows.num_rows == 0 and report.files_skipped == 0
    assert report.corrupt_indexes and sidecar.name in report.corrupt_indexes[0]
    assert any(sidecar.name in r.getMessage() for r in caplog.records)
    assert canonical(t.scan(where=col("f0").is_not_null()).to_arrow()) == canonical(
        filter_table(everything, col("f0").is_not_null()))
    sidecar.unlink()  # a missing sidecar too
    assert canonical(t.read(where=col("f1") == 10)) == canonical(filter_table(everything, col("f1") == 10))
