"""Branches: create (empty or from a tag), read and write ``db.t$branch_b``, delete, list, fast-forward into main,
``scan.fallback-branch``, and what expiration and orphan clean-up keep for branches."""

from __future__ import annotations

import datetime as _dt
import os

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import (
    InvalidOptionError,
    NoSuchSnapshotError,
    NoSuchTableError,
    UnsupportedFeatureError,
)
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def rows(ids: range, dt: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def setup(tmp_path, **options: str) -> tuple[laketide.Catalog, Table]:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", **options})
    return cat, t


def test_branch_from_tag_reads_writes_and_stays_separate(tmp_path) -> None:
    cat, t = setup(tmp_path)
    t.write(rows(range(3)))
    t.tags.create("t1")
    t.write(rows(range(3, 6)))
    b = t.branches.create("b1", tag="t1")
    assert os.path.isfile(os.path.join(t.path, "branch", "branch-b1", "snapshot", "snapshot-1"))
    assert os.path.isfile(os.path.join(t.path, "branch", "branch-b1", "tag", "tag-t1"))
    assert os.path.isfile(os.path.join(t.path, "branch", "branch-b1", "schema", "schema-0"))
    assert ids(b.read()) == [0, 1, 2]
    via_catalog = cat.table("db.t$branch_b1")
    assert isinstance(via_catalog, Table) and via_catalog.branch == "b1"
    via_catalog.write(rows(range(100, 102)))
    assert ids(cat.table("db.t$branch_b1").read()) == [0, 1, 2, 100, 101]
    assert ids(t.read()) == list(range(6))  # main unchanged
    assert [x.name for x in t.branches.list()] == ["b1"]
    snaps = cat.table("db.t$branch_b1$snapshots").read()
    assert snaps.column("snapshot_id").to_pylist() == [1, 2]


def test_empty_branch_and_fast_forward_keeps_main_history_readable(tmp_path) -> None:
    cat, t = setup(tmp_path)
    t.write(rows(range(3)))
    t.write(rows(range(3, 5)))
    t.tags.create("base", 1)
    t.branches.create("b2", tag="base")
    b = t.branch_table("b2")
    b.write(rows(range(50, 53), "b"))
    b.write(rows(range(60, 61), "b"))
    b.tags.create("on-branch")
    t.branches.fast_forward("b2")
    assert ids(t.read()) == [0, 1, 2, 50, 51, 52, 60]
    assert t.snapshot_manager.snapshot_ids() == [1, 2, 3]
    for sid in (1, 2, 3):
        t.read(snapshot_id=sid)  # every snapshot of main's history reads
    assert {x.name for x in t.tags.list()} == {"base", "on-branch"}
    assert ids(t.read(tag="on-branch")) == [0, 1, 2, 50, 51, 52, 60]
    # main goes on from the branch's latest snapshot
    t.write(rows(range(70, 71)))
    assert t.snapshot_manager.latest_snapshot_id() == 4

    empty = t.branches.create("empty")
    assert empty.read().num_rows == 0 and empty.schema.fields == t.schema.fields
    with pytest.raises(NoSuchSnapshotError, match="no snapshot"):
        t.branches.fast_forward("empty")


@pytest.mark.parametrize("bad", ["", "main", "123", "a/b", "..", " x"])
def test_bad_branch_names(tmp_path, bad: str) -> None:
    _, t = setup(tmp_path)
    t.write(rows(range(3)))
    with pytest.raises(InvalidOptionError, match="db.t"):
        t.branches.create(bad)
    assert not os.path.exists(os.path.join(t.path, "branch"))


def test_existing_branch_missing_tag_missing_branch(tmp_path) -> None:
    cat, t = setup(tmp_path)
    t.write(rows(range(3)))
    t.branches.create("b")
    listing = sorted(os.listdir(os.path.join(t.path, "branch", "branch-b", "schema")))
    with pytest.raises(InvalidOptionError, match="'b' already exists"):
        t.branches.create("b")
    with pytest.raises(NoSuchSnapshotError, match="tag 'nope'"):
        t.branches.create("c", tag="nope")
    assert sorted(os.listdir(os.path.join(t.path, "branch"))) == ["branch-b"]
    assert sorted(os.listdir(os.path.join(t.path, "branch", "branch-b", "schema"))) == listing
    with pytest.raises(NoSuchTableError, match="'zz'"):
        cat.table("db.t$branch_zz")
    with pytest.raises(NoSuchTableError, match="'zz'"):
        t.branches.delete("zz")
    t.branches.delete("b")
    assert t.branches.list() == []


def test_dynamic_bucket_branch_write_is_refused(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], options={"bucket": "-1"})
    t.write(rows(range(3)))
    b = t.branches.create("b")
    with pytest.raises(UnsupportedFeatureError, match="db.t\\$branch_b"):
        b.write(rows(range(3, 4)))
    assert b.snapshot_manager.snapshot_ids() == []


def test_fallback_branch_reads_missing_partitions(tmp_path) -> None:
    cat, t = setup(tmp_path)
    t.write(rows(range(3), "a"))
    fb = t.branches.create("stream")
    fb.write(rows(range(10, 13), "a"))  # partition 'a' exists in main: main's rows win
    fb.write(rows(range(20, 22), "b"))  # partition 'b' only in the fallback branch
    t.alter(laketide.SetOption("scan.fallback-branch", "stream"))
    got = t.read()
    assert sorted(zip(got.column("dt").to_pylist(), got.column("id").to_pylist())) == [
        ("a", 0), ("a", 1), ("a", 2), ("b", 20), ("b", 21)]
    assert ids(t.read(where="dt = 'b'")) == [20, 21]
    with pytest.raises(InvalidOptionError, match="scan.fallback-branch"):
        t.branches.delete("stream")


def test_expiration_and_orphans_keep_what_branches_need(tmp_path) -> None:
    _, t = setup(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(range(5)))
    t.tags.create("t1")
    b = t.branches.create("b", tag="t1")
    t.tags.delete("t1")  # the branch holds snapshot 1 now, not a main tag
    t.write(rows(range(0, 5)))  # rewrites every key: compaction replaces snapshot 1's files
    t.compact(full=True)
    t.write(rows(range(7, 8)))
    assert len(t.snapshot_manager.snapshot_ids()) == 1
    assert t.remove_orphan_files(older_than=_dt.timedelta(0)).count == 0
    assert ids(b.read()) == list(range(5))  # the branch's files survived expiration and clean-up
    t.branches.delete("b")
    removed = t.remove_orphan_files(older_than=_dt.timedelta(0))
    assert removed.count > 0  # what only the branch used is an orphan now
    assert ids(t.read()) == list(range(5)) + [7]
