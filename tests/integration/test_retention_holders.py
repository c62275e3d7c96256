"""Expiration with a tag, a branch and a consumer each holding an old snapshot: every file one of them still needs
survives, everything else goes (orphan clean-up finds nothing left over), and releasing the holders one by one
frees exactly their files."""

from __future__ import annotations

import datetime as _dt
import os
import threading

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def contents(t: pa.Table) -> list[tuple[int, str]]:
    return sorted(zip(t["id"].to_pylist(), t["v"].to_pylist()))


def data_files(t: Table) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs if f.startswith("data-")}


def no_orphans(t: Table) -> bool:
    return t.remove_orphan_files(older_than=_dt.timedelta(0), dry_run=True).count == 0


def test_tag_branch_and_consumer_hold_their_files(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={
        "bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(range(10), "a"))                      # 1
    t.tags.create("tagged")
    at_tag = contents(t.read())
    t.write(rows(range(10), "b"))                      # 2
    t.branches.create("br", tag="tagged")
    t.tags.create("for-branch")
    t.branches.delete("br")
    branch = t.branches.create("br", tag="for-branch")
    at_branch = contents(branch.read())
    t.tags.delete("for-branch")                        # the branch alone holds snapshot 2 now
    t.write(rows(range(10), "c"))                      # 3
    t.consumers.reset("etl", 4)                        # will read snapshot 4 next
    t.write(rows(range(10), "d"))                      # 4
    at_consumer = contents(t.read_changes(3, 4).drop(["rowkind"]))
    for i in range(4):
        t.write(rows(range(10), f"e{i}"))              # 5..8
    t.compact(full=True)
    t.write(rows(range(10), "z"))
    assert t.snapshot_manager.snapshot_ids()[0] == 4   # the consumer pins 4; retention alone would keep one
    assert contents(t.read(tag="tagged")) == at_tag
    assert contents(branch.read()) == at_branch
    resumed = set(contents(t.read_changes(consumer_id="etl").drop(["rowkind"])))
    assert set(at_consumer) <= resumed  # the consumer resumes at snapshot 4: its changes are all there
    assert no_orphans(t) and no_orphans(branch)

    t.consumers.delete("etl")
    t.write(rows(range(10), "y"))                      # expiration runs at commit: snapshot 4 on may go now
    assert len(t.snapshot_manager.snapshot_ids()) == 1
    assert contents(t.read(tag="tagged")) == at_tag and contents(branch.read()) == at_branch
    assert no_orphans(t)
    t.tags.delete("tagged")                            # its snapshot expired: its own files go with it
    assert contents(branch.read()) == at_branch        # ... but not what the branch still uses
    assert no_orphans(t)
    t.branches.delete("br")
    removed = t.remove_orphan_files(older_than=_dt.timedelta(0))
    assert removed.count > 0 and not (set(removed.paths) & {p for s in t.scan().plan() for p in s.file_paths()})
    # Nothing is left but the live files and files the surviving manifests still name (a DELETE entry not merged
    # away yet: orphan clean-up keeps those, as Java's does, until manifest compaction drops the entry).
    live = {p for s in t.scan().plan() for p in s.file_paths()}
    scan = t.file_scan()
    named = {e.file.file_name for s in t.snapshot_manager.snapshots()
             for lst in (s.base_manifest_list, s.delta_manifest_list)
             for m in scan.manifest_list(lst) for e in scan.manifest(m.file_name)}
    assert live <= data_files(t)
    assert {os.path.basename(p) for p in data_files(t) - live} <= named
    assert contents(t.read()) == contents(rows(range(10), "y"))


def test_branch_expiration_keeps_main(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(range(5), "a"))
    t.tags.create("base")
    b = t.branches.create("b", tag="base")
    for i in range(4):
        b.write(rows(range(5), f"b{i}"))
    b.compact(full=True)
    assert b.expire_snapshots(retain_min=1, retain_max=1) > 0
    assert contents(t.read()) == contents(rows(range(5), "a"))  # main's files survived the branch's expiration
    assert contents(b.read()) == contents(rows(range(5), "b3"))
    assert no_orphans(t) and no_orphans(b)


def test_two_writers_create_the_same_tag(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    t.write(rows(range(3), "a"))
    t.write(rows(range(3, 4), "a"))
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def create(snapshot_id: int) -> None:
        barrier.wait()
        try:
            outcomes.append(t.tags.create("same", snapshot_id).snapshot_id)
        except InvalidOptionError as e:
            outcomes.append(e)

    threads = [threading.Thread(target=create, args=(sid,)) for sid in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [o for o in outcomes if isinstance(o, int)]
    assert len(winners) == 1 and len(outcomes) == 2
    assert t.tags.get("same").snapshot_id == winners[0]


def test_rollback_to_expired_untagged_snapshot_changes_nothing(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id",
                                                  "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(range(3), "a"))
    t.write(rows(range(3, 5), "a"))
    with pytest.raises(NoSuchSnapshotError, match="db.t"):
        t.rollback_to(1)
    with pytest.raises(NoSuchSnapshotError, match="db.t"):
        t.rollback_to("no-such-tag")
    assert t.snapshot_manager.snapshot_ids() == [2] and t.read().num_rows == 5


def test_branch_expiration_after_fast_forward_keeps_mains_files(tmp_path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows(range(5), "a"))
    t.tags.create("base")
    b = t.branches.create("b", tag="base")
    b.write(rows(range(5), "b1"))
    b.write(rows(range(5, 7), "b2"))
    t.branches.fast_forward("b")        # main's snapshots now reference files the branch wrote
    main_rows = contents(t.read())
    history = {sid: contents(t.read(snapshot_id=sid)) for sid in t.snapshot_manager.snapshot_ids()}
    for i in range(3):
        b.write(rows(range(7), f"c{i}"))
    b.compact(full=True)
    assert b.expire_snapshots(retain_min=1, retain_max=1) > 0
    assert contents(t.read()) == main_rows
    assert {sid: contents(t.read(snapshot_id=sid)) for sid in history} == history
    assert no_orphans(t) and no_orphans(b)
