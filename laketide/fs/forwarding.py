"""A FileIO that hands every call to another one, with two hooks around the calls that create a file.

Subclasses watch what is written without changing how (laketide.spark.job_files names each file a Spark task
creates before it exists). Native reads and writes stay native: the inner FileIO's pyarrow filesystem and native
output streams are handed through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from laketide.exceptions import FileAlreadyExistsError
from laketide.fs.file_io import FileIO, FileStatus

if TYPE_CHECKING:
    import pyarrow
    import pyarrow.fs

__all__ = ["ForwardingFileIO"]


class ForwardingFileIO(FileIO):
    """Delegates to ``inner``. Around each call that creates a new file (never one that may replace a file):
    ``before_create(path)`` runs first, then ``after_create(path, created)`` once the file is visible (after the
    call, or when a Python output stream closes: object stores show a file only then); ``created`` is False when
    the path was taken and nothing was written. A failing ``after_create`` leaves the file to the caller's cleanup,
    as any failed write does."""

    def __init__(self, inner: FileIO) -> None:
        self.inner = inner

    def before_create(self, path: str) -> None:
        """Called before a new file may be created at ``path``."""

    def after_create(self, path: str, created: bool) -> None:
        """Called once the file at ``path`` exists (``created``) or the call found the path taken."""

    def _creating(self, path: str, create: Any) -> Any:
        self.before_create(path)
        try:
            out = create()
        except FileAlreadyExistsError:
            self.after_create(path, False)
            raise
        self.after_create(path, out is not False)
        return out

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        if overwrite:
            self.inner.write_bytes(path, data, overwrite=True)
        else:
            self._creating(path, lambda: self.inner.write_bytes(path, data))

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        return bool(self._creating(path, lambda: self.inner.try_write_atomic(path, data)))

    def write_hint(self, path: str, data: bytes) -> None:
        self.inner.write_hint(path, data)

    def rename(self, src: str, dst: str) -> bool:
        return bool(self._creating(dst, lambda: self.inner.rename(src, dst)))

    def open_output(self, path: str, *, overwrite: bool = False) -> BinaryIO:
        if overwrite:
            return self.inner.open_output(path, overwrite=True)
        stream = self._creating_stream(path, lambda: self.inner.open_output(path))
        return _Closing(stream, lambda: self.after_create(path, True))  # type: ignore[return-value]

    def open_native_output(self, path: str) -> pyarrow.NativeFile | None:
        # Only backends whose files exist from their creation hand out native streams (a local disk).
        out = self._creating_stream(path, lambda: self.inner.open_native_output(path))
        if out is not None:
            try:
                self.after_create(path, True)
            except BaseException:
                out.close()
                raise
        return out

    def _creating_stream(self, path: str, create: Any) -> Any:
        self.before_create(path)
        try:
            return create()
        except FileAlreadyExistsError:
            self.after_create(path, False)
            raise

    def read_bytes(self, path: str) -> bytes:
        return self.inner.read_bytes(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        return self.inner.delete(path, recursive=recursive)

    def mkdirs(self, path: str) -> None:
        self.inner.mkdirs(path)

    def mkdir_if_absent(self, path: str) -> bool:
        return self.inner.mkdir_if_absent(path)

    def list_status(self, path: str) -> list[FileStatus]:
        return self.inner.list_status(path)

    def file_size(self, path: str) -> int:
        return self.inner.file_size(path)

    def open_input(self, path: str) -> BinaryIO:
        return self.inner.open_input(path)

    def make_durable(self, paths: Sequence[str]) -> None:
        self.inner.make_durable(paths)

    def pyarrow_filesystem(self) -> pyarrow.fs.FileSystem | None:
        return self.inner.pyarrow_filesystem()

    def pyarrow_path(self, path: str) -> str:
        return self.inner.pyarrow_path(path)

    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)


class _Closing:
    """An output stream that runs ``on_close`` after closing (once)."""

    def __init__(self, inner: Any, on_close: Any) -> None:
        self._inner = inner
        self._on_close = on_close

    def close(self) -> None:
        if self._inner.closed:
            return
        self._inner.close()
        self._on_close()

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def __enter__(self) -> _Closing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
