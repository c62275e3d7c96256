"""The files of a Spark write job whose tasks finish after the job was aborted: found and deleted.

Spark calls ``abort`` on the driver as soon as one task fails, with the messages of the tasks done by then;
tasks still running may finish afterwards (their Python writer returns before the kill reaches it), and their
files were never handed to ``abort``. So each task of a job with an id, once its files are complete, records
its messages under the job (``<table>/_laketide_jobs/<job id>/``) and then looks for the job's abort flag; the
driver's abort sets the flag first and then deletes the files of every recorded task. Whatever the order, a
task's files are deleted by the driver (it saw the record) or by the task itself (it saw the flag). A committed
job's records are removed; an aborted job leaves its flag, so a task finishing later still sees it.

Paimon: Spark's file commit protocol stages a job's files under its job id for the same reason.
"""

from __future__ import annotations

import io
import logging
import pickle
import uuid
from collections.abc import Sequence
from typing import Any

from laketide.exceptions import CommitError
from laketide.meta.commit_message import CommitMessage

__all__ = ["JOBS_DIR", "abort_job", "finish_job", "record_task"]

_LOG = logging.getLogger(__name__)

JOBS_DIR = "_laketide_jobs"
_ABORTED = "ABORTED"
_RECORD = ".task"


class _MetaUnpickler(pickle.Unpickler):
    """Records live in the table's directory: load only laketide's metadata classes from them (a class call
    constructs a dataclass or enum; no other callable can run)."""

    def find_class(self, module: str, name: str) -> Any:
        found = super().find_class(module, name) if module.startswith("laketide.meta.") else None
        if not isinstance(found, type):
            raise pickle.UnpicklingError(f"{module}.{name} is not a laketide commit message class")
        return found


def _load_record(data: bytes) -> list[CommitMessage]:
    out = _MetaUnpickler(io.BytesIO(data)).load()
    if not isinstance(out, list) or not all(isinstance(m, CommitMessage) for m in out):
        raise pickle.UnpicklingError("not a list of commit messages")
    return out


def _job_dir(table: Any, job_id: str) -> str:
    return f"{table.path.rstrip('/')}/{JOBS_DIR}/{job_id}"


def record_task(table: Any, job_id: str, messages: Sequence[CommitMessage]) -> None:
    """Record a task's messages under its job; if the job was aborted meanwhile, raise (the caller deletes)."""
    job = _job_dir(table, job_id)
    record = f"{job}/{uuid.uuid4().hex}{_RECORD}"
    table.file_io.write_bytes(record, pickle.dumps(list(messages)))
    if table.file_io.exists(f"{job}/{_ABORTED}"):
        table.file_io.delete(record)  # the abort may have read it too: deleting twice is harmless
        raise CommitError(f"Spark write job {job_id} to table {table.name} was aborted before this task finished")


def abort_job(table: Any, job_id: str, messages: Sequence[CommitMessage]) -> None:
    """Flag the job aborted, then delete the files of ``messages`` and of every task recorded so far."""
    job = _job_dir(table, job_id)
    fs = table.file_io
    fs.try_write_atomic(f"{job}/{_ABORTED}", b"")
    recorded: list[CommitMessage] = []
    records = [st.path for st in fs.list_status(job) if st.path.endswith(_RECORD)]
    for path in records:
        try:
            recorded.extend(_load_record(fs.read_bytes(path)))
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
            _LOG.warning("Spark write job %s to table %s: unreadable task record %s (%s); its files, if any, are "
                         "left to orphan cleanup", job_id, table.name, path, e)
    table.abort([*messages, *recorded])
    for path in records:
        fs.delete(path)


def finish_job(table: Any, job_id: str) -> None:
    """Remove a committed job's records (its files are the table's now)."""
    table.file_io.delete(_job_dir(table, job_id), recursive=True)
