"""Result objects and progress reporting of the maintenance operations (compact, expire_snapshots,
remove_orphan_files).

``compact`` and ``expire_snapshots`` have always returned a number (the COMPACT snapshot's id, how many snapshots
went), and the CLI and callers compute with it. Their results stay that number — ``CompactionResult`` and
``ExpireResult`` are ``int`` subclasses — and carry the counts as attributes. ``progress`` is any
``callable(done, total)``; it is called from the calling thread, after each unit of work (a bucket compacted, a
snapshot expired, an orphan deleted), and also logged at DEBUG level.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from laketide.exceptions import CommitConflictError

if TYPE_CHECKING:
    from laketide.expr import Predicate
    from laketide.meta.commit_message import CommitMessage
    from laketide.table.table import Table

__all__ = ["CompactionResult", "ExpireResult", "ExpireStats", "Progress", "compact_with_progress"]

Progress = Callable[[int, int], None]

_LOG = logging.getLogger(__name__)


class _CountResult(int):
    """An ``int`` with named counts; ``str()`` stays the plain number (the CLI prints it)."""

    _fields: tuple[str, ...] = ()

    def __new__(cls, value: int, **counts: Any) -> _CountResult:
        self = super().__new__(cls, value)
        for name in cls._fields:
            setattr(self, name, counts[name])
        return self

    __str__ = int.__repr__

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self._fields}


class CompactionResult(_CountResult):
    """The COMPACT snapshot's id (the int value) and what the compaction did."""

    _fields = ("snapshot_id", "buckets", "files_rewritten", "files_written", "bytes_rewritten", "bytes_written",
               "duration_s")
    snapshot_id: int
    buckets: int
    files_rewritten: int
    files_written: int
    bytes_rewritten: int
    bytes_written: int
    duration_s: float


class ExpireResult(_CountResult):
    """How many snapshots went (the int value), how many files were deleted with them, and how long it took."""

    _fields = ("snapshots_expired", "files_deleted", "duration_s")
    snapshots_expired: int
    files_deleted: int
    duration_s: float


@dataclass
class ExpireStats:
    """What an expiration counts as it goes (table/expire.py fills it)."""

    progress: Progress | None = None
    files_deleted: int = 0
    started: float = field(default_factory=time.monotonic)

    def deleted(self, n: int) -> None:
        self.files_deleted += n

    def step(self, done: int, total: int) -> None:
        report(self.progress, done, total, what="snapshots expired")


def report(progress: Progress | None, done: int, total: int, *, what: str) -> None:
    _LOG.debug("%s: %d of %d", what, done, total)
    if progress is not None:
        progress(done, total)


def compact_with_progress(
    table: Table,
    *,
    full: bool,
    partitions: Sequence[Mapping[str, object]] | None,
    where: str | Predicate | None,
    commit_user: str | None,
    progress: Progress | None,
) -> CompactionResult | None:
    """``compact.compact_table`` with a result object and ``progress(buckets done, buckets)``."""
    from laketide.table.compact import compact_bucket, discard_compaction, plan_compaction

    started = time.monotonic()
    tasks = plan_compaction(table, partitions=partitions, where=where)
    if not tasks:
        report(progress, 0, 0, what="buckets compacted")
        return None
    found: list[CommitMessage | None] = []
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(compact_bucket, table, task, full=full) for task in tasks]
            for done, future in enumerate(as_completed(futures), 1):
                found.append(future.result())
                report(progress, done, len(tasks), what="buckets compacted")
    else:
        for done, task in enumerate(tasks, 1):
            found.append(compact_bucket(table, task, full=full))
            report(progress, done, len(tasks), what="buckets compacted")
    messages = [m for m in found if m is not None]
    if not messages:
        return None
    try:
        sid = table.commit(messages, commit_user=commit_user)
    except CommitConflictError:
        discard_compaction(table, messages)
        raise
    if sid is None:
        return None
    # An upgraded file (moved to another level without rewriting) appears before and after: not rewritten.
    rewritten = [f for m in messages for f in m.compact_before
                 if f.file_name not in {a.file_name for a in m.compact_after}]
    written = [f for m in messages for f in m.compact_after
               if f.file_name not in {b.file_name for b in m.compact_before}]
    return CompactionResult(
        sid, snapshot_id=sid, buckets=len(messages), files_rewritten=len(rewritten), files_written=len(written),
        bytes_rewritten=sum(f.file_size for f in rewritten), bytes_written=sum(f.file_size for f in written),
        duration_s=time.monotonic() - started,
    )
