"""A long-lived Table continues every bucket's sequence numbers exactly as a freshly loaded table would, while it
carries the maxima from snapshot to snapshot instead of planning the live files at each write: after its own
writes, another writer's, a compaction, an overwrite, a rollback and expired snapshots; and a commit of messages
some snapshot already added is still refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import AlreadyCommittedError
from laketide.meta.manifest import FileKind
from laketide.scan.file_scan import max_sequence_per_bucket

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(start: int, n: int = 5) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "name": [f"n{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def live_maxima(table) -> dict[tuple[bytes, int], int]:  # noqa: ANN001
    latest = table.snapshot_manager.latest_snapshot()
    return {} if latest is None else max_sequence_per_bucket(table.file_scan().plan(latest))


def write_and_check(table, data: pa.Table) -> None:  # noqa: ANN001
    """Write ``data``; each new file starts right after its bucket's highest live sequence number."""
    before = live_maxima(table)
    sid = table.write(data)
    snapshot = table.snapshot_manager.snapshot(sid)
    scan = table.file_scan()
    added = [e for m in scan.manifest_list(snapshot.delta_manifest_list) for e in scan.manifest(m.file_name)
             if e.kind is FileKind.ADD]
    assert added
    for e in added:
        assert e.file.min_sequence_number == before.get((e.partition, e.bucket), -1) + 1


@pytest.fixture(params=[{}, {"bucket": "2", "bucket-key": "id"}], ids=["unaware", "two-buckets"])
def table(request, catalog):  # noqa: ANN001, ANN201
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table("db.t", SCHEMA, options=request.param)


def test_own_writes_continue_sequence(table) -> None:  # noqa: ANN001
    for i in range(4):
        write_and_check(table, rows(i * 10))
    assert sorted(table.read().column("id").to_pylist()) == sorted(i * 10 + j for i in range(4) for j in range(5))


def test_writes_of_another_table_object_are_replayed(table, catalog) -> None:  # noqa: ANN001
    write_and_check(table, rows(0))
    other = catalog.table("db.t")
    other.write(rows(100, 7))
    other.write(rows(200, 3))
    write_and_check(table, rows(300))


def test_compaction_and_overwrite_in_between(table, catalog) -> None:  # noqa: ANN001
    for i in range(3):
        write_and_check(table, rows(i * 10))
    catalog.table("db.t").compact(full=True)
    write_and_check(table, rows(50))
    catalog.table("db.t").write(rows(60, 2), mode="overwrite")  # fewer rows: the maxima drop
    write_and_check(table, rows(70))
    assert sorted(table.read().column("id").to_pylist()) == [60, 61, 70, 71, 72, 73, 74]


def test_rollback_then_same_snapshot_ids(table, catalog) -> None:  # noqa: ANN001
    write_and_check(table, rows(0, 2))
    write_and_check(table, rows(10, 20))
    write_and_check(table, rows(30, 2))  # restored at snapshot 2
    other = catalog.table("db.t")
    other.rollback_to(1)
    other.write(rows(40, 1))  # snapshots 2 and 3 again, with other files
    other.write(rows(45, 1))
    write_and_check(table, rows(50))
    assert sorted(table.read().column("id").to_pylist()) == [0, 1, 40, 45, 50, 51, 52, 53, 54]


def test_expired_snapshots_in_between(table, catalog) -> None:  # noqa: ANN001
    write_and_check(table, rows(0))
    other = catalog.table("db.t")
    for i in range(4):
        other.write(rows(100 + i * 10))
    other.expire_snapshots(retain_min=1, retain_max=1)
    write_and_check(table, rows(300))
    assert table.read().num_rows == 30


def test_recommitting_messages_is_refused(table) -> None:  # noqa: ANN001
    table.write(rows(0))
    writer = table.new_write()
    writer.write(rows(10))
    messages = writer.prepare_commit()
    table.commit(messages)
    table.write(rows(20))
    with pytest.raises(AlreadyCommittedError):
        table.commit(messages)
    assert table.read().num_rows == 15
