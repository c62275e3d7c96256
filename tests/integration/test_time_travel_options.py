"""Time travel and incremental reads by option: scan.version, scan.timestamp, incremental-between (ids and tags),
incremental-between-timestamp, each checked against reads by explicit snapshot."""

from __future__ import annotations

import datetime as _dt

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


@pytest.fixture()
def t(tmp_path) -> Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 3)))
    return t


def utc_string(millis: int) -> str:
    return (_dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=millis)).strftime("%Y-%m-%d %H:%M:%S.%f")


def test_scan_version_and_timestamp(t: Table) -> None:
    t.tags.create("two", 2)
    assert ids(t.copy({"scan.version": "two"}).read()) == ids(t.read(snapshot_id=2))
    assert ids(t.copy({"scan.version": "3"}).read()) == ids(t.read(snapshot_id=3))
    ts = utc_string(t.snapshot(3).time_millis)
    assert ids(t.copy({"scan.timestamp": ts}).read()) == ids(t.read(snapshot_id=3))
    assert ids(t.copy({"scan.version": ts}).read()) == ids(t.read(snapshot_id=3))
    assert ids(t.copy({"scan.snapshot-id": "1"}).read()) == [0, 1, 2]
    with pytest.raises(InvalidOptionError, match="at most one"):
        t.copy({"scan.version": "two", "scan.snapshot-id": "1"}).read()
    with pytest.raises(InvalidOptionError, match="scan.timestamp 'yesterday'"):
        t.copy({"scan.timestamp": "yesterday"}).read()
    with pytest.raises(NoSuchSnapshotError, match="no snapshot at or before"):
        t.copy({"scan.timestamp": "1990-01-01"}).read()


def test_incremental_between_ids_tags_and_timestamps(t: Table) -> None:
    assert ids(t.copy({"incremental-between": "1,3"}).read()) == [10, 11, 12, 20, 21, 22]
    changes = t.copy({"incremental-between": "1,3"}).read_changes()
    assert set(changes.column("rowkind").to_pylist()) == {"+I"} and ids(changes) == [10, 11, 12, 20, 21, 22]
    t.tags.create("a", 2)
    t.tags.create("b", 4)
    assert ids(t.copy({"incremental-between": "a,b"}).read()) == [20, 21, 22, 30, 31, 32]
    t0, t2 = t.snapshot(1).time_millis, t.snapshot(2).time_millis
    assert ids(t.copy({"incremental-between-timestamp": f"{t0},{t2}"}).read()) == [10, 11, 12]
    with pytest.raises(InvalidOptionError, match="'start,end'"):
        t.copy({"incremental-between": "1"}).read()
    with pytest.raises(NoSuchSnapshotError, match="'nope'"):
        t.copy({"incremental-between": "nope,3"}).read()
    with pytest.raises(InvalidOptionError, match="ends"):
        t.copy({"incremental-between": "3,1"}).read()


def test_incremental_between_tags_of_expired_snapshots(t: Table) -> None:
    t.tags.create("a", 1)
    t.tags.create("b", 3)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.snapshot_ids() == [4]
    # The snapshots between the tags are gone: the diff of the tags' files gives the same rows.
    assert ids(t.copy({"incremental-between": "a,b"}).read()) == [10, 11, 12, 20, 21, 22]


def test_history_is_newest_first(t: Table) -> None:
    h = t.history()
    assert h["snapshot_id"].to_pylist() == [4, 3, 2, 1]
    assert set(h["commit_kind"].to_pylist()) == {"APPEND"}
    assert t.history(limit=2)["snapshot_id"].to_pylist() == [4, 3]
    assert h.schema == t.history(limit=0).schema and t.history(limit=0).num_rows == 0


def test_incremental_between_scan_modes(t: Table) -> None:
    assert ids(t.copy({"incremental-between": "1,3", "incremental-between-scan-mode": "diff"}).read()) == [
        10, 11, 12, 20, 21, 22]
    assert ids(t.copy({"incremental-between": "1,3", "incremental-between-scan-mode": "delta"}).read()) == [
        10, 11, 12, 20, 21, 22]
    # No changelog-producer, no changelog files: Java's changelog mode reads nothing (test_incremental_scan_mode).
    assert ids(t.copy({"incremental-between": "1,3", "incremental-between-scan-mode": "changelog"}).read()) == []
    with pytest.raises(InvalidOptionError, match="incremental-between-scan-mode"):
        t.copy({"incremental-between-scan-mode": "sideways"})
    t.tags.create("one", 1)
    t.expire_snapshots(retain_min=1, retain_max=1)
    with pytest.raises(NoSuchSnapshotError, match="expired"):
        t.copy({"incremental-between": "one,4", "incremental-between-scan-mode": "delta"}).read()


def test_scan_watermark(t: Table) -> None:
    # laketide writes no watermark; a Java writer does: give snapshots 2 and 3 one, as Java's JSON carries it.
    import json
    import os

    for sid, wm in ((2, 1000), (3, 2000)):
        path = os.path.join(t.path, "snapshot", f"snapshot-{sid}")
        with open(path) as f:
            d = json.load(f)
        d["watermark"] = wm
        with open(path, "w") as f:
            json.dump(d, f)
    assert ids(t.copy({"scan.watermark": "1500"}).read()) == ids(t.read(snapshot_id=3))
    assert ids(t.copy({"scan.watermark": "1000"}).read()) == ids(t.read(snapshot_id=2))
    with pytest.raises(NoSuchSnapshotError, match="watermark"):
        t.copy({"scan.watermark": "5000"}).read()


def test_copy_takes_read_options_only(t: Table) -> None:
    with pytest.raises(InvalidOptionError, match="'bucket'"):
        t.copy({"bucket": "4"})
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id"):
        t.copy({"scan.snapshot-id": "x"})
    assert t.schema.options.get("scan.snapshot-id") is None  # copy writes nothing
