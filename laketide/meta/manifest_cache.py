"""The process's cache of decoded manifests and manifest lists, least recently used out first, within a budget.

A manifest file never changes once written (its name is unique: a rewrite is a new file), so what one decode
built serves every later plan, restore and commit check in the process: a table's second plan decodes only the
manifests written since its first. A manifest this process writes goes in as it is written, so a writer that
commits again and again (streaming ingestion, a Spark driver's micro-batches) never decodes its own manifests.

Entries are keyed by path *and* file size (the size the manifest list or snapshot records), so a file that is
not what its metadata says is read, and fails, as without the cache. Where the size is unknown nothing is cached.

The budget is an estimate of the decoded objects' memory: ``LAKETIDE_MANIFEST_CACHE_MEMORY`` (a Paimon memory
size, "134217728" or "128 mb"; ``0`` turns the cache off) when the process starts, else 128 MiB (Java's
``cache.manifest.small-file-memory``); ``MANIFEST_CACHE.resize`` changes it at run time. A manifest larger than a
quarter of the budget is not kept (it would push out everything else).

Paimon: utils.ObjectsCache, utils.SegmentsCache (there, serialized rows per catalog; here, the decoded objects)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from laketide.exceptions import InvalidOptionError
from laketide.meta.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats
from laketide.options import parse_memory_size

__all__ = ["MANIFEST_CACHE", "ManifestCache", "DEFAULT_MEMORY", "MEMORY_ENV"]

MEMORY_ENV = "LAKETIDE_MANIFEST_CACHE_MEMORY"
DEFAULT_MEMORY = 128 << 20

T = TypeVar("T")

# Rough CPython sizes: a slotted object's header and slots, an int, a bytes / str object's header.
_OBJECT, _INT, _BYTES = 56, 32, 33


def _stats_weight(s: SimpleStats) -> int:
    return _OBJECT + 2 * _BYTES + len(s.min_values) + len(s.max_values) + 8 * (len(s.null_counts or ()) + 8)


def _file_weight(f: DataFileMeta) -> int:
    return (_OBJECT + 8 * 20 + 6 * _INT + _BYTES + len(f.file_name) + 2 * _BYTES + len(f.min_key) + len(f.max_key)
            + _stats_weight(f.key_stats) + _stats_weight(f.value_stats)
            + sum(_BYTES + len(x) for x in f.extra_files) + len(f.embedded_index or b""))


def weight(objs: Sequence[Any]) -> int:
    """An estimate of the memory ``objs`` (manifest entries or manifest file metas) hold, in bytes."""
    total = 64 + 8 * len(objs)
    for o in objs:
        if isinstance(o, ManifestEntry):
            total += _OBJECT + 5 * 8 + _BYTES + len(o.partition) + _file_weight(o.file)
        elif isinstance(o, ManifestFileMeta):
            total += _OBJECT + 12 * 8 + _BYTES + len(o.file_name) + _stats_weight(o.partition_stats)
        else:
            total += 256
    return total


def parse_memory(raw: str, *, source: str) -> int:
    """``raw`` as Paimon's memory sizes are written; an error names ``source``."""
    try:
        return parse_memory_size(raw)
    except ValueError as e:
        raise InvalidOptionError(f"{source} = {raw!r}: {e} (e.g. 134217728, 128 mb or 0)") from e


class ManifestCache:
    """Decoded metadata files by (path, size); thread-safe. The lists handed out are copies."""

    def __init__(self, max_memory: int) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, int], tuple[tuple[Any, ...], int]] = OrderedDict()
        self._max_memory = max(0, max_memory)
        self._used = 0
        self.hits = 0
        self.misses = 0

    @property
    def max_memory(self) -> int:
        return self._max_memory

    @property
    def used_memory(self) -> int:
        return self._used

    def __len__(self) -> int:
        return len(self._items)

    def resize(self, max_memory: int) -> None:
        """A new budget (0: off); what no longer fits leaves, least recently used first."""
        with self._lock:
            self._max_memory = max(0, max_memory)
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._used = 0

    def get_or_load(self, path: str, size: int | None, load: Callable[[], list[T]]) -> list[T]:
        """The decoded objects of the file at ``path`` of ``size`` bytes; ``load`` decodes them on a miss."""
        if size is None or self._max_memory == 0:
            return load()
        key = (path, size)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return list(found[0])
            self.misses += 1
        objs = load()  # outside the lock: threads decode different manifests at once
        self.put(path, size, objs)
        return objs

    def put(self, path: str, size: int, objs: Sequence[Any]) -> None:
        """Keep ``objs`` as the content of the file at ``path`` of ``size`` bytes (a file this process wrote)."""
        if self._max_memory == 0:
            return
        w = weight(objs)
        key = (path, size)
        with self._lock:
            if w > self._max_memory // 4 or key in self._items:
                return
            self._items[key] = (tuple(objs), w)
            self._used += w
            self._evict()

    def _evict(self) -> None:
        while self._used > self._max_memory and self._items:
            _, (_, w) = self._items.popitem(last=False)
            self._used -= w


def _initial_memory() -> int:
    raw = os.environ.get(MEMORY_ENV)
    return DEFAULT_MEMORY if raw is None or not raw.strip() else parse_memory(raw, source=MEMORY_ENV)


MANIFEST_CACHE = ManifestCache(_initial_memory())
