"""Commands that change tables: create-table, write (import), compact, expire, clean-orphans, rollback."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

import laketide
from tests.cli.conftest import assert_one_line_error, run_cli


def test_create_table_from_spec_and_from_parquet(tmp_path: Path, warehouse: str) -> None:
    laketide.load_catalog(warehouse).create_database("db")
    r = run_cli("--warehouse", warehouse, "create-table", "db.events",
                "id BIGINT NOT NULL, v STRING, amount DECIMAL(10, 2), dt STRING",
                "--primary-key", "id,dt", "--partition-by", "dt", "--option", "bucket=4", "--json")
    assert r.json()["table"] == "db.events"
    t = laketide.load_catalog(warehouse).table("db.events")
    assert t.primary_keys == ("id", "dt") and t.partition_keys == ("dt",)
    assert t.schema.options == {"bucket": "4"}
    assert str(t.schema.field("amount").type) == "DECIMAL(10, 2)"
    src = tmp_path / "like.parquet"
    pq.write_table(pa.table({"k": pa.array([1], pa.int32()), "name": ["x"]}), src)
    run_cli("--warehouse", warehouse, "create-table", "db.copy", "--like", str(src), "--json").json()
    assert laketide.load_catalog(warehouse).table("db.copy").arrow_schema.names == ["k", "name"]
    # the same name again: refused, unless --if-not-exists
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.copy", "--like", str(src)),
                          "already exists")
    assert run_cli("--warehouse", warehouse, "create-table", "db.copy", "--like", str(src),
                   "--if-not-exists").code == 0
    # bad specs name what is wrong and create nothing
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.bad", "id BIGNT"), "BIGNT")
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.bad", "id INT",
                                  "--primary-key", "nope"), "nope")
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.bad", "id INT", "--option",
                                  "bucket"), "key=value")
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.bad"), "column spec")
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.bad", "--like",
                                  str(tmp_path / "missing.parquet")), "missing.parquet")
    assert_one_line_error(run_cli("--warehouse", warehouse, "create-table", "db.a/b", "id INT"), "'a/b'")
    assert laketide.load_catalog(warehouse).list_tables("db") == ["copy", "events"]


def test_write_imports_parquet_csv_json_in_one_commit(tmp_path: Path, warehouse: str) -> None:
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"],
                         options={"bucket": "2"})
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["p1", "p2", "p3"]}), tmp_path / "a.parquet")
    pcsv.write_csv(pa.table({"id": [3, 4], "v": ["c3", "c4"]}), tmp_path / "b.csv")
    (tmp_path / "c.jsonl").write_text('{"id": 5, "v": "j5"}\n{"id": 1, "v": "j1"}\n')
    r = run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "a.parquet"), str(tmp_path / "b.csv"),
                str(tmp_path / "c.jsonl"), "--json").json()
    assert r["files"] == 3 and r["rows"] == 7 and r["snapshot_id"] is not None
    assert r["bytes"] == sum(os.path.getsize(tmp_path / n) for n in ("a.parquet", "b.csv", "c.jsonl"))
    rows = t.read()
    got = dict(zip(rows["id"].to_pylist(), rows["v"].to_pylist()))
    assert got == {1: "j1", 2: "p2", 3: "c3", 4: "c4", 5: "j5"}  # later files win, as rows of one write
    commits = [s for s in t.snapshot_manager.snapshots() if s.commit_kind.value == "APPEND"]
    assert len(commits) == 1
    # overwrite mode replaces the table
    run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "b.csv"), "--mode", "overwrite", "--json").json()
    assert sorted(t.read()["id"].to_pylist()) == [3, 4]
    # a broken file in the middle: nothing is committed, nothing is left behind
    (tmp_path / "bad.csv").write_text("id,v\nnot-a-number,x\n")
    before = t.latest_snapshot().id
    r2 = run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "a.parquet"), str(tmp_path / "bad.csv"))
    assert_one_line_error(r2, "bad.csv")
    assert t.latest_snapshot().id == before and sorted(t.read()["id"].to_pylist()) == [3, 4]
    assert t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).count == 0
    assert_one_line_error(run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "none.parquet")),
                          "none.parquet")
    (tmp_path / "x.txt").write_text("1")
    assert_one_line_error(run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "x.txt")), "--format")
    # empty input file: nothing to commit
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())}),
                   tmp_path / "empty.parquet")
    r3 = run_cli("--warehouse", warehouse, "write", "db.t", str(tmp_path / "empty.parquet"), "--json").json()
    assert r3["rows"] == 0 and r3["snapshot_id"] is None
    assert t.latest_snapshot().id == before


def test_console_script(warehouse: str, pk_table: laketide.Table) -> None:
    """The installed ``laketide`` entry point (``laketide.cli:main``) runs the same commands."""
    script = Path(sys.executable).parent / "laketide"
    p = subprocess.run([str(script), "--warehouse", warehouse, "tables", "db", "--json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == ["t"]


def test_compact_expire_orphans_rollback(warehouse: str, pk_table: laketide.Table) -> None:
    t = pk_table
    before = t.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    r = run_cli("--warehouse", warehouse, "compact", "db.t", "--full", "--partition", "dt=a", "--json").json()
    assert r["snapshot_id"] == 4
    # partition dt=a: two buckets of three level-0 files each, merged into one file per bucket
    assert (r["files_rewritten"], r["files_written"]) == (6, 2) and r["records_rewritten"] > 0
    files = run_cli("--warehouse", warehouse, "files", "db.t", "--json").json()
    assert {f["level"] for f in files if f["partition"] == "dt=a"} != {0}
    assert {f["level"] for f in files if f["partition"] == "dt=b"} == {0}
    assert run_cli("--warehouse", warehouse, "compact", "db.t", "--full", "--json").json()["snapshot_id"] == 5
    assert t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(before)
    # a leftover file that no snapshot references, old enough to count as an orphan
    orphan = Path(t.path) / "dt=a" / "bucket-0" / "data-leftover.parquet"
    orphan.write_bytes(b"x" * 10)
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    dry = run_cli("--warehouse", warehouse, "clean-orphans", "db.t", "--dry-run", "--json").json()
    assert dry["count"] == 1 and dry["paths"][0].endswith("data-leftover.parquet") and orphan.exists()
    done = run_cli("--warehouse", warehouse, "clean-orphans", "db.t", "--json").json()
    assert done["count"] == 1 and not orphan.exists()
    assert run_cli("--warehouse", warehouse, "clean-orphans", "db.t", "--json").json()["count"] == 0
    ids = t.snapshot_manager.snapshot_ids()
    r = run_cli("--warehouse", warehouse, "expire", "db.t", "--retain-min", "2", "--retain-max", "2",
                "--older-than", "0 ms", "--json").json()
    assert r["expired"] == len(ids) - 2
    assert [s["snapshot_id"] for s in run_cli("--warehouse", warehouse, "snapshots", "db.t", "--json").json()] \
        == ids[-2:]
    assert t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(before)
    r = run_cli("--warehouse", warehouse, "rollback", "db.t", str(ids[-2]), "--json").json()
    assert r["snapshot_id"] == ids[-2] and t.latest_snapshot().id == ids[-2]
    assert_one_line_error(run_cli("--warehouse", warehouse, "rollback", "db.t", "1"), "1")
    assert_one_line_error(run_cli("--warehouse", warehouse, "expire", "db.t", "--older-than", "soon"), "soon")
    assert t.latest_snapshot().id == ids[-2]


def test_two_processes_import_at_once(tmp_path: Path, warehouse: str) -> None:
    """Two ``laketide write`` processes on one table: both commits land, as two snapshots."""
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("src", pa.string())]))
    for name in ("a", "b"):
        pq.write_table(pa.table({"id": pa.array(range(500), pa.int64()), "src": [name] * 500}),
                       tmp_path / f"{name}.parquet")
    procs = [subprocess.Popen([sys.executable, "-m", "laketide.cli", "--warehouse", warehouse, "write", "db.t",
                               str(tmp_path / f"{name}.parquet"), "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    ids = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        ids.append(json.loads(out)["snapshot_id"])
    assert sorted(ids) == [1, 2]
    rows = t.read()
    assert rows.num_rows == 1000 and sorted(set(rows["src"].to_pylist())) == ["a", "b"]
