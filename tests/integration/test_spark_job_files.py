"""A Spark write job's late tasks (laketide.spark.job_files): whichever comes first, the driver's abort or a
task's record, the task's files end deleted; a committed job leaves no record. Real tables, real files."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import CommitError
from laketide.spark.job_files import JOBS_DIR, abort_job, finish_job, record_task

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])


def _table(tmp_path):  # noqa: ANN001, ANN202
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": [1, 2]}, schema=SCHEMA))
    return cat.table("db.t")


def _files(t) -> set[str]:  # noqa: ANN001
    return {os.path.join(d, f) for d, _, fs in os.walk(t.path) for f in fs}


def _task_messages(t):  # noqa: ANN001, ANN202
    """What a task leaves before handing over: its files on disk, its messages not committed."""
    w = t.new_write()
    w.write(pa.table({"id": list(range(10, 30)), "dt": ["a", "c"] * 10, "v": list(range(20))}, schema=SCHEMA))
    messages = w.prepare_commit()
    w.close()
    assert any(m.new_files for m in messages)
    return messages


def _data_files(paths: set[str]) -> set[str]:
    return {p for p in paths if p.endswith(".parquet") and f"/{JOBS_DIR}/" not in p}


def test_a_task_recorded_before_the_abort_is_deleted_by_the_abort(tmp_path) -> None:
    t = _table(tmp_path)
    before = _files(t)
    record_task(t, "job1", _task_messages(t))
    abort_job(t, "job1", [])  # Spark did not hand this task's message over
    assert _data_files(_files(t)) == _data_files(before)
    assert {os.path.basename(p) for p in _files(t) - before} == {"ABORTED"}


def test_a_task_finishing_after_the_abort_refuses_and_its_caller_deletes(tmp_path) -> None:
    t = _table(tmp_path)
    before = _files(t)
    abort_job(t, "job1", [])
    messages = _task_messages(t)
    with pytest.raises(CommitError, match="job1 to table db.t was aborted"):
        record_task(t, "job1", messages)
    t.abort(messages)  # what _write_task's error path does
    abort_job(t, "job1", [])  # a second abort (Spark's, after a commit failure) is harmless
    assert _data_files(_files(t)) == _data_files(before)
    assert {os.path.basename(p) for p in _files(t) - before} == {"ABORTED"}  # the late task's record went too


def test_a_committed_job_leaves_no_record_and_other_jobs_are_untouched(tmp_path) -> None:
    t = _table(tmp_path)
    first, second = _task_messages(t), _task_messages(t)
    record_task(t, "job1", first)
    record_task(t, "job2", second)
    t.commit(first)
    finish_job(t, "job1")
    assert not os.path.exists(os.path.join(t.path, JOBS_DIR, "job1"))
    abort_job(t, "job2", [])
    assert len(t.read()) == 2 + 20  # job1 landed; job2's files went
    assert _data_files(_files(t)) == {p for s in t.scan().plan() for p in s.file_paths()}


def test_a_record_that_is_not_commit_messages_is_not_run(tmp_path, caplog) -> None:
    """Records live in the table directory: one holding anything but laketide's metadata classes is refused."""
    import pickle

    t = _table(tmp_path)
    job = os.path.join(t.path, JOBS_DIR, "job1")
    os.makedirs(job)
    canary = tmp_path / "canary"
    canary.write_text("still here")

    class Evil:
        def __reduce__(self):  # noqa: ANN204 - loading this pickle would call os.remove(canary)
            return (os.remove, (str(canary),))

    with open(os.path.join(job, "evil.task"), "wb") as f:
        f.write(pickle.dumps(Evil()))
    with open(os.path.join(job, "junk.task"), "wb") as f:
        f.write(b"not a pickle")
    abort_job(t, "job1", [])
    assert canary.read_text() == "still here"
    assert caplog.text.count("unreadable task record") == 2
