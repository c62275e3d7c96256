"""Tags: create / replace / rename / delete / list on Java's layout, tag expiry and automatic creation."""

from __future__ import annotations

import datetime as _dt
import json
import os

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def make_table(tmp_path, *, pk: bool = False, **options: str) -> Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    opts = {"bucket": "1", **({} if pk else {"bucket-key": "id"}), **options}
    return cat.create_table("db.t", SCHEMA, primary_key=["id"] if pk else None, options=opts)


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def tag_dir_listing(t: Table) -> list[str]:
    d = os.path.join(t.path, "tag")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_create_list_read_replace_rename_delete(tmp_path) -> None:
    t = make_table(tmp_path)
    t.write(rows(range(3)))
    t.write(rows(range(3, 6)))
    first = t.tags.create("v1", 1)
    latest = t.tags.create("v2")
    assert (first.snapshot_id, latest.snapshot_id) == (1, 2)
    assert [(x.name, x.snapshot_id) for x in t.tags.list()] == [("v1", 1), ("v2", 2)]
    # Java's layout: tag/tag-<name> holds the snapshot's JSON (no tag fields without a retention).
    with open(os.path.join(t.path, "tag", "tag-v1")) as f:
        on_disk = json.load(f)
    with open(os.path.join(t.path, "snapshot", "snapshot-1")) as f:
        assert on_disk == json.load(f)
    assert ids(t.read(tag="v1")) == [0, 1, 2]
    t.tags.replace("v1", 2)
    assert ids(t.read(tag="v1")) == list(range(6))
    t.tags.rename("v1", "v1b")
    assert tag_dir_listing(t) == ["tag-v1b", "tag-v2"]
    t.tags.delete("v1b")
    assert [x.name for x in t.tags.list()] == ["v2"]


def test_time_retained_fields_and_expiry(tmp_path) -> None:
    t = make_table(tmp_path)
    t.write(rows(range(3)))
    tag = t.tags.create("short", time_retained=_dt.timedelta(hours=1))
    keep = t.tags.create("forever")
    with open(os.path.join(t.path, "tag", "tag-short")) as f:
        d = json.load(f)
    assert d["tagTimeRetained"] == 3600.0 and len(d["tagCreateTime"]) >= 5
    assert tag.create_time is not None and keep.time_retained is None
    assert t.tags.get("short").time_retained == _dt.timedelta(hours=1)
    assert t.tags.expire(now=_dt.datetime.now()) == []
    assert t.tags.expire(now=_dt.datetime.now() + _dt.timedelta(hours=2)) == ["short"]
    assert [x.name for x in t.tags.list()] == ["forever"]


def test_default_time_retained_option(tmp_path) -> None:
    t = make_table(tmp_path, **{"tag.default-time-retained": "1 d"})
    t.write(rows(range(3)))
    assert t.tags.create("a").time_retained == _dt.timedelta(days=1)


@pytest.mark.parametrize("bad", ["", "  ", "a/b", "..", "../x", "x\\y", " a", "a\n"])
def test_bad_names_are_refused_and_change_nothing(tmp_path, bad: str) -> None:
    t = make_table(tmp_path)
    t.write(rows(range(3)))
    with pytest.raises(InvalidOptionError, match="db.t"):
        t.tags.create(bad)
    assert tag_dir_listing(t) == []
    assert not os.path.exists(os.path.join(tmp_path, "wh", "db.db", "x"))


def test_existing_missing_and_bad_snapshot(tmp_path) -> None:
    t = make_table(tmp_path)
    with pytest.raises(NoSuchSnapshotError, match="db.t"):
        t.tags.create("empty")  # no snapshot yet
    t.write(rows(range(3)))
    t.tags.create("a")
    tag_a = os.path.join(t.path, "tag", "tag-a")
    with open(tag_a) as f:
        before = f.read()
    with pytest.raises(InvalidOptionError, match="'a' already exists"):
        t.tags.create("a")
    assert t.tags.create("a", ignore_if_exists=True).name == "a"
    with pytest.raises(NoSuchSnapshotError, match="snapshot 9"):
        t.tags.create("b", 9)
    with pytest.raises(NoSuchSnapshotError, match="'nope'"):
        t.tags.delete("nope")
    with pytest.raises(NoSuchSnapshotError, match="'nope'"):
        t.tags.replace("nope")
    t.write(rows(range(3, 4)))
    t.tags.create("b")
    with pytest.raises(InvalidOptionError, match="'b' already exists"):
        t.tags.rename("a", "b")
    with open(tag_a) as f:
        assert f.read() == before
    assert tag_dir_listing(t) == ["tag-a", "tag-b"]


def test_deleting_tag_of_expired_snapshot_removes_only_its_files(tmp_path) -> None:
    t = make_table(tmp_path, pk=True, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(range(3)))
    t.tags.create("old")
    t.write(rows(range(0, 3)))  # same keys: the compaction replaces the tagged files
    t.compact(full=True)
    t.write(rows(range(10, 12)))
    assert t.snapshot_manager.snapshot_ids() == [t.snapshot_manager.latest_snapshot_id()]
    assert ids(t.read(tag="old")) == [0, 1, 2]  # the tag kept its files through expiration
    t.tags.delete("old")
    assert ids(t.read()) == [0, 1, 2, 10, 11]
    # Nothing is left that no snapshot references: orphan clean-up finds nothing.
    assert t.remove_orphan_files(older_than=_dt.timedelta(0), dry_run=True).count == 0


