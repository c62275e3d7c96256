"""Decoupled changelogs: ``changelog/changelog-N``, the snapshots kept for their changelog after they expired.

When ``changelog.*`` retention is longer than ``snapshot.*`` retention, snapshot expiration writes each expiring
snapshot (same JSON as the snapshot) to ``changelog/changelog-N`` and keeps its changelog manifest list and files;
changelog expiration removes them by the changelog retention. Change reads fall back to these for snapshot ids
that no longer exist. EARLIEST / LATEST hints as in ``snapshot/``.

Paimon: utils.ChangelogManager, Changelog
"""

from __future__ import annotations

import re

from laketide.exceptions import CorruptMetadataError, FileIOError, NotFoundError
from laketide.fs import FileIO
from laketide.meta.snapshot import Snapshot

__all__ = ["ChangelogManager"]

_CHANGELOG_RE = re.compile(r"^changelog-(\d+)$")


class ChangelogManager:
    def __init__(self, file_io: FileIO, changelog_dir: str) -> None:
        self.file_io = file_io
        self.changelog_dir = changelog_dir

    def path(self, changelog_id: int) -> str:
        return f"{self.changelog_dir}/changelog-{changelog_id}"

    def try_changelog(self, changelog_id: int) -> Snapshot | None:
        """changelog-N, or None when there is none."""
        path = self.path(changelog_id)
        try:
            data = self.file_io.read_bytes(path)
        except NotFoundError:
            return None
        if not data.strip():
            raise CorruptMetadataError(f"Changelog file {path} is empty", path=path)
        return Snapshot.from_json(data, path=path)

    def commit(self, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as changelog-N (an overwrite of the same content is harmless)."""
        self.file_io.write_bytes(self.path(snapshot.id), snapshot.to_json().encode(), overwrite=True)
        self._write_hint("LATEST", max(snapshot.id, self._read_hint("LATEST") or 0))
        earliest = self._read_hint("EARLIEST")
        if earliest is None or snapshot.id < earliest:
            self._write_hint("EARLIEST", snapshot.id)

    def delete(self, changelog_id: int) -> None:
        self.file_io.delete(self.path(changelog_id))

    def ids(self) -> list[int]:
        """Every changelog-N id, ascending (a listing: hints are advisory)."""
        try:
            statuses = self.file_io.list_status(self.changelog_dir)
        except NotFoundError:
            return []
        out = []
        for st in statuses:
            m = _CHANGELOG_RE.match(st.path.rstrip("/").rsplit("/", 1)[-1])
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def commit_earliest_hint(self, changelog_id: int) -> None:
        self._write_hint("EARLIEST", changelog_id)

    def _read_hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_bytes(f"{self.changelog_dir}/{name}").decode().strip())
        except (FileIOError, ValueError, UnicodeDecodeError):
            return None

    def _write_hint(self, name: str, changelog_id: int) -> None:
        self.file_io.write_bytes(f"{self.changelog_dir}/{name}", str(changelog_id).encode(), overwrite=True)
