"""Primary-key tables cross-checked with pypaimon: each reads what the other wrote, after updates and deletes."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
    ("name", pa.string()), ("amount", pa.float64()), ("ts", pa.timestamp("us")),
])


def batch(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({
        "id": list(ids), "dt": [dt] * len(ids), "name": [f"{tag}-{i}-{'x' * (i % 9)}" for i in ids],
        "amount": [i * 1.25 for i in ids], "ts": pa.array([1_763_700_000_000_000 + i for i in ids], pa.timestamp("us")),
    }, schema=SCHEMA)


def by_key(table: pa.Table) -> dict:
    return {(r["id"], r["dt"]): r for r in table.select(SCHEMA.names).cast(SCHEMA).to_pylist()}


@pytest.mark.parametrize("options", [{"bucket": "2"}, {"bucket": "3", "file.format": "orc"},
                                     {"bucket": "2", "data-file.thin-mode": "true"}])
def test_pypaimon_reads_laketide_pk_table(catalog, warehouse, pypaimon, options) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options=options)
    t.write(batch(range(0, 50), "d1", "a"))
    t.write(batch(range(25, 75), "d1", "b"))          # half updates, half new keys
    t.write(batch(range(0, 10), "d2", "c"))
    w = t.new_write()
    w.delete(pa.table({"id": [1, 2, 30], "dt": ["d1", "d1", "d1"]}))
    w.write(batch(range(40, 45), "d1", "d"))
    t.commit(w.prepare_commit())
    ours = by_key(t.read())
    assert len(ours) == 75 - 3 + 10
    assert ours[(40, "d1")]["name"].startswith("d-") and (30, "d1") not in ours
    assert by_key(pypaimon.read(warehouse, "db.pk")) == ours


def test_laketide_reads_pypaimon_pk_table(warehouse, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                          options={"bucket": "2"})
    pypaimon.write(warehouse, "db.pk", batch(range(0, 40), "d1", "a"))
    pypaimon.write(warehouse, "db.pk", batch(range(20, 60), "d1", "b"))
    pypaimon.write(warehouse, "db.pk", batch(range(0, 5), "d2", "c"))
    t = laketide.load_catalog(warehouse=warehouse).table("db.pk")
    theirs = by_key(pypaimon.read(warehouse, "db.pk"))
    assert len(theirs) == 65
    assert by_key(t.read()) == theirs
    # laketide updates pypaimon's table; sequence numbers continue from theirs, pypaimon agrees
    t.write(batch(range(10, 15), "d1", "z"))
    after = by_key(t.read())
    assert after[(12, "d1")]["name"].startswith("z-")
    assert by_key(pypaimon.read(warehouse, "db.pk")) == after


def test_pypaimon_reads_nested_columns(catalog, warehouse, pypaimon) -> None:  # noqa: ANN001
    schema = pa.schema([
        ("k", pa.int64()), ("tags", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int32())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ])
    data = pa.table({"k": [1, 2], "tags": [["a", "b"], None], "m": [[("x", 1)], None],
                     "st": [{"a": 1, "b": "q"}, None]}, schema=schema)
    t = catalog.create_table("db.nested", schema, primary_key=["k"], options={"bucket": "2"})
    t.write(data)
    theirs = pypaimon.read(warehouse, "db.nested")
    assert sorted(theirs.to_pylist(), key=lambda r: r["k"]) == data.to_pylist()
