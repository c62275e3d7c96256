"""Local lookup files: one uncompressed, memory-mapped Arrow IPC file per data file, in ``local-temp-dir``.

Data files are immutable, so a local copy in Arrow's own layout is built once from a data file and read back as
often as needed without decoding it again: the OS pages the mapping in, the process holds only what a lookup
touches. ``lookup.cache-max-disk-size`` bounds the disk they take: beyond it the least recently used are removed
(and rebuilt from their data file when needed again), as Java's lookup file cache evicts. The directory is removed
when its owner is closed or collected, and at exit.

Used by a bucket writer's lookups (mergetree/lookup.py) and by ``Table.lookup``'s per-file cache
(scan/lookup_cache.py). Safe to share between threads.

Paimon: lookup.LookupStoreFactory, mergetree.LookupFile (its Caffeine cache bounded by disk size)
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Iterable

import pyarrow as pa

from laketide.exceptions import FileIOError, InvalidOptionError

__all__ = ["LocalLookupFiles"]


class LocalLookupFiles:
    """Named local Arrow files, least recently used first, within a disk budget."""

    def __init__(self, *, local_dir: str | None = None, max_disk_size: int | None = None,
                 prefix: str = "laketide-lookup-") -> None:
        self.local_dir = local_dir
        self.max_disk_size = max_disk_size
        self._prefix = prefix
        self._dir: str | None = None
        self._lock = threading.Lock()
        # name -> (path, size on disk, the mapped table once opened)
        self._files: OrderedDict[str, tuple[str, int, pa.Table | None]] = OrderedDict()
        self._finalizer: weakref.finalize[[str, bool], LocalLookupFiles] | None = None
        self.evictions = 0  # files dropped to stay within max_disk_size

    @property
    def disk_size(self) -> int:
        """Bytes the local files take now."""
        with self._lock:
            return sum(size for _, size, _ in self._files.values())

    def __contains__(self, name: str) -> bool:
        with self._lock:
            return name in self._files

    def _root(self) -> str:
        if self._dir is None:
            try:
                if self.local_dir is not None:
                    os.makedirs(self.local_dir, exist_ok=True)
                self._dir = tempfile.mkdtemp(prefix=self._prefix, dir=self.local_dir)
            except OSError as e:
                raise InvalidOptionError(
                    f"local-temp-dir {self.local_dir!r}: cannot create lookup files there: {e}"
                ) from e
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir

    def get(self, name: str) -> pa.Table | None:
        """The mapped rows of ``name`` (now the most recently used), or None when there is no such file."""
        with self._lock:
            entry = self._files.get(name)
            if entry is None:
                return None
            self._files.move_to_end(name)
            path, size, table = entry
            if table is None:
                # The mapped buffers keep the mapping alive after the file object is gone (and after an eviction
                # unlinks the file: the pages stay readable until the last reader drops them).
                table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
                self._files[name] = (path, size, table)
            return table

    def put(self, name: str, parts: Iterable[pa.Table | pa.RecordBatch]) -> pa.Table:
        """Write ``parts`` (one schema) as the local file ``name`` and return its mapped rows; an empty input
        makes no file and returns an empty table."""
        with self._lock:
            root = self._root()
        path = os.path.join(root, f"{name}.arrow")
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"  # two threads building the same file never share a temp file
        writer: pa.ipc.RecordBatchFileWriter | None = None
        try:
            with pa.OSFile(tmp, "wb") as sink:
                try:
                    for part in parts:
                        if writer is None:
                            writer = pa.ipc.new_file(sink, part.schema)
                        writer.write(part)
                finally:
                    if writer is not None:
                        writer.close()
        except BaseException as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            if isinstance(e, OSError):  # a full or read-only local disk: say which directory
                raise FileIOError(f"Cannot write the lookup file {path} (local-temp-dir {self.local_dir!r}): {e}") \
                    from e
            raise
        if writer is None:
            os.remove(tmp)
            return pa.table({})
        os.replace(tmp, path)
        with self._lock:
            self._files[name] = (path, os.path.getsize(path), None)
            self._files.move_to_end(name)
            self._evict_beyond_budget(keep=name)
        table = self.get(name)
        if table is None:  # evicted at once by a concurrent put: read the file we still know
            table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all() if os.path.exists(path) else pa.table({})
        return table

    def _evict_beyond_budget(self, keep: str) -> None:
        if self.max_disk_size is None:
            return
        while sum(size for _, size, _ in self._files.values()) > self.max_disk_size and len(self._files) > 1:
            oldest = next(iter(self._files))
            if oldest == keep:
                break
            self._drop(oldest)
            self.evictions += 1

    def _drop(self, name: str) -> None:
        entry = self._files.pop(name, None)
        if entry is not None and os.path.exists(entry[0]):
            os.remove(entry[0])

    def forget(self, name: str) -> None:
        """The data file is gone: drop its local file."""
        with self._lock:
            self._drop(name)

    def close(self) -> None:
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._files.clear()
            self._dir = None
