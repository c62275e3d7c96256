"""SIGKILL at random points of write / commit / compaction / expiration / orphan cleanup, over and over.

A child process runs a random loop of those operations on a primary-key table with default options (writers
compact) and is killed after a random delay. After each kill a fresh reader reads every listed snapshot, and every
acknowledged row is there; a write in flight lands whole or not at all. The next child resumes maintenance where
the killed one stopped. Issue 14 acceptance; long, so marked ``slow`` (still part of the default run).

The kill timing is random (seeded), the checks never depend on it.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

import laketide
from laketide.table.orphan import _used_names
from laketide.table.table import Table

pytestmark = pytest.mark.slow

KILLS = 100
ROWS = 5  # rows per batch; keys batch * 10 + j
SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
OPS = ("write", "write", "write", "compact", "expire", "orphans")
OP_CODES = {"idle": 0, "write": 1, "compact": 2, "expire": 3, "orphans": 4}


def batch_rows(batch: int) -> pa.Table:
    keys = [batch * 10 + j for j in range(ROWS)]
    return pa.table({"k": keys, "dt": [("a", "b")[batch % 2]] * ROWS, "v": [f"v{batch}"] * ROWS}, schema=SCHEMA)


def _child(warehouse: str, seed: int, ready: Any, current: Any, attempting: Any, ran: Any, ack_path: str) -> None:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    rng = random.Random(seed)
    ready.send(os.getpid())
    n = 0
    while True:
        op = rng.choice(OPS)
        current.value = OP_CODES[op]
        if op == "write":
            n += 1
            batch = seed * 1000 + n
            attempting.value = batch
            t.write(batch_rows(batch))
            with open(ack_path, "a") as f:  # acknowledged: the write returned
                f.write(json.dumps({"batch": batch}) + "\n")
                f.flush()
                os.fsync(f.fileno())
        elif op == "compact":
            t.compact(full=rng.random() < 0.3)
        elif op == "expire":
            t.expire_snapshots(retain_min=3, retain_max=3, time_retained_ms=0)
        else:
            # The only writer is this process, and it is between writes: nothing is in flight.
            t.remove_orphan_files(older_than=timedelta(0))
        ran[OP_CODES[op]] += 1
        current.value = OP_CODES["idle"]


def _acked(path: str) -> set[int]:
    if not os.path.exists(path):
        return set()
    out = set()
    with open(path) as f:
        for line in f:
            try:
                out.add(json.loads(line)["batch"])
            except ValueError:
                continue  # a line torn by the kill: that write was not acknowledged
    return out


def _check(t: Table, acked: set[int], in_flight: set[int]) -> set[int]:
    """Every listed snapshot reads; acknowledged batches are whole; others are whole or absent. -> batches present"""
    fresh = Table(name=t.name, path=t.path, file_io=t.file_io)
    for sid in fresh.snapshot_manager.snapshot_ids():
        fresh.read(snapshot_id=sid)
    got = fresh.read()
    keys = got.column("k").to_pylist()
    assert len(keys) == len(set(keys))  # no key twice
    by_batch = Counter(k // 10 for k in keys)
    assert all(n == ROWS for n in by_batch.values())  # a write lands whole or not at all
    values = dict(zip(keys, got.column("v").to_pylist()))
    assert all(values[k] == f"v{k // 10}" for k in keys)
    present = set(by_batch)
    assert acked <= present, sorted(acked - present)[:5]
    assert present - acked <= in_flight  # an unacknowledged batch is one a killed child was writing
    fresh.remove_orphan_files(older_than=timedelta(0), dry_run=True)  # maintenance is never refused
    return present


def test_sigkill_at_random_points_of_every_operation(tmp_path) -> None:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"])  # default options
    ack_path = str(tmp_path / "acked.jsonl")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["laketide.table.table", __name__])
    # No locks: a child SIGKILLed while holding one would block every later reader forever. One child runs at a
    # time and each counter has one writer, so plain shared ints are enough.
    ran = ctx.Array("i", len(OP_CODES), lock=False)
    killed_in: Counter[str] = Counter()
    in_flight: set[int] = set()
    rng = random.Random(14)
    for seed in range(1, KILLS + 1):
        current, attempting = ctx.Value("i", 0, lock=False), ctx.Value("i", 0, lock=False)
        parent_end, child_end = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child, args=(warehouse, seed, child_end, current, attempting, ran, ack_path))
        p.start()
        assert parent_end.poll(120), "child did not start"
        parent_end.recv()
        time.sleep(rng.uniform(0.0, 1.2))  # the random kill point (timing is random; no check depends on it)
        os.kill(p.pid, signal.SIGKILL)
        p.join(60)
        assert p.exitcode == -signal.SIGKILL
        killed_in[next(op for op, c in OP_CODES.items() if c == current.value)] += 1
        if attempting.value:
            in_flight.add(attempting.value)
        _check(t, _acked(ack_path), in_flight)
    acked = _acked(ack_path)
    print(f"kills by operation: {dict(killed_in)}; completed: "
          f"{ {op: ran[c] for op, c in OP_CODES.items() if op != 'idle'} }; acknowledged writes: {len(acked)}")
    assert len(acked) > 20 and all(ran[OP_CODES[op]] > 0 for op in ("write", "compact", "expire", "orphans"))
    # Maintenance resumes: a last full round cleans up every leftover, and the table still takes writes.
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    t.remove_orphan_files(older_than=timedelta(0))
    used = _used_names(t.store)
    stray = [p for d, _, fs in os.walk(t.path) for p in (os.path.join(d, f) for f in fs)
             if "/schema/" not in p and "/snapshot/" not in p and os.path.basename(p) not in used]
    assert not stray
    present = _check(t, acked, in_flight)
    t.write(batch_rows(999_999))
    assert _check(t, acked | {999_999}, in_flight) == present | {999_999}
