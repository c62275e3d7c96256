"""Every file a Spark job's task creates is named under the job before it exists: a job that does not commit
leaves no file in the table, also of tasks that finish, or are killed, after the driver gave up.

Spark calls a write's ``abort`` on the driver as soon as one task fails, while the other tasks are being killed: a
killed Python worker runs on for up to ``spark.python.task.killTimeout`` and may die in the middle of a file. Neither
Spark's abort nor such a task knows its files. So each task attempt writes through ``TaskFiles``: before creating
a file it adds the path to its record (``<table>/_laketide_jobs/<job>/<attempt>.intent``, replaced atomically), and
once the file exists it looks for the job's end flag (``<table>/_laketide_jobs/<job>.ended``); if the flag is
there, the task deletes its files and fails. The driver ends a job by setting the flag, then deleting the files
named by the records (of a committed job: by the records of attempts whose files it did not commit). Whatever the
order, each file is deleted by the driver (its name was recorded before it existed, and the driver lists the
records after setting the flag) or by its task (it appeared after the flag was set, so the task's check finds the
flag). Only a task killed between a file's appearance and its check (an instant on a local disk; on an object
store, between a file's close and one existence check) can leave a file: the end flag and any record written
after the driver's sweep stay for ``RETENTION_MS``; then the next job end on the table deletes the files those
records name, the records and the flag. A streaming query's micro-batch is a job too, named by the query and the
batch id (PySpark gives the tasks and the commit writers of their own: that is what they share).

Paimon: Spark's file commit protocol stages a job's task attempts under the job id for the same reason.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from laketide.exceptions import CommitError, FileIOError
from laketide.fs.file_io import FileIO
from laketide.fs.forwarding import ForwardingFileIO
from laketide.meta.paths import JOBS_DIR

__all__ = ["JOBS_DIR", "RETENTION_MS", "JobEndedError", "SparkJob", "TaskFiles"]

_LOG = logging.getLogger(__name__)

_ENDED = ".ended"
_INTENT = ".intent"
# How long an ended job's flag stays for its late tasks to find (a killed Python worker is gone after
# spark.python.task.killTimeout; an executor Spark lost may take longer).
RETENTION_MS = 3_600_000


class JobEndedError(CommitError):
    """A task created a file after its Spark job had ended (aborted, or committed without this attempt)."""


@dataclass(frozen=True, slots=True)
class SparkJob:
    """One Spark job writing into the table at ``table_path`` (picklable: it travels to the tasks)."""

    table_path: str
    # Where else the job's files may be (the table's data-file.external-paths): the driver deletes nothing outside.
    roots: tuple[str, ...] = ()
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # A streaming micro-batch's job is named by its query and batch id, which a restarted query replays: its end
    # flag then ends only the attempts that started before the flag was set.
    replayable: bool = False

    @property
    def jobs_dir(self) -> str:
        return f"{self.table_path.rstrip('/')}/{JOBS_DIR}"

    @property
    def record_dir(self) -> str:
        return f"{self.jobs_dir}/{self.job_id}"

    @property
    def ended_flag(self) -> str:
        return f"{self.jobs_dir}/{self.job_id}{_ENDED}"

    def task_files(self, inner: FileIO, table_name: str) -> TaskFiles:
        """The FileIO one task attempt writes through."""
        return TaskFiles(inner, self, table_name)

    def end(self, file_io: FileIO, *, kept: Collection[str] = ()) -> None:
        """The job is over (committed or aborted): set its flag, then delete the files of every task attempt not in
        ``kept`` (the attempts whose files were committed) and all records; then expire old jobs' flags."""
        # The time it ended (a second end, Spark's abort after a failed commit or a replay's, moves it forward).
        file_io.write_hint(self.ended_flag, str(int(time.time() * 1000)).encode())
        self.sweep(file_io, kept=kept)
        _expire(file_io, self, now_ms=int(time.time() * 1000))

    def sweep(self, file_io: FileIO, *, kept: Collection[str] = ()) -> None:
        """Delete the files of the task attempts recorded so far that are not in ``kept``, and their records (a
        streaming query's micro-batch: its attempts that Spark did not commit)."""
        for st in file_io.list_status(self.record_dir):
            name = st.path.rsplit("/", 1)[-1]
            if not name.endswith(_INTENT):  # the temp file of a record being replaced when its task was killed
                file_io.delete_quietly(st.path)
                continue
            if name[: -len(_INTENT)] not in kept:
                for path in _recorded_paths(file_io, st.path):
                    if self._inside(path):
                        file_io.delete_quietly(path)
                    else:
                        _LOG.warning("Spark job %s: record %s names %s, outside table %s; left alone",
                                     self.job_id, st.path, path, self.table_path)
            file_io.delete_quietly(st.path)
        try:  # not recursive: a record a late task wrote meanwhile stays (with its flag, the task deletes its files)
            file_io.delete(self.record_dir)
        except FileIOError:
            pass

    def _inside(self, path: str) -> bool:
        if "/../" in f"/{path}/":
            return False
        return any(path.startswith(f"{root.rstrip('/')}/") for root in (self.table_path, *self.roots))


