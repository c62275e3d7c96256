"""A one-shot primary-key write flushes each bucket as soon as its rows are in (write/flush_pipeline.py).

``Table.write`` (and ``TableWrite.write(final=True)``) writes the files ``prepare_commit`` would have written —
per bucket the same rows, sequence numbers, key ranges and levels — whatever the number of partitions and buckets
or the write buffer; a flush that fails in the middle leaves what the serial path leaves (nothing, after the
abort); abort, reuse, empty input and later writes behave as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import InjectedFaultError
from laketide.fs.failing import FailingFileIO, FaultPoint
from laketide.fs.local import LocalFileIO
from laketide.io.kv import RowKind
from laketide.meta.commit_message import CommitMessage
from laketide.write.table_write import TableWrite

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("name", pa.string()), ("v", pa.int64())])


def _rows(n: int, rng: np.random.Generator, *, keys: int = 5_000, parts: int = 4) -> pa.Table:
    return pa.table({
        "p": pa.array([f"p{i}" for i in rng.integers(0, parts, n)]),
        "k": pa.array(rng.integers(0, keys, n), pa.int64()),
        "name": pa.array([f"name-{i}" for i in rng.integers(0, 100, n)]),
        "v": pa.array(rng.integers(-1000, 1000, n), pa.int64()),
    }, schema=SCHEMA)


def _catalog(tmp_path: Path, name: str = "wh") -> laketide.Catalog:
    cat = laketide.load_catalog(warehouse=str(tmp_path / name))
    cat.create_database("db", exist_ok=True)
    return cat


def _create(cat: Any, name: str, **options: str) -> laketide.Table:
    return cat.create_table(f"db.{name}", SCHEMA, primary_key=["p", "k"], partition_keys=["p"],
                            options={"bucket": "3", **options})


def _data_files(t: laketide.Table) -> list[Path]:
    return sorted(Path(t.path.removeprefix("file://")).glob("**/bucket-*/data-*"))


def _oracle(batches: list[pa.Table]) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for b in batches:
        for r in b.to_pylist():
            out[(r["p"], r["k"])] = r
    return out


def _by_key(t: laketide.Table) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["p"], r["k"]): r for r in t.read().to_pylist()}


def _layout(t: laketide.Table, messages: list[CommitMessage]) -> dict[tuple[bytes, int], list[tuple[Any, ...]]]:
    """Per bucket, what its new files hold: metadata except names and times, and the rows of each file."""
    out: dict[tuple[bytes, int], list[tuple[Any, ...]]] = {}
    for m in messages:
        files = []
        for f in m.new_files:
            path = t.store.path_factory.data_file_paths(m.partition, m.bucket, f)[0]
            rows = pq.read_table(path.removeprefix("file://")).to_pydict()
            files.append((f.row_count, f.min_key, f.max_key, f.min_sequence_number, f.max_sequence_number, f.level,
                          f.delete_row_count, sorted(zip(*rows.values()))))
        out[(m.partition, m.bucket)] = sorted(files)
    return out


def _write(t: laketide.Table, batches: list[pa.Table], *, final: bool) -> list[CommitMessage]:
    w: TableWrite = t.store.new_write()
    for i, b in enumerate(batches):
        w.write(b, final=final and i == len(batches) - 1)
    return w.prepare_commit()


@pytest.mark.parametrize(("parts", "buckets", "budget"), [(1, 1, "256 mb"), (12, 7, "256 mb"), (5, 4, "16 kb")])
def test_the_files_are_those_of_the_serial_path(tmp_path: Path, parts: int, buckets: int, budget: str) -> None:
    rng = np.random.default_rng(parts * 100 + buckets)
    batches = [_rows(30_000, rng, parts=parts), _rows(8_000, rng, parts=parts)]
    cat = _catalog(tmp_path)
    options = {"bucket": str(buckets), "write-buffer-size": budget}
    serial, piped = _create(cat, "serial", **options), _create(cat, "piped", **options)
    a, b = _write(serial, batches, final=False), _write(piped, batches, final=True)
    assert len(a) == len(b) >= parts
    assert _layout(piped, b) == _layout(serial, a)
    serial.commit(a)
    piped.commit(b)
    assert _by_key(piped) == _by_key(serial) == _oracle(batches)


def test_table_write_on_many_partitions_and_buckets_equals_oracle(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t", bucket="16")
    rng = np.random.default_rng(5)
    batches = [_rows(20_000, rng, parts=40, keys=2_000) for _ in range(3)]
    for b in batches:  # a reused Table: each write is its own one-shot write and commit
        t.write(b)
    assert _by_key(t) == _oracle(batches)
    assert t.snapshot_manager.latest_snapshot_id() is not None


def test_empty_and_single_row_writes(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t")
    assert t.write(SCHEMA.empty_table()) is None
    assert _data_files(t) == []
    one = pa.table({"p": ["a"], "k": [1], "name": ["x"], "v": [2]}, schema=SCHEMA)
    assert t.write(one) is not None
    assert t.read().to_pylist() == one.to_pylist()


def test_abort_after_a_final_write_deletes_its_files(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t", **{"write-only": "true"})
    rng = np.random.default_rng(7)
    w = t.new_write()
    w.write(_rows(5_000, rng), final=True)
    assert _data_files(t)  # already flushed
    w.abort()
    assert _data_files(t) == []
    assert t.snapshot_manager.latest_snapshot_id() is None
    again = _rows(100, rng)
    t.write(again)
    assert _by_key(t) == _oracle([again])


def test_writing_again_after_a_final_write_adds_a_run(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t", bucket="1", **{"write-only": "true"})
    rng = np.random.default_rng(8)
    first, second = _rows(3_000, rng, parts=1), _rows(3_000, rng, parts=1)
    w = t.new_write()
    w.write(first, final=True)
    w.write(second)  # not what final promised, but still right: one more level-0 run
    messages = w.prepare_commit()
    (m,) = messages
    assert len(m.new_files) == 2
    assert m.new_files[0].max_sequence_number < m.new_files[1].min_sequence_number
    t.commit(messages)
    assert _by_key(t) == _oracle([first, second])


def test_deletes_in_a_final_write(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t")
    rng = np.random.default_rng(9)
    base = _rows(4_000, rng, keys=1_000)
    t.write(base)
    gone = base.slice(0, 500).select(["p", "k"])
    w = t.new_write()
    w.write(gone, row_kind=RowKind.DELETE, final=True)
    t.commit(w.prepare_commit())
    expected = _oracle([base])
    for r in gone.to_pylist():
        expected.pop((r["p"], r["k"]), None)
    assert _by_key(t) == expected


class _FailNthDataFile(FailingFileIO):
    """Fails the creation of the ``n``-th data file (before it, or after it took effect)."""

    def __init__(self, n: int, point: FaultPoint) -> None:
        super().__init__(LocalFileIO(), failure_rate=0.0, budget=0)
        self.n, self.point, self.created = n, point, 0

    def _gate(self, op: str, path: str, *, mutating: bool) -> FaultPoint | None:
        if op == "create" and "/data-" in path:
            with self._lock:
                self.created += 1
                hit = self.created == self.n
            if hit and self.point is FaultPoint.BEFORE:
                raise InjectedFaultError(f"Injected failure of '{op}' of '{path}'")
            return self.point if hit else None
        return None


@pytest.mark.parametrize("point", [FaultPoint.BEFORE, FaultPoint.AFTER])
@pytest.mark.parametrize("final", [False, True], ids=["serial", "one-shot"])
def test_a_flush_failing_in_the_middle_leaves_no_snapshot_and_no_files(tmp_path: Path, point: FaultPoint,
                                                                       final: bool) -> None:
    io = _FailNthDataFile(5, point)
    cat = FileSystemCatalog(str(tmp_path / "wh"), file_io=io)
    cat.create_database("db")
    t = _create(cat, "t", bucket="4", **{"write-only": "true"})
    rng = np.random.default_rng(10)
    data = _rows(20_000, rng, parts=3)  # 12 buckets: the 5th file fails while others are written
    w = t.new_write()
    with pytest.raises(InjectedFaultError):
        w.write(data, final=final)
        w.prepare_commit()
    w.abort()
    assert t.snapshot_manager.latest_snapshot_id() is None
    assert _data_files(t) == []  # the same for the serial and the one-shot path: nothing is left
    t.write(data)  # the same table object works afterwards
    assert _by_key(t) == _oracle([data])


def test_table_write_failing_in_the_middle_commits_nothing(tmp_path: Path) -> None:
    io = _FailNthDataFile(3, FaultPoint.AFTER)
    cat = FileSystemCatalog(str(tmp_path / "wh"), file_io=io)
    cat.create_database("db")
    t = _create(cat, "t", bucket="4")
    data = _rows(20_000, np.random.default_rng(11), parts=3)
    with pytest.raises(InjectedFaultError):
        t.write(data)
    assert t.snapshot_manager.latest_snapshot_id() is None
    assert _data_files(t) == []


def test_one_shot_write_many_times_the_buffer_stays_within_it(tmp_path: Path) -> None:
    budget = 64 * 1024
    t = _create(_catalog(tmp_path), "t", bucket="3", **{"write-buffer-size": str(budget), "write-only": "true"})
    rng = np.random.default_rng(12)
    data = _rows(60_000, rng, parts=2, keys=50_000)
    assert data.nbytes > 20 * budget
    peaks: list[int] = []
    writers: list[Any] = []
    original = TableWrite._writer

    def writer(self: TableWrite, partition: tuple[object, ...], bucket: int) -> Any:
        w = original(self, partition, bucket)
        if w not in writers:
            writers.append(w)
        peaks.append(sum(x.buffered_bytes for x in writers))
        return w

    w = t.new_write()
    w._writer = writer.__get__(w)  # type: ignore[method-assign]
    w.write(data, final=True)
    messages = w.prepare_commit()
    assert sum(len(m.new_files) for m in messages) > 6  # large buckets were cut into several runs
    from laketide.write.write_budget import MIN_PIECE_ROWS

    assert max(peaks) <= budget + 2 * data.slice(0, MIN_PIECE_ROWS).nbytes * 2
    t.commit(messages)
    assert _by_key(t) == _oracle([data])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), writes=st.integers(1, 3), buckets=st.integers(1, 5),
       budget=st.sampled_from(["8 kb", "64 kb", "64 mb"]))
def test_one_shot_writes_equal_dict_oracle(tmp_path_factory: pytest.TempPathFactory, seed: int, writes: int,
                                           buckets: int, budget: str) -> None:
    cat = _catalog(tmp_path_factory.mktemp("wh"))
    t = _create(cat, "t", bucket=str(buckets), **{"write-buffer-size": budget})
    rng = np.random.default_rng(seed)
    batches = []
    expected: dict[tuple[str, int], dict[str, Any]] = {}
    for _ in range(writes):
        b = _rows(int(rng.integers(1, 15_000)), rng, parts=int(rng.integers(1, 6)), keys=3_000)
        batches.append(b)
        t.write(b)
        expected = _oracle(batches)
        if rng.random() < 0.5:
            gone = b.slice(0, int(rng.integers(0, b.num_rows + 1))).select(["p", "k"])
            w = t.new_write()
            w.write(gone, row_kind=RowKind.DELETE, final=True)
            t.commit(w.prepare_commit())
            for r in gone.to_pylist():
                expected.pop((r["p"], r["k"]), None)
            batches = [pa.table({n: [r[n] for r in expected.values()] for n in SCHEMA.names}, schema=SCHEMA)]
    assert _by_key(t) == expected


@pytest.mark.parametrize("buckets", [1, 3, 8])
@pytest.mark.parametrize("parts", [1, 3, 30])
def test_groups_found_lazily_equal_the_sorted_split(buckets: int, parts: int) -> None:
    from laketide.types import BigIntType
    from laketide.write.bucketing import group_rows, split_by_partition_and_bucket

    rng = np.random.default_rng(buckets * parts)
    data = _rows(20_000, rng, parts=parts)
    data = data.set_column(0, "p", pa.array(np.where(rng.random(data.num_rows) < 0.1, None, data.column("p"))))
    spec = {"partition_keys": ["p"], "bucket_keys": ["k"], "bucket_key_types": [BigIntType()],
            "num_buckets": buckets}
    sorted_split = [(g.partition, g.bucket, g.rows) for g in split_by_partition_and_bucket(data, **spec)]
    lazy = group_rows(data, **spec)
    assert [(g.partition, g.bucket) for g in lazy] == [(p, b) for p, b, _ in sorted_split]
    for g, (_, _, rows) in zip(lazy, sorted_split):
        assert g.num_rows == rows.num_rows
        assert g.take().equals(rows)
        assert pa.concat_tables([g.take(s, s + 777) for s in range(0, g.num_rows, 777)]).equals(rows)


@pytest.mark.parametrize("point", [FaultPoint.BEFORE, FaultPoint.AFTER])
def test_a_single_bucket_write_failing_commits_nothing(tmp_path: Path, point: FaultPoint) -> None:
    io = _FailNthDataFile(1, point)  # one group: flushed on the caller's thread
    cat = FileSystemCatalog(str(tmp_path / "wh"), file_io=io)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    data = _rows(5_000, np.random.default_rng(13))
    with pytest.raises(InjectedFaultError):
        t.write(data)
    assert t.snapshot_manager.latest_snapshot_id() is None
    assert _data_files(t) == []
    t.write(data)
    assert {r["k"]: r for r in t.read().to_pylist()} == {r["k"]: r for r in data.to_pylist()}


def test_odd_partition_values_in_a_one_shot_write(tmp_path: Path) -> None:
    t = _create(_catalog(tmp_path), "t", bucket="4")
    rng = np.random.default_rng(14)
    data = _rows(6_000, rng)
    odd = np.array(["a/b", "..", "x y", "%2F", ""])
    data = data.set_column(0, "p", pa.array(odd[rng.integers(0, len(odd), data.num_rows)]))
    t.write(data)
    again = data.slice(0, 1_000)
    t.write(again)  # rows again: still one row per key, the last written wins
    assert _by_key(t) == _oracle([data, again])


@pytest.mark.parametrize("engine", ["deduplicate", "first-row", "partial-update"])
@pytest.mark.parametrize("keys", ["ascending", "ascending-with-repeat", "descending"])
def test_a_flush_of_rows_already_in_key_order_writes_what_the_merge_would(tmp_path: Path, engine: str,
                                                                          keys: str) -> None:
    from laketide.io.kv import VALUE_KIND, kv_schema, to_kv_table
    from laketide.mergetree.engines import merge_function_for
    from laketide.mergetree.writer import _already_merged

    value_schema = SCHEMA.remove(0)
    t = _catalog(tmp_path).create_table("db.t", value_schema, primary_key=["k"],
                                        options={"merge-engine": engine, "bucket": "1"})
    merge = merge_function_for(t.schema)
    n = 5_000
    k = {"ascending": np.arange(n) * 3, "ascending-with-repeat": np.sort(np.arange(n) // 2),
         "descending": np.arange(n)[::-1]}[keys]
    rows = pa.table({"k": pa.array(k, pa.int64()), "name": [f"n{i}" for i in range(n)],
                     "v": pa.array(np.arange(n), pa.int64())})
    kv = to_kv_table(rows, ("k",), np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int8),
                     kv_schema(rows.schema, ("k",), thin=False))
    skipped = _already_merged(kv, merge)
    assert skipped == (keys == "ascending" and engine != "partial-update")
    if skipped:
        assert merge.merge(kv).equals(kv)  # what the merge would have written
    retracting = kv.set_column(kv.schema.get_field_index(VALUE_KIND), VALUE_KIND,
                               pa.array(np.full(n, 3, dtype=np.int8)))
    assert not _already_merged(retracting, merge)  # retractions always go through the engine
    t.write(rows)  # end to end: the last version of each key
    assert {r["k"]: r for r in t.read().to_pylist()} == {r["k"]: r for r in (
        rows.to_pylist()[::-1] if engine == "first-row" else rows.to_pylist())}


@pytest.mark.parametrize(("chunks", "ascending"), [
    ([[1, 2, 3], [4, 5]], True),
    ([[1, 2, 3], [], [7], [8, 9]], True),
    ([[1, 2, 3], [3, 4]], False),  # a repeat across the chunk boundary
    ([[1, 2, 3], [2, 9]], False),  # a step back across the chunk boundary
    ([[1, 3, 2], [4]], False),
    ([[], [5]], True),
])
def test_a_buffer_of_several_pieces_is_checked_chunk_by_chunk(chunks: list[list[int]], ascending: bool) -> None:
    from laketide.mergetree.writer import _strictly_ascending

    key = pa.chunked_array([pa.array(c, pa.int64()) for c in chunks], pa.int64())
    assert _strictly_ascending(key) == ascending
    flat = np.array([v for c in chunks for v in c])
    assert ascending == bool((flat[1:] > flat[:-1]).all())  # the same verdict as one copied array

