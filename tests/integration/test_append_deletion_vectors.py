"""Append tables with ``deletion-vectors.enabled``: DELETE / UPDATE mark positions in deletion vectors (no file is
rewritten), reads apply them, compaction rewrites files without their deleted rows and drops their vectors."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import CommitConflictError
from laketide.meta.snapshot import CommitKind
from laketide.table.dml import plan_delete

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string()), ("v", pa.int64())])
LAYOUTS = {
    "unaware": {"bucket": "-1"},
    "bucketed": {"bucket": "2", "bucket-key": "id"},
}


def _rows(ids: range, dt: str, v: int) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["id"], r["dt"], r["v"]))


def _data_files(t) -> set[str]:  # noqa: ANN001
    return {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}


def _vectors(t) -> dict[str, int]:  # noqa: ANN001
    """Data file name -> deleted positions, over the latest snapshot's deletion-vector index files."""
    out: dict[str, int] = {}
    for e in t.file_scan().index_entries(t.latest_snapshot()):
        if e.index_file.index_type == "DELETION_VECTORS":
            for m in e.index_file.dv_ranges or ():
                out[m.data_file_name] = m.cardinality
    return out


@pytest.fixture(params=sorted(LAYOUTS))
def table(request, tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"],
                         options={**LAYOUTS[request.param], "deletion-vectors.enabled": "true"})
    t.write(pa.concat_tables([_rows(range(0, 100), "a", 0), _rows(range(0, 40), "b", 0)]))
    t.write(_rows(range(100, 150), "a", 1))
    return t


def test_delete_marks_positions_and_rewrites_nothing(table) -> None:  # noqa: ANN001
    oracle = _sorted(table.read())
    files = _data_files(table)
    result = table.delete(where="id IN (3, 13, 23, 33, 43, 103, 113) OR id >= 140")
    expected = [r for r in oracle if not (r["id"] in (3, 13, 23, 33, 43, 103, 113) or r["id"] >= 140)]
    assert result.rows_deleted == len(oracle) - len(expected)
    assert (result.files_added, result.files_removed) == (0, 0)
    assert _data_files(table) == files, "a delete by vector rewrites no data file"
    assert table.latest_snapshot().commit_kind is CommitKind.OVERWRITE
    assert sum(_vectors(table).values()) == len(oracle) - len(expected)
    assert _sorted(table.read()) == expected
    assert _sorted(table.read(where="dt = 'b'")) == [r for r in expected if r["dt"] == "b"]
    # Deleting rows already deleted (and more) counts only the live ones and merges into the same vectors.
    again = table.delete(where="id < 5")
    expected2 = [r for r in expected if r["id"] >= 5]
    assert again.rows_deleted == len(expected) - len(expected2)
    assert _sorted(table.read()) == expected2
    assert sum(_vectors(table).values()) == len(oracle) - len(expected2)
    # Older snapshots still read their rows (the vectors are per snapshot).
    assert _sorted(table.read(snapshot_id=2)) == oracle


def test_delete_matching_nothing_commits_nothing(table) -> None:  # noqa: ANN001
    before = table.latest_snapshot().id
    assert table.delete(where="id > 10000").snapshot_id is None
    assert table.latest_snapshot().id == before


def test_update_deletes_by_vector_and_appends_new_rows(table) -> None:  # noqa: ANN001
    oracle = _sorted(table.read())
    result = table.update({"v": 7}, where="id BETWEEN 10 AND 19")
    expected = _sorted(pa.Table.from_pylist(
        [dict(r, v=7) if 10 <= r["id"] <= 19 else r for r in oracle], schema=SCHEMA))
    assert result.rows_updated == sum(1 for r in oracle if 10 <= r["id"] <= 19)
    assert _sorted(table.read()) == expected


def test_compaction_drops_deleted_rows_and_their_vectors(table) -> None:  # noqa: ANN001
    table.delete(where="id < 30 OR id IN (101, 120, 149)")
    expected = _sorted(table.read())
    assert _vectors(table)
    table.compact(full=True)
    assert _sorted(table.read()) == expected
    live = _data_files(table)
    assert set(_vectors(table)) <= live, "vectors only of files that still exist"
    assert _vectors(table) == {}, "a full compaction rewrites every file with deleted rows"
    assert sum(e.file.row_count for e in table.file_scan().plan(table.latest_snapshot())) == len(expected) + sum(
        _vectors(table).values())


def test_concurrent_deletes_of_one_bucket_conflict(table) -> None:  # noqa: ANN001
    first = plan_delete(table, "id = 1")
    table.delete(where="id = 2")
    snapshot = table.latest_snapshot().id
    index_files = set(os.listdir(f"{table.path}/index"))
    with pytest.raises(CommitConflictError, match="deletion vectors"):
        first.commit()
    assert table.latest_snapshot().id == snapshot
    assert set(os.listdir(f"{table.path}/index")) < index_files, "the refused change's index file is removed"
    assert {r["id"] for r in table.read().to_pylist() if r["id"] < 3} == {0, 1}


def test_delete_conflicts_with_a_compaction_that_rewrote_its_files(table) -> None:  # noqa: ANN001
    pending = plan_delete(table, "id = 1")
    table.compact(full=True)
    snapshot = table.latest_snapshot().id
    with pytest.raises(CommitConflictError):
        pending.commit()
    assert table.latest_snapshot().id == snapshot
    assert 1 in {r["id"] for r in table.read().to_pylist()}
