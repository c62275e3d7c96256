"""pypaimon (which has no compaction of its own) reads laketide tables after automatic and full compactions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.meta.snapshot import CommitKind

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
    ("name", pa.string()), ("amount", pa.float64()),
])


def batch(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "name": [f"{tag}-{i}" for i in ids],
                     "amount": [i * 0.5 for i in ids]}, schema=SCHEMA)


def by_key(table: pa.Table) -> dict:
    return {(r["id"], r["dt"]): r for r in table.select(SCHEMA.names).cast(SCHEMA).to_pylist()}


@pytest.mark.parametrize("options", [
    {"bucket": "2", "num-sorted-run.compaction-trigger": "2", "target-file-size": "2 kb"},
    {"bucket": "2", "full-compaction.delta-commits": "1", "file.format": "orc"},
])
def test_pypaimon_reads_compacted_laketide_table(catalog, warehouse, pypaimon, options) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options=options)
    for r in range(4):
        t.write(batch(range(r * 20, r * 20 + 60), "d1", f"w{r}"))
        t.write(batch(range(r * 5, r * 5 + 10), "d2", f"w{r}"))
    w = t.new_write()
    w.delete(pa.table({"id": [0, 1, 50], "dt": ["d1", "d1", "d1"]}))
    t.commit(w.prepare_commit())
    assert any(s.commit_kind is CommitKind.COMPACT for s in t.snapshot_manager.snapshots())
    ours = by_key(t.read())
    assert by_key(pypaimon.read(warehouse, "db.pk")) == ours
    t.compact(full=True)
    assert by_key(t.read()) == ours
    assert by_key(pypaimon.read(warehouse, "db.pk")) == ours
