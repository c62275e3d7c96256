"""FileIO wrappers that break on purpose: random storage failures with a budget, and crashes at a chosen step.

``FailingFileIO`` fails reads and writes at random until its failure budget is spent, sometimes after the
operation took effect (a lost acknowledgement, the hardest case for a committer). ``CrashingFileIO`` counts the
mutating operations of a process and SIGKILLs it at operation N, before or after it takes effect: with N swept
over one commit's operations it kills the writer during its data writes, after its manifests and around its
snapshot publish. Both delegate to another FileIO and pickle with their state, so they travel to workers.

Paimon: utils.FailingFileIO (test utility: random read/write failures with a budget)
"""

from __future__ import annotations

import enum
import os
import random
import signal
import threading
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from laketide.exceptions import InjectedFaultError
from laketide.fs.file_io import FileIO, FileStatus

if TYPE_CHECKING:
    import pyarrow.fs

__all__ = ["CrashingFileIO", "FailingFileIO", "FaultPoint"]


class FaultPoint(enum.Enum):
    """Whether an injected fault strikes before an operation or after it took effect."""

    BEFORE = "before"
    AFTER = "after"


class _Wrapper(FileIO):
    """Delegates everything to ``inner``; subclasses hook ``_gate(op, path, mutating=...)``."""

    def __init__(self, inner: FileIO) -> None:
        self.inner = inner

    def _gate(self, op: str, path: str, *, mutating: bool) -> FaultPoint | None:
        """Called before each operation: raise/kill now, or say to fail AFTER it (None: let it through)."""
        return None

    def _after(self, op: str, path: str) -> None:
        raise InjectedFaultError(f"Injected failure after '{op}' of '{path}' took effect")

    def _run(self, op: str, path: str, fn: Any, *, mutating: bool) -> Any:
        point = self._gate(op, path, mutating=mutating)
        result = fn()
        if point is FaultPoint.AFTER:
            if hasattr(result, "close"):
                result.close()  # a stream the caller never receives must not leak its handle
            self._after(op, path)
        return result

    def read_bytes(self, path: str) -> bytes:
        return self._run("read", path, lambda: self.inner.read_bytes(path), mutating=False)  # type: ignore[no-any-return]

    def write_bytes(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        self._run("write", path, lambda: self.inner.write_bytes(path, data, overwrite=overwrite), mutating=True)

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        return self._run("atomic-write", path, lambda: self.inner.try_write_atomic(path, data),  # type: ignore[no-any-return]
                         mutating=True)

    def exists(self, path: str) -> bool:
        return self._run("exists", path, lambda: self.inner.exists(path), mutating=False)  # type: ignore[no-any-return]

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        return self._run("delete", path, lambda: self.inner.delete(path, recursive=recursive),  # type: ignore[no-any-return]
                         mutating=True)

    def mkdirs(self, path: str) -> None:
        self.inner.mkdirs(path)

    def mkdir_if_absent(self, path: str) -> bool:
        return self.inner.mkdir_if_absent(path)

    def list_status(self, path: str) -> list[FileStatus]:
        return self._run("list", path, lambda: self.inner.list_status(path), mutating=False)  # type: ignore[no-any-return]

    def rename(self, src: str, dst: str) -> bool:
        return self._run("rename", dst, lambda: self.inner.rename(src, dst), mutating=True)  # type: ignore[no-any-return]

    def file_size(self, path: str) -> int:
        return self._run("size", path, lambda: self.inner.file_size(path), mutating=False)  # type: ignore[no-any-return]

    def open_input(self, path: str) -> BinaryIO:
        stream = self._run("open", path, lambda: self.inner.open_input(path), mutating=False)
        return _Stream(stream, self, path)  # type: ignore[return-value]

    def open_output(self, path: str, *, overwrite: bool = False) -> BinaryIO:
        stream = self._run("create", path, lambda: self.inner.open_output(path, overwrite=overwrite), mutating=True)
        return _Stream(stream, self, path)  # type: ignore[return-value]

    def make_durable(self, paths: Sequence[str]) -> None:
        self.inner.make_durable(paths)

    def pyarrow_filesystem(self) -> pyarrow.fs.FileSystem | None:
        # Native reads would bypass the wrapper: every byte goes through open_input instead.
        return None


class _Stream:
    """A file object whose reads and writes pass the owner's gate (several bytes at a time, as Java does)."""

    def __init__(self, inner: Any, owner: _Wrapper, path: str) -> None:
        self._inner = inner
        self._owner = owner
        self._path = path

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > 1:
            self._owner._gate("read", self._path, mutating=False)
        return self._inner.read(size)  # type: ignore[no-any-return]

    def readinto(self, buffer: Any) -> int:
        if len(buffer) > 1:
            self._owner._gate("read", self._path, mutating=False)
        return self._inner.readinto(buffer)  # type: ignore[no-any-return]

    def write(self, data: Any) -> int:
        point = self._owner._gate("write", self._path, mutating=True) if len(data) > 1 else None
        written = self._inner.write(data)
        if point is FaultPoint.AFTER:
            self._owner._after("write", self._path)
        return written  # type: ignore[no-any-return]

    def close(self) -> None:
        self._inner.close()

    @property
    def closed(self) -> bool:
        return bool(self._inner.closed)

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FailingFileIO(_Wrapper):
    """Fails a random ``failure_rate`` share of operations until ``budget`` failures were injected.

    Reads, writes, listings, existence checks, deletes and renames can fail (``ops`` narrows the failing
    operations to some names: "read", "write", "atomic-write", "exists", "delete", "list", "rename", "size",
    "open", "create"); a failing mutating operation takes effect first in a ``lost_ack_share`` of the cases (half
    by default; none without ``lost_acks``). ``disarm()`` stops failures, ``arm()`` resets the budget.
    Paimon: utils.FailingFileIO.
    """

    def __init__(
        self,
        inner: FileIO,
        *,
        failure_rate: float = 0.05,
        budget: int = 10,
        seed: int | None = None,
        lost_acks: bool = True,
        lost_ack_share: float = 0.5,
        ops: Collection[str] | None = None,
    ) -> None:
        super().__init__(inner)
        self.failure_rate = failure_rate
        self.budget = budget
        self.lost_acks = lost_acks
        self.lost_ack_share = lost_ack_share
        self.ops = None if ops is None else frozenset(ops)
        self.injected = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def arm(self, budget: int) -> None:
        with self._lock:
            self.budget = budget

    def disarm(self) -> None:
        self.arm(0)

    def _gate(self, op: str, path: str, *, mutating: bool) -> FaultPoint | None:
        if self.ops is not None and op not in self.ops:
            return None
        with self._lock:
            if self.budget <= 0 or self._random.random() >= self.failure_rate:
                return None
            self.budget -= 1
            self.injected += 1
            after = mutating and self.lost_acks and self._random.random() < self.lost_ack_share
        if after:
            return FaultPoint.AFTER
        raise InjectedFaultError(f"Injected failure of '{op}' of '{path}'")

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FailingFileIO({self.inner!r}, failure_rate={self.failure_rate}, budget={self.budget})"


class CrashingFileIO(_Wrapper):
    """SIGKILLs its process at mutating operation number ``crash_at`` (1-based), ``at`` BEFORE or AFTER it.

    With ``crash_at=None`` it only counts (``mutations``), which tells a test how many crash points one
    commit has. Stream writes count one by one, so a crash can land in the middle of a data file.
    """

    def __init__(self, inner: FileIO, *, crash_at: int | None = None, at: FaultPoint = FaultPoint.BEFORE) -> None:
        super().__init__(inner)
        self.crash_at = crash_at
        self.at = at
        self.mutations = 0
        self.log: list[str] = []
        self._lock = threading.Lock()

    def _gate(self, op: str, path: str, *, mutating: bool) -> FaultPoint | None:
        if not mutating:
            return None
        with self._lock:
            self.mutations += 1
            self.log.append(f"{op} {path}")
            hit = self.mutations == self.crash_at
        if not hit:
            return None
        if self.at is FaultPoint.BEFORE:
            _die()
        return FaultPoint.AFTER

    def _after(self, op: str, path: str) -> None:
        _die()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrashingFileIO({self.inner!r}, crash_at={self.crash_at}, at={self.at.value})"


def _die() -> None:
    # SIGKILL: no finally blocks, no atexit, no flushing — what a power cut or OOM kill leaves behind.
    os.kill(os.getpid(), signal.SIGKILL)
