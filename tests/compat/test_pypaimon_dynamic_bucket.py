"""Dynamic-bucket tables cross-checked with pypaimon: each reads the other's rows and honours the other's hash
index when it writes (a key never lands in a second bucket)."""

from __future__ import annotations

import pyarrow as pa

import laketide

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("name", pa.string()), ("amount", pa.float64())])
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "30"}


def batch(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "name": [f"{tag}-{i}" for i in ids],
                     "amount": [i * 0.5 for i in ids]}, schema=SCHEMA)


def by_key(table: pa.Table) -> dict:
    return {(r["id"], r["dt"]): r for r in table.select(SCHEMA.names).cast(SCHEMA).to_pylist()}


def key_buckets(t) -> dict[tuple, set[int]]:
    """(partition, key) -> every bucket whose files hold a row of that key (unmerged: all versions count)."""
    out: dict[tuple, set[int]] = {}
    scan = t.scan()
    for split in scan.plan():
        for f in split.files:
            path = f"{split.bucket_path}/{f.file_name}"
            import pyarrow.parquet as pq

            for k in pq.read_table(path, columns=["_KEY_id"]).column(0).to_pylist():
                out.setdefault((split.partition_values, k), set()).add(split.bucket)
    return out


def test_pypaimon_reads_and_extends_laketide_dynamic_table(catalog, warehouse, pypaimon) -> None:
    t = catalog.create_table("db.dyn", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    t.write(batch(range(70), "d1", "a"))          # buckets 0, 1, 2 of d1
    t.write(batch(range(50, 100), "d1", "b"))        # updates stay put, new keys fill bucket 2, then 3
    t.write(batch(range(10), "d2", "c"))
    ours = by_key(t.read())
    assert len(ours) == 110
    assert by_key(pypaimon.read(warehouse, "db.dyn")) == ours
    before = key_buckets(t)
    assert len({b for s in before.values() for b in s}) >= 4
    # pypaimon writes into our table: it restores our hash index, so known keys stay in their buckets
    pypaimon.write(warehouse, "db.dyn", batch(range(60, 130), "d1", "p"))
    t.refresh()
    after = key_buckets(t)
    assert all(len(s) == 1 for s in after.values()), {k: s for k, s in after.items() if len(s) > 1}
    assert all(after[k] == s for k, s in before.items())
    merged = by_key(t.read())
    assert len(merged) == 140 and merged[(60, "d1")]["name"] == "p-60"
    assert by_key(pypaimon.read(warehouse, "db.dyn")) == merged


def test_laketide_writes_into_pypaimon_dynamic_table(warehouse, pypaimon) -> None:
    pypaimon.create_table(warehouse, "db.dyn", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options=OPTIONS)
    pypaimon.write(warehouse, "db.dyn", batch(range(80), "d1", "a"))
    pypaimon.write(warehouse, "db.dyn", batch(range(20), "d2", "a"))
    t = laketide.load_catalog(warehouse=warehouse).table("db.dyn")
    theirs = by_key(pypaimon.read(warehouse, "db.dyn"))
    assert by_key(t.read()) == theirs
    before = key_buckets(t)
    assert len({b for (p, _), s in before.items() if p == ("d1",) for b in s}) >= 3
    t.write(batch(range(40, 150), "d1", "z"))      # 40 known keys, 70 new ones
    t.write(batch(range(10, 30), "d2", "z"))
    after = key_buckets(t)
    assert all(len(s) == 1 for s in after.values())
    assert all(after[k] == s for k, s in before.items())
    merged = by_key(t.read())
    assert len(merged) == 150 + 30 and merged[(45, "d1")]["name"] == "z-45"
    assert by_key(pypaimon.read(warehouse, "db.dyn")) == merged
    # and pypaimon goes on writing on top of our hash index
    pypaimon.write(warehouse, "db.dyn", batch(range(140, 160), "d1", "q"))
    final = key_buckets(t)
    assert all(len(s) == 1 for s in final.values()) and all(final[k] == s for k, s in after.items())
    assert len(by_key(t.read())) == 160 + 30
