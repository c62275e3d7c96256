"""Commits under concurrency, crashes and storage failures: nothing lost, nothing twice, never a broken table."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import (
    CommitConflictError,
    CommitError,
    FileIOError,
    InjectedFaultError,
    UnsupportedFeatureError,
)
from laketide.fs import FileIO, LocalFileIO
from laketide.fs.failing import CrashingFileIO, FailingFileIO, FaultPoint
from laketide.meta.snapshot import CommitKind
from laketide.table.orphan import _used_names
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
ROWS = 20
OPTIONS = {
    "bucket": "2", "bucket-key": "id", "write-only": "true",  # writers never compact: one dedicated job does
    "compaction.min.file-num": "3", "commit.max-retries": "200", "commit.min-retry-wait": "2 ms",
    "commit.max-retry-wait": "200 ms",
}


def rows(batch: int, dt: str, n: int = ROWS) -> pa.Table:
    ids = list(range(batch * 1000, batch * 1000 + n))
    return pa.table({"id": ids, "dt": [dt] * n, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def make_table(warehouse: str, name: str = "db.t", options: dict[str, str] | None = None) -> Table:
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    return cat.create_table(name, SCHEMA, partition_keys=["dt"], options={**OPTIONS, **(options or {})})


def with_io(t: Table, file_io: FileIO) -> Table:
    """The same table seen through another FileIO (fault injection)."""
    return Table(name=t.name, path=t.path, file_io=file_io, schema=t.schema)


def all_files(t: Table) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs}


def unreferenced(t: Table) -> set[str]:
    """Files on disk (outside schema/ and snapshot/) that no snapshot references."""
    used = _used_names(t.store)
    return {p for p in all_files(t)
            if "/schema/" not in p and "/snapshot/" not in p and os.path.basename(p) not in used}


def assert_contiguous(t: Table) -> list[int]:
    ids = t.snapshot_manager.snapshot_ids()
    assert ids == list(range(ids[0], ids[-1] + 1))
    return ids


# -- processes (module level: spawn and forkserver children import them) ------------------------------------------
def _writer_job(warehouse: str, proc: int, commits: int, shared: bool) -> list[tuple[int, int]]:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    out = []
    for i in range(commits):
        batch = proc * 100 + i
        dt = ("x", "y")[i % 2] if shared else f"p{proc}"
        sid = t.write(rows(batch, dt))
        assert sid is not None
        out.append((batch, sid))
    return out


def _compaction_job(warehouse: str, stop_file: str) -> int:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    done = 0
    while not os.path.exists(stop_file):
        if t.compact() is not None:
            done += 1
        time.sleep(0.05)  # pacing, not synchronization: leave the two cores to the writers
    if t.compact() is not None:
        done += 1
    return done


def _crash_job(warehouse: str, crash_at: int, at: str, batch: int) -> None:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    crashing = with_io(t, CrashingFileIO(t.file_io, crash_at=crash_at, at=FaultPoint(at)))
    crashing.write(rows(batch, "x"))  # the same shape as the counted write: the same operations


def _noop() -> None:
    return None


@pytest.fixture(scope="module")
def spawn_pool() -> Iterator[ProcessPoolExecutor]:
    # One pool for both stress runs: each spawned interpreter imports laketide once.
    with ProcessPoolExecutor(max_workers=5, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(_noop_wait, range(5)))
        yield pool


def _noop_wait(_: int) -> None:
    time.sleep(0.2)  # make the pool start all five workers before the timed part


# -- stress: N processes x M commits plus a compaction job ---------------------------------------------------------
@pytest.mark.parametrize("shared", [False, True], ids=["disjoint-partitions", "shared-partitions"])
def test_concurrent_writer_processes_and_a_compaction_job(spawn_pool, tmp_path, shared: bool) -> None:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    t = make_table(warehouse)
    stop = str(tmp_path / "stop")
    writers, commits = 4, 12
    compactor = spawn_pool.submit(_compaction_job, warehouse, stop)
    futures = [spawn_pool.submit(_writer_job, warehouse, p, commits, shared) for p in range(writers)]
    results = [f.result(timeout=300) for f in futures]
    open(stop, "w").close()
    compactions = compactor.result(timeout=300)

    committed = [batch for r in results for batch, _ in r]
    sids = [sid for r in results for _, sid in r]
    assert len(set(sids)) == writers * commits  # every commit got its own snapshot
    ids = assert_contiguous(t)
    assert ids[0] == 1
    oracle = sorted(i for b in committed for i in range(b * 1000, b * 1000 + ROWS))
    assert ids_of(t.read()) == oracle  # every committed row exactly once
    latest = t.latest_snapshot()
    assert latest is not None and latest.total_record_count == len(oracle)
    kinds = [t.snapshot(i).commit_kind for i in ids]
    assert kinds.count(CommitKind.APPEND) == writers * commits
    assert kinds.count(CommitKind.COMPACT) == compactions > 0  # compaction ran alongside the writers
    assert not unreferenced(t)  # lost races cleaned up after themselves


# -- crashes: SIGKILL at every kind of point of a commit -----------------------------------------------------------
def test_sigkill_at_random_points_of_a_commit_never_breaks_the_table(tmp_path) -> None:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    t = make_table(warehouse)
    t.write(rows(0, "x"))
    counting = CrashingFileIO(t.file_io)
    with_io(t, counting).write(rows(500, "x"))
    steps = counting.mutations  # data file writes, manifests, manifest lists, snapshot publish, hints
    assert steps >= 6
    assert any(op.startswith("atomic-write") and "/snapshot/snapshot-2" in op for op in counting.log)

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["laketide.table.table", __name__])
    # Every metadata step (file creations, manifests, manifest lists, snapshot publish, LATEST hint) before
    # and after it took effect, plus random points inside the data files.
    rng = random.Random(8)
    data_writes = [k for k, op in enumerate(counting.log, start=1) if op.startswith("write ") and "/bucket-" in op]
    points = [(k, at) for k in range(1, steps + 1) if k not in data_writes for at in ("before", "after")] * 2
    points += [(k, rng.choice(["before", "after"])) for k in rng.sample(data_writes, 12)]
    rng.shuffle(points)
    oracle = sorted(ids_of(rows(0, "x")) + ids_of(rows(500, "x")))
    landed = 0
    for n, (k, at) in enumerate(points, start=1):
        p = ctx.Process(target=_crash_job, args=(warehouse, k, at, n))
        p.start()
        p.join(60)
        assert p.exitcode == -9, (k, at, p.exitcode)
        got = ids_of(t.read())  # always readable ...
        new = ids_of(rows(n, "x"))
        if got != oracle:  # ... and holds the commit whole or not at all
            assert got == sorted(oracle + new), (k, at)
            oracle, landed = got, landed + 1
        assert_contiguous(t)
    assert 0 < landed < len(points)

    leftovers = unreferenced(t)
    assert leftovers  # the killed writers left files behind ...
    dry = t.remove_orphan_files(older_than=timedelta(0), dry_run=True)
    assert set(dry.paths) == leftovers and all(os.path.exists(p) for p in dry.paths)
    assert t.remove_orphan_files().count == 0  # ... younger than a day: the default keeps them
    removed = t.remove_orphan_files(older_than=timedelta(0))
    assert set(removed.paths) == leftovers
    assert not unreferenced(t)
    assert not [p for p in all_files(t) if p.endswith(".tmp")]
    assert ids_of(t.read()) == oracle
    t.write(rows(999, "y"))  # and the table takes new commits
    assert ids_of(t.read()) == sorted(oracle + ids_of(rows(999, "y")))


# -- storage failures ----------------------------------------------------------------------------------------------
def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_commits_under_random_io_failures_land_whole_or_not_at_all(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    failing = FailingFileIO(LocalFileIO(), failure_rate=0.08, budget=60, seed=11)
    ft = with_io(t, failing)
    fds = _open_fds()
    oracle: list[int] = []
    failed = 0
    for batch in range(15):
        data = rows(batch, ("x", "y")[batch % 2])
        while True:  # a caller retrying a failed write, as Paimon's retryArtificialException does
            before = ids_of(t.read())
            try:
                ft.write(data)
                break
            except FileIOError:
                failed += 1
                assert ids_of(t.read()) == before  # a failed write changed nothing
        oracle += ids_of(data)
        assert ids_of(t.read()) == sorted(oracle)
    assert failing.injected > 10 and failed > 0
    assert _open_fds() == fds  # no leaked file handles
    assert_contiguous(t)
    # Leftovers of failed attempts are at most orphans, which cleanup removes.
    t.remove_orphan_files(older_than=timedelta(0))
    assert not unreferenced(t)
    assert ids_of(t.read()) == sorted(oracle)


def test_two_phase_commit_retried_under_failures_lands_exactly_once(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    failing = FailingFileIO(LocalFileIO(), failure_rate=0.25, budget=200, seed=5)
    ft = with_io(t, failing)
    oracle: list[int] = []
    for ident in range(1, 9):
        w = t.new_write()
        data = rows(ident, "x")
        w.write(data)
        messages = w.prepare_commit()
        w.close()
        attempts = 0
        while True:  # the Spark sink after a failure: commit the same (user, identifier) again
            attempts += 1
            try:
                ft.commit(messages, commit_user="sink", commit_identifier=ident)
                break
            except (FileIOError, CommitError):
                continue
        oracle += ids_of(data)
        assert ids_of(t.read()) == sorted(oracle), ident
        assert t.commit(messages, commit_user="sink", commit_identifier=ident) is not None  # never lands twice
        assert ids_of(t.read()) == sorted(oracle)
    assert failing.injected > 20
    users = [t.snapshot(i).commit_user for i in t.snapshot_manager.snapshot_ids()]
    assert users.count("sink") == 8


def test_an_ambiguous_publish_is_resolved_by_reading_the_snapshot_back(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    t.write(rows(0, "x"))
    sm_cls = type(t.snapshot_manager)
    real = sm_cls.try_publish

    def lost_ack(self, snapshot):  # noqa: ANN001, ANN202 - publishes, then reports a failure
        real(self, snapshot)
        raise InjectedFaultError("connection reset after the put")

    monkeypatch.setattr(sm_cls, "try_publish", lost_ack)
    sid = t.write(rows(1, "x"))
    monkeypatch.undo()
    assert sid == 2
    assert ids_of(t.read()) == sorted(ids_of(rows(0, "x")) + ids_of(rows(1, "x")))
    assert not unreferenced(t)


def test_lost_race_retries_on_the_new_latest_and_cleans_its_files(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    t.write(rows(0, "x"))
    other = laketide.load_catalog(warehouse=str(tmp_path / "wh")).table("db.t")
    sm_cls = type(t.snapshot_manager)
    real = sm_cls.try_publish
    raced: list[int] = []

    def race(self, snapshot):  # noqa: ANN001, ANN202 - another writer publishes the same id first, twice
        if len(raced) < 2:
            raced.append(snapshot.id)
            monkeypatch.setattr(sm_cls, "try_publish", real)
            other.write(rows(10 + len(raced), "y"))
            monkeypatch.setattr(sm_cls, "try_publish", race)
        return real(self, snapshot)

    monkeypatch.setattr(sm_cls, "try_publish", race)
    sid = t.write(rows(1, "x"))
    monkeypatch.undo()
    assert raced == [2, 3] and sid == 4
    assert assert_contiguous(t) == [1, 2, 3, 4]
    assert ids_of(t.read()) == sorted(ids_of(rows(0, "x")) + ids_of(rows(1, "x")) + ids_of(rows(11, "y"))
                                      + ids_of(rows(12, "y")))
    assert not unreferenced(t)


def test_retries_give_up_after_max_retries_with_nothing_committed(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"), options={"commit.max-retries": "2"})
    t.write(rows(0, "x"))
    before = all_files(t)
    monkeypatch.setattr(type(t.snapshot_manager), "try_publish", lambda self, snapshot: False)
    with pytest.raises(CommitError, match="after 2 retries"):
        t.write(rows(1, "x"))
    monkeypatch.undo()
    assert all_files(t) == before
    assert ids_of(t.read()) == ids_of(rows(0, "x"))


# -- conflicts -----------------------------------------------------------------------------------------------------
def _compact_messages(t: Table) -> list:  # type: ignore[type-arg]
    """Messages of a full compaction planned now but not committed (a compaction job in flight)."""
    import laketide.table.table as table_mod

    captured: list = []  # type: ignore[type-arg]
    real = table_mod.Table.commit

    def capture(self, messages, **kwargs):  # noqa: ANN001, ANN003, ANN202
        captured.extend(messages)
        return None

    table_mod.Table.commit = capture  # type: ignore[method-assign]
    try:
        t.compact(full=True)
    finally:
        table_mod.Table.commit = real  # type: ignore[method-assign]
    return captured


def test_racing_compactions_conflict_with_cause_and_remedy(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    for b in range(4):
        t.write(rows(b, "x"))
    first = _compact_messages(t)
    assert first
    assert t.compact(full=True) is not None  # the other compaction wins
    before = (t.snapshot_manager.latest_snapshot_id(), all_files(t))
    with pytest.raises(CommitConflictError) as err:
        t.commit(first)
    text = str(err.value)
    assert "no longer live" in text and "write-only" in text and "COMPACT" in text
    assert (t.snapshot_manager.latest_snapshot_id(), all_files(t)) == before  # no snapshot, no manifests left
    t.abort(first)  # the caller drops the compaction's own files (compact_table does this itself)
    assert not unreferenced(t)
    assert ids_of(t.read()) == sorted(i for b in range(4) for i in ids_of(rows(b, "x")))


def test_writers_of_other_partitions_never_conflict(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    for b in range(4):
        t.write(rows(b, "x" if b % 2 else "y"))
    compaction_of_x = _compact_messages(t)
    compaction_of_x = [m for m in compaction_of_x
                       if t.file_scan().partition_codec.values(m.partition) == ("x",)]
    assert compaction_of_x
    # Meanwhile: appends everywhere, an overwrite of y and a compaction of y.
    t.write(rows(10, "x"))
    t.write(rows(11, "y"), mode="overwrite", partition={"dt": "y"})
    t.write(rows(12, "y"))
    t.compact(full=True, partitions=[{"dt": "y"}])
    sid = t.commit(compaction_of_x)
    assert sid == t.snapshot_manager.latest_snapshot_id()
    assert t.snapshot(sid).commit_kind is CommitKind.COMPACT
    expected = [*ids_of(rows(1, "x")), *ids_of(rows(3, "x")), *ids_of(rows(10, "x")), *ids_of(rows(11, "y")),
                *ids_of(rows(12, "y"))]
    assert ids_of(t.read()) == sorted(expected)


def test_overwrite_racing_a_compaction_of_the_same_partition_conflicts(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    for b in range(3):
        t.write(rows(b, "x"))
    pending = _compact_messages(t)
    t.write(rows(7, "x"), mode="overwrite", partition={"dt": "x"})
    with pytest.raises(CommitConflictError):
        t.commit(pending)
    assert ids_of(t.read()) == ids_of(rows(7, "x"))


# -- exactly-once --------------------------------------------------------------------------------------------------
def test_the_same_user_and_identifier_lands_once(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    w = t.new_write()
    w.write(rows(1, "x"))
    msgs = w.prepare_commit()
    first = t.commit(msgs, commit_user="job", commit_identifier=1)
    for _ in range(50):
        t.write(rows(2, "y"))  # history between the two attempts
    assert t.commit(msgs, commit_user="job", commit_identifier=1) == first
    fresh = laketide.load_catalog(warehouse=str(tmp_path / "wh")).table("db.t")  # another process's view
    assert fresh.commit(msgs, commit_user="job", commit_identifier=1) == first
    assert ids_of(t.read()).count(1000) == 1


def test_exactly_once_check_reads_only_recent_snapshots(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    for b in range(40):
        t.write(rows(b, "x"))
    w = t.new_write()
    w.write(rows(100, "x"))
    t.commit(w.prepare_commit(), commit_user="stream", commit_identifier=1)
    sm_cls = type(t.snapshot_manager)
    real = sm_cls.snapshot
    reads: list[int] = []

    def counting(self, snapshot_id):  # noqa: ANN001, ANN202
        reads.append(snapshot_id)
        return real(self, snapshot_id)

    monkeypatch.setattr(sm_cls, "snapshot", counting)
    for ident in range(2, 6):
        w = t.new_write()
        w.write(rows(100 + ident, "x"))
        t.write(rows(200 + ident, "y"))  # someone else commits in between
        reads.clear()
        t.commit(w.prepare_commit(), commit_user="stream", commit_identifier=ident)
        assert len(reads) <= 6, reads  # not the 40 older snapshots


# -- atomic publish ------------------------------------------------------------------------------------------------
class _NoAtomicIO(LocalFileIO):
    """A store without write-if-absent, like an object store without conditional puts."""

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        raise UnsupportedFeatureError(f"no atomic write-if-absent for {path}")


class _ThreadLock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.taken = 0

    def run_with_lock(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            self.taken += 1
            return fn()


def test_stores_without_atomic_create_need_a_lock_and_never_overwrite(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    plain = with_io(t, _NoAtomicIO())
    with pytest.raises(UnsupportedFeatureError):
        plain.write(rows(0, "x"))
    assert t.latest_snapshot() is None
    lock = _ThreadLock()

    def writer(n: int) -> None:
        locked = Table(name=t.name, path=t.path, file_io=_NoAtomicIO(), schema=t.schema, commit_lock=lock)
        for i in range(5):
            locked.write(rows(n * 10 + i, "x"))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert assert_contiguous(t) == list(range(1, 16))
    assert ids_of(t.read()) == sorted(i for n in range(3) for k in range(5) for i in ids_of(rows(n * 10 + k, "x")))
    assert lock.taken >= 15


def test_fsspec_store_without_conditional_put_refuses_to_publish() -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    from laketide.fs.fsspec_io import FsspecFileIO, PublishMode

    class Plain(MemoryFileSystem):
        protocol = ("plainstore",)

    io = FsspecFileIO(Plain())
    assert io.publish_mode is PublishMode.UNSUPPORTED
    with pytest.raises(UnsupportedFeatureError, match="allow_unsafe_publish"):
        io.try_write_atomic("plainstore://b/snapshot-1", b"{}")


def test_a_lagging_latest_hint_is_walked_forward(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    for b in range(5):
        t.write(rows(b, "x"))
    t.snapshot_manager.commit_latest_hint(2)  # a writer died between publishing and updating the hint
    assert t.snapshot_manager.latest_snapshot_id() == 5
    assert t.write(rows(9, "x")) == 6