def test_pypaimon_style_tag_with_create_time_is_read(tmp_path) -> None:
    t = make_table(tmp_path)
    t.write(rows(range(3)))
    with open(os.path.join(t.path, "snapshot", "snapshot-1")) as f:
        d = json.load(f)
    d["tagCreateTime"] = [2024, 5, 1, 10, 30, 15, 123000000]
    d["tagTimeRetained"] = 86400.000000000
    os.makedirs(os.path.join(t.path, "tag"), exist_ok=True)
    with open(os.path.join(t.path, "tag", "tag-java"), "w") as f:
        json.dump(d, f)
    tag = t.tags.get("java")
    assert tag.create_time == _dt.datetime(2024, 5, 1, 10, 30, 15, 123000)
    assert tag.time_retained == _dt.timedelta(days=1)
    assert ids(t.read(tag="java")) == [0, 1, 2]
    assert t.tags.expire() == ["java"]


def test_automatic_process_time_tags(tmp_path) -> None:
    t = make_table(tmp_path, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                                "tag.num-retained-max": "2"})
    t.write(rows(range(3)))
    # The first snapshot tags the previous full hour (Paimon: TagAutoCreation with no tag yet).
    s1 = t.snapshot(1)
    wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=s1.time_millis)
    expected = (wall.replace(minute=0, second=0, microsecond=0) - _dt.timedelta(hours=1)).strftime("%Y-%m-%d %H")
    assert [(x.name, x.snapshot_id) for x in t.tags.list()] == [(expected, 1)]
    t.write(rows(range(3, 5)))  # same hour: no new tag
    assert len(t.tags.list()) == 1
    # Pretend two earlier auto tags exist: num-retained-max keeps the two newest auto tags only.
    base = _dt.datetime.strptime(expected, "%Y-%m-%d %H")
    for h in (3, 2):
        t.tags.create((base - _dt.timedelta(hours=h)).strftime("%Y-%m-%d %H"), 1)
    t.tags.create("manual", 1)
    t.write(rows(range(5, 6)))
    names = [x.name for x in t.tags.list()]
    assert "manual" in names and expected in names
    assert len([n for n in names if n != "manual"]) == 2


def test_automatic_batch_tag(tmp_path) -> None:
    t = make_table(tmp_path, **{"tag.automatic-creation": "batch"})
    t.write(rows(range(3)))
    t.write(rows(range(3, 5)))
    tags = t.tags.list()
    assert len(tags) == 1 and tags[0].name.startswith("batch-write-") and tags[0].snapshot_id == 2


def test_watermark_auto_creation_is_refused(tmp_path) -> None:
    from laketide.exceptions import UnsupportedOptionError

    with pytest.raises(UnsupportedOptionError, match="tag.automatic-creation"):
        make_table(tmp_path, **{"tag.automatic-creation": "watermark"})


def test_java_tag_names_laketide_would_not_create_still_list(tmp_path) -> None:
    t = make_table(tmp_path)
    t.write(rows(range(3)))
    with open(os.path.join(t.path, "snapshot", "snapshot-1"), "rb") as f:
        data = f.read()
    os.makedirs(os.path.join(t.path, "tag"), exist_ok=True)
    with open(os.path.join(t.path, "tag", "tag-v1..2"), "wb") as f:
        f.write(data)
    assert [x.name for x in t.tags.list()] == ["v1..2"]


def test_process_time_tags_follow_javas_period_and_delay(tmp_path) -> None:
    from laketide.table.tags import auto_tag_after_commit

    t = make_table(tmp_path, **{"write-only": "true"})  # no automatic run at commit: this test drives it
    for i in range(3):
        t.write(rows(range(i, i + 1)))
    # Give the snapshots commit times of our choosing (epoch millis of UTC wall-clock times, local-time-zone UTC).
    times = {1: "2024-05-01 10:30", 2: "2024-05-01 11:10", 3: "2024-05-01 12:05"}
    for sid, text in times.items():
        path = os.path.join(t.path, "snapshot", f"snapshot-{sid}")
        with open(path) as f:
            d = json.load(f)
        wall = _dt.datetime.strptime(text, "%Y-%m-%d %H:%M")
        d["timeMillis"] = (wall - _dt.datetime(1970, 1, 1)) // _dt.timedelta(milliseconds=1)
        with open(path, "w") as f:
            json.dump(d, f)
    t.alter(laketide.SetOption("tag.automatic-creation", "process-time"),
            laketide.SetOption("tag.creation-period", "hourly"), laketide.SetOption("tag.creation-delay", "10 min"))
    auto_tag_after_commit(t.store)
    # The first snapshot tags the previous full hour; an hour's tag needs a snapshot at least `delay` after the hour
    # that follows it ends (Paimon: TagAutoCreation).
    assert [(x.name, x.snapshot_id) for x in t.tags.list()] == [("2024-05-01 09", 1), ("2024-05-01 10", 2)]
    auto_tag_after_commit(t.store)  # idempotent
    assert len(t.tags.list()) == 2
