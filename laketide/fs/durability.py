"""Making new local files survive a power loss before a snapshot references them.

Two steps, so that the wait is short: while a file is written, the kernel is asked to start writing its pages
back every few MiB (Linux ``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which does not wait); at commit,
``fdatasync`` of each new file (the data; its size is data too) then one ``fsync`` per directory (the names),
before the snapshot that references them is published; after the snapshot's no-replace link, its directory is
fsync'ed too, so an acknowledged commit survives. Java's LocalFileIO syncs nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

__all__ = ["start_writeback", "sync_directory", "sync_new_files"]

_SYNC_FILE_RANGE_WRITE = 2
# Parallel syncs let the device merge the flushes of many files (many buckets, a compaction's outputs); for the
# few files of a usual commit, starting threads costs more (on a loaded machine) than syncing them in turn.
_SYNC_THREADS = 4
_THREADS_FROM_FILES = 16


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
    """fdatasync each file, then fsync each directory once: afterwards a power loss keeps them all."""
    files = list(dict.fromkeys(paths))
    if not files:
        return
    if len(files) < _THREADS_FROM_FILES:
        for f in files:
            _sync_file(f)
    else:
        with ThreadPoolExecutor(min(_SYNC_THREADS, len(files)), thread_name_prefix="laketide-sync") as pool:
            list(pool.map(_sync_file, files))
    for d in _dirs_to_sync(files):
        sync_directory(d)
