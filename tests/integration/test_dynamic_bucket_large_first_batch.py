"""Dynamic-bucket writes whose first batch of a partition is large and fits one bucket (its hashes sorted in the
background while the rows are written): rows, buckets and hash index files as a dict oracle and Java's rules say,
through one-shot writes, several writes before a commit, an abort, partitions of both kinds in one batch, and a
failing index file among several written at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import InjectedFaultError
from laketide.fs import LocalFileIO
from laketide.fs.failing import FailingFileIO, FaultPoint
from tests.integration.test_dynamic_bucket import SCHEMA, hash_files
from tests.integration.test_dynamic_bucket_index_files import _batch, _check, _hashes

BIG = 70_000  # above hash_index._LATER_MIN


def _rows(t) -> dict[tuple[int, str], str]:
    got = t.read(columns=["k", "dt", "v"]).to_pylist()
    out = {(r["k"], r["dt"]): r["v"] for r in got}
    assert len(out) == len(got)  # one row per key after the merge
    return out


def _upsert(oracle: dict, keys: np.ndarray, dt: str, tag: str) -> None:
    for k in keys.tolist():
        oracle[(k, dt)] = tag


def test_one_shot_write_with_repeated_keys_then_upserts(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"dynamic-bucket.target-row-num": "100000"})
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 10**12, BIG)
    keys[BIG // 2:BIG // 2 + 500] = keys[:500]  # 500 keys twice in the batch: the later row wins
    t.write(_batch(keys, "x", "a"))
    oracle: dict = {}
    _upsert(oracle, keys, "x", "a")
    assert _rows(t) == oracle
    (_, bucket), hashes = next(iter(hash_files(t).items()))
    assert len(hash_files(t)) == 1 and bucket == 0  # one bucket, its file the sorted distinct hashes
    assert hashes.tolist() == np.unique(_hashes(keys)).tolist()
    _check(t, {"": set(keys.tolist())})
    # known keys stay in bucket 0, new ones fill it to 100000 distinct hashes, then bucket 1
    more = np.concatenate([keys[:1000], rng.integers(10**12, 2 * 10**12, 40_000)])
    t.write(_batch(more, "x", "b"))
    _upsert(oracle, more, "x", "b")
    assert _rows(t) == oracle
    fill = {b: len(h) for (_, b), h in hash_files(t).items()}
    assert fill[0] == 100_000 and sum(fill.values()) == len(set(keys.tolist()) | set(more.tolist()))
    _check(t, {"": set(keys.tolist()) | set(more.tolist())})


def test_several_writes_then_abort_then_commit(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "200000"})
    w = t.new_write()
    big = np.arange(BIG)
    w.write(_batch(big, "p", "lost"))
    w.abort()  # the deferred batch is forgotten with the rest
    oracle: dict = {}
    # one batch: a large partition (deferred) and a small one (the general path)
    both = pa.concat_tables([_batch(big, "p", "a"), _batch(np.arange(10), "q", "a")])
    w.write(both)
    _upsert(oracle, big, "p", "a")
    _upsert(oracle, np.arange(10), "q", "a")
    w.write(_batch(np.arange(BIG - 5, BIG + 5), "p", "b"))  # the second write joins the sorted batch in first
    _upsert(oracle, np.arange(BIG - 5, BIG + 5), "p", "b")
    t.commit(w.prepare_commit())
    assert _rows(t) == oracle
    _check(t, {"p": set(range(BIG + 5)), "q": set(range(10))})
    assert {b for (_, b) in hash_files(t)} == {0}


@pytest.mark.parametrize("parallelism", ["2"])
def test_assigners_each_defer_their_share(catalog, parallelism: str) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "dynamic-bucket.target-row-num": "150000", "dynamic-bucket.assigner-parallelism": parallelism})
    keys = np.arange(3 * BIG)  # ~half of the hashes per assigner: each share is a large first batch
    t.write(_batch(keys, "x", "a"))
    files = hash_files(t)
    assert sorted(b for _, b in files) == [0, 1]  # assigner i owns bucket i
    _check(t, {"": set(keys.tolist())})
    assert len(_rows(t)) == len(keys)


class _FailNthIndexFile(FailingFileIO):
    """Fails the write of the ``n``-th hash index file (before it, or after it took effect)."""

    def __init__(self, n: int, point: FaultPoint) -> None:
        super().__init__(LocalFileIO(), failure_rate=0.0, budget=0)
        self.n, self.point, self.written = n, point, 0

    def _gate(self, op: str, path: str, *, mutating: bool) -> FaultPoint | None:
        if op == "write" and "/index-" in path:
            with self._lock:
                self.written += 1
                hit = self.written == self.n
            if hit and self.point is FaultPoint.BEFORE:
                raise InjectedFaultError(f"Injected failure of '{op}' of '{path}'")
            return self.point if hit else None
        return None


@pytest.mark.parametrize("rows", [300_000, 30_000], ids=["at-once", "one-by-one"])
@pytest.mark.parametrize("point", [FaultPoint.BEFORE, FaultPoint.AFTER])
def test_a_failing_index_file_leaves_none(tmp_path, point: FaultPoint, rows: int) -> None:
    """Four buckets' index files (large ones written at once); one failing leaves no index or data file, and the
    same table object writes them all afterwards."""
    cat = FileSystemCatalog(str(tmp_path / "wh"), file_io=_FailNthIndexFile(3, point))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"],
                         options={"dynamic-bucket.target-row-num": str(rows * 4 // 15)})
    keys = np.arange(rows)
    with pytest.raises(InjectedFaultError):
        t.write(_batch(keys, "x", "a"))
    root = Path(t.path.removeprefix("file://"))
    assert t.snapshot_manager.latest_snapshot_id() is None
    assert not list(root.glob("**/index-*")) and not list(root.glob("**/data-*"))
    t.write(_batch(keys, "x", "a"))
    assert sorted(b for _, b in hash_files(t)) == [0, 1, 2, 3]
    _check(t, {"": set(keys.tolist())})
    assert len(_rows(t)) == len(keys)
