"""pypaimon reads, and writes into, a dynamic-bucket table whose large flushes laketide encoded as several
key-disjoint level-0 files at once (io/parallel_run.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.io import parallel_run

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("amount", pa.float64())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"{tag}-{i}" for i in ids], "amount": [i * 0.5 for i in ids]},
                    schema=SCHEMA)


def _by_key(table: pa.Table) -> dict:
    return {r["id"]: r for r in table.select(SCHEMA.names).cast(SCHEMA).to_pylist()}


def test_pypaimon_reads_and_extends_split_flushes(catalog, warehouse, pypaimon,  # noqa: ANN001
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel_run, "MIN_PART_BYTES", 4096)
    real = parallel_run.parts_for
    monkeypatch.setattr(parallel_run, "parts_for", lambda run, cores=None: real(run, cores=3))
    t = catalog.create_table("db.dyn", SCHEMA, primary_key=["id"], options={"bucket": "-1"})
    t.write(_rows(range(3000), "a"))
    assert len(t.file_scan().plan(t.snapshot_manager.latest_snapshot())) == 3  # one flush, three files
    assert _by_key(pypaimon.read(warehouse, "db.dyn")) == _by_key(t.read())
    t.write(_rows(range(2000, 5000), "b"))  # three more level-0 runs: past the compaction trigger (5)
    ours = _by_key(t.read())
    assert len(ours) == 5000 and ours[2500]["name"] == "b-2500"
    assert _by_key(pypaimon.read(warehouse, "db.dyn")) == ours
    pypaimon.write(warehouse, "db.dyn", _rows(range(4500, 5500), "p"))  # its hash index restore reads ours
    t.refresh()
    merged = _by_key(t.read())
    assert len(merged) == 5500 and merged[4500]["name"] == "p-4500" and merged[100]["name"] == "a-100"
    assert _by_key(pypaimon.read(warehouse, "db.dyn")) == merged
