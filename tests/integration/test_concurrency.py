"""Real processes on real files: 8 writers with default options, a compaction + expiration job and a reader.

Every acknowledged commit must be in the table, every retained snapshot must read, no key may appear twice, and a
primary-key table must hold what a dict oracle built from the order of the acknowledged commits says (the later
commit wins). Issue 14 acceptance; long, so marked ``slow`` (still part of the default run).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import (
    CommitError,
    CorruptMetadataError,
    NoSuchSnapshotError,
    NotFoundError,
)
from laketide.meta.snapshot import CommitKind
from laketide.table.orphan import _used_names
from laketide.table.table import Table

pytestmark = pytest.mark.slow

WRITERS = 8
COMMITS = int(os.environ.get("LAKETIDE_STRESS_COMMITS", "50"))
KEYS = 40  # key space of the shared partition: writers overwrite each other's keys all the time
PER_COMMIT = 6
SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _rows(proc: int, i: int, shared: bool, rng: random.Random) -> pa.Table:
    dt = "x" if shared else f"p{proc}"
    keys = rng.sample(range(KEYS), PER_COMMIT)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{proc}.{i}.{k}" for k in keys]}, schema=SCHEMA)


def _append_rows(proc: int, i: int, shared: bool) -> pa.Table:
    dt = "x" if shared else f"p{proc}"
    ids = [(proc * 1000 + i) * 10 + j for j in range(PER_COMMIT)]
    return pa.table({"k": ids, "dt": [dt] * len(ids), "v": [f"{proc}.{i}"] * len(ids)}, schema=SCHEMA)


def _append_snapshot(t: Table, sid: int, floor: int) -> int:
    """The APPEND snapshot of the commit that returned ``sid`` (a compacting write reports its COMPACT)."""
    s = t.snapshot(sid)
    if s.commit_kind is CommitKind.APPEND:
        return sid
    for back in range(sid - 1, floor - 1, -1):
        prev = t.snapshot_manager.try_snapshot(back)
        if prev is not None and prev.commit_user == s.commit_user and prev.commit_kind is CommitKind.APPEND:
            return back
    raise AssertionError(f"no APPEND snapshot before COMPACT snapshot {sid}")


# -- processes (module level: forkserver children import them) -----------------------------------------------------
def _writer(warehouse: str, name: str, proc: int, shared: bool, pk: bool) -> dict[str, Any]:
    t = laketide.load_catalog(warehouse=warehouse).table(name)
    rng = random.Random(proc)
    acked: list[tuple[int, list[dict[str, Any]]]] = []
    failed: list[str] = []
    # A consumer (Paimon's consumer-id) pins the snapshots from before each write, so that the write's APPEND
    # snapshot can still be found after its COMPACT one (the expiration job never removes them meanwhile).
    consumer = f"{t.path}/consumer/consumer-writer{proc}"
    for i in range(COMMITS):
        data = _rows(proc, i, shared, rng) if pk else _append_rows(proc, i, shared)
        floor = (t.snapshot_manager.latest_snapshot_id() or 0) + 1
        t.file_io.write_bytes(consumer, json.dumps({"nextSnapshot": floor}).encode(), overwrite=True)
        try:
            sid = t.write(data)
        except CommitError as e:  # not acknowledged: the test only counts these
            failed.append(f"{type(e).__name__}: {e}"[:300])
            continue
        assert sid is not None
        acked.append((_append_snapshot(t, sid, floor) if pk else sid, data.to_pylist()))
    t.file_io.delete(consumer)
    return {"acked": acked, "failed": failed}


def _maintenance(warehouse: str, name: str, stop: str) -> dict[str, int]:
    t = laketide.load_catalog(warehouse=warehouse).table(name)
    done = {"compactions": 0, "expired": 0, "orphan_runs": 0, "conflicts": 0}
    n = 0
    while not os.path.exists(stop):
        n += 1
        try:
            if t.compact(full=n % 3 == 0) is not None:
                done["compactions"] += 1
        except CommitError:
            done["conflicts"] += 1  # a writer's compaction replaced the same files first
        done["expired"] += t.expire_snapshots(retain_min=20, retain_max=20, time_retained_ms=0)
        if n % 5 == 0:
            t.remove_orphan_files()  # default threshold: in-flight files are younger, so they stay
            done["orphan_runs"] += 1
        time.sleep(0.05)  # pacing, not synchronization: leave the cores to the writers
    return done


def _reader(warehouse: str, name: str, stop: str, pk: bool) -> dict[str, int]:
    t = laketide.load_catalog(warehouse=warehouse).table(name)
    sm = t.snapshot_manager
    seen = {"reads": 0, "expired_while_reading": 0}
    while not os.path.exists(stop):
        sid = sm.latest_snapshot_id()
        if sid is None:
            time.sleep(0.01)  # pacing while the table is empty, not synchronization
            continue
        try:
            got = t.read(snapshot_id=sid)
        except (NotFoundError, NoSuchSnapshotError, CorruptMetadataError):
            if sm.snapshot_exists(sid):
                raise  # a listed snapshot that does not read: the defect this test hunts
            seen["expired_while_reading"] += 1
            continue
        keys = list(zip(got.column("k").to_pylist(), got.column("dt").to_pylist()))
        assert len(keys) == len(set(keys)), f"duplicate keys in snapshot {sid}"
        seen["reads"] += 1
    return seen


def _noop(_: int) -> None:
    return None


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["laketide.table.table", __name__])
    with ProcessPoolExecutor(max_workers=WRITERS + 2, mp_context=ctx) as executor:
        list(executor.map(_noop, range(WRITERS + 2)))
        yield executor


def _run(pool: ProcessPoolExecutor, tmp_path, *, pk: bool, shared: bool) -> tuple[Table, list[dict[str, Any]]]:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    # Default options: primary-key tables get dynamic buckets (one bucket per partition here) and writers that
    # compact; append tables are bucket-unaware.
    if pk:
        t = cat.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"])
    else:
        t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"])
    stop = str(tmp_path / "stop")
    maintenance = pool.submit(_maintenance, warehouse, "db.t", stop)
    reader = pool.submit(_reader, warehouse, "db.t", stop, pk)
    writers = [pool.submit(_writer, warehouse, "db.t", p, shared, pk) for p in range(WRITERS)]
    try:
        results = [w.result(timeout=900) for w in writers]
    finally:
        open(stop, "w").close()
    done = maintenance.result(timeout=300)
    seen = reader.result(timeout=300)
    assert done["expired"] > 0 and seen["reads"] > 0
    if pk:
        assert done["compactions"] > 0
    return t, results


def _check_table(t: Table, results: list[dict[str, Any]]) -> None:
    acked = [a for r in results for a in r["acked"]]
    failed = [f for r in results for f in r["failed"]]
    # Almost everything lands; a write may give up after commit.max-retries lost races, and then says so.
    assert len(acked) >= WRITERS * COMMITS * 0.9, failed[:3]
    fresh = Table(name=t.name, path=t.path, file_io=t.file_io)
    for sid in fresh.snapshot_manager.snapshot_ids():  # every retained snapshot reads
        fresh.read(snapshot_id=sid)
    got = fresh.read()
    keys = list(zip(got.column("k").to_pylist(), got.column("dt").to_pylist()))
    assert len(keys) == len(set(keys))  # 0 duplicate keys
    values = dict(zip(keys, got.column("v").to_pylist()))
    sids = [sid for sid, _ in acked]
    assert len(sids) == len(set(sids))  # every acknowledged commit has its own snapshot
    oracle: dict[tuple[int, str], str] = {}
    for _, rows in sorted(acked, key=lambda a: a[0]):  # commit order: the later commit wins
        oracle.update({(r["k"], r["dt"]): r["v"] for r in rows})
    # Unacknowledged writes never landed (they failed before or at their APPEND), so the table is the oracle.
    assert values == oracle
    # Leftovers of lost races and aborted writes are at most orphans, which cleanup removes; the table stays whole.
    fresh.remove_orphan_files(older_than=timedelta(0))
    used = _used_names(fresh.store)
    stray = [p for d, _, fs in os.walk(t.path) for p in (os.path.join(d, f) for f in fs)
             if "/schema/" not in p and "/snapshot/" not in p and os.path.basename(p) not in used]
    assert not stray
    assert fresh.read().num_rows == len(oracle)


@pytest.mark.parametrize("shared", [False, True], ids=["bucket-per-writer", "one-bucket"])
def test_primary_key_writers_with_default_options(pool, tmp_path, shared: bool) -> None:  # noqa: ANN001
    t, results = _run(pool, tmp_path, pk=True, shared=shared)
    _check_table(t, results)


@pytest.mark.parametrize("shared", [False, True], ids=["partition-per-writer", "one-partition"])
def test_append_writers_with_default_options(pool, tmp_path, shared: bool) -> None:  # noqa: ANN001
    t, results = _run(pool, tmp_path, pk=False, shared=shared)
    _check_table(t, results)
