"""One behaviour suite for every FileIO backend, plus the cross-process write-if-absent race."""

from __future__ import annotations

import io
import multiprocessing
import pickle
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pytest

from laketide.exceptions import (
    FileAlreadyExistsError,
    FileIOError,
    LaketideError,
    NotFoundError,
    UnsupportedFeatureError,
)
from laketide.fs import FileIO, FileStatus, LocalFileIO, file_io_for, join_path, scheme_of
from laketide.fs.file_io import temp_sibling
from laketide.fs.fsspec_io import FsspecFileIO, PublishMode
from laketide.fs.local import to_local_path

RACERS = 8


@dataclass
class Backend:
    name: str
    io: FileIO
    root: str
    # Whether separate processes see the same storage (memory:// lives inside one process).
    shared_across_processes: bool
    atomic_publish: bool


def _make_backend(kind: str, tmp_path: Path) -> Backend:
    if kind == "local":
        return Backend(kind, LocalFileIO(), str(tmp_path), shared_across_processes=True, atomic_publish=True)
    if kind == "local-uri":
        return Backend(kind, LocalFileIO(), "file://" + str(tmp_path), shared_across_processes=True,
                       atomic_publish=True)
    if kind == "memory":
        fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
        return Backend(kind, FsspecFileIO(fs), f"memory://t-{uuid.uuid4().hex}", shared_across_processes=False,
                       atomic_publish=True)
    if kind == "fsspec-file-unsafe":
        fs = fsspec.filesystem("file")
        return Backend(kind, FsspecFileIO(fs, allow_unsafe_publish=True), str(tmp_path),
                       shared_across_processes=True, atomic_publish=False)
    raise AssertionError(kind)


