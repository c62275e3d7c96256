"""FileIO over any fsspec filesystem: s3://, gs://, abfs://, memory://, hdfs://, ...

Paimon: org.apache.paimon.fs.FileIO (object-store implementations such as S3FileIO, OSSFileIO).

Atomic write-if-absent is what publishes a snapshot, so how each backend provides it matters:

- s3 / s3a (s3fs), gs / gcs (gcsfs), abfs / abfss / az (adlfs): ``open(path, "xb")`` is a server-side
  conditional create (S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match``),
  checked when the object is committed, and an object is never visible before it is complete. Recent
  releases of those libraries are required (s3fs honours "xb" for small files only since mid-2025).
- memory: the store lives in this process, so a process-wide lock around create-if-absent is enough.
- anything else (hdfs, sftp, http, ...): no known primitive. try_write_atomic raises UnsupportedFeatureError
  unless the FileIO was built with ``allow_unsafe_publish=True``, which falls back to check-then-write and is
  only safe when a single writer commits to a table at a time (or a catalog lock serializes commits).
"""

from __future__ import annotations

import enum
import io
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO

from laketide.exceptions import FileAlreadyExistsError, FileIOError, NotFoundError, UnsupportedFeatureError
from laketide.fs.file_io import FileIO, FileStatus, join_path, translate_errors

if TYPE_CHECKING:
    import fsspec
    import pyarrow.fs

__all__ = ["FsspecFileIO", "PublishMode"]

_CONDITIONAL_CREATE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})
_IN_PROCESS_PROTOCOLS = frozenset({"memory"})
_LOCAL_PROTOCOLS = frozenset({"file", "local"})
# Stores without directories where an empty "<dir>/" object marks a directory (as Hadoop's S3A does), so that
# an empty database directory exists.
_MARKER_PROTOCOLS = frozenset({"s3", "s3a"})

# Guards create-if-absent on in-process stores; a single lock is simpler than one per store.
_IN_PROCESS_LOCK = threading.Lock()


class PublishMode(enum.Enum):
    """How try_write_atomic achieves write-if-absent on a backend."""

    CONDITIONAL_CREATE = "conditional-create"
    IN_PROCESS_LOCK = "in-process-lock"
    UNSUPPORTED = "unsupported"


def _protocols(fs: fsspec.AbstractFileSystem) -> frozenset[str]:
    protocol = fs.protocol
    return frozenset([protocol] if isinstance(protocol, str) else protocol)


def publish_mode_for(fs: fsspec.AbstractFileSystem) -> PublishMode:
    """Which write-if-absent strategy ``fs`` supports (see the module docstring)."""
    protocols = _protocols(fs)
    if protocols & _CONDITIONAL_CREATE_PROTOCOLS:
        return PublishMode.CONDITIONAL_CREATE
    if protocols & _IN_PROCESS_PROTOCOLS:
        return PublishMode.IN_PROCESS_LOCK
    return PublishMode.UNSUPPORTED


