"""FileIO over the local file system (plain paths and file:// URIs).

Paimon: org.apache.paimon.fs.local.LocalFileIO. Java serializes renames with a JVM-wide lock, which does
not protect two processes; here no-replace publishing uses ``os.link``, which the kernel makes atomic
(it fails with EEXIST when the target exists), so it holds across processes on one host.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from laketide.exceptions import FileIOError, NotFoundError
from laketide.fs.durability import start_writeback, sync_directory, sync_new_files
from laketide.fs.file_io import FileIO, FileStatus, join_path, temp_sibling, translate_errors

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["LocalFileIO", "to_local_path"]


def to_local_path(path: str) -> str:
    """Strip a ``file:`` scheme: "file:///a/b" and Hadoop's "file:/a/b" both give "/a/b"."""
    if path.startswith("file://"):
        return path[len("file://") :] or "/"
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


class LocalFileIO(FileIO):
    """Files on a local (or mounted) disk. Stateless, so it pickles to executors for free."""

    def read_bytes(self, path: str) -> bytes:
        with translate_errors("read", path), open(to_local_path(path), "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        local = to_local_path(path)
        with translate_errors("write", path):
            _make_dirs(os.path.dirname(local) or ".", path)
            if overwrite:
                _replace(local, data, synced=True)
                return
            with open(local, "xb") as f:
                try:
                    f.write(data)
                except BaseException:
                    _unlink_missing_ok(local)  # only ours: "xb" just created it
                    raise

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        local = to_local_path(path)
        with translate_errors("atomically write", path):
            _make_dirs(os.path.dirname(local) or ".", path)
            tmp = temp_sibling(local)
            try:
                _write_synced(tmp, data)
                published = _link_no_replace(tmp, local, path)
            finally:
                _unlink_missing_ok(tmp)
            if published:
                # The new name is what a commit publishes: it must survive a power loss before the caller
                # reports success (one fsync also covers the temp name's removal).
                sync_directory(os.path.dirname(local) or ".")
            return published

    def write_hint(self, path: str, data: bytes) -> None:
        local = to_local_path(path)
        with translate_errors("write", path):
            _make_dirs(os.path.dirname(local) or ".", path)
            # Not synced: after a power loss a reader that finds it stale or empty lists instead.
            _replace(local, data, synced=False)

    def make_durable(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        with translate_errors("sync", paths[0]):
            sync_new_files([to_local_path(p) for p in paths])

    def exists(self, path: str) -> bool:
        with translate_errors("check", path):
            return os.path.exists(to_local_path(path))

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        local = to_local_path(path)
        with translate_errors("delete", path):
            if not os.path.lexists(local):
                return False
            if os.path.isdir(local) and not os.path.islink(local):
                if recursive:
                    shutil.rmtree(local)
                else:
                    os.rmdir(local)  # OSError(ENOTEMPTY) for a non-empty directory
            else:
                os.unlink(local)
            return True

    def mkdirs(self, path: str) -> None:
        with translate_errors("create directory", path):
            _make_dirs(to_local_path(path), path)

    def mkdir_if_absent(self, path: str) -> bool:
        local = to_local_path(path)
        with translate_errors("create directory", path):
            try:
                # Parents as needed; the last mkdir is exclusive: of two concurrent creators exactly one succeeds.
                os.makedirs(local)
            except FileExistsError:
                if not os.path.isdir(local):
                    raise FileIOError(f"Cannot create '{path}': {local} is a file, not a directory") from None
                return False
        return True

    def list_status(self, path: str) -> list[FileStatus]:
        local = to_local_path(path)
        with translate_errors("list", path):
            try:
                if not os.path.isdir(local):
                    st = os.stat(local)
                    return [_status(path, st.st_size, is_dir=False, st=st)]
                with os.scandir(local) as entries:
                    result = []
                    for entry in entries:
                        try:
                            st = entry.stat()
                            is_dir = entry.is_dir()
                        except FileNotFoundError:
                            continue  # removed while listing, e.g. a concurrent writer's temp file
                        size = 0 if is_dir else st.st_size
                        result.append(_status(join_path(path, entry.name), size, is_dir=is_dir, st=st))
                    return result
            except FileNotFoundError:
                return []

    def rename(self, src: str, dst: str) -> bool:
        src_local, dst_local = to_local_path(src), to_local_path(dst)
        with translate_errors("rename", src):
            if not os.path.lexists(src_local):
                raise NotFoundError(f"Cannot rename '{src}' to '{dst}': the source does not exist")
            _make_dirs(os.path.dirname(dst_local) or ".", dst)
            if os.path.isdir(src_local):
                # Directories cannot be hard-linked; rename(2) would silently replace an empty target
                # directory, so check first. Not atomic against a concurrent creator of ``dst``.
                if os.path.lexists(dst_local):
                    return False
                os.rename(src_local, dst_local)
                return True
            if not _link_no_replace(src_local, dst_local, dst):
                return False
            os.unlink(src_local)
            return True

    def file_size(self, path: str) -> int:
        with translate_errors("get the size of", path):
            return os.stat(to_local_path(path)).st_size

    def open_input(self, path: str) -> BinaryIO:
        with translate_errors("open", path):
            return open(to_local_path(path), "rb")

    def open_output(self, path: str, *, overwrite: bool = False) -> BinaryIO:
        local = to_local_path(path)
        with translate_errors("create", path):
            _make_dirs(os.path.dirname(local) or ".", path)
            return io.BufferedWriter(_WritebackFile(local, "w" if overwrite else "x"))

    def open_native_output(self, path: str) -> pa.NativeFile:
        local = to_local_path(path)
        with translate_errors("create", path):
            _make_dirs(os.path.dirname(local) or ".", path)
            # Created exclusively here (as open_output's "x"), then opened by Arrow, which has no exclusive mode.
            os.close(os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            try:
                return _NativeWritebackFile(local, "w")
            except BaseException:
                _unlink_missing_ok(local)
                raise

    def pyarrow_filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem()

    def pyarrow_path(self, path: str) -> str:
        return to_local_path(path)

    def __eq__(self, other: object) -> bool:
        return type(other) is LocalFileIO

    def __hash__(self) -> int:
        return hash(LocalFileIO)

    def __repr__(self) -> str:
        return "LocalFileIO()"


def _status(path: str, size: int, *, is_dir: bool, st: os.stat_result) -> FileStatus:
    return FileStatus(path=path, size=size, is_dir=is_dir, modification_time_ms=st.st_mtime_ns // 1_000_000,
                      access_time_ms=st.st_atime_ns // 1_000_000, owner=_owner(st.st_uid))


@functools.lru_cache(maxsize=64)
def _owner(uid: int) -> str | None:
    """The user name of ``uid`` (Hadoop's FileStatus#getOwner), None where the system has no name for it."""
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return None


def _make_dirs(local_dir: str, shown: str) -> None:
    try:
        os.makedirs(local_dir, exist_ok=True)
    except FileExistsError as e:
        # makedirs says "exists" when a file sits where a directory must go: that is no "already exists".
        raise FileIOError(f"Cannot create '{shown}': {local_dir} is a file, not a directory") from e


# Written bytes after which the kernel is asked to start writing them back (see fs/durability.py).
_WRITEBACK_BYTES = 8 * 1024 * 1024


class _WritebackFile(io.FileIO):
    """A file being written that starts the kernel's writeback every few MiB, so that the fdatasync a commit
    does before publishing (``make_durable``) finds little left to write."""

    def __init__(self, path: str, mode: str) -> None:
        super().__init__(path, mode)
        self._written = 0
        self._started = 0  # bytes whose writeback was started

    def write(self, data: Any) -> int:
        n = super().write(data) or 0
        self._written += n
        if self._written - self._started >= _WRITEBACK_BYTES:
            start_writeback(self.fileno(), self._started, self._written - self._started)
            self._started = self._written
        return n

    def close(self) -> None:
        if not self.closed and self._written > self._started:
            start_writeback(self.fileno(), self._started, 0)
            self._started = self._written
        super().close()


class _NativeWritebackFile(pa.OSFile):  # type: ignore[misc]
    """An Arrow OSFile whose close first starts the kernel's writeback of the whole file: what _WritebackFile does
    every few MiB, here once at close (Arrow's writers write without calling back into Python)."""

    def close(self) -> None:
        if not self.closed:
            start_writeback(self.fileno(), 0, 0)
        super().close()


def _replace(local: str, data: bytes, *, synced: bool) -> None:
    """Replace ``local`` through a temp file, so that readers see the old or the new bytes, never a mix."""
    tmp = temp_sibling(local)
    try:
        if synced:
            _write_synced(tmp, data)
        else:
            with open(tmp, "xb") as f:
                f.write(data)
        os.replace(tmp, local)
    finally:
        _unlink_missing_ok(tmp)


def _write_synced(path: str, data: bytes) -> None:
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        # Durable before it becomes visible: a crash must not publish an empty snapshot file.
        os.fsync(f.fileno())


def _link_no_replace(src: str, dst: str, shown: str) -> bool:
    try:
        os.link(src, dst)
    except FileExistsError:
        return False
    except OSError as e:
        if e.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise FileIOError(
                f"Cannot publish '{shown}': the file system does not support hard links, which "
                f"atomic no-replace writes need ({e})"
            ) from e
        raise
    return True


def _unlink_missing_ok(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
