"""pypaimon reads a dynamic-bucket table whose first batch was large and fit one bucket (its hash index file
written from hashes sorted in the background), and its writes honour that index: known keys stay in bucket 0."""

from __future__ import annotations

import pyarrow as pa

from tests.compat.test_pypaimon_dynamic_bucket import SCHEMA, by_key, key_buckets

ROWS = 70_000  # above hash_index._LATER_MIN


def _batch(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "name": [tag] * len(ids),
                     "amount": pa.array([float(i) for i in ids])}, schema=SCHEMA)


def test_pypaimon_reads_and_extends_a_large_first_batch(catalog, warehouse, pypaimon) -> None:
    t = catalog.create_table("db.dyn", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": str(ROWS + 20)})
    t.write(_batch(range(ROWS), "d1", "a"))
    ours = by_key(t.read())
    assert len(ours) == ROWS
    assert by_key(pypaimon.read(warehouse, "db.dyn")) == ours
    # 10 known keys and 30 new ones: bucket 0 takes 20 more, then bucket 1 (pypaimon read our index file)
    pypaimon.write(warehouse, "db.dyn", _batch(range(ROWS - 10, ROWS + 30), "d1", "p"))
    t.refresh()
    buckets = key_buckets(t)
    assert all(len(s) == 1 for s in buckets.values())
    assert {k: s for k, s in buckets.items() if k[1] < ROWS + 20} == {(("d1",), i): {0} for i in range(ROWS + 20)}
    assert {k: s for k, s in buckets.items() if k[1] >= ROWS + 20} == {(("d1",), i): {1}
                                                                       for i in range(ROWS + 20, ROWS + 30)}
    merged = by_key(t.read())
    assert len(merged) == ROWS + 30 and merged[(ROWS - 1, "d1")]["name"] == "p"
    assert by_key(pypaimon.read(warehouse, "db.dyn")) == merged
