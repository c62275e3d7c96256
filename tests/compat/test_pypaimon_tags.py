"""Tags cross-checked with pypaimon both ways: each reads the tags the other created, with their rows."""

from __future__ import annotations

import datetime as _dt

import pyarrow as pa

import laketide
from tests.compat.pypaimon_client import PyPaimon

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


def test_pypaimon_reads_laketide_tags(tmp_path, pypaimon: PyPaimon) -> None:
    wh = tmp_path / "wh"
    cat = laketide.load_catalog(warehouse=str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(rows(range(5)))
    t.write(rows(range(5, 8)))
    t.tags.create("first", 1)
    t.tags.create("kept", time_retained=_dt.timedelta(days=2))
    seen = pypaimon.list_tags(wh, "db.t")
    assert seen == {"first": {"snapshot_id": 1, "tag_time_retained_s": None},
                    "kept": {"snapshot_id": 2, "tag_time_retained_s": 172800.0}}
    assert ids(pypaimon.read(wh, "db.t", tag="first")) == list(range(5))
    assert ids(pypaimon.read(wh, "db.t", tag="kept")) == list(range(8))


def test_laketide_reads_pypaimon_tags(tmp_path, pypaimon: PyPaimon) -> None:
    wh = tmp_path / "wh"
    pypaimon.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    pypaimon.write(wh, "db.t", rows(range(4)))
    pypaimon.write(wh, "db.t", rows(range(4, 6)))
    pypaimon.create_tag(wh, "db.t", "p1", snapshot_id=1)
    pypaimon.create_tag(wh, "db.t", "p2", time_retained="1d")
    t = laketide.load_catalog(warehouse=str(wh)).table("db.t")
    got = {x.name: (x.snapshot_id, x.time_retained) for x in t.tags.list()}
    assert got == {"p1": (1, None), "p2": (2, _dt.timedelta(days=1))}
    assert t.tags.get("p2").create_time is not None
    assert ids(t.read(tag="p1")) == list(range(4))
    assert ids(t.read(tag="p2")) == list(range(6))


def test_pypaimon_reads_laketide_branch_fast_forwarded(tmp_path, pypaimon: PyPaimon) -> None:
    wh = tmp_path / "wh"
    cat = laketide.load_catalog(warehouse=str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(rows(range(5)))
    t.tags.create("base")
    t.write(rows(range(5, 7)))  # on main only: the fast-forward drops it
    b = t.branches.create("b1", tag="base")
    b.write(rows(range(100, 103)))
    b.write(rows(range(0, 2)))  # updates keys of the tagged snapshot
    t.branches.fast_forward("b1")
    expected = list(range(5)) + [100, 101, 102]
    assert ids(t.read()) == expected
    assert ids(pypaimon.read(wh, "db.t")) == expected
    for sid in t.snapshot_manager.snapshot_ids():  # main's whole history reads in pypaimon
        assert ids(pypaimon.read(wh, "db.t", snapshot_id=sid)) == ids(t.read(snapshot_id=sid))
