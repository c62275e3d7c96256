"""The storage interface every table operation goes through.

Paimon: org.apache.paimon.fs.FileIO (shape after pyiceberg's FileIO: a handful of methods, backends picked
by URI scheme). No format knowledge lives here.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from laketide.exceptions import FileAlreadyExistsError, FileIOError, LaketideError, NotFoundError

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["FileIO", "FileStatus", "join_path", "temp_sibling"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileStatus:
    """One entry of a directory listing."""

    path: str
    size: int
    is_dir: bool
    modification_time_ms: int
    # Known on local disks; object stores keep neither (Hadoop reports 0 and the current user there).
    access_time_ms: int | None = field(default=None, compare=False)
    owner: str | None = field(default=None, compare=False)


def join_path(*parts: str) -> str:
    """Join path segments with '/', keeping the first segment's scheme ("s3://b", "a" -> "s3://b/a")."""
    if not parts:
        raise ValueError("join_path needs at least one part")
    rest = [p.strip("/") for p in parts[1:] if p.strip("/")]
    if not rest:
        return parts[0]
    head = parts[0] if parts[0].endswith("/") else parts[0] + "/"
    return head + "/".join(rest)


def _split_parent(path: str) -> tuple[str, str]:
    trimmed = path.rstrip("/")
    cut = trimmed.rfind("/")
    if cut < 0:
        return "", trimmed
    parent = trimmed[:cut]
    # Keep "s3://" and "/" roots intact instead of cutting them down to "s3:" or "".
    if parent.endswith(":/") or parent.endswith(":") or not parent:
        parent = trimmed[: cut + 1]
    return parent, trimmed[cut + 1 :]


def temp_sibling(path: str) -> str:
    """A hidden, unique path next to ``path``; listings by Paimon prefix ("snapshot-") never match it."""
    parent, name = _split_parent(path)
    hidden = f".{name}.{uuid.uuid4().hex}.tmp"
    return join_path(parent, hidden) if parent else hidden


@contextmanager
def translate_errors(action: str, path: str) -> Iterator[None]:
    """Re-raise any backend failure as a FileIOError subclass that names ``path``."""
    try:
        yield
    except LaketideError:
        raise
    except FileNotFoundError as e:
        raise _with_path(NotFoundError(f"Cannot {action} '{path}': no such file or directory"), path) from e
    except FileExistsError as e:
        raise _with_path(FileAlreadyExistsError(f"Cannot {action} '{path}': it already exists"), path) from e
    except Exception as e:  # backends raise anything (botocore, ValueError, ...): one typed error for callers
        raise _with_path(FileIOError(f"Cannot {action} '{path}': {type(e).__name__}: {e}"), path) from e


def _with_path(error: FileIOError, path: str) -> FileIOError:
    error.path = path  # type: ignore[attr-defined]
    return error


class FileIO(ABC):
    """Read, write, list and atomically publish files under one storage backend.

    Every failure raises FileIOError (NotFoundError for a missing file, FileAlreadyExistsError for a taken
    path) whose message names the path. Implementations must be picklable: they travel to executors.
    """

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole file."""

    @abstractmethod
    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write a whole file, creating parent directories; without ``overwrite`` a taken path fails."""

    @abstractmethod
    def try_write_atomic(self, path: str, data: bytes) -> bool:
        """Write-if-absent: True if this call created ``path``, False if it already existed.

        Readers never see a partial file at ``path``; of concurrent callers exactly one gets True.
        This is the primitive that publishes snapshots and hints.
        """

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or directory exists at ``path``."""

    @abstractmethod
    def delete(self, path: str, *, recursive: bool = False) -> bool:
        """Delete a file or directory; False if nothing was there. A non-empty directory needs ``recursive``."""

    @abstractmethod
    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents; fine if it exists."""

    def mkdir_if_absent(self, path: str) -> bool:
        """Create a directory (and its parents); False if it existed. Atomic where the store can tell two creators
        apart (a local file system); elsewhere check-then-create, as Paimon's catalogs do."""
        if self.exists(path):
            return False
        self.mkdirs(path)
        return True

    @abstractmethod
    def list_status(self, path: str) -> list[FileStatus]:
        """Entries directly under a directory (empty for a missing directory); a file lists itself."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst`` without replacing: False if ``dst`` exists. NotFoundError if ``src`` is missing."""

    @abstractmethod
    def file_size(self, path: str) -> int:
        """Size in bytes."""

    @abstractmethod
    def open_input(self, path: str) -> BinaryIO:
        """A seekable binary reader (usable by pyarrow.parquet, pyarrow.orc and fastavro)."""

    @abstractmethod
    def open_output(self, path: str, *, overwrite: bool = False) -> BinaryIO:
        """A binary writer (a context manager); creates parents. Without ``overwrite`` a taken path fails."""

    def open_native_output(self, path: str) -> pyarrow.NativeFile | None:
        """A new file (a taken path fails, as :meth:`open_output` without ``overwrite``) as a pyarrow output stream
        that Arrow's writers fill without calling back into Python; None where the backend has none (then use
        :meth:`open_output`). The caller closes it."""
        return None

    def pyarrow_filesystem(self) -> pyarrow.fs.FileSystem | None:
        """A pyarrow filesystem over the same storage for native reads, or None; pair with pyarrow_path()."""
        return None

    def pyarrow_path(self, path: str) -> str:
        """``path`` as pyarrow_filesystem() expects it."""
        return path

    def join(self, *parts: str) -> str:
        """Join path segments with '/'."""
        return join_path(*parts)

    def read_text(self, path: str) -> str:
        """The whole file decoded as UTF-8."""
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _with_path(FileIOError(f"Cannot read '{path}' as UTF-8 text: {e}"), path) from e

    def write_hint(self, path: str, data: bytes) -> None:
        """Replace an advisory file that readers verify and may ignore (LATEST / EARLIEST): readers never see a
        mix of old and new bytes, but it need not survive a power loss (Paimon: hints fall back to listing)."""
        self.write_bytes(path, data, overwrite=True)

    def make_durable(self, paths: Sequence[str]) -> None:  # noqa: B027 - deliberately a no-op by default
        """Make files written earlier (their bytes and their names) survive a power loss: a commit calls it
        before publishing the snapshot that references them. Object stores: durable once written (nothing to do)."""

    def delete_quietly(self, path: str) -> None:
        """Best-effort delete for cleanup paths (orphan files after a failed commit)."""
        try:
            self.delete(path, recursive=True)
        except FileIOError:
            pass
