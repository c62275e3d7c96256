"""``Table.lookup``'s per-file cache: each data file decoded once into a local lookup file, then searched by key.

A data file never changes once written, so the rows of a file a lookup touches (evolved to the read schema, with
``_SEQUENCE_NUMBER`` / ``_VALUE_KIND``, in file order: row ``i`` is position ``i``, which deletion vectors mark)
are kept as a memory-mapped Arrow file (mergetree/lookup_files.py: ``local-temp-dir``, bounded by
``lookup.cache-max-disk-size``, 1 GiB when not set); its key column, sorted as key-value files are, is searched
in place. A later lookup then costs a binary search of its keys per file and a ``take`` of the rows found,
instead of decoding the file's row groups.

What a file contributes is exactly what the uncached read gives: the rows whose key satisfies the key filter,
minus deleted positions and outside a file-index selection; they go through the same merge (every merge engine,
levels, sequence numbers). Which files are read is planned from the latest (or pinned) snapshot at every call,
so a file compaction removed is never asked again; its local file ages out of the budget.

Only one-column searches of integer / DATE key columns use the index (the files' leading key column, else the
first such ``=`` / ``IN`` column of the key filter; the rest of a composite key is matched on the rows taken);
other keys read as before. A file is cached when the lookup asks enough keys of its key range that most of its
row groups would be decoded anyway (one key per ``_ROWS_PER_KEY`` rows); a point lookup keeps the pruned read
until the file is cached.

Paimon: table.query.LocalTableQuery, mergetree.LookupLevels (per-file lookup files built once, cached)
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from laketide.mergetree.lookup_files import LocalLookupFiles

if TYPE_CHECKING:
    from laketide.meta.manifest import DataFileMeta
    from laketide.scan.key_filter import KeyFilter

__all__ = ["FileLookupCache", "cache_layout", "drop_lookup_caches", "entry_name", "lookup_cache_for"]

# A file is worth caching when the lookup asks at least one key of its range per this many rows: at the default
# row-group size (2 MiB of Arrow bytes, ~25k rows of a narrow table) nearly every row group is decoded then.
_ROWS_PER_KEY = 4096

# Table.lookup's budget when ``lookup.cache-max-disk-size`` is not set: a lookup is a plain API call (not a lookup
# join set up on purpose, Java's unbounded default), so a lookup over a large table must not fill the local disk.
DEFAULT_MAX_DISK_SIZE = 1 << 30

_CACHES: dict[tuple[str, str | None], FileLookupCache] = {}
_CACHES_LOCK = threading.Lock()


def lookup_cache_for(table_path: str, *, local_dir: str | None, max_disk_size: int | None) -> FileLookupCache:
    """The process's cache for the table at ``table_path`` (one per local directory), its budget updated
    (``DEFAULT_MAX_DISK_SIZE`` when ``max_disk_size`` is None)."""
    with _CACHES_LOCK:
        cache = _CACHES.get((table_path, local_dir))
        if cache is None:
            cache = _CACHES[(table_path, local_dir)] = FileLookupCache(local_dir=local_dir)
    cache.files.max_disk_size = DEFAULT_MAX_DISK_SIZE if max_disk_size is None else max_disk_size
    return cache


@dataclass(frozen=True, slots=True)
class _KeyIndex:
    """A file's search column, batch by batch of its local file.

    Key-value files are sorted by key, so each batch's values are searched where they lie: numpy views of the
    mapped file, no copy in memory. A file that is not sorted (never written by Paimon) gets a sorted copy.
    """

    column: str
    views: tuple[np.ndarray, ...]  # per batch of the local file (sorted), or one sorted copy of the whole column
    offsets: tuple[int, ...]  # the position of each view's first row
    order: np.ndarray | None  # positions of the sorted copy's values; None: the views are the file, sorted

    def positions(self, wanted: np.ndarray) -> np.ndarray:
        found: list[np.ndarray] = []
        for view, offset in zip(self.views, self.offsets):
            if view.size == 0:
                continue
            inside = wanted[np.searchsorted(wanted, view[0], side="left"):
                            np.searchsorted(wanted, view[-1], side="right")]
            if inside.size == 0:
                continue
            lo = np.searchsorted(view, inside, side="left")
            hi = np.searchsorted(view, inside, side="right")
            counts = hi - lo
            total = int(counts.sum())
            if total == 0:
                continue
            # Every index in [lo, hi) of every key, vectorized: a run start repeated for its length plus a ramp.
            at = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)
            found.append(at + offset if self.order is None else self.order[at])
        if not found:
            return np.empty(0, dtype=np.int64)
        return np.sort(np.concatenate(found).astype(np.int64, copy=False))

    @staticmethod
    def of(rows: pa.Table, column: str) -> _KeyIndex | None:
        views: list[np.ndarray] = []
        offsets: list[int] = []
        offset = 0
        for chunk in rows.column(column).chunks:
            values = _searchable(chunk)
            if values is None:
                return None
            views.append(values)
            offsets.append(offset)
            offset += len(chunk)
        ordered = all(v.size < 2 or bool(np.all(v[:-1] <= v[1:])) for v in views) and all(
            a[-1] <= b[0] for a, b in zip((v for v in views if v.size), (v for v in views[1:] if v.size)))
        if ordered:
            return _KeyIndex(column, tuple(views), tuple(offsets), None)
        whole = np.concatenate(views) if views else np.empty(0, dtype=np.int64)
        order = np.argsort(whole, kind="stable")
        return _KeyIndex(column, (whole[order],), (0,), order)


def _searchable(values: pa.Array) -> np.ndarray | None:
    """Integer / DATE values as a numpy array (a view of ``values`` where it can) that orders as Paimon does;
    None for other types or nulls."""
    t = values.type
    if values.null_count:
        return None
    if pa.types.is_date32(t):
        values = values.cast(pa.int32())
    elif not pa.types.is_integer(t):
        return None
    return np.asarray(values.to_numpy(zero_copy_only=False))


class FileLookupCache:
    """Local lookup files and key indexes of one table's data files."""

    def __init__(self, *, local_dir: str | None) -> None:
        self.files = LocalLookupFiles(local_dir=local_dir, prefix="laketide-table-lookup-")
        self._indexes: dict[str, _KeyIndex] = {}
        self._lock = threading.Lock()
        self.builds = 0  # local files built (a cold file); hits are lookups answered from one
        self.hits = 0

    def read(
        self,
        *,
        entry_name: str,
        meta: DataFileMeta,
        key_filter: KeyFilter,
        key_bounds: dict[str, tuple[object, object]],
        build: Callable[[], Iterator[pa.RecordBatch]],
        deleted_mask: Callable[[], pa.Array] | None,
        selection: np.ndarray | None,
        data_names: Sequence[str],
        system: bool,
    ) -> list[pa.RecordBatch] | None:
        """The rows of one data file whose key satisfies ``key_filter`` (what the uncached read yields), or None
        when this file is not searched through the cache (the caller reads it as before).

        ``key_bounds``: the file's range of its leading key column (searched first); ``build``: the file's rows
        in the cached layout (every position, with the system columns); ``deleted_mask``: loads the file's deleted
        positions; ``selection``: the positions a file index selected; ``system``: keep the system columns."""
        search = _search_column(key_filter, next(iter(key_bounds), None))
        if search is None:
            return None
        column, wanted = search
        rows = self.files.get(entry_name)
        index = self._indexes.get(entry_name) if rows is not None else None
        if rows is None:
            if not _worth_building(wanted, key_bounds.get(column), meta.row_count):
                return None
            rows = self.files.put(entry_name, build())
            self.builds += 1
        else:
            self.hits += 1
        if rows.num_rows == 0:
            return []
        if index is None or index.column != column:
            index = self._index(entry_name, rows, column)
            if index is None:
                return None
        positions = index.positions(wanted)
        if selection is not None and positions.size:
            positions = positions[np.isin(positions, selection, assume_unique=True)]
        if deleted_mask is not None and positions.size:
            deleted = deleted_mask().to_numpy(zero_copy_only=False)
            positions = positions[~deleted[positions]]
        if positions.size == 0:
            return []
        names = None if system else list(data_names)
        # One batch per file (the merge's cost is per batch); the other key columns of a composite key are
        # matched on the rows taken.
        found = key_filter.apply(pa.concat_batches(list(_take(rows, positions, names))))
        return [found] if found.num_rows else []

    def _index(self, entry_name: str, rows: pa.Table, column: str) -> _KeyIndex | None:
        index = _KeyIndex.of(rows, column)
        if index is None:
            return None
        with self._lock:
            # Indexes of files the budget evicted go with them (the file is rebuilt, and its index, if asked again).
            for stale in [n for n in self._indexes if n not in self.files]:
                del self._indexes[stale]
            self._indexes[entry_name] = index
        return index

    def close(self) -> None:
        self.files.close()
        with self._lock:
            self._indexes.clear()