def _recorded_paths(file_io: FileIO, record: str) -> list[str]:
    try:
        text = file_io.read_text(record)
    except FileIOError:
        return []  # deleted by its task meanwhile: so were its files
    return [p for p in text.split("\n") if p]


def _expire(file_io: FileIO, job: SparkJob, *, now_ms: int) -> None:
    """Flags of jobs that ended over RETENTION_MS ago go, with whatever their late tasks recorded since."""
    for st in file_io.list_status(job.jobs_dir):
        name = st.path.rsplit("/", 1)[-1]
        if st.is_dir or not name.endswith(_ENDED) or not 0 < st.modification_time_ms < now_ms - RETENTION_MS:
            continue
        old = SparkJob(job.table_path, job.roots, name[: -len(_ENDED)])
        old.sweep(file_io)
        file_io.delete_quietly(old.record_dir)
        file_io.delete_quietly(st.path)


class TaskFiles(ForwardingFileIO):
    """The FileIO of one task attempt of a Spark job: records each path before creating it, and fails once the
    file exists if the job has ended meanwhile (the caller then calls :meth:`discard`)."""

    def __init__(self, inner: FileIO, job: SparkJob, table_name: str) -> None:
        super().__init__(inner)
        self.job = job
        self.table_name = table_name
        self.attempt = uuid.uuid4().hex
        self.started_ms = int(time.time() * 1000)
        self.paths: list[str] = []
        self._lock = threading.Lock()  # bucket writers may create files from several threads

    @property
    def record(self) -> str:
        return f"{self.job.record_dir}/{self.attempt}{_INTENT}"

    def before_create(self, path: str) -> None:
        with self._lock:
            if path in self.paths:  # a backend without native streams: open_output follows open_native_output
                return
            self.paths.append(path)
            self._write_record()

    def after_create(self, path: str, created: bool) -> None:
        if not created:  # the path was taken: the file is not this task's to delete
            with self._lock:
                self.paths.remove(path)
                self._write_record()
            return
        if self._job_ended():
            raise JobEndedError(
                f"Spark job {self.job.job_id} writing table {self.table_name} ended before this task finished "
                f"(it had just created {path}); this task's files are deleted"
            )

    def _write_record(self) -> None:
        # Replaced whole (readers see the old list or the new one): the driver may read it at any time.
        self.inner.write_hint(self.record, "\n".join(self.paths).encode())

    def _job_ended(self) -> bool:
        if not self.inner.exists(self.job.ended_flag):
            return False
        if not self.job.replayable:
            return True
        try:  # the flag of an earlier run of this micro-batch says nothing about this attempt
            return int(self.inner.read_text(self.job.ended_flag) or "0") >= self.started_ms
        except (FileIOError, ValueError):
            return True  # replaced or expired meanwhile: stop rather than risk an orphan

    def discard(self) -> None:
        """Delete every file this attempt created, then its record."""
        with self._lock:
            paths = list(self.paths)
        for path in paths:
            self.inner.delete_quietly(path)
        self.inner.delete_quietly(self.record)

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError(f"TaskFiles of Spark job {self.job.job_id} belongs to one task attempt: it is not pickled")
