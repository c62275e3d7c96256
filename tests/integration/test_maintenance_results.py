"""Result objects and progress callbacks of compact / expire_snapshots / remove_orphan_files."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_compact_returns_the_snapshot_id_with_counts_and_reports_progress(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        t.write(pa.table({"id": list(range(i, 20)), "v": [f"v{i}"] * (20 - i)}, schema=SCHEMA))
    before = t.inspect.files()
    calls: list[tuple[int, int]] = []
    result = t.compact(full=True, progress=lambda done, total: calls.append((done, total)))
    assert result is not None and isinstance(result, int)
    assert result == t.latest_snapshot().id == result.snapshot_id  # still the snapshot id callers use
    assert str(result) == str(result.snapshot_id) and json.dumps(result) == str(result.snapshot_id)
    assert result.buckets == 2
    assert result.files_rewritten == before.num_rows
    assert result.bytes_rewritten == sum(before.column("file_size_in_bytes").to_pylist())
    after = t.inspect.files()
    assert result.files_written == after.num_rows
    assert result.bytes_written == sum(after.column("file_size_in_bytes").to_pylist())
    assert result.duration_s >= 0
    assert sorted(calls) == [(1, 2), (2, 2)]
    assert repr(result).startswith(f"CompactionResult(snapshot_id={result.snapshot_id}, buckets=2")
    assert t.compact(full=True) is None  # nothing left to compact: None, as before


def test_expire_returns_the_count_with_files_deleted_and_progress(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.e", SCHEMA, options={"write-only": "true"})
    for i in range(5):
        t.write(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA), mode="overwrite")  # each replaces a file
    files_before = {str(p) for p in Path(t.path).rglob("*") if p.is_file()}
    calls: list[tuple[int, int]] = []
    n = t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0,
                           progress=lambda done, total: calls.append((done, total)))
    assert n == 4 and n.snapshots_expired == 4 and isinstance(n, int)
    files_after = {str(p) for p in Path(t.path).rglob("*") if p.is_file()}
    gone = files_before - files_after
    snapshot_files = {p for p in gone if "/snapshot/" in p}
    assert n.files_deleted == len(gone - snapshot_files) > 0  # data and metadata files, not the snapshot files
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0) == 0


def test_orphan_cleanup_reports_progress_and_duration(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.o", SCHEMA)
    t.write(pa.table({"id": [1], "v": ["x"]}, schema=SCHEMA))
    bucket = next(p for p in Path(t.path).rglob("bucket-0") if p.is_dir())
    old = dt.datetime.now().timestamp() - 3 * 86400
    for name in ("data-orphan-1.parquet", "data-orphan-2.parquet"):
        (bucket / name).write_bytes(b"x" * 10)
        os.utime(bucket / name, (old, old))
    calls: list[tuple[int, int]] = []
    dry = t.remove_orphan_files(dry_run=True, progress=lambda d, n: calls.append((d, n)))
    assert dry.count == 2 and dry.total_bytes == 20 and calls == []  # a dry run deletes nothing
    result = t.remove_orphan_files(progress=lambda d, n: calls.append((d, n)))
    assert result.count == 2 and result.duration_s >= 0 and calls == [(1, 2), (2, 2)]
    assert not (bucket / "data-orphan-1.parquet").exists()
    assert t.read().num_rows == 1
