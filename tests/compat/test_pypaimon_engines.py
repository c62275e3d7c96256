"""partial-update, aggregation and first-row tables cross-checked with pypaimon (which implements plain
partial-update, the aggregate functions without ignore-retract, and first-row)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide

PU_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("price", pa.float64()),
                       ("qty", pa.int32())])
AGG_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("total", pa.int64()), ("hi", pa.float64()),
                        ("lo", pa.int32()), ("tags", pa.string()), ("last", pa.string()), ("first", pa.int32()),
                        ("any", pa.bool_()), ("prod", pa.int64())])
AGG_OPTIONS = {
    "bucket": "2", "merge-engine": "aggregation",
    "fields.total.aggregate-function": "sum", "fields.hi.aggregate-function": "max",
    "fields.lo.aggregate-function": "min", "fields.tags.aggregate-function": "listagg",
    "fields.last.aggregate-function": "last_non_null_value", "fields.first.aggregate-function": "first_value",
    "fields.any.aggregate-function": "bool_or",
    "fields.prod.aggregate-function": "product",
}


def by_id(table: pa.Table, schema: pa.Schema) -> dict:
    return {r["id"]: r for r in table.select(schema.names).cast(schema).to_pylist()}


def _pu_batch(ids: range, name: str | None, price: float | None, qty: int | None) -> pa.Table:
    n = len(ids)
    return pa.table({"id": list(ids), "name": [name] * n, "price": [price] * n, "qty": [qty] * n}, schema=PU_SCHEMA)


def _agg_batch(ids: range, step: int) -> pa.Table:
    return pa.table({
        "id": list(ids), "total": [i * step for i in ids], "hi": [float(i % 7 + step) for i in ids],
        "lo": [None if i % 3 == 0 else i - step for i in ids], "tags": [f"t{step}" for _ in ids],
        "last": [None if step == 3 else f"v{step}" for _ in ids], "first": [step for _ in ids],
        "any": [i % 2 == step % 2 for i in ids], "prod": [step + 1 for _ in ids],
    }, schema=AGG_SCHEMA)


def test_pypaimon_reads_laketide_partial_update(catalog, warehouse, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pu", PU_SCHEMA, primary_key=["id"],
                             options={"bucket": "2", "merge-engine": "partial-update"})
    t.write(_pu_batch(range(0, 30), "a", 1.5, None))
    t.write(_pu_batch(range(10, 40), None, None, 7))
    t.write(_pu_batch(range(20, 25), "z", None, None))
    ours = by_id(t.read(), PU_SCHEMA)
    assert ours[22] == {"id": 22, "name": "z", "price": 1.5, "qty": 7}
    assert by_id(pypaimon.read(warehouse, "db.pu"), PU_SCHEMA) == ours


def test_pypaimon_reads_laketide_aggregation(catalog, warehouse, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_key=["id"], options=AGG_OPTIONS)
    for step in (1, 2, 3):
        t.write(_agg_batch(range(step * 5, 40), step))
    ours = by_id(t.read(), AGG_SCHEMA)
    assert ours[20]["total"] == 20 * 6 and ours[20]["tags"] == "t1,t2,t3" and ours[20]["prod"] == 24
    assert ours[20]["last"] == "v2" and ours[20]["first"] == 1
    assert by_id(pypaimon.read(warehouse, "db.agg"), AGG_SCHEMA) == ours


def test_laketide_reads_pypaimon_aggregation(warehouse, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.agg", AGG_SCHEMA, primary_keys=["id"], options=AGG_OPTIONS)
    for step in (1, 2, 3):
        pypaimon.write(warehouse, "db.agg", _agg_batch(range(step * 5, 40), step))
    theirs = by_id(pypaimon.read(warehouse, "db.agg"), AGG_SCHEMA)
    t = laketide.load_catalog(warehouse=warehouse).table("db.agg")
    assert by_id(t.read(), AGG_SCHEMA) == theirs
    # laketide adds to pypaimon's aggregates; pypaimon agrees
    t.write(_agg_batch(range(0, 10), 4))
    after = by_id(t.read(), AGG_SCHEMA)
    assert after[7]["total"] == 7 * 5 and after[7]["tags"] == "t1,t4"
    assert by_id(pypaimon.read(warehouse, "db.agg"), AGG_SCHEMA) == after


@pytest.mark.parametrize("writer", ["laketide", "pypaimon"])
def test_partial_update_both_ways(catalog, warehouse, pypaimon, writer: str) -> None:  # noqa: ANN001
    opts = {"bucket": "1", "merge-engine": "partial-update"}
    if writer == "pypaimon":
        pypaimon.create_table(warehouse, "db.pu", PU_SCHEMA, primary_keys=["id"], options=opts)
        pypaimon.write(warehouse, "db.pu", _pu_batch(range(0, 10), "a", 2.0, None))
        pypaimon.write(warehouse, "db.pu", _pu_batch(range(5, 15), None, 3.0, 1))
        t = catalog.table("db.pu")
    else:
        t = catalog.create_table("db.pu", PU_SCHEMA, primary_key=["id"], options=opts)
        t.write(_pu_batch(range(0, 10), "a", 2.0, None))
        t.write(_pu_batch(range(5, 15), None, 3.0, 1))
    assert by_id(t.read(), PU_SCHEMA) == by_id(pypaimon.read(warehouse, "db.pu"), PU_SCHEMA)
    assert by_id(t.read(), PU_SCHEMA)[7] == {"id": 7, "name": "a", "price": 3.0, "qty": 1}
