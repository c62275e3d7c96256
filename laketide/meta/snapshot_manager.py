"""Finding, reading and publishing snapshots; EARLIEST / LATEST hints with a listing fallback.

Publishing snapshot-N is the commit point of every write: it must be atomic and must never replace a
snapshot another writer published. FileIO.try_write_atomic gives that (a no-replace link locally, a
conditional put on object stores); stores without such a primitive need a CommitLock (a catalog lock,
Paimon's ``lock.enabled``) under which "absent? then write" is safe.

Paimon: utils.SnapshotManager, utils.HintFileUtils, operation.Lock, catalog.RenamingSnapshotCommit
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from laketide.exceptions import CorruptMetadataError, FileIOError, NoSuchSnapshotError, NotFoundError
from laketide.fs import FileIO
from laketide.meta.snapshot import Snapshot

__all__ = ["CommitLock", "SnapshotManager"]

_SNAPSHOT_RE = re.compile(r"^snapshot-(\d+)$")
EARLIEST = "EARLIEST"
LATEST = "LATEST"
HINT_NAMES = frozenset({EARLIEST, LATEST})
# Past this many snapshots beyond a stale LATEST hint, one listing is cheaper than probing one by one.
_MAX_HINT_PROBES = 64

T = TypeVar("T")


class CommitLock(Protocol):
    """A lock shared by every committer of a table (Paimon: operation.Lock, e.g. a JDBC catalog lock)."""

    def run_with_lock(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` while holding the table's lock."""
        ...


