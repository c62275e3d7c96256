"""Consumers: the progress of named streaming readers (``consumer/consumer-<id>``: ``{"nextSnapshot" : n}``).

Snapshot expiration keeps every snapshot from the smallest ``nextSnapshot`` on, so a consumer that stops and
restarts resumes exactly where it left off. ``consumer.expiration-time`` removes consumers whose file was not
updated for that long (a reader that went away for good must not pin snapshots forever).

Paimon: consumer.Consumer, consumer.ConsumerManager
"""

from __future__ import annotations

import builtins
import datetime as _dt
import json
import time
from typing import TYPE_CHECKING

from laketide.exceptions import CorruptMetadataError, FileIOError, InvalidOptionError, NoSuchSnapshotError
from laketide.meta.json_util import jackson_dumps
from laketide.table.names import check_name

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = ["CONSUMER_PREFIX", "ConsumerManager"]

CONSUMER_PREFIX = "consumer-"


class ConsumerManager:
    """The consumers of one branch of a table (``t.consumers``): get, reset, delete, list, expire."""

    def __init__(self, store: FileStore) -> None:
        self.store = store

    def path(self, consumer_id: str) -> str:
        check_name("consumer", consumer_id, table_name=self.store.table_name)
        return f"{self.store.path_factory.consumer_dir}/{CONSUMER_PREFIX}{consumer_id}"

    def get(self, consumer_id: str) -> int | None:
        """The next snapshot ``consumer_id`` will read, None for an unknown consumer."""
        path = self.path(consumer_id)
        try:
            data = self.store.file_io.read_bytes(path)
        except FileIOError:
            if not self.store.file_io.exists(path):
                return None
            raise
        try:
            return int(json.loads(data)["nextSnapshot"])
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(f"Cannot parse consumer file {path}: {e!r}", path=path) from e

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """Record that ``consumer_id`` reads snapshot ``next_snapshot`` next (creates the consumer)."""
        if not isinstance(next_snapshot, int) or isinstance(next_snapshot, bool) or next_snapshot < 1:
            raise InvalidOptionError(
                f"Table {self.store.table_name}: next snapshot of consumer {consumer_id!r} must be an int >= 1, got "
                f"{next_snapshot!r}"
            )
        path = self.path(consumer_id)
        self.store.file_io.write_bytes(path, jackson_dumps({"nextSnapshot": next_snapshot}).encode(), overwrite=True)

    def delete(self, consumer_id: str) -> None:
        path = self.path(consumer_id)
        if not self.store.file_io.exists(path):
            raise NoSuchSnapshotError(f"Consumer {consumer_id!r} of table {self.store.table_name} does not exist")
        self.store.file_io.delete(path)

    def list(self) -> dict[str, int]:
        """Consumer id -> next snapshot (unreadable files are skipped)."""
        from laketide.table.expire import list_consumers

        return list_consumers(self.store)

    def expire(self, older_than: _dt.datetime | None = None) -> builtins.list[str]:
        """Delete consumers whose file was last updated before ``older_than`` (default: now minus
        ``consumer.expiration-time``; nothing without that option). Returns their ids."""
        if older_than is None:
            ttl = self.store.options.consumer_expiration_time
            if ttl is None:
                return []
            cutoff_ms = int(time.time() * 1000) - ttl
        else:
            aware = older_than if older_than.tzinfo is not None else older_than.replace(tzinfo=_dt.timezone.utc)
            cutoff_ms = int(aware.timestamp() * 1000)
        gone = []
        for st in self.store.file_io.list_status(self.store.path_factory.consumer_dir):
            base = st.path.rstrip("/").rsplit("/", 1)[-1]
            if not st.is_dir and base.startswith(CONSUMER_PREFIX) and st.modification_time_ms < cutoff_ms:
                self.store.file_io.delete(st.path)
                gone.append(base[len(CONSUMER_PREFIX):])
        return sorted(gone)

    def __contains__(self, consumer_id: object) -> bool:
        return isinstance(consumer_id, str) and self.get(consumer_id) is not None
