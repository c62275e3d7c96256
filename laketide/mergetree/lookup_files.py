"""Local lookup files: one uncompressed, memory-mapped Arrow IPC file per data file, in ``local-temp-dir``.

Data files are immutable, so a local copy in Arrow's own layout is built once from a data file and read back as
often as needed without decoding it again: the OS pages the mapping in, the process holds only what a lookup
touches. ``lookup.cache-max-disk-size`` bounds the disk they take: beyond it the least recently used are removed
(and rebuilt from their data file when needed again), as Java's lookup file cache evicts. The directory is removed
when its owner is closed or collected, and at exit. A process killed before its exit hooks ran (Spark stops its
Python workers with SIGHUP) leaves its directory behind: its name holds the host and process id, and the next
process of the host to make lookup files in that directory removes the directories of processes no longer alive.

``lookup.cache-file-retention`` (1 h) drops a file nothing has read for that long, as Java's cache expires
after access.

Used by the writers' lookups (mergetree/lookup.py: one set per table and process, ``writer_lookup_files``, so the
next write of a table finds the files the last one built) and by ``Table.lookup``'s per-file cache
(scan/lookup_cache.py). Safe to share between threads.

Paimon: lookup.LookupStoreFactory, mergetree.LookupFile (its Caffeine cache bounded by disk size, expiring after
access)
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable

import pyarrow as pa

from laketide.exceptions import FileIOError, InvalidOptionError

__all__ = ["LocalLookupFiles", "drop_writer_lookup_files", "writer_lookup_files"]


class LocalLookupFiles:
    """Named local Arrow files, least recently used first, within a disk budget."""

    def __init__(self, *, local_dir: str | None = None, max_disk_size: int | None = None,
                 retention: float | None = None, prefix: str = "laketide-lookup-",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.local_dir = local_dir
        self.max_disk_size = max_disk_size
        self.retention = retention  # seconds a file nobody reads is kept (None: no limit)
        self._prefix = prefix
        self._clock = clock
        self._dir: str | None = None
        self._lock = threading.Lock()
        # name -> (path, size on disk, the mapped table once opened), least recently used first
        self._files: OrderedDict[str, tuple[str, int, pa.Table | None]] = OrderedDict()
        self._used: dict[str, float] = {}  # name -> when it was last written or read (clock)
        self._finalizer: weakref.finalize[[str, bool], LocalLookupFiles] | None = None
        self.evictions = 0  # files dropped to stay within max_disk_size
        self.builds = 0  # files written

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
                owner = f"{self._prefix}{socket.gethostname()}-"
                _sweep_orphans(self.local_dir or tempfile.gettempdir(), owner)
                self._dir = tempfile.mkdtemp(prefix=f"{owner}{os.getpid()}-", dir=self.local_dir)
            except OSError as e:
                raise InvalidOptionError(
                    f"local-temp-dir {self.local_dir!r}: cannot create lookup files there: {e}"
                ) from e
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir

    def get(self, name: str) -> pa.Table | None:
        """The mapped rows of ``name`` (now the most recently used), or None when there is no such file."""
        with self._lock:
            self._expire()
            entry = self._files.get(name)
            if entry is None:
                return None
            self._files.move_to_end(name)
            self._used[name] = self._clock()
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
        size = os.path.getsize(tmp)
        os.replace(tmp, path)
        # Mapped before anyone else can see it: an eviction or expiry may unlink the file at once, never the rows.
        table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
        with self._lock:
            self._files[name] = (path, size, table)
            self._files.move_to_end(name)
            self._used[name] = self._clock()
            self.builds += 1
            self._expire()
            self._evict_beyond_budget(keep=name)
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

    def expire(self) -> None:
        """Drop the files nothing has read for longer than ``retention``."""
        with self._lock:
            self._expire()

    def _expire(self) -> None:
        if self.retention is None:
            return
        oldest_kept = self._clock() - self.retention
        # Least recently used first, and each use stamps the time: the expired files are a prefix.
        while self._files:
            oldest = next(iter(self._files))
            if self._used.get(oldest, oldest_kept) >= oldest_kept:
                break
            self._drop(oldest)

    def _drop(self, name: str) -> None:
        self._used.pop(name, None)
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
            self._used.clear()
            self._dir = None


_SWEPT: set[tuple[str, str]] = set()  # (directory, owner prefix) this process has swept
_SWEPT_LOCK = threading.Lock()


def _sweep_orphans(parent: str, owner: str) -> None:
    """Remove the directories ``owner<pid>-*`` in ``parent`` whose process is gone (once per process)."""
    with _SWEPT_LOCK:
        if (parent, owner) in _SWEPT:
            return
        _SWEPT.add((parent, owner))
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(owner):].split("-", 1)[0] if name.startswith(owner) else ""
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill there terminates the process: never ask
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # not ours to signal, but running
        return True
    return True


_WRITER_FILES: dict[tuple[str, str | None], LocalLookupFiles] = {}
_WRITER_FILES_LOCK = threading.Lock()


def writer_lookup_files(table_path: str, *, local_dir: str | None, max_disk_size: int | None,
                        retention_ms: int) -> LocalLookupFiles:
    """The process's lookup files of the writers of the table at ``table_path`` (one set per local directory),
    its bounds set to the table's current options.

    Java keeps one cache per write job (``MergeTreeCompactManagerFactory``) and its writers live as long as the
    job; a laketide write is one call, so its files are kept per table instead: the next write (a streaming
    micro-batch, a reused Spark worker) looks up the data files it has not replaced without building them again.
    Data files never change, so a kept file is always right; the entry names say which schema and columns.
    """
    with _WRITER_FILES_LOCK:
        files = _WRITER_FILES.get((table_path, local_dir))
        if files is None:
            files = _WRITER_FILES[(table_path, local_dir)] = LocalLookupFiles(local_dir=local_dir)
        others = [f for f in _WRITER_FILES.values() if f is not files]
    files.max_disk_size = max_disk_size
    files.retention = retention_ms / 1000
    for other in others:  # the files of tables this process no longer writes expire too
        other.expire()
    return files


def drop_writer_lookup_files(table_path: str | None = None) -> None:
    """Remove the writers' lookup files of the table at ``table_path`` (every table: None) now, not at exit."""
    with _WRITER_FILES_LOCK:
        dropped = [_WRITER_FILES.pop(k) for k in [k for k in _WRITER_FILES if table_path in (None, k[0])]]
    for files in dropped:
        files.close()
