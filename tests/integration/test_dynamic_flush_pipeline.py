"""A one-shot write into a dynamic-bucket or cross-partition table flushes each bucket as soon as its rows are in.

``Table.write`` (``TableWrite.write(final=True)``) routes the rows as the serial path does (same buckets, same
hash index files, same key moves) and then copies and flushes each (partition, bucket) group on a worker thread
(write/flush_pipeline.py): the data files and index files must be the serial path's, a failure must leave
nothing, and partial-update across partitions (rows rewritten on the way) keeps the serial path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import InjectedFaultError
from laketide.fs.failing import FaultPoint
from laketide.meta.commit_message import CommitMessage
from tests.integration.test_flush_pipeline import (
    SCHEMA,
    _catalog,
    _data_files,
    _FailNthDataFile,
    _layout,
    _rows,
)


def _dynamic(cat: Any, name: str, **options: str) -> Any:
    """Partitioned by p, primary key (p, k), dynamic buckets of a few thousand rows."""
    return cat.create_table(f"db.{name}", SCHEMA, primary_key=["p", "k"], partition_keys=["p"],
                            options={"bucket": "-1", "dynamic-bucket.target-row-num": "2000", **options})


def _cross(cat: Any, name: str, **options: str) -> Any:
    """Partitioned by p, primary key k alone: a key whose p changes moves partition (a delete in the old one)."""
    return cat.create_table(f"db.{name}", SCHEMA, primary_key=["k"], partition_keys=["p"],
                            options={"bucket": "-1", "dynamic-bucket.target-row-num": "1500", **options})


def _index_files(t: Any, messages: list[CommitMessage]) -> dict[tuple[bytes, int], list[list[int]]]:
    """Per bucket, the hashes of the new hash index files (the bytes Paimon reads)."""
    from laketide.index.hash_index import read_hash_index

    out: dict[tuple[bytes, int], list[list[int]]] = {}
    for m in messages:
        files = [f for f in m.new_index_files if f.index_type == "HASH"]
        out[(m.partition, m.bucket)] = [
            read_hash_index(t.store.file_io, t.store.path_factory.bucket_index_file_path(
                m.partition, m.bucket, f.file_name, f.external_path)).tolist() for f in files]
    return out


def _write(t: Any, batches: list[pa.Table], *, final: bool) -> list[CommitMessage]:
    w = t.new_write()  # restores each bucket's sequence numbers and the table's keys
    for i, b in enumerate(batches):
        w.write(b, final=final and i == len(batches) - 1)
    messages: list[CommitMessage] = w.prepare_commit()
    return messages


def _by_key(t: Any, key: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in key): r for r in t.read().to_pylist()}


def _oracle(batches: list[pa.Table], key: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for b in batches:
        for r in b.to_pylist():
            out[tuple(r[k] for k in key)] = r
    return out


@pytest.mark.parametrize("budget", ["256 mb", "16 kb"])
@pytest.mark.parametrize("mode", ["dynamic", "cross"])
def test_the_files_are_those_of_the_serial_path(tmp_path: Path, mode: str, budget: str) -> None:
    create = _dynamic if mode == "dynamic" else _cross
    key = ("p", "k") if mode == "dynamic" else ("k",)
    rng = np.random.default_rng(21)
    cat = _catalog(tmp_path)
    serial, piped = create(cat, "serial", **{"write-buffer-size": budget}), create(cat, "piped", **{
        "write-buffer-size": budget})
    first = [_rows(12_000, rng, parts=3, keys=9_000)]
    # the second write updates keys (moving some across partitions in cross mode) and adds new ones
    second = [_rows(3_000, rng, parts=1, keys=9_000), _rows(6_000, rng, parts=3, keys=15_000)]
    for batches in (first, second):
        a, b = _write(serial, batches, final=False), _write(piped, batches, final=True)
        assert len(a) == len(b) > 1
        if mode == "dynamic" or budget == "256 mb":
            assert _layout(piped, b) == _layout(serial, a)
        # else: a cross-partition bucket's moved-key deletes follow its rows in one group (the serial path buffers
        # them as pieces of their own), so a budget smaller than a bucket cuts its runs elsewhere; the rows read
        # are the same (checked below)
        assert _index_files(piped, b) == _index_files(serial, a)
        serial.commit(a)
        piped.commit(b)
    assert _by_key(piped, key) == _by_key(serial, key) == _oracle(first + second, key)


def test_cross_partition_partial_update_keeps_the_serial_path(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    t = _cross(cat, "t", **{"merge-engine": "partial-update"})
    base = pa.table({"p": ["a", "b", "a"], "k": [1, 2, 3], "name": ["x", "y", "z"], "v": [1, 2, 3]}, schema=SCHEMA)
    t.write(base)
    # rows naming another partition go to their key's partition, with that partition's value
    t.write(pa.table({"p": ["b", "a"], "k": [1, 2], "name": [None, "y2"], "v": [10, None]}, schema=SCHEMA))
    got = {r["k"]: r for r in t.read().to_pylist()}
    assert got == {1: {"p": "a", "k": 1, "name": "x", "v": 10}, 2: {"p": "b", "k": 2, "name": "y2", "v": 2},
                   3: {"p": "a", "k": 3, "name": "z", "v": 3}}


@pytest.mark.parametrize("point", [FaultPoint.BEFORE, FaultPoint.AFTER])
@pytest.mark.parametrize("mode", ["dynamic", "cross"])
def test_a_flush_failing_in_the_middle_commits_nothing(tmp_path: Path, mode: str, point: FaultPoint) -> None:
    io = _FailNthDataFile(3, point)
    cat = FileSystemCatalog(str(tmp_path / "wh"), file_io=io)
    cat.create_database("db")
    t = (_dynamic if mode == "dynamic" else _cross)(cat, "t")
    data = _rows(20_000, np.random.default_rng(22), parts=3, keys=20_000)  # ~10 buckets: the 3rd file fails
    with pytest.raises(InjectedFaultError):
        t.write(data)
    assert t.snapshot_manager.latest_snapshot_id() is None
    assert _data_files(t) == []
    assert not list(Path(t.path.removeprefix("file://")).glob("**/index-*"))
    t.write(data)  # the same table object works afterwards
    key = ("p", "k") if mode == "dynamic" else ("k",)
    assert _by_key(t, key) == _oracle([data], key)


def test_empty_single_row_and_odd_partition_values(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    for t, key in ((_dynamic(cat, "d"), ("p", "k")), (_cross(cat, "c"), ("k",))):
        assert t.write(SCHEMA.empty_table()) is None
        assert _data_files(t) == []
        rng = np.random.default_rng(23)
        data = _rows(5_000, rng, keys=4_000)
        odd = np.array(["a/b", "..", "x y", "%2F", ""])
        data = data.set_column(0, "p", pa.array(odd[rng.integers(0, len(odd), data.num_rows)]))
        one = data.slice(0, 1)
        t.write(one)
        assert _by_key(t, key) == _oracle([one], key)
        t.write(data)
        t.write(data.slice(100, 900))  # again: still one row per key, the last written wins
        assert _by_key(t, key) == _oracle([one, data, data.slice(100, 900)], key)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), writes=st.integers(1, 3), cross=st.booleans(),
       budget=st.sampled_from(["8 kb", "64 mb"]))
def test_one_shot_writes_equal_dict_oracle(tmp_path_factory: pytest.TempPathFactory, seed: int, writes: int,
                                           cross: bool, budget: str) -> None:
    cat = _catalog(tmp_path_factory.mktemp("wh"))
    t = (_cross if cross else _dynamic)(cat, "t", **{"write-buffer-size": budget})
    key = ("k",) if cross else ("p", "k")
    rng = np.random.default_rng(seed)
    batches = [_rows(int(rng.integers(1, 8_000)), rng, parts=int(rng.integers(1, 5)), keys=5_000)
               for _ in range(writes)]
    for b in batches:
        t.write(b)
    assert _by_key(t, key) == _oracle(batches, key)
