"""The files of a Spark job's tasks (laketide.spark.job_files): whichever comes first, the driver's end of the job
or a task's file, and wherever a task is killed, a job that does not commit them leaves none of its files. Real
tables, real files, real SIGKILLs (no Spark: the protocol between a task and the driver is all file operations)."""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import random
import time

import pyarrow as pa
import pytest

import laketide
from laketide.fs import LocalFileIO
from laketide.fs.failing import CrashingFileIO, FaultPoint
from laketide.meta.paths import JOBS_DIR
from laketide.spark.job_files import RETENTION_MS, JobEndedError, SparkJob
from tests.job_tasks import task_attempt

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])
ROWS = pa.table({"id": list(range(10, 30)), "dt": ["a", "c"] * 10, "v": list(range(20))}, schema=SCHEMA)


def _table(warehouse: str):  # noqa: ANN202
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": [1, 2]}, schema=SCHEMA))
    return cat.table("db.t")


def _files(t) -> set[str]:  # noqa: ANN001
    return {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs}


def _task(t, job: SparkJob, inner=None):  # noqa: ANN001, ANN202
    return task_attempt(t, job, ROWS, inner)


def _flags(paths: set[str], t) -> set[str]:  # noqa: ANN001
    return {os.path.relpath(p, t.path) for p in paths}


def test_a_task_that_wrote_before_the_end_loses_its_files_to_the_driver(tmp_path) -> None:
    t = _table(str(tmp_path / "wh"))
    before = _files(t)
    job = SparkJob(t.path)
    _task(t, job)  # finished, but Spark never handed its messages over (the job failed elsewhere)
    assert any(p.endswith(".intent") for p in _files(t) - before)
    job.end(t.file_io)
    assert _flags(_files(t) - before, t) == {f"{JOBS_DIR}/{job.job_id}.ended"}
    assert not os.path.exists(job.record_dir)
    job.end(t.file_io)  # a second end (Spark aborts after a failed commit) is harmless
    assert _flags(_files(t) - before, t) == {f"{JOBS_DIR}/{job.job_id}.ended"}


def test_a_task_writing_after_the_end_fails_once_its_file_exists_and_deletes_its_files(tmp_path) -> None:
    t = _table(str(tmp_path / "wh"))
    before = _files(t)
    job = SparkJob(t.path)
    job.end(t.file_io)
    with pytest.raises(JobEndedError, match=f"Spark job {job.job_id} writing table db.t ended"):
        _task(t, job)
    assert _flags(_files(t) - before, t) == {f"{JOBS_DIR}/{job.job_id}.ended"}
    assert len(t.read()) == 2


def test_a_committed_job_keeps_the_attempts_it_committed_and_deletes_the_others(tmp_path) -> None:
    t = _table(str(tmp_path / "wh"))
    job, other = SparkJob(t.path), SparkJob(t.path)
    kept, messages = _task(t, job)
    _task(t, job)  # a speculative twin (or an attempt whose messages Spark dropped)
    _, pending = _task(t, other)  # another job, still running
    t.commit(messages)
    job.end(t.file_io, kept={kept})
    assert len(t.read()) == 2 + 20
    assert not os.path.exists(job.record_dir)
    live = {p for s in t.scan().plan() for p in s.file_paths()}
    running = {t.store.path_factory.data_file_paths(m.partition, m.bucket, f)[0] for m in pending for f in m.new_files}
    assert {p for p in _files(t) if p.endswith(".parquet")} == live | running
    other.end(t.file_io)
    assert {p for p in _files(t) if p.endswith(".parquet")} == live


def test_records_never_delete_outside_the_table_or_a_file_the_task_did_not_create(tmp_path, caplog) -> None:
    t = _table(str(tmp_path / "wh"))
    canary = tmp_path / "canary"
    canary.write_text("still here")
    taken = os.path.join(t.path, "taken")
    with open(taken, "w") as f:
        f.write("someone else's")
    job = SparkJob(t.path)
    files = job.task_files(t.file_io, t.name)
    assert files.try_write_atomic(taken, b"mine") is False  # the path was taken: not this task's file
    os.makedirs(job.record_dir, exist_ok=True)
    with open(os.path.join(job.record_dir, "forged.intent"), "w") as f:
        f.write(f"{canary}\n{t.path}/../canary\n")
    with caplog.at_level(logging.WARNING, logger="laketide.spark.job_files"):
        job.end(t.file_io)
    assert canary.read_text() == "still here"
    with open(taken) as f:
        assert f.read() == "someone else's"
    assert caplog.text.count("outside table") == 2


