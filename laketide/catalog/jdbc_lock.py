"""The JDBC catalog's distributed lock: one row per held lock in ``paimon_distributed_locks``.

Java's semantics (Paimon: jdbc.JdbcCatalogLock, AbstractDistributedLockDialect): the lock id is
``<catalog-key>.<database>.<table>``; acquiring first deletes the row if it outlived its expiry (the holder died),
then inserts it (the primary key lets exactly one holder in). A failed attempt sleeps 100 ms, 200 ms, ... at most
``lock-check-max-sleep`` and gives up after ``lock-acquire-timeout``. A row expires ``lock-acquire-timeout``
seconds after it was taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

from laketide.catalog.jdbc_tables import LOCKS
from laketide.exceptions import CommitError

__all__ = ["JdbcLock", "LockTimeoutError"]

T = TypeVar("T")


class LockTimeoutError(CommitError):
    """The catalog lock of a table could not be taken within ``lock-acquire-timeout``; nothing was committed."""


class JdbcLock:
    """A table's catalog lock; ``run_with_lock`` is the CommitLock protocol the snapshot publisher calls."""

    def __init__(self, engine: sa.Engine, lock_id: str, *, acquire_timeout_ms: int, check_max_sleep_ms: int) -> None:
        self.engine = engine
        self.lock_id = lock_id
        self.acquire_timeout_ms = acquire_timeout_ms
        self.check_max_sleep_ms = check_max_sleep_ms

    def run_with_lock(self, fn: Callable[[], T]) -> T:
        self._lock()
        try:
            return fn()
        finally:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(LOCKS).where(LOCKS.c.lock_id == self.lock_id))

    def _lock(self) -> None:
        start = time.monotonic()
        next_sleep_ms = 50
        while not self._try_acquire():
            elapsed_ms = (time.monotonic() - start) * 1000
            if elapsed_ms > self.acquire_timeout_ms:
                raise LockTimeoutError(
                    f"Could not take the catalog lock {self.lock_id!r} within {elapsed_ms:.0f} ms "
                    f"(lock-acquire-timeout); another writer holds it"
                )
            next_sleep_ms = min(next_sleep_ms * 2, self.check_max_sleep_ms)
            time.sleep(next_sleep_ms / 1000)  # waiting for another process to release: backoff as Java does

    def _try_acquire(self) -> bool:
        with self.engine.begin() as conn:
            conn.execute(sa.delete(LOCKS).where(LOCKS.c.lock_id == self.lock_id, _expired(conn.dialect.name)))
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(LOCKS).values(
                    lock_id=self.lock_id, expire_time_seconds=self.acquire_timeout_ms // 1000,
                ))
        except sa.exc.IntegrityError:
            return False
        return True


def _expired(dialect: str) -> sa.ColumnElement[bool]:
    """``now - acquired_at > expire_time_seconds`` in the database's own clock, as each Java dialect writes it."""
    if dialect == "sqlite":
        age = sa.cast(sa.func.strftime("%s", "now"), sa.Integer) - sa.cast(
            sa.func.strftime("%s", LOCKS.c.acquired_at), sa.Integer
        )
    else:
        age = sa.extract("epoch", sa.func.age(sa.func.now(), LOCKS.c.acquired_at))
    return age > LOCKS.c.expire_time_seconds