@pytest.fixture(params=["local", "local-uri", "memory", "fsspec-file-unsafe"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield _make_backend(request.param, tmp_path)


def _p(b: Backend, *parts: str) -> str:
    return join_path(b.root, *parts)


# ---- basic reads and writes --------------------------------------------------------------------------


def test_write_then_read_creates_parents(backend: Backend) -> None:
    path = _p(backend, "db.db", "t", "bucket-0", "data-1.parquet")
    backend.io.write_bytes(path, b"hello")
    assert backend.io.read_bytes(path) == b"hello"
    assert backend.io.exists(path)
    assert backend.io.file_size(path) == 5
    assert backend.io.read_text(path) == "hello"


def test_write_without_overwrite_refuses_existing_file(backend: Backend) -> None:
    path = _p(backend, "a")
    backend.io.write_bytes(path, b"one")
    with pytest.raises(FileAlreadyExistsError) as info:
        backend.io.write_bytes(path, b"two")
    assert isinstance(info.value, FileExistsError) and isinstance(info.value, LaketideError)
    assert path in str(info.value)
    assert backend.io.read_bytes(path) == b"one"
    backend.io.write_bytes(path, b"three", overwrite=True)
    assert backend.io.read_bytes(path) == b"three"


def test_missing_file_raises_not_found_naming_the_path(backend: Backend) -> None:
    path = _p(backend, "nope", "snapshot-7")
    for call in (backend.io.read_bytes, backend.io.file_size, backend.io.open_input):
        with pytest.raises(NotFoundError) as info:
            call(path)
        assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, FileIOError)
        assert path in str(info.value)
        assert isinstance(info.value.__cause__, FileNotFoundError)
    assert not backend.io.exists(path)


def test_list_status_lists_files_and_directories(backend: Backend) -> None:
    backend.io.write_bytes(_p(backend, "snapshot", "snapshot-1"), b"x" * 3)
    backend.io.write_bytes(_p(backend, "snapshot", "snapshot-2"), b"y" * 7)
    backend.io.mkdirs(_p(backend, "snapshot", "sub"))
    backend.io.mkdirs(_p(backend, "snapshot", "sub"))  # idempotent
    backend.io.write_bytes(_p(backend, "snapshot", "sub", "inner"), b"z")

    statuses = sorted(backend.io.list_status(_p(backend, "snapshot")), key=lambda s: s.path)
    assert [(s.path, s.size, s.is_dir) for s in statuses] == [
        (_p(backend, "snapshot", "snapshot-1"), 3, False),
        (_p(backend, "snapshot", "snapshot-2"), 7, False),
        (_p(backend, "snapshot", "sub"), 0, True),
    ]
    # Listed paths keep the caller's form, so they can be fed straight back.
    assert backend.io.read_bytes(statuses[1].path) == b"y" * 7
    if backend.name != "memory":  # memory:// stores no modification time
        assert all(s.modification_time_ms > 0 for s in statuses if not s.is_dir)


def test_list_status_of_missing_directory_is_empty(backend: Backend) -> None:
    assert backend.io.list_status(_p(backend, "missing", "dir")) == []


def test_list_status_of_a_file_lists_the_file(backend: Backend) -> None:
    path = _p(backend, "f")
    backend.io.write_bytes(path, b"abc")
    [status] = backend.io.list_status(path)
    assert status == FileStatus(path=path, size=3, is_dir=False, modification_time_ms=status.modification_time_ms)


def test_delete_files_and_directories(backend: Backend) -> None:
    file_path = _p(backend, "d", "f")
    backend.io.write_bytes(file_path, b"1")
    assert backend.io.delete(_p(backend, "d", "missing")) is False

    with pytest.raises(FileIOError) as info:
        backend.io.delete(_p(backend, "d"))
    assert _p(backend, "d") in str(info.value)
    assert backend.io.exists(file_path)

    assert backend.io.delete(file_path) is True
    assert not backend.io.exists(file_path)
    backend.io.write_bytes(_p(backend, "d", "g", "h"), b"2")
    assert backend.io.delete(_p(backend, "d"), recursive=True) is True
    assert not backend.io.exists(_p(backend, "d", "g", "h"))
    backend.io.delete_quietly(_p(backend, "d"))  # nothing left: no error either


def test_rename_never_replaces(backend: Backend) -> None:
    src, dst = _p(backend, "tmp", "a"), _p(backend, "final", "a")
    backend.io.write_bytes(src, b"payload")
    assert backend.io.rename(src, dst) is True
    assert backend.io.read_bytes(dst) == b"payload"
    assert not backend.io.exists(src)

    backend.io.write_bytes(src, b"other")
    assert backend.io.rename(src, dst) is False
    assert backend.io.read_bytes(dst) == b"payload"
    assert backend.io.read_bytes(src) == b"other"

    with pytest.raises(NotFoundError):
        backend.io.rename(_p(backend, "tmp", "missing"), _p(backend, "final", "b"))


def test_rename_directory(backend: Backend) -> None:
    backend.io.write_bytes(_p(backend, "dir1", "x"), b"x")
    backend.io.write_bytes(_p(backend, "dir3", "y"), b"y")
    assert backend.io.rename(_p(backend, "dir1"), _p(backend, "dir2")) is True
    assert backend.io.read_bytes(_p(backend, "dir2", "x")) == b"x"
    assert backend.io.rename(_p(backend, "dir2"), _p(backend, "dir3")) is False
    assert backend.io.read_bytes(_p(backend, "dir3", "y")) == b"y"


def test_try_write_atomic_writes_only_if_absent(backend: Backend) -> None:
    path = _p(backend, "snapshot", "snapshot-1")
    assert backend.io.try_write_atomic(path, b"first") is True
    assert backend.io.try_write_atomic(path, b"second") is False
    assert backend.io.read_bytes(path) == b"first"
    assert [s.path for s in backend.io.list_status(_p(backend, "snapshot"))] == [path]


# ---- streams ------------------------------------------------------------------------------------------


def test_open_output_and_input_work_with_parquet_and_avro(backend: Backend) -> None:
    import fastavro
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": [1, 2, 3], "name": ["a", "b", None]})
    pq_path = _p(backend, "bucket-0", "data-0.parquet")
    with backend.io.open_output(pq_path) as out:
        pq.write_table(table, out)
    with backend.io.open_input(pq_path) as src:
        assert pq.read_table(src).equals(table)

    schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]}
    avro_path = _p(backend, "manifest", "manifest-0")
    with backend.io.open_output(avro_path) as out:
        fastavro.writer(out, schema, [{"x": 1}, {"x": 2}], codec="null")
    with backend.io.open_input(avro_path) as src:
        assert [r["x"] for r in fastavro.reader(src)] == [1, 2]

    fs = backend.io.pyarrow_filesystem()
    assert fs is not None
    with fs.open_input_file(backend.io.pyarrow_path(pq_path)) as native:
        assert pq.read_table(native).equals(table)


def test_open_output_without_overwrite_refuses_existing(backend: Backend) -> None:
    path = _p(backend, "x")
    backend.io.write_bytes(path, b"1")
    with pytest.raises(FileAlreadyExistsError):
        backend.io.open_output(path)
    with backend.io.open_output(path, overwrite=True) as out:
        out.write(b"2")
    assert backend.io.read_bytes(path) == b"2"


def test_open_input_is_seekable(backend: Backend) -> None:
    path = _p(backend, "s")
    backend.io.write_bytes(path, b"0123456789")
    with backend.io.open_input(path) as src:
        assert src.seekable()
        src.seek(-3, io.SEEK_END)
        assert src.read() == b"789"
        src.seek(2)
        assert src.read(2) == b"23"


def test_file_io_pickles(backend: Backend) -> None:
    path = _p(backend, "p")
    backend.io.write_bytes(path, b"pickled")
    clone = pickle.loads(pickle.dumps(backend.io))
    assert clone.read_bytes(path) == b"pickled"


# ---- the race ------------------------------------------------------------------------------------------