class SnapshotManager:
    def __init__(
        self, file_io: FileIO, table_path: str, *, lock: CommitLock | None = None, snapshot_dir: str | None = None
    ) -> None:
        """``snapshot_dir`` is the branch's directory from the store's path factory (default: the main branch's)."""
        self.file_io = file_io
        self.table_path = table_path
        self.snapshot_dir = snapshot_dir or f"{table_path}/snapshot"
        self.lock = lock
        # commit user -> (last snapshot id scanned, that user's newest snapshot id at or below it): lets a
        # streaming committer check exactly-once against the snapshots published since its previous check.
        self._user_cache: dict[str, tuple[int, int | None]] = {}
        self._cache_lock = threading.Lock()

    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/snapshot-{snapshot_id}"

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except NotFoundError as e:
            raise NoSuchSnapshotError(
                f"Snapshot {snapshot_id} of table {self.table_path} does not exist ({path})"
            ) from e
        if not data.strip():
            raise CorruptMetadataError(f"Snapshot file {path} is empty", path=path)
        return Snapshot.from_json(data, path=path)

    def try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id``, or None when it does not exist (e.g. expired meanwhile)."""
        try:
            return self.snapshot(snapshot_id)
        except NoSuchSnapshotError:
            return None

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.snapshot_path(snapshot_id))

    def latest_snapshot_id(self) -> int | None:
        hint = self._read_hint(LATEST)
        # The hint lags behind when writers race or one died between publishing and updating it: walk
        # forward from it (Java's HintFileUtils.findLatest) so the cost never grows with the history.
        if hint is not None and hint > 0 and self.snapshot_exists(hint):
            nxt = hint + 1
            for _ in range(_MAX_HINT_PROBES):
                if not self.snapshot_exists(nxt):
                    return nxt - 1
                nxt += 1
        ids = self._list_ids()
        return max(ids) if ids else None

    def earliest_snapshot_id(self) -> int | None:
        hint = self._read_hint(EARLIEST)
        if hint is not None and self.snapshot_exists(hint):
            return hint
        ids = self._list_ids()
        return min(ids) if ids else None

    def latest_snapshot(self) -> Snapshot | None:
        sid = self.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every snapshot, oldest first; ones expired while iterating are skipped."""
        for sid in sorted(self._list_ids()):
            s = self.try_snapshot(sid)
            if s is not None:
                yield s

    def snapshot_ids(self) -> list[int]:
        return sorted(self._list_ids())

    def earlier_or_equal_time_millis(self, timestamp_ms: int) -> Snapshot | None:
        """The latest snapshot committed at or before ``timestamp_ms`` (time travel by timestamp)."""
        best = None
        for sid in sorted(self._list_ids()):
            s = self.snapshot(sid)
            if s.time_millis <= timestamp_ms:
                best = s
            else:
                break
        return best

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create snapshot-N; False if another writer took that id first.

        An exception means the outcome is unknown: the snapshot may have landed (read it back to know).
        """
        path = self.snapshot_path(snapshot.id)
        data = snapshot.to_json().encode()
        if self.lock is None:
            published = self.file_io.try_write_atomic(path, data)
        else:
            published = self.lock.run_with_lock(lambda: self._write_if_absent_locked(path, data))
        if not published:
            return False
        # Hints are advisory and verified by readers: failing to update them must not fail a landed commit.
        try:
            self._write_hint(LATEST, snapshot.id)
            if snapshot.id == 1 or self._read_hint(EARLIEST) is None:
                self._write_hint(EARLIEST, self.earliest_snapshot_id() or snapshot.id)
        except FileIOError:
            pass
        return True

    def _write_if_absent_locked(self, path: str, data: bytes) -> bool:
        # Every committer takes the same lock, so check-then-write cannot race; an overwriting write is used
        # because stores without conditional create reject the exclusive one.
        if self.file_io.exists(path):
            return False
        self.file_io.write_bytes(path, data, overwrite=True)
        return True

    def delete_snapshot(self, snapshot_id: int) -> None:
        """Remove snapshot-N (expiration, rollback); fine if it is gone already."""
        self.file_io.delete(self.snapshot_path(snapshot_id))

    def commit_latest_hint(self, snapshot_id: int) -> None:
        self._write_hint(LATEST, snapshot_id)

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        self._write_hint(EARLIEST, snapshot_id)

    def earliest_hint_missing(self) -> bool:
        return self._read_hint(EARLIEST) is None

    def latest_snapshot_of_user(self, commit_user: str, *, latest: Snapshot | None = None) -> Snapshot | None:
        """The newest snapshot committed by ``commit_user`` (Paimon: SnapshotManager#latestSnapshotOfUser).

        Scans back from the latest snapshot until the user's newest one. Within one process the scan is
        remembered, so a committer that commits regularly only reads the snapshots published since its
        previous commit.
        """
        if latest is None:
            latest = self.latest_snapshot()
            if latest is None:
                return None
        with self._cache_lock:
            cached = self._user_cache.get(commit_user)
        floor, found = (0, None) if cached is None or cached[0] > latest.id else cached
        earliest = self.earliest_snapshot_id() or 1
        result: Snapshot | None = None
        sid = latest.id
        while sid > floor and sid >= earliest:
            s = latest if sid == latest.id else self.try_snapshot(sid)
            if s is not None and s.commit_user == commit_user:
                result = s
                break
            sid -= 1
        if result is None and found is not None and found >= earliest:
            result = self.try_snapshot(found)
            if result is not None and result.commit_user != commit_user:  # rolled back and reused
                result = None
        with self._cache_lock:
            self._user_cache[commit_user] = (latest.id, result.id if result is not None else None)
        return result

    def forget_users(self) -> None:
        """Drop the per-user scan memory (after a rollback reused snapshot ids)."""
        with self._cache_lock:
            self._user_cache.clear()

    def _read_hint(self, name: str) -> int | None:
        try:
            text = self.file_io.read_bytes(f"{self.snapshot_dir}/{name}").decode().strip()
            return int(text)
        except (FileIOError, ValueError, UnicodeDecodeError):
            return None  # hints are advisory: unreadable means "list instead"

    def _write_hint(self, name: str, snapshot_id: int) -> None:
        # Hints are advisory: readers verify them, so a plain overwrite, not synced, is enough.
        self.file_io.write_hint(f"{self.snapshot_dir}/{name}", str(snapshot_id).encode())

    def _list_ids(self) -> list[int]:
        out = []
        for st in self.file_io.list_status(self.snapshot_dir):
            m = _SNAPSHOT_RE.match(st.path.rstrip("/").rsplit("/", 1)[-1])
            if m:
                out.append(int(m.group(1)))
        return out
