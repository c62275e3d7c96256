"""Finding, reading and publishing snapshots; EARLIEST / LATEST hints with a listing fallback.

Paimon: utils.SnapshotManager, utils.HintFileUtils
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from laketide.exceptions import CorruptMetadataError, NoSuchSnapshotError, NotFoundError
from laketide.fs import FileIO
from laketide.meta.snapshot import Snapshot

__all__ = ["SnapshotManager"]

_SNAPSHOT_RE = re.compile(r"^snapshot-(\d+)$")
EARLIEST = "EARLIEST"
LATEST = "LATEST"


class SnapshotManager:
    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.snapshot_dir = f"{table_path}/snapshot"

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

    def snapshot_exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.snapshot_path(snapshot_id))

    def latest_snapshot_id(self) -> int | None:
        hint = self._read_hint(LATEST)
        # The hint may lag behind (a writer died between publishing and updating it): trust it only when
        # no next snapshot exists.
        if hint is not None and hint > 0 and not self.snapshot_exists(hint + 1):
            if self.snapshot_exists(hint):
                return hint
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
        for sid in sorted(self._list_ids()):
            yield self.snapshot(sid)

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
        """Atomically create snapshot-N; False if another writer took that id first."""
        if not self.file_io.try_write_atomic(self.snapshot_path(snapshot.id), snapshot.to_json().encode()):
            return False
        self._write_hint(LATEST, snapshot.id)
        if snapshot.id == 1 or self._read_hint(EARLIEST) is None:
            self._write_hint(EARLIEST, self.earliest_snapshot_id() or snapshot.id)
        return True

    def _read_hint(self, name: str) -> int | None:
        try:
            text = self.file_io.read_bytes(f"{self.snapshot_dir}/{name}").decode().strip()
            return int(text)
        except (NotFoundError, ValueError, UnicodeDecodeError):
            return None

    def _write_hint(self, name: str, snapshot_id: int) -> None:
        # Hints are advisory: readers verify them, so a plain overwrite is enough.
        self.file_io.write_bytes(f"{self.snapshot_dir}/{name}", str(snapshot_id).encode(), overwrite=True)

    def _list_ids(self) -> list[int]:
        out = []
        for st in self.file_io.list_status(self.snapshot_dir):
            m = _SNAPSHOT_RE.match(st.path.rstrip("/").rsplit("/", 1)[-1])
            if m:
                out.append(int(m.group(1)))
        return out
