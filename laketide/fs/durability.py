"""Making new local files survive a power loss before a snapshot references them.

Two steps, so that the wait is short: while a file is written, the kernel is asked to start writing its pages
back every few MiB (Linux ``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which does not wait); at commit,
``fdatasync`` of each new file (the data; its size is data too) and one ``fsync`` per directory (the names), in
parallel, before the snapshot that references them is published; after the snapshot's no-replace link, its directory is
fsync'ed too, so an acknowledged commit survives. Java's LocalFileIO syncs nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["start_writeback", "sync_directory", "sync_new_files"]

_SYNC_FILE_RANGE_WRITE = 2
# Syncs in parallel: each one mostly waits for the device, which merges concurrent flushes; a commit's ~15 syncs
# in turn took ~30 ms of wall time on a virtual disk. The threads are kept for the process (starting them per
# commit cost more than syncing a few files in turn on a loaded machine).
_SYNC_THREADS = 4
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _sync_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_SYNC_THREADS, thread_name_prefix="laketide-sync")
        return _pool


def _forget_pool_in_child() -> None:
    # A forked child has none of the parent's threads: a pool inherited from it would never run a task.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _load_sync_file_range() -> Callable[[int, int, int], None] | None:
    if not sys.platform.startswith("linux"):  # elsewhere the commit's fdatasync does it all
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def start(fd: int, offset: int, nbytes: int) -> None:
        fn(fd, offset, nbytes, _SYNC_FILE_RANGE_WRITE)  # advisory: a failure only leaves more for fdatasync

    return start


_sync_file_range = _load_sync_file_range()


def start_writeback(fd: int, offset: int, nbytes: int) -> None:
    """Start writing ``nbytes`` from ``offset`` (0: to the end) of ``fd`` to disk without waiting; a no-op where
    the platform cannot."""
    if _sync_file_range is not None:
        _sync_file_range(fd, offset, nbytes)


_fdatasync = getattr(os, "fdatasync", os.fsync)


def _sync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _fdatasync(fd)
    finally:
        os.close(fd)


def sync_directory(path: str) -> None:
    """fsync a directory: the names created or removed in it survive a power loss."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (IsADirectoryError, PermissionError):  # platforms that cannot open a directory (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory (EINVAL); nothing more can be done there
        pass
    finally:
        os.close(fd)


def _dirs_to_sync(files: Sequence[str]) -> list[str]:
    """The files' directories and their parents up to the deepest directory they share (new bucket / partition
    directories have their own names to make durable)."""
    dirs = list(dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in files))
    common = os.path.commonpath(dirs) if dirs else ""
    out: dict[str, None] = {}
    for d in dirs:
        while True:
            out[d] = None
            if d == common or os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    return list(out)


def sync_new_files(paths: Sequence[str]) -> None:
    """fdatasync each file and fsync each directory once: afterwards a power loss keeps them all."""
    files = list(dict.fromkeys(paths))
    if not files:
        return
    # Both kinds at once: a directory's names and a file's data are independent, and all are done before return.
    jobs: list[tuple[Callable[[str], None], str]] = [(_sync_file, f) for f in files]
    jobs += [(sync_directory, d) for d in _dirs_to_sync(files)]
    if len(jobs) == 1:
        jobs[0][0](jobs[0][1])
        return
    futures = [_sync_pool().submit(fn, path) for fn, path in jobs]
    wait(futures)  # all finished or failed before anything is raised: no sync still runs after a failed commit
    for f in futures:
        f.result()
