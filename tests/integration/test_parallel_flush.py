"""A large flush of one bucket is encoded as several key-disjoint level-0 files at once (io/parallel_run.py):
the files partition the run's keys in order, each describes its own rows, and reads, upserts and deletes give
what a dict oracle says. A failure in one part leaves no file behind."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from laketide.io import parallel_run
from laketide.io.file_writer import RollingFileWriter
from laketide.meta.binary_row import deserialize_binary_row

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("v", pa.float64())])


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two parts already for a few KiB (instead of 32 MiB each); at least two even on a one-core machine.
    monkeypatch.setattr(parallel_run, "MIN_PART_BYTES", 4096)
    real = parallel_run.parts_for
    monkeypatch.setattr(parallel_run, "parts_for", lambda run, cores=None: real(run, cores=3))


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"{tag}{i}" for i in ids], "v": [i * 0.5 for i in ids]}, schema=SCHEMA)


def _files(table) -> list:  # noqa: ANN001
    return [e for e in table.file_scan().plan(table.snapshot_manager.latest_snapshot())]


@pytest.mark.parametrize("options", [{}, {"bucket": "2"}], ids=["dynamic", "fixed"])
def test_a_large_flush_becomes_key_disjoint_files_with_their_own_metadata(catalog, options) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options=options)
    # Arrival order scrambled: sequence numbers are not key order, as in real writes.
    ids = list(range(0, 6000, 2))[::-1] + list(range(1, 6000, 2))
    table.write(pa.table({"id": ids, "name": [f"a{i}" for i in ids], "v": [i * 0.5 for i in ids]}, schema=SCHEMA))
    entries = _files(table)
    by_bucket: dict[int, list] = {}
    for e in entries:
        by_bucket.setdefault(e.bucket, []).append(e)
    assert max(len(v) for v in by_bucket.values()) >= 2  # split
    key_type = [table.schema.fields[0].type]
    for es in by_bucket.values():
        seen_seq: set[int] = set()
        es.sort(key=lambda e: deserialize_binary_row(e.file.min_key, key_type)[0])
        for prev, nxt in zip(es, es[1:]):
            assert deserialize_binary_row(prev.file.max_key, key_type)[0] < deserialize_binary_row(
                nxt.file.min_key, key_type)[0]
        for e in es:
            assert e.file.level == 0
            path = table.store.path_factory.data_file_paths(e.partition, e.bucket, e.file)[0]
            data = pq.read_table(path)
            assert data.num_rows == e.file.row_count
            keys = data.column("_KEY_id")
            assert keys.equals(keys.take(pc.sort_indices(keys)))
            assert deserialize_binary_row(e.file.min_key, key_type)[0] == keys[0].as_py()
            assert deserialize_binary_row(e.file.max_key, key_type)[0] == keys[-1].as_py()
            seq = data.column("_SEQUENCE_NUMBER")
            assert e.file.min_sequence_number == pc.min(seq).as_py()
            assert e.file.max_sequence_number == pc.max(seq).as_py()
            seen_seq.update(seq.to_pylist())
        # Each row of the bucket keeps its own sequence number: none lost or repeated across the parts.
        assert len(seen_seq) == sum(e.file.row_count for e in es)
    assert sum(e.file.row_count for e in entries) == 6000

    oracle = {i: (f"a{i}", i * 0.5) for i in ids}
    table.write(_rows(range(3000, 9000), "b"))  # half updates, half new keys: another split flush
    oracle.update({i: (f"b{i}", i * 0.5) for i in range(3000, 9000)})
    table.delete(where="id < 100")
    for i in range(100):
        oracle.pop(i)
    got = {r["id"]: (r["name"], r["v"]) for r in table.read().to_pylist()}
    assert got == oracle
    table.compact(full=True)
    assert {r["id"]: (r["name"], r["v"]) for r in table.read().to_pylist()} == oracle


def test_a_failing_part_leaves_no_files(catalog, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    real = RollingFileWriter.write

    def write(self: RollingFileWriter, rows: pa.Table) -> None:
        if rows.num_rows and rows.column("_KEY_id")[0].as_py() > 0:  # every part but the first
            raise OSError("disk full")
        real(self, rows)

    monkeypatch.setattr(RollingFileWriter, "write", write)
    with pytest.raises(OSError, match="disk full"):
        table.write(_rows(range(4000), "a"))
    monkeypatch.undo()
    bucket_dir = Path(table.store.path_factory.bucket_dir_of([], 0))
    assert not bucket_dir.exists() or [p.name for p in bucket_dir.iterdir()] == []
    assert table.snapshot_manager.latest_snapshot() is None
    table.write(_rows(range(4000), "a"))  # the same write again, once the disk has room
    assert table.read().num_rows == 4000


def test_parts_follow_size_and_free_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # the real part size
    run = pa.table({"x": pa.array(range(9 * 1024 * 1024), pa.int64())})  # 72 MiB: two 32 MiB parts at most
    assert parallel_run.parts_for(run, cores=1) == 1
    assert parallel_run.parts_for(run, cores=8) == 2
    assert parallel_run.parts_for(run.slice(0, 1000), cores=8) == 1  # small runs stay one file
