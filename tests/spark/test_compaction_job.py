"""Compaction as a Spark job: one task per bucket, one COMPACT snapshot, same rows; conflicts change nothing."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import laketide.spark as ls
from laketide.exceptions import CommitConflictError
from laketide.meta.snapshot import CommitKind
from laketide.table.compact import plan_compaction

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])


def _rows(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "dt": [f"d{i % 2}" for i in ids]}, schema=SCHEMA)


def _data_files(table) -> int:  # noqa: ANN001
    return sum(len(s.files) for s in table.scan().plan())


def test_pk_table_full_compaction_on_spark(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.pk", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "3", "write-only": "true"})
    for i in range(4):  # overlapping upserts: four sorted runs per bucket
        t.write(_rows(i * 50, i * 50 + 120, f"w{i}-"))
    before = t.read().sort_by("id")
    tasks = plan_compaction(t)
    assert len(tasks) == 6  # 2 partitions x 3 buckets: one Spark task each
    assert _data_files(t) == 24

    sid = ls.compact(spark, "db.pk", warehouse=wh, full=True)

    snap = t.snapshot(sid)
    assert snap.commit_kind is CommitKind.COMPACT
    assert sid == t.latest_snapshot().id == 5  # one commit for all buckets
    assert _data_files(t) == 6
    assert t.read().sort_by("id").equals(before)
    assert ls.compact(spark, "db.pk", warehouse=wh, full=True) is None  # nothing left to do


def test_append_table_small_files_and_partition_choice(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.ap", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    for i in range(5):
        t.write(_rows(i * 10, i * 10 + 10, "a"))
    before = t.read().sort_by("id")
    sid = ls.compact(spark, "db.ap", warehouse=wh, full=True, partitions=[{"dt": "d0"}])
    assert t.snapshot(sid).commit_kind is CommitKind.COMPACT
    per_partition = {}
    for s in t.scan().plan():
        per_partition[s.partition] = per_partition.get(s.partition, 0) + len(s.files)
    assert sorted(per_partition.values()) == [1, 5]  # d0 compacted to one file, d1 untouched
    assert t.read().sort_by("id").equals(before)


def test_conflicting_compaction_fails_and_leaves_no_files(spark, cat, wh: str, monkeypatch) -> None:  # noqa: ANN001
    import laketide.table.compact as core

    t = cat.create_table("db.c", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"bucket": "1", "write-only": "true"})
    for i in range(3):
        t.write(_rows(i * 5, i * 5 + 20, f"w{i}-"))
    stale = plan_compaction(t)
    other = t.compact(full=True)  # another job replaces the same files between our planning and our commit
    files_before = {p.name for p in Path(t.path).rglob("data-*")}
    monkeypatch.setattr(core, "plan_compaction", lambda *_a, **_k: stale)
    with pytest.raises(CommitConflictError):
        ls.compact(spark, "db.c", warehouse=wh, full=True)
    assert t.latest_snapshot().id == other
    assert {p.name for p in Path(t.path).rglob("data-*")} == files_before  # our rewritten files are gone
