"""``laketide xray``: levels, sorted runs and timeline as a picture, text and JSON."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from tests.cli.conftest import assert_one_line_error, run_cli


@pytest.fixture
def leveled(warehouse: str) -> laketide.Table:
    """db.lsm: one bucket holding a top-level run (a full compaction) and three newer level-0 runs."""
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.lsm", pa.schema([("k", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
                         primary_key=["k", "p"], partition_keys=["p"],
                         options={"bucket": "2", "write-only": "true"})
    for i in range(4):
        keys = list(range(i * 50, i * 50 + 200))
        t.write(pa.table({"k": pa.array(keys, pa.int64()), "v": [f"w{i}"] * 200, "p": ["x"] * 100 + ["y"] * 100}))
    t.compact(full=True)
    for i in range(3):
        keys = list(range(i * 30, i * 30 + 60))
        t.write(pa.table({"k": pa.array(keys, pa.int64()), "v": [f"n{i}"] * 60, "p": ["x"] * 60}))
    return t


def test_png_svg_text_and_json(tmp_path: Path, warehouse: str, leveled: laketide.Table) -> None:
    import matplotlib.image

    png = tmp_path / "lsm.png"
    r = run_cli("--warehouse", warehouse, "xray", "db.lsm", "--partition", "p=x", "--bucket", "0", "--out", str(png))
    assert r.code == 0, r.err
    assert png.stat().st_size > 10_000
    pixels = matplotlib.image.imread(str(png))
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    svg = tmp_path / "lsm.svg"
    assert run_cli("--warehouse", warehouse, "xray", "db.lsm", "--out", str(svg)).code == 0
    assert "<svg" in svg.read_text()[:2000]

    live = leveled.file_scan().plan(leveled.latest_snapshot())
    codec = leveled.file_scan().partition_codec
    bucket_files = [e.file for e in live if e.bucket == 0 and codec.as_dict(e.partition) == {"p": "x"}]
    assert len({f.level for f in bucket_files}) >= 2  # several levels
    for f in bucket_files:  # the text rendering lists every file of the bucket with its ranges
        line = next(line for line in r.out.splitlines() if f.file_name in line)
        assert f"seq [{f.min_sequence_number} .. {f.max_sequence_number}]" in line
        assert f"{f.file_size:,} B" in line
    other = [e.file.file_name for e in live if not (e.bucket == 0 and codec.as_dict(e.partition) == {"p": "x"})]
    assert other and not any(name in r.out for name in other)  # filtered to the one bucket

    x = run_cli("--warehouse", warehouse, "xray", "db.lsm", "--partition", "p=x", "--bucket", "0", "--json").json()
    [bucket] = x["buckets"]
    runs = bucket["runs"]
    assert sorted(f["file_name"] for run in runs for f in run["files"]) == sorted(f.file_name for f in bucket_files)
    level0 = [run for run in runs if run["level"] == 0]
    assert len(level0) == sum(1 for f in bucket_files if f.level == 0) == 3
    assert all(len(run["files"]) == 1 for run in level0)
    # level-0 runs newest first, then the levels upward
    seqs = [run["files"][0]["max_sequence_number"] for run in level0]
    assert seqs == sorted(seqs, reverse=True)
    assert [run["level"] for run in runs] == sorted(run["level"] for run in runs)
    upper = [run for run in runs if run["level"] > 0]
    for run in upper:  # one run: files ordered and not overlapping by key
        keys = [(int(f["min_key"]), int(f["max_key"])) for f in run["files"]]
        assert all(a[1] < b[0] for a, b in zip(keys, keys[1:]))
    kinds = [p["commit_kind"] for p in x["timeline"]]
    assert kinds.count("COMPACT") >= 1 and kinds.count("APPEND") == 7
    compact = next(p for p in x["timeline"] if p["commit_kind"] == "COMPACT")
    assert compact["records_deleted"] > 0 and compact["files_deleted"] > 0


def test_deletion_vector_fill_of_a_java_table(compat_dir: Path) -> None:
    """Java wrote pk_with_bitmap_dv with a deletion vector over 2 of the 8 rows of its file."""
    x = run_cli("--warehouse", str(compat_dir / "tables"), "xray", "pk_with_bitmap_dv.pk_with_bitmap_dv",
                "--json").json()
    files = [f for b in x["buckets"] for run in b["runs"] for f in run["files"]]
    assert [(f["row_count"], f["deleted_rows_dv"], f["dv_fill"]) for f in files] == [(8, 2, 0.25)]


def test_bad_xray_input(tmp_path: Path, warehouse: str, leveled: laketide.Table) -> None:
    assert_one_line_error(run_cli("--warehouse", warehouse, "xray", "db.lsm", "--out", str(tmp_path / "x.jpg")),
                          ".png or .svg")
    assert_one_line_error(run_cli("--warehouse", warehouse, "xray", "db.lsm", "--out",
                                  str(tmp_path / "no" / "x.png")), "does not exist")
    assert_one_line_error(run_cli("--warehouse", warehouse, "xray", "db.lsm", "--partition", "q=1"), "q")
    empty = run_cli("--warehouse", warehouse, "xray", "db.lsm", "--bucket", "7", "--json").json()
    assert empty["buckets"] == [] and len(empty["timeline"]) == 8


def test_append_table_xray(tmp_path: Path, warehouse: str) -> None:
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.log", pa.schema([("a", pa.int64())]), options={"write-only": "true"})
    for i in range(4):
        t.write(pa.table({"a": pa.array(range(i * 100, i * 100 + 100), pa.int64())}))
    png = tmp_path / "log.png"
    r = run_cli("--warehouse", warehouse, "xray", "db.log", "--out", str(png))
    assert r.code == 0, r.err
    assert png.stat().st_size > 10_000
    for e in t.file_scan().plan(t.latest_snapshot()):
        assert e.file.file_name in r.out
    x = run_cli("--warehouse", warehouse, "xray", "db.log", "--json").json()
    assert [len(run["files"]) for b in x["buckets"] for run in b["runs"]] == [1, 1, 1, 1]