def _race_worker(kind: str, tmp: str, path: str, index: int, barrier: object, results: object) -> None:
    backend = _make_backend(kind, Path(tmp))
    barrier.wait()  # type: ignore[attr-defined]
    won = backend.io.try_write_atomic(path, _payload(index))
    results.put((index, won))  # type: ignore[attr-defined]


def _payload(index: int) -> bytes:
    # Large enough that a non-atomic publish would be observable as a short file.
    return f"writer-{index};".encode() * 50_000


def _leftovers(backend: Backend, directory: str) -> list[str]:
    return sorted(s.path for s in backend.io.list_status(directory))


def test_try_write_atomic_race_between_processes(tmp_path: Path) -> None:
    # Spawned processes (not threads, not fork): each racer has its own interpreter, as separate writers do.
    kind = "local"
    backend = _make_backend(kind, tmp_path)
    path = _p(backend, "snapshot", "snapshot-1")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(RACERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(kind, str(tmp_path), path, i, barrier, results))
        for i in range(RACERS)
    ]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    winners = [i for i, won in outcomes.items() if won]
    assert len(outcomes) == RACERS and len(winners) == 1
    assert backend.io.read_bytes(path) == _payload(winners[0])
    assert _leftovers(backend, _p(backend, "snapshot")) == [path]


def test_try_write_atomic_race_in_memory_between_threads() -> None:
    # memory:// is private to one process, so its racers are threads; the guarantee is the same.
    backend = _make_backend("memory", Path("/unused"))
    path = _p(backend, "snapshot", "snapshot-1")
    barrier = threading.Barrier(RACERS)
    outcomes: dict[int, bool] = {}

    def race(index: int) -> None:
        barrier.wait()
        outcomes[index] = backend.io.try_write_atomic(path, _payload(index))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in outcomes.items() if won]
    assert len(outcomes) == RACERS and len(winners) == 1
    assert backend.io.read_bytes(path) == _payload(winners[0])
    assert _leftovers(backend, _p(backend, "snapshot")) == [path]


# ---- backend selection and unsafe publishing -------------------------------------------------------------


def test_backend_without_write_if_absent_refuses_to_publish(tmp_path: Path) -> None:
    io_ = FsspecFileIO(fsspec.filesystem("file"))
    assert io_.publish_mode is PublishMode.UNSUPPORTED
    with pytest.raises(UnsupportedFeatureError) as info:
        io_.try_write_atomic(str(tmp_path / "snapshot-1"), b"x")
    assert "allow_unsafe_publish" in str(info.value)
    assert not (tmp_path / "snapshot-1").exists()


def test_file_io_for_picks_backend_by_scheme(tmp_path: Path) -> None:
    assert isinstance(file_io_for(str(tmp_path)), LocalFileIO)
    assert isinstance(file_io_for("file://" + str(tmp_path)), LocalFileIO)
    mem = file_io_for("memory://wh")
    assert isinstance(mem, FsspecFileIO) and mem.publish_mode is PublishMode.IN_PROCESS_LOCK
    unsafe = file_io_for("memory://wh", allow_unsafe_publish=True)
    assert isinstance(unsafe, FsspecFileIO)


@pytest.mark.parametrize(
    ("path", "scheme"),
    [("/a/b", ""), ("rel/x", ""), ("C:\\wh", ""), ("file:///a", "file"), ("S3://bucket/k", "s3"),
     ("memory://x", "memory"), ("oss://b/k", "oss")],
)
def test_scheme_of(path: str, scheme: str) -> None:
    assert scheme_of(path) == scheme


@pytest.mark.parametrize(
    ("parts", "joined"),
    [
        (("s3://bucket", "db.db", "t"), "s3://bucket/db.db/t"),
        (("s3://bucket/", "/db.db/", "t"), "s3://bucket/db.db/t"),
        (("/wh", "a"), "/wh/a"),
        (("/", "a"), "/a"),
        (("file:///", "a"), "file:///a"),
        (("memory://x",), "memory://x"),
        (("/wh", "", "a"), "/wh/a"),
    ],
)
def test_join_path(parts: tuple[str, ...], joined: str) -> None:
    assert join_path(*parts) == joined


def test_to_local_path_accepts_uri_forms() -> None:
    assert to_local_path("file:///tmp/x") == "/tmp/x"
    assert to_local_path("file:/tmp/x") == "/tmp/x"
    assert to_local_path("/tmp/x") == "/tmp/x"


def test_temp_sibling_is_hidden_and_beside_the_target() -> None:
    tmp = temp_sibling("s3://b/t/snapshot/snapshot-3")
    assert tmp.startswith("s3://b/t/snapshot/.snapshot-3.") and tmp.endswith(".tmp")
    assert temp_sibling("snapshot-3").startswith(".snapshot-3.")
    assert temp_sibling("/snapshot-3").startswith("/.snapshot-3.")
