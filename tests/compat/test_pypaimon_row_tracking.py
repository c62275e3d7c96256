"""Row-tracking and data-evolution tables written by pypaimon, read by laketide: ``_ROW_ID`` /
``_SEQUENCE_NUMBER`` (as columns and as ``$row_tracking``), ``first_row_id`` / ``write_cols`` in the file metadata,
``nextRowId`` in snapshots, and partial-column files stitched back into whole rows. laketide appends to row-tracking
tables (row ids continue from ``nextRowId``); rewrites (compaction, DML) and data-evolution writes are refused.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.table.system import system_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64()),
                    ("dt", pa.string())])
TRACKED = ["id", "v", "n", "dt", "_ROW_ID", "_SEQUENCE_NUMBER"]


def rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "n": ids, "dt": [dt] * len(ids)}, schema=SCHEMA)


def by_row_id(table: pa.Table) -> dict:
    return {r["_ROW_ID"]: {k: r[k] for k in TRACKED} for r in table.select(TRACKED).to_pylist()}


def make(pypaimon, warehouse: str, name: str, *, evolution: bool) -> None:  # noqa: ANN001
    options = {"row-tracking.enabled": "true", **({"data-evolution.enabled": "true"} if evolution else {})}
    pypaimon.create_table(warehouse, name, SCHEMA, partition_keys=["dt"], options=options)
    pypaimon.write(warehouse, name, pa.concat_tables([rows([1, 2, 3], "x"), rows([4], "y")]))
    pypaimon.write(warehouse, name, pa.concat_tables([rows([5], "x"), rows([6, 7], "y")]))


def test_row_ids_and_sequence_numbers_match_pypaimon(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    make(pypaimon, warehouse, "db.rt", evolution=False)
    t = catalog.table("db.rt")
    ours = by_row_id(t.read(columns=TRACKED))
    theirs = by_row_id(pypaimon.read(warehouse, "db.rt", columns=TRACKED))
    assert ours == theirs
    assert sorted(ours) == list(range(7))
    assert {r["_SEQUENCE_NUMBER"] for r in ours.values()} == {1, 2}
    assert by_row_id(system_table(t, "row_tracking").read()) == ours
    files = sorted((e.file for e in t.file_scan().plan(t.latest_snapshot())), key=lambda f: f.first_row_id)
    assert [(f.first_row_id, f.row_count) for f in files] == [(0, 3), (3, 1), (4, 1), (5, 2)]
    assert t.latest_snapshot().next_row_id == 7
    # A projection and a filter over the system columns work like over any column.
    assert t.read(columns=["_ROW_ID"], where="id = 5").column("_ROW_ID").to_pylist() == [4]


def test_data_evolution_files_are_stitched_into_whole_rows(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    make(pypaimon, warehouse, "db.de", evolution=True)
    pypaimon.update_by_row_id(warehouse, "db.de", pa.table({"_ROW_ID": pa.array([0, 2], pa.int64()),
                                                            "v": ["A", "C"]}), columns=["v"])
    pypaimon.update_by_row_id(warehouse, "db.de", pa.table({"_ROW_ID": pa.array([5, 6], pa.int64()),
                                                            "n": pa.array([60, 70], pa.int64())}), columns=["n"])
    t = catalog.table("db.de")
    partial = [f for f in (e.file for e in t.file_scan().plan(t.latest_snapshot())) if f.write_cols is not None]
    assert sorted(f.write_cols for f in partial) == [("n",), ("v",)]
    ours = by_row_id(t.read(columns=TRACKED))
    assert ours == by_row_id(pypaimon.read(warehouse, "db.de", columns=TRACKED))
    assert [ours[i]["v"] for i in range(7)] == ["A", "v2", "C", "v4", "v5", "v6", "v7"]
    assert [ours[i]["n"] for i in range(7)] == [1, 2, 3, 4, 5, 60, 70]
    assert t.latest_snapshot().next_row_id == 7
    # Filters see the stitched values (stats of a partial file never prune the rows of the others).
    assert sorted(t.read(where="v = 'C' OR n = 70").column("id").to_pylist()) == [3, 7]
    assert t.read(where="dt = 'y'").num_rows == 3


def test_laketide_appends_continue_the_row_ids_pypaimon_reads_them(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    make(pypaimon, warehouse, "db.rt", evolution=False)
    t = catalog.table("db.rt")
    t.write(pa.concat_tables([rows([8, 9], "x"), rows([10], "y")]))
    pypaimon.write(warehouse, "db.rt", rows([11], "x"))
    ours = by_row_id(t.read(columns=TRACKED))
    assert ours == by_row_id(pypaimon.read(warehouse, "db.rt", columns=TRACKED))
    assert sorted(ours) == list(range(11))
    assert {ours[i]["id"] for i in (7, 8, 9)} == {8, 9, 10} and ours[10]["id"] == 11
    assert {ours[i]["_SEQUENCE_NUMBER"] for i in (7, 8, 9)} == {3}  # the snapshot that committed them
    assert t.latest_snapshot().next_row_id == 11


def test_dml_rewrites_of_row_tracking_tables_are_refused_and_change_nothing(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    make(pypaimon, warehouse, "db.rt", evolution=False)
    t = catalog.table("db.rt")
    before = t.latest_snapshot()
    with pytest.raises(UnsupportedFeatureError, match="row-tracking.enabled"):
        t.delete("id = 1")
    with pytest.raises(UnsupportedFeatureError, match="row-tracking.enabled"):
        t.update({"v": "'z'"}, where="id = 2")
    assert t.latest_snapshot() == before
    assert t.read().num_rows == 7


def test_laketide_writes_data_evolution_tables_pypaimon_reads_them(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    """Both ways on one table: pypaimon's rows and updates, then laketide's append and update, then pypaimon's
    update of a range laketide updated; each side reads the same whole rows."""
    make(pypaimon, warehouse, "db.de", evolution=True)
    t = catalog.table("db.de")
    t.write(pa.concat_tables([rows([8], "x"), rows([9, 10], "y")]))
    t.update_by_row_id(pa.table({"_ROW_ID": pa.array([1, 7, 9], pa.int64()), "v": ["B", "H", None],
                                 "n": pa.array([20, 80, 100], pa.int64())}))
    pypaimon.update_by_row_id(warehouse, "db.de", pa.table({"_ROW_ID": pa.array([0, 9], pa.int64()),
                                                            "v": ["A", "J"]}), columns=["v"])
    t.update_by_row_id(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "n": pa.array([10], pa.int64())}))
    ours = by_row_id(t.read(columns=TRACKED))
    assert ours == by_row_id(pypaimon.read(warehouse, "db.de", columns=TRACKED))
    assert sorted(ours) == list(range(10)) and t.latest_snapshot().next_row_id == 10
    assert [(ours[i]["id"], ours[i]["v"], ours[i]["n"]) for i in (0, 1, 7, 9)] == [
        (1, "A", 10), (2, "B", 20), (8, "H", 80), (10, "J", 100)]
    assert ours[2] == {**ours[2], "v": "v3", "n": 3}


def test_compaction_keeps_row_ids_pypaimon_reads_them(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    """laketide compacts a pypaimon-written row-tracking table: the rows keep _ROW_ID and _SEQUENCE_NUMBER (stored
    in the new files, listed in write_cols, as Java's compaction writes them); appends after it continue the ids."""
    make(pypaimon, warehouse, "db.rt", evolution=False)
    t = catalog.table("db.rt")
    t.write(rows([8], "x"))
    before = by_row_id(t.read(columns=TRACKED))
    assert t.compact(full=True) is not None
    files = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    assert len(files) == 2 and all(f.write_cols == ("id", "v", "n", "dt", "_ROW_ID", "_SEQUENCE_NUMBER")
                                   and f.first_row_id is None for f in files)
    assert {(f.min_sequence_number, f.max_sequence_number) for f in files} == {(1, 3), (1, 2)}
    assert by_row_id(t.read(columns=TRACKED)) == before
    # pypaimon 2.1.0 computes _ROW_ID from first_row_id only (null for a compacted file) and _SEQUENCE_NUMBER from
    # the file's max, where Java's ColumnarRowIterator#assignRowTracking reads the stored values: compare the rows.
    data = ["id", "v", "n", "dt"]
    assert pypaimon.read(warehouse, "db.rt", columns=data).sort_by("id") == t.read(columns=data).sort_by("id")
    pypaimon.write(warehouse, "db.rt", rows([9], "y"))
    t.write(rows([10], "x"))
    after = by_row_id(t.read(columns=TRACKED))
    assert {k: v for k, v in after.items() if k < 8} == before and after[8]["id"] == 9 and after[9]["id"] == 10
    assert t.latest_snapshot().next_row_id == 10


def test_row_tracking_columns_need_the_option(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.plain", SCHEMA, options={"bucket": "-1"})
    t.write(rows([1], "x"))
    with pytest.raises(SchemaError, match="row-tracking.enabled"):
        t.read(columns=["id", "_ROW_ID"])
    with pytest.raises(UnsupportedFeatureError, match="row-tracking.enabled"):
        system_table(t, "row_tracking").read()
