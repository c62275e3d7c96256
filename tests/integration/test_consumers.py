"""Consumers: a streaming reader's progress (``consumer/consumer-<id>``) survives a restart, pins snapshot
expiration, expires with ``consumer.expiration-time``, and can be reset or deleted."""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def make_table(tmp_path, **options: str) -> Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id", **options})


def ids(t: pa.Table) -> list[int]:
    return sorted(t.column("id").to_pylist())


_READER = """
import sys, laketide
t = laketide.load_catalog(warehouse=sys.argv[1]).table("db.t")
print(sorted(t.read_changes(consumer_id="c1").column("id").to_pylist()))
"""


def read_in_new_process(tmp_path) -> list[int]:
    """A reader process that starts, reads what is new for consumer c1, and exits."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _READER, str(tmp_path / "wh")], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_consumer_resumes_across_processes_and_pins_expiration(tmp_path) -> None:
    t = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(rows(range(3)))
    assert read_in_new_process(tmp_path) == [0, 1, 2]  # a new consumer starts with the full latest snapshot
    with open(os.path.join(t.path, "consumer", "consumer-c1")) as f:
        assert json.load(f) == {"nextSnapshot": 2}
    t.write(rows(range(3, 5)))
    t.write(rows(range(5, 6)))
    # Expiration kept snapshot 2 on: the consumer still needs it (retain max is 1).
    assert t.snapshot_manager.snapshot_ids() == [2, 3]
    assert read_in_new_process(tmp_path) == [3, 4, 5]  # exactly where it left off
    assert read_in_new_process(tmp_path) == []
    t.write(rows(range(6, 7)))
    assert t.snapshot_manager.snapshot_ids() == [4]  # the consumer moved on: older snapshots go
    assert t.consumers.list() == {"c1": 4}
    assert read_in_new_process(tmp_path) == [6]
    assert t.remove_orphan_files(older_than=_dt.timedelta(0), dry_run=True).count == 0


def test_reset_delete_ignore_progress_and_bad_ids(tmp_path) -> None:
    t = make_table(tmp_path)
    for i in range(3):
        t.write(rows(range(i * 10, i * 10 + 2)))
    t.consumers.reset("c", 3)
    assert ids(t.read_changes(consumer_id="c")) == [20, 21]
    assert t.consumers.get("c") == 4
    t.consumers.reset("c", 2)
    assert ids(t.read_changes(consumer_id="c")) == [10, 11, 20, 21]
    ignoring = t.alter(laketide.SetOption("consumer.ignore-progress", "true"))
    assert ids(ignoring.read_changes(consumer_id="c")) == [0, 1, 10, 11, 20, 21]  # full latest again
    t.alter(laketide.RemoveOption("consumer.ignore-progress"))
    t.consumers.delete("c")
    assert t.consumers.get("c") is None and t.consumers.list() == {}
    with pytest.raises(NoSuchSnapshotError, match="'c'"):
        t.consumers.delete("c")
    for bad in ("", "../x", "a/b"):
        with pytest.raises(InvalidOptionError, match="db.t"):
            t.consumers.reset(bad, 1)
    with pytest.raises(InvalidOptionError, match="must be an int >= 1"):
        t.consumers.reset("c", 0)
    assert not os.path.exists(os.path.join(t.path, "consumer", "consumer-c"))


def test_consumer_id_option_and_expiration_time(tmp_path) -> None:
    t = make_table(tmp_path, **{"consumer-id": "opt", "consumer.expiration-time": "1 h"})
    t.write(rows(range(2)))
    assert ids(t.read_changes()) == [0, 1]
    assert t.consumers.list() == {"opt": 2}
    path = os.path.join(t.path, "consumer", "consumer-opt")
    old = (_dt.datetime.now() - _dt.timedelta(hours=2)).timestamp()
    os.utime(path, (old, old))
    t.write(rows(range(2, 3)))  # the commit's expiration removes the stale consumer
    assert t.consumers.list() == {}