class FsspecFileIO(FileIO):
    """A FileIO delegating to an ``fsspec.AbstractFileSystem`` (pickles along with it)."""

    def __init__(self, fs: fsspec.AbstractFileSystem, *, allow_unsafe_publish: bool = False) -> None:
        self._fs = fs
        self._allow_unsafe_publish = allow_unsafe_publish
        self._mode = publish_mode_for(fs)
        self._has_dirs = bool(_protocols(fs) & _LOCAL_PROTOCOLS)

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The wrapped fsspec filesystem."""
        return self._fs

    @property
    def publish_mode(self) -> PublishMode:
        return self._mode

    def read_bytes(self, path: str) -> bytes:
        with translate_errors("read", path):
            return bytes(self._fs.cat_file(path))

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        if not overwrite and self._mode is not PublishMode.UNSUPPORTED:
            if not self.try_write_atomic(path, data):
                raise FileAlreadyExistsError(f"Cannot write '{path}': it already exists")
            return
        if not overwrite:
            with translate_errors("write", path), self.open_output(path) as out:
                out.write(data)
            return
        with translate_errors("write", path):
            self._ensure_parent(path)
            self._fs.pipe_file(path, data)

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        with translate_errors("atomically write", path):
            self._ensure_parent(path)
            if self._mode is PublishMode.CONDITIONAL_CREATE:
                try:
                    with self._fs.open(path, "xb") as out:
                        out.write(data)
                except FileExistsError:
                    return False
                return True
            if self._mode is PublishMode.IN_PROCESS_LOCK:
                with _IN_PROCESS_LOCK:
                    if self._fs.exists(path):
                        return False
                    # The memory store swaps in a complete file object: no partial file is ever visible.
                    self._fs.pipe_file(path, data)
                    return True
            if not self._allow_unsafe_publish:
                raise UnsupportedFeatureError(
                    f"Cannot atomically write '{path}': the {sorted(_protocols(self._fs))} filesystem has no "
                    "write-if-absent primitive laketide knows; pass allow_unsafe_publish=True only if a "
                    "single writer commits at a time"
                )
            if self._fs.exists(path):
                return False
            self._fs.pipe_file(path, data)
            return True

    def exists(self, path: str) -> bool:
        with translate_errors("check", path):
            self._fs.invalidate_cache(path)
            return bool(self._fs.exists(path))

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        with translate_errors("delete", path):
            self._fs.invalidate_cache(path)
            if not self._fs.exists(path):
                return False
            if not self._fs.isdir(path):
                self._fs.rm_file(path)
            elif recursive:
                self._fs.rm(path, recursive=True)
            elif self._fs.ls(path, detail=False):
                raise FileIOError(f"Cannot delete '{path}': the directory is not empty (pass recursive=True)")
            else:
                self._fs.rmdir(path)
            return True

    def mkdirs(self, path: str) -> None:
        with translate_errors("create directory", path):
            self._fs.makedirs(path, exist_ok=True)
            if _protocols(self._fs) & _MARKER_PROTOCOLS and not self._fs.exists(path):
                self._fs.pipe_file(path.rstrip("/") + "/", b"")

    def list_status(self, path: str) -> list[FileStatus]:
        with translate_errors("list", path):
            self._fs.invalidate_cache(path)
            try:
                entries = self._fs.ls(path, detail=True)
            except FileNotFoundError:
                return []
            own = self._fs._strip_protocol(path).rstrip("/")
            result = []
            for info in entries:
                if str(info["name"]).endswith("/") and str(info["name"]).rstrip("/") == own:
                    continue  # the directory's own marker object
                name = str(info["name"]).rstrip("/")
                is_dir = info.get("type") == "directory"
                child = path if name == own else join_path(path, name.rsplit("/", 1)[-1])
                size = 0 if is_dir else int(info.get("size") or 0)
                result.append(
                    FileStatus(path=child, size=size, is_dir=is_dir, modification_time_ms=_mtime_ms(info))
                )
            return result

    def rename(self, src: str, dst: str) -> bool:
        """No-replace move. Object stores have no rename: files are copied through try_write_atomic
        (so the same backend rules apply) and then deleted; directories move non-atomically."""
        with translate_errors("rename", src):
            if not self._fs.exists(src):
                raise NotFoundError(f"Cannot rename '{src}' to '{dst}': the source does not exist")
            if self._fs.isdir(src):
                if self._fs.exists(dst):
                    return False
                self._fs.mv(src, dst, recursive=True)
                return True
            if not self.try_write_atomic(dst, bytes(self._fs.cat_file(src))):
                return False
            self._fs.rm_file(src)
            return True

    def file_size(self, path: str) -> int:
        with translate_errors("get the size of", path):
            size = self._fs.size(path)
        if size is None:
            raise FileIOError(f"Cannot get the size of '{path}': the filesystem reports none")
        return int(size)

    def open_input(self, path: str) -> BinaryIO:
        with translate_errors("open", path):
            if self._mode is PublishMode.IN_PROCESS_LOCK:
                # memory:// hands out its stored buffer itself; a private copy keeps readers independent.
                return io.BytesIO(self._fs.cat_file(path))
            return self._fs.open(path, "rb")  # type: ignore[no-any-return]

    def open_output(self, path: str, *, overwrite: bool = False) -> BinaryIO:
        with translate_errors("create", path):
            self._ensure_parent(path)
            if overwrite:
                return self._fs.open(path, "wb")  # type: ignore[no-any-return]
            if self._mode is PublishMode.UNSUPPORTED:
                # "xb" support is unknown here; a racing creator is harmless for uniquely named files.
                if self._fs.exists(path):
                    raise FileAlreadyExistsError(f"Cannot create '{path}': it already exists")
                return self._fs.open(path, "wb")  # type: ignore[no-any-return]
            return self._fs.open(path, "xb")  # type: ignore[no-any-return]

    def pyarrow_filesystem(self) -> pyarrow.fs.FileSystem:
        import pyarrow.fs

        return pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(self._fs))

    def pyarrow_path(self, path: str) -> str:
        return str(self._fs._strip_protocol(path))

    def _ensure_parent(self, path: str) -> None:
        # Object stores have no directories; only local-like backends need parents made.
        if self._has_dirs:
            parent = self._fs._parent(path)
            if parent:
                try:
                    self._fs.makedirs(parent, exist_ok=True)
                except FileExistsError as e:  # a file where the directory must go: no "already exists"
                    raise FileIOError(f"Cannot create '{path}': {parent} is a file, not a directory") from e

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FsspecFileIO)
            and self._fs == other._fs
            and self._allow_unsafe_publish == other._allow_unsafe_publish
        )

    def __hash__(self) -> int:
        return hash((type(self._fs), self._allow_unsafe_publish))

    def __repr__(self) -> str:
        return f"FsspecFileIO({type(self._fs).__name__}, publish={self._mode.value})"


def _mtime_ms(info: dict[str, Any]) -> int:
    """Backends name the modification time differently (mtime, LastModified, updated, created)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            return int(value * 1000)
        if isinstance(value, str):
            try:
                return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
    return 0