def test_the_records_and_flags_of_jobs_ended_long_ago_expire_at_a_later_end(tmp_path) -> None:
    t = _table(str(tmp_path / "wh"))
    before = _files(t)
    old = SparkJob(t.path)
    old.end(t.file_io)
    late = old.task_files(t.file_io, t.name)  # a task that wrote its record after the driver's sweep ...
    late.before_create(f"{t.path}/dt=a/bucket-0/data-late.parquet")
    open(f"{t.path}/dt=a/bucket-0/data-late.parquet", "w").close()  # ... and died before its check
    middle = SparkJob(t.path)
    middle.end(t.file_io)
    assert os.path.exists(f"{t.path}/dt=a/bucket-0/data-late.parquet")  # the old flag is still young
    stale = (time.time() * 1000 - RETENTION_MS - 60_000) / 1000
    os.utime(old.ended_flag, (stale, stale))
    newest = SparkJob(t.path)
    newest.end(t.file_io)
    assert _files(t) - before == {middle.ended_flag, newest.ended_flag}
    assert not os.path.exists(old.record_dir)


# -- SIGKILL at every file operation of a task, before or after the driver ends the job ------------------------------
def _killed_task(warehouse: str, job: SparkJob, crash_at: int, at: str) -> None:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    try:
        _task(t, job, CrashingFileIO(LocalFileIO(), crash_at=crash_at, at=FaultPoint(at)))
    except JobEndedError:
        return  # the job had ended: the task deleted its files before step crash_at came


def test_a_task_killed_at_any_file_operation_leaves_nothing_once_the_job_ended(tmp_path) -> None:
    warehouse = str(tmp_path / "wh")
    t = _table(warehouse)
    counting = CrashingFileIO(LocalFileIO())
    counted = SparkJob(t.path)
    _task(t, counted, counting)  # records, data files: every mutation a task makes
    counted.end(t.file_io)
    steps = counting.mutations
    assert steps >= 4 and any(".intent" in op for op in counting.log) and any("/bucket-" in op for op in counting.log)
    before = _files(t)

    # Every record write and file creation, before and after it took effect, and points inside the data files.
    rng = random.Random(11)
    streamed = [k for k, op in enumerate(counting.log, start=1) if op.startswith("write ") and "/bucket-" in op]
    points = [(k, at) for k in range(1, steps + 1) if k not in streamed for at in ("before", "after")]
    points += [(k, rng.choice(["before", "after"])) for k in rng.sample(streamed, 6)]
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["laketide.table.table", __name__])
    for end_first in (False, True):
        for k, at in points:
            seen = _files(t)
            job = SparkJob(t.path)
            if end_first:
                job.end(t.file_io)
            p = ctx.Process(target=_killed_task, args=(warehouse, job, k, at))
            p.start()
            p.join(60)
            # A late task stops at its first file (it finds the flag): later kill points are never reached.
            assert p.exitcode == -9 or (end_first and p.exitcode == 0), (k, at, p.exitcode)
            if not end_first:
                job.end(t.file_io)  # Spark's abort, after the kill
            left = {f for f in _files(t) - before if not f.endswith(".ended")}
            if not end_first:
                assert not left, (k, at, left)
                continue
            if p.exitcode == 0:  # it found the flag after its first file and deleted what it wrote
                assert _files(t) - seen == {job.ended_flag}, (k, at)
            # Killed after its file appeared, before its check (the one window): a record names each file left.
            recorded = set()
            for f in left:
                if f.endswith(".intent"):
                    with open(f) as r:
                        recorded |= set(r.read().split())
            assert {f for f in left if f"/{JOBS_DIR}/" not in f} <= recorded, (k, at, left)
    # What killed late tasks left goes once their jobs' flags are old enough.
    stale = (time.time() * 1000 - RETENTION_MS - 60_000) / 1000
    for f in _files(t) - before:
        if f.endswith(".ended"):
            os.utime(f, (stale, stale))
    last = SparkJob(t.path)
    last.end(t.file_io)
    assert _files(t) - before == {last.ended_flag}
    assert len(t.read()) == 2
