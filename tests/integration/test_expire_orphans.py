"""Snapshot expiration, orphan file cleanup and rollback, checked against directory listings."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.meta.snapshot import Snapshot
from laketide.table.expire import TablePathResolver
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def rows(ids: range, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids)}, schema=SCHEMA)


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def make_table(warehouse: str, **options: str) -> Table:
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    opts = {"bucket": "2", "bucket-key": "id", "write-only": "true", "compaction.min.file-num": "2", **options}
    return cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options=opts)


def history(t: Table) -> dict[int, list[int]]:
    """Appends, a compaction, an overwrite and more appends: DELETE entries of every kind. -> rows per snapshot."""
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 5), "a" if i % 2 else "b"))
    t.compact(full=True)
    t.write(rows(range(100, 103), "a"), mode="overwrite", partition={"dt": "a"})
    for i in range(3):
        t.write(rows(range(200 + i * 10, 205 + i * 10), "b"))
    return {sid: ids_of(t.read(snapshot_id=sid)) for sid in t.snapshot_manager.snapshot_ids()}


def files_on_disk(t: Table) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs if not d.endswith("/schema")}


def referenced_by(t: Table, snapshot_ids: list[int]) -> set[str]:
    """What the given snapshots need, computed independently of the cleanup code: their snapshot files, manifest
    lists, manifests and live data files."""
    scan = t.file_scan()
    paths = TablePathResolver(scan.path_factory)
    snap_dir = t.snapshot_manager.snapshot_dir
    out = {f"{snap_dir}/EARLIEST", f"{snap_dir}/LATEST"}
    for sid in snapshot_ids:
        s = t.snapshot(sid)
        out.add(f"{snap_dir}/snapshot-{sid}")
        out |= {paths.manifest(s.base_manifest_list), paths.manifest(s.delta_manifest_list)}
        out |= {paths.manifest(m.file_name) for m in scan.data_manifests(s)}
        out |= {p for e in scan.plan(s) for p in paths.data_paths(e)}
    return out


def test_expiration_keeps_exactly_the_retained_snapshots_and_their_files(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    assert list(expected) == list(range(1, 10))
    assert t.expire_snapshots() == 0  # default: snapshots younger than snapshot.time-retained (1 h) stay
    assert t.expire_snapshots(retain_min=3, retain_max=3) == 6
    assert t.snapshot_manager.snapshot_ids() == [7, 8, 9]
    assert t.snapshot_manager.earliest_snapshot_id() == 7
    assert files_on_disk(t) == referenced_by(t, [7, 8, 9])  # exactly: nothing unreferenced, nothing missing
    for sid in (7, 8, 9):
        assert ids_of(t.read(snapshot_id=sid)) == expected[sid]
    with pytest.raises(NoSuchSnapshotError):
        t.read(snapshot_id=6)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).count == 0
    assert t.expire_snapshots(retain_min=1, retain_max=1) == 2
    assert files_on_disk(t) == referenced_by(t, [9])
    assert ids_of(t.read()) == expected[9]


def test_time_retained_protects_snapshots_readers_may_still_plan_against(tmp_path) -> None:  # noqa: ANN001
    from laketide.table.expire import expire_snapshots

    t = make_table(str(tmp_path / "wh"))
    history(t)
    times = {sid: t.snapshot(sid).time_millis for sid in t.snapshot_manager.snapshot_ids()}
    now = times[9] + 10_000
    retained = now - times[6]  # snapshots that were the latest after times[6] must stay
    # Oracle of the rule: a snapshot goes only while its successor is older than the window.
    first_kept = next(sid for sid in range(1, 10) if sid == 9 or times[sid + 1] >= now - retained)
    assert first_kept <= 6
    expired = expire_snapshots(t.store, retain_min=1, time_retained_ms=retained, now_ms=now)
    assert expired == first_kept - 1
    assert t.snapshot_manager.snapshot_ids() == list(range(first_kept, 10))
    assert files_on_disk(t) == referenced_by(t, list(range(first_kept, 10)))


def test_retention_options_drive_automatic_expiration_after_commits(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"), **{"write-only": "false", "snapshot.num-retained.min": "2",
                                            "snapshot.num-retained.max": "4"})
    for i in range(10):
        t.write(rows(range(i * 10, i * 10 + 3), "a"))
    assert t.snapshot_manager.snapshot_ids() == [7, 8, 9, 10]
    assert files_on_disk(t) == referenced_by(t, [7, 8, 9, 10])
    assert ids_of(t.read()) == sorted(i for k in range(10) for i in range(k * 10, k * 10 + 3))
    w = make_table(str(tmp_path / "wh2"), **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for i in range(3):
        w.write(rows(range(i, i + 1), "a"))
    assert w.snapshot_manager.snapshot_ids() == [1, 2, 3]  # write-only: no expiration at commit (as Java)


def test_bad_retention_is_rejected(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    with pytest.raises(InvalidOptionError):
        t.expire_snapshots(retain_min=5, retain_max=2)


def test_tags_and_consumers_keep_what_they_need(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    tag_dir = f"{t.path}/tag"
    os.makedirs(tag_dir)
    with open(f"{tag_dir}/tag-v2", "wb") as f:
        f.write(t.snapshot_manager.file_io.read_bytes(t.snapshot_manager.snapshot_path(2)))
    os.makedirs(f"{t.path}/consumer")
    with open(f"{t.path}/consumer/consumer-etl", "w") as f:
        json.dump({"nextSnapshot": 5}, f)
    assert t.expire_snapshots(retain_min=1, retain_max=1) == 4  # the consumer still needs snapshot 5
    assert t.snapshot_manager.snapshot_ids() == [5, 6, 7, 8, 9]
    os.remove(f"{t.path}/consumer/consumer-etl")
    assert t.expire_snapshots(retain_min=1, retain_max=1) == 4
    assert ids_of(t.read(tag="v2")) == expected[2]  # the tag's files survived
    tagged = t.tag_snapshot("v2")
    assert files_on_disk(t) - {f"{tag_dir}/tag-v2"} == referenced_by(t, [9]) | _tag_files(t, tagged)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).count == 0


def _tag_files(t: Table, tag: Snapshot) -> set[str]:
    scan = t.file_scan()
    paths = TablePathResolver(scan.path_factory)
    out = {paths.manifest(tag.base_manifest_list), paths.manifest(tag.delta_manifest_list)}
    out |= {paths.manifest(m.file_name) for m in scan.data_manifests(tag)}
    return out | {p for e in scan.plan(tag) for p in paths.data_paths(e)}


def _age(path: str, days: float) -> None:
    old = time.time() - days * 86_400
    os.utime(path, (old, old))


def test_orphan_cleanup_removes_old_unreferenced_files_only(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    referenced = files_on_disk(t)
    # Leftovers of a crashed job (old) and files of a commit in flight (fresh).
    crashed = t.new_write()
    crashed.write(rows(range(900, 910), "a"))
    crashed_msgs = crashed.prepare_commit()
    stale = files_on_disk(t) - referenced
    stray_manifest = f"{t.path}/manifest/manifest-0000-dead-0"
    stray_tmp = f"{t.snapshot_manager.snapshot_dir}/.snapshot-10.abc.tmp"
    for p in (stray_manifest, stray_tmp):
        with open(p, "wb") as f:
            f.write(b"x")
    stale |= {stray_manifest, stray_tmp}
    for p in stale:
        _age(p, 2)
    for p in referenced:
        _age(p, 3)  # old referenced files must survive
    in_flight = t.new_write()
    in_flight.write(rows(range(950, 955), "b"))
    in_flight_msgs = in_flight.prepare_commit()
    fresh = files_on_disk(t) - referenced - stale
    assert stale and fresh and crashed_msgs

    dry = t.remove_orphan_files(dry_run=True)
    assert set(dry.paths) == stale and dry.total_bytes > 0
    assert files_on_disk(t) == referenced | stale | fresh  # a dry run deletes nothing
    removed = t.remove_orphan_files()  # default: older than one day
    assert set(removed.paths) == stale
    assert files_on_disk(t) == referenced | fresh
    # The in-flight commit still lands whole.
    t.commit(in_flight_msgs)
    assert ids_of(t.read()) == sorted(expected[9] + list(range(950, 955)))
    assert t.remove_orphan_files(older_than=timedelta(0)).count == 0


def test_rollback_to_a_snapshot_then_commit_and_clean(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    before = files_on_disk(t)
    back = t.rollback_to(5)
    assert back.id == 5
    assert t.snapshot_manager.snapshot_ids() == [1, 2, 3, 4, 5]
    assert t.snapshot_manager.latest_snapshot_id() == 5
    assert ids_of(t.read()) == expected[5]
    assert t.write(rows(range(700, 703), "b")) == 6
    assert ids_of(t.read()) == sorted(expected[5] + [700, 701, 702])
    # Files of the removed snapshots are orphans now.
    leftovers = t.remove_orphan_files(older_than=timedelta(0))
    assert leftovers.count > 0 and set(leftovers.paths) <= before
    assert files_on_disk(t) == referenced_by(t, t.snapshot_manager.snapshot_ids())
    with pytest.raises(NoSuchSnapshotError):
        t.rollback_to(42)


def test_rollback_to_a_tag_whose_snapshot_expired(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    os.makedirs(f"{t.path}/tag")
    tag = json.loads(t.snapshot_manager.file_io.read_bytes(t.snapshot_manager.snapshot_path(3)))
    tag["tagCreateTime"] = [2026, 1, 1, 0, 0]
    with open(f"{t.path}/tag/tag-release", "w") as f:
        json.dump(tag, f)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.snapshot_ids() == [9]
    t.rollback_to("release")
    assert t.snapshot_manager.snapshot_ids() == [3]
    assert t.snapshot_manager.earliest_snapshot_id() == 3
    assert ids_of(t.read()) == expected[3]
    assert "tagCreateTime" not in json.loads(t.snapshot_manager.file_io.read_bytes(
        t.snapshot_manager.snapshot_path(3)))
    assert t.write(rows(range(800, 802), "a")) == 4


def test_files_a_killed_engine_job_left_in_staging_are_orphans(tmp_path) -> None:  # noqa: ANN001
    # Spark's native write stages files in the table directory before adopting them; a killed driver leaves them.
    t = make_table(str(tmp_path / "wh"))
    t.write(rows(range(5), "a"))
    staging = t.store.path_factory.new_staging_dir()
    os.makedirs(f"{staging}/{BUCKET_PART}")
    left = f"{staging}/{BUCKET_PART}/part-00000-x.zstd.parquet"
    with open(left, "wb") as f:
        f.write(b"PAR1")
    os.utime(left, (time.time() - 3600, time.time() - 3600))  # left an hour ago
    notes = tmp_path / "wh" / "db.db" / "t" / "notes"  # a foreign directory is still never entered
    notes.mkdir()
    (notes / "readme.txt").write_text("mine")
    result = t.remove_orphan_files(older_than=timedelta(minutes=1))
    assert [p.replace("file://", "") for p in result.paths] == [left]
    assert not os.path.exists(left) and (notes / "readme.txt").exists()
    assert ids_of(t.read()) == list(range(5))


BUCKET_PART = "__laketide_bucket=0"
