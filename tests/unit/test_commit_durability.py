"""A commit makes what its snapshot references durable before publishing it: data files fdatasync'ed, their
directories fsync'ed, then the snapshot linked into place and its directory fsync'ed. Hints (LATEST / EARLIEST) are
not synced."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import CommitError, FileIOError
from laketide.fs import durability, local


def _fd_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.fixture()
def events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc to name synced file descriptors")
    seen: list[tuple[str, str]] = []
    real_datasync, real_fsync, real_link = durability._fdatasync, os.fsync, os.link

    def datasync(fd: int) -> None:
        seen.append(("datasync", _fd_path(fd)))
        real_datasync(fd)

    def fsync(fd: int) -> None:
        seen.append(("fsync", _fd_path(fd)))
        real_fsync(fd)

    def link(src: str, dst: str) -> None:
        seen.append(("link", str(dst)))
        real_link(src, dst)

    monkeypatch.setattr(durability, "_fdatasync", datasync)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    return seen


def _data(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "p": pa.array(["a", "b"] * (n // 2), pa.string())})


def _published_at(events: list[tuple[str, str]], snapshot: int) -> int:
    return next(i for i, (op, p) in enumerate(events) if op == "link" and p.endswith(f"/snapshot-{snapshot}"))


def test_commit_syncs_data_files_and_dirs_before_the_snapshot(catalog, events) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", _data(2).schema, partition_keys=["p"])
    events.clear()
    table.write(_data(1000))
    at = _published_at(events, 1)
    before = events[:at]
    synced = {p for op, p in before if op == "datasync"}
    entries = table.file_scan().plan(table.snapshot_manager.latest_snapshot())
    assert len(entries) == 2
    for e in entries:
        path = table.store.path_factory.data_file_paths(e.partition, e.bucket, e.file)[0]
        assert os.path.realpath(path) in synced
        bucket_dir = os.path.realpath(os.path.dirname(path))
        assert ("fsync", bucket_dir) in before  # the new name, in its new bucket directory
        assert ("fsync", os.path.dirname(bucket_dir)) in before  # the new bucket directory's own name
    manifests = {p for p in synced if "/manifest/" in p}
    assert any(os.path.basename(p).startswith("manifest-list-") for p in manifests)
    assert any(os.path.basename(p).startswith("manifest-") and "list" not in p for p in manifests)
    # The snapshot's name is made durable right after its link (an acknowledged commit survives a power loss);
    # hints are advisory: nothing else after the snapshot is synced.
    snapshot_dir = os.path.realpath(os.path.dirname(events[at][1]))
    assert [e for e in events[at + 1:] if e[0] != "link"] == [("fsync", snapshot_dir)]


def test_a_failed_sync_fails_the_commit_and_publishes_nothing(catalog, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", _data(2).schema, options={"commit.max-retries": "1"})

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(durability, "_fdatasync", broken)
    with pytest.raises(CommitError, match="Cannot sync .*data-.*Input/output error"):
        table.write(_data(10))
    assert table.snapshot_manager.latest_snapshot() is None
    manifest_dir = Path(table.store.path_factory.manifest_dir)
    assert not manifest_dir.exists() or list(manifest_dir.iterdir()) == []
    monkeypatch.undo()
    table.write(_data(10))  # a retry once the disk is back
    assert table.read().num_rows == 10


def test_make_durable_syncs_files_written_elsewhere(tmp_path: Path, events) -> None:  # noqa: ANN001
    a, b = tmp_path / "x" / "bucket-0" / "a", tmp_path / "x" / "bucket-1" / "b"
    for p in (a, b):
        p.parent.mkdir(parents=True)
        p.write_bytes(b"data")  # e.g. by an executor process, not through this FileIO
    local.LocalFileIO().make_durable([f"file://{a}", str(b), str(a)])
    synced = [p for op, p in events if op == "datasync"]
    assert sorted(synced) == sorted([os.path.realpath(a), os.path.realpath(b)])  # each file once
    dirs = [p for op, p in events if op == "fsync"]
    assert sorted(dirs) == sorted(os.path.realpath(d) for d in (a.parent, b.parent, tmp_path / "x"))


def test_make_durable_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(FileIOError, match="gone"):
        local.LocalFileIO().make_durable([str(tmp_path / "gone")])


def test_large_outputs_start_writeback_as_they_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[tuple[int, int]] = []
    real = local.start_writeback

    def record(fd: int, offset: int, nbytes: int) -> None:
        started.append((offset, nbytes))
        real(fd, offset, nbytes)

    monkeypatch.setattr(local, "start_writeback", record)
    chunk = os.urandom(1 << 20)
    path = tmp_path / "big"
    with local.LocalFileIO().open_output(str(path)) as out:
        for _ in range(20):
            out.write(chunk)
    assert path.read_bytes() == chunk * 20
    step = local._WRITEBACK_BYTES
    assert started[:2] == [(0, step), (step, step)]
    assert started[-1] == (2 * step, 0)  # the tail, at close
    with pytest.raises(FileIOError):
        local.LocalFileIO().open_output(str(path))  # still exclusive


def test_make_durable_of_many_files_syncs_each_once(tmp_path: Path, events) -> None:  # noqa: ANN001
    files = [tmp_path / f"bucket-{i % 3}" / f"f{i}" for i in range(40)]  # past the threshold for parallel syncs
    for p in files:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"x" * i if (i := int(p.name[1:])) else b"")
    local.LocalFileIO().make_durable([str(p) for p in files])
    assert sorted(p for op, p in events if op == "datasync") == sorted(os.path.realpath(p) for p in files)
    assert sorted(p for op, p in events if op == "fsync") == sorted(
        os.path.realpath(d) for d in {*(p.parent for p in files), tmp_path})


def _sync_in_child(paths: list[str]) -> None:
    durability.sync_new_files(paths)


def test_syncs_run_in_a_forked_child_after_the_parent_synced(tmp_path: Path) -> None:
    """The sync threads are kept for the process; a forked child (multiprocessing's default on Linux) has none of
    them and must start its own instead of waiting forever on the parent's."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    paths = []
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(b"data")
        paths.append(str(tmp_path / name))
    durability.sync_new_files(paths)  # the parent's pool exists now
    child = multiprocessing.get_context("fork").Process(target=_sync_in_child, args=(paths,))
    child.start()
    child.join(timeout=120)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child's sync never finished")
    assert child.exitcode == 0
