"""``laketide doctor``: one fixture table per planted problem, and a healthy table that stays silent."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide
from tests.cli.conftest import run_cli

APPEND = pa.schema([("id", pa.int64()), ("c", pa.string())])


def _doctor(warehouse: str, table: str, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    r = run_cli("--warehouse", warehouse, "doctor", table, "--json", *extra)
    assert r.code in (0, 3), r.err
    doc = json.loads(r.out)
    assert doc["severe"] == sum(f["severity"] == "severe" for f in doc["findings"])
    assert (r.code == 3) == (doc["severe"] > 0 or ("--fail-on" in extra and bool(doc["findings"])))
    return r.code, doc["findings"]


def _rows(n: int, start: int = 0, c: str | None = None) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "c": [c or f"c{i}" for i in range(start, start + n)]})


@pytest.fixture
def cat(warehouse: str) -> laketide.Catalog:
    c = laketide.load_catalog(warehouse)
    c.create_database("db")
    return c


def test_healthy_table_has_no_findings(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.ok", APPEND, primary_key=["id"], options={"bucket": "2"})
    for i in range(3):
        t.write(_rows(500, i * 100))
    a = cat.create_table("db.ok_append", APPEND)
    a.write(_rows(100))
    for name in ("db.ok", "db.ok_append"):
        code, findings = _doctor(warehouse, name)
        assert (code, findings) == (0, [])
    text = run_cli("--warehouse", warehouse, "doctor", "db.ok")
    assert text.code == 0 and "no findings" in text.out


def test_small_files(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.small", APPEND, options={"write-only": "true"})
    for i in range(12):
        t.write(_rows(3, i * 3))
    code, findings = _doctor(warehouse, "db.small")
    [f] = findings
    assert f["check"] == "small-files" and f["value"] == 12 and f["threshold"] == 10
    assert "laketide compact db.small" in f["fix"] and code == 0
    # warnings fail the run only when asked to
    assert _doctor(warehouse, "db.small", "--fail-on", "warning")[0] == 3


def test_too_many_sorted_runs_is_severe(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.runs", APPEND, primary_key=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(8):
        t.write(_rows(10, i * 5))
    code, findings = _doctor(warehouse, "db.runs")
    [f] = [f for f in findings if f["check"] == "sorted-runs"]
    assert f["severity"] == "severe" and f["value"] == 8 and f["threshold"] == 8
    assert "num-sorted-run" in f["message"] and "compact" in f["fix"] and code == 3
    t.compact(full=True)
    assert _doctor(warehouse, "db.runs") == (0, [])


def test_skewed_buckets(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.skew", APPEND, options={"bucket": "4", "bucket-key": "c"})
    t.write(pa.concat_tables([_rows(1900, 0, c="hot"), _rows(60, 5000)]))
    code, findings = _doctor(warehouse, "db.skew")
    [f] = findings
    assert f["check"] == "bucket-skew" and f["value"] >= 4 and f["threshold"] == 4
    assert "bucket-key" in f["fix"] and code == 0


def test_bucket_far_above_target_file_size(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.big", APPEND, primary_key=["id"], options={"bucket": "1", "target-file-size": "4 kb"})
    t.write(_rows(20000))
    code, findings = _doctor(warehouse, "db.big")
    [f] = [f for f in findings if f["check"] == "bucket-size"]
    assert f["value"] > 8 and "bucket" in f["fix"]


def test_dynamic_buckets_at_max_buckets(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.dyn", APPEND, primary_key=["id"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "10", "dynamic-bucket.max-buckets": "3"})
    t.write(_rows(100))
    code, findings = _doctor(warehouse, "db.dyn")
    [f] = findings
    assert f["check"] == "dynamic-buckets" and f["severity"] == "severe" and f["value"] == 3 and code == 3
    assert "dynamic-bucket.max-buckets" in f["fix"]


def test_unexpired_snapshots(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.snaps", APPEND, options={
        "write-only": "true", "snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"})
    for i in range(6):
        t.write(_rows(100, i * 100))
    code, findings = _doctor(warehouse, "db.snaps")
    [f] = findings
    assert f["check"] == "unexpired-snapshots" and f["value"] == 3 and "laketide expire db.snaps" in f["fix"]
    assert run_cli("--warehouse", warehouse, "expire", "db.snaps").code == 0
    assert _doctor(warehouse, "db.snaps") == (0, [])


def test_orphan_looking_files(warehouse: str, cat: laketide.Catalog) -> None:
    t = cat.create_table("db.orph", APPEND)
    t.write(_rows(10))
    leftover = Path(t.path) / "bucket-0" / "data-crashed-writer.parquet"
    leftover.write_bytes(b"0" * 100)
    assert _doctor(warehouse, "db.orph") == (0, [])  # too young to be an orphan yet
    old = time.time() - 2 * 86400
    os.utime(leftover, (old, old))
    _, findings = _doctor(warehouse, "db.orph")
    [f] = findings
    assert f["check"] == "orphan-files" and f["value"] == 1 and "data-crashed-writer" in f["message"]
    assert "clean-orphans" in f["fix"] and leftover.exists()  # the doctor only reads


def test_deletion_vector_covering_a_file(tmp_path: Path, compat_dir: Path) -> None:
    wh = tmp_path / "java"
    shutil.copytree(compat_dir / "tables" / "pk_with_bitmap_dv.db", wh / "db.db")
    assert _doctor(str(wh), "db.pk_with_bitmap_dv")[1] == []  # 25% < the default 50%
    _, findings = _doctor(str(wh), "db.pk_with_bitmap_dv", "--dv-threshold", "0.2")
    [f] = findings
    assert f["check"] == "deletion-vectors" and f["value"] == 0.25 and "--full" in f["fix"]


@pytest.mark.parametrize("sequence_field", [False, True])
def test_interleaved_writers_without_sequence_field(warehouse: str, cat: laketide.Catalog,
                                                    sequence_field: bool) -> None:
    options = {"bucket": "1"} | ({"sequence.field": "seq"} if sequence_field else {})
    schema = pa.schema([("id", pa.int64()), ("c", pa.string()), ("seq", pa.int64())])
    t = cat.create_table("db.two", schema, primary_key=["id"], options=options)
    for i, user in enumerate(["writer-a", "writer-b", "writer-a", "writer-b"]):
        w = t.new_write()
        w.write(pa.table({"id": pa.array([i], pa.int64()), "c": [user], "seq": pa.array([i], pa.int64())}))
        t.commit(w.prepare_commit(), commit_user=user, commit_identifier=i)
        w.close()
    code, findings = _doctor(warehouse, "db.two")
    if sequence_field:
        assert (code, findings) == (0, [])
        return
    [f] = findings
    assert f["check"] == "cross-writer-ordering" and f["severity"] == "warning" and code == 0
    assert "5872" in f["message"] and "sequence.field" in f["fix"]