def _take(rows: pa.Table, positions: np.ndarray, names: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The rows at ``positions`` (sorted), taken batch by batch of the mapped file (a take across the chunks of a
    table would first concatenate them: the whole file)."""
    batches = rows.to_batches()
    ends = np.cumsum([b.num_rows for b in batches])
    cuts = np.searchsorted(positions, ends, side="left")
    start = 0
    for i, batch in enumerate(batches):
        stop = int(cuts[i])
        if stop > start:
            part = batch if names is None else batch.select(names)
            yield part.take(pa.array(positions[start:stop] - (ends[i] - batch.num_rows)))
        start = stop


def cache_layout(schema_id: int, data_names: Sequence[str]) -> str:
    """The rows' layout in a local file: the read schema and the columns read."""
    return f"s{schema_id}-" + hashlib.sha1("\x00".join(data_names).encode()).hexdigest()[:12]


def entry_name(meta: DataFileMeta, layout: str) -> str:
    """The local file of one data file read in ``layout`` (the file's own name is unique in the table; its size
    guards against a file of the same name written by another table at the same path)."""
    return f"{meta.file_name}-{meta.file_size}-{layout}"


def _search_column(key_filter: KeyFilter, prefer: str | None) -> tuple[str, np.ndarray] | None:
    """The ``=`` / ``IN`` column of the key filter to search (``prefer``, the files' leading key column, when it
    is searchable: a partition column in the key is constant in a file), and its distinct values sorted."""
    sets = sorted(key_filter.value_sets or (), key=lambda s: s[0] != prefer)
    for name, values in sets:
        wanted = _searchable(values)
        if wanted is not None:
            return name, np.unique(wanted)
    return None


def _worth_building(wanted: np.ndarray, key_range: tuple[object, object] | None, row_count: int) -> bool:
    asked = wanted.size
    if key_range is not None:
        lo, hi = key_range
        if isinstance(lo, int) and isinstance(hi, int):
            asked = int(np.searchsorted(wanted, hi, side="right") - np.searchsorted(wanted, lo, side="left"))
    return asked * _ROWS_PER_KEY >= row_count


def drop_lookup_caches(table_path: str | None = None) -> None:
    """Remove the local lookup files of the table at ``table_path`` (every table: None) now, not at exit."""
    with _CACHES_LOCK:
        keys = [k for k in _CACHES if table_path is None or k[0] == table_path]
        dropped = [_CACHES.pop(k) for k in keys]
    for cache in dropped:
        cache.close()
