"""The demo's streaming chain (CDC -> ODS -> partial-update wide table -> aggregation, the last hop fed by the wide
table's lookup changelog) equals a plain-Python computation over the generated CDC events and a GROUP BY of the
wide table; the aggregation hop applies a replayed micro-batch exactly once."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide
from laketide.spark import demo_pipeline as demo


# -- the oracle: plain Python over the events --------------------------------------------------------------------
def _expected_ods(orders: list[pa.Table]) -> dict[int, dict[str, Any]]:
    ods: dict[int, dict[str, Any]] = {}
    for e in sorted((e for t in orders for e in t.to_pylist()), key=lambda e: e["seq"]):
        if e["op"] == "d":
            ods.pop(e["order_id"], None)
        else:
            ods[e["order_id"]] = {"customer_id": e["customer_id"], "status": e["status"], "amount": e["amount"],
                                  "seq": e["seq"], "op": "+I" if e["op"] == "c" else "+U"}
    return ods


def _expected(cdc: demo.Cdc) -> tuple[dict[int, dict], dict[int, dict], dict[int, tuple[int, decimal.Decimal, int]]]:
    ods = _expected_ods(list(cdc.orders))
    ships: dict[int, dict[str, Any]] = {}
    for e in sorted((e for t in cdc.shipments for e in t.to_pylist()), key=lambda e: e["ship_seq"]):
        ships[e["order_id"]] = {"carrier": e["carrier"], "ship_status": e["ship_status"], "ship_seq": e["ship_seq"]}
    assert set(ships) <= set(ods)  # the generator ships only orders that are never deleted
    none = {"carrier": None, "ship_status": None, "ship_seq": None}
    wide = {k: {"customer_id": o["customer_id"], "status": o["status"], "amount": o["amount"], "order_seq": o["seq"],
                **ships.get(k, none)} for k, o in ods.items()}
    agg: dict[int, tuple[int, decimal.Decimal, int]] = {}
    for w in wide.values():
        n, revenue, delivered = agg.get(w["customer_id"], (0, decimal.Decimal(0), 0))
        agg[w["customer_id"]] = (n + 1, revenue + w["amount"], delivered + (w["ship_status"] == "delivered"))
    return ods, wide, agg


def _by_key(table: pa.Table, key: str, columns: list[str]) -> dict[Any, dict[str, Any]]:
    return {r[key]: {c: r[c] for c in columns} for r in table.to_pylist()}


def test_streaming_chain_equals_batch_computation(spark, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    cdc = demo.generate_cdc(orders=600, customers=40, rounds=2, seed=3)
    kinds = {e["op"] for t in cdc.orders for e in t.to_pylist()}
    assert kinds == {"c", "u", "d"}
    result = demo.run_pipeline(spark, warehouse=wh, work=str(tmp_path / "work"), cdc=cdc)
    ods, wide, agg = _expected(cdc)

    assert _by_key(result.ods, "order_id", ["customer_id", "status", "amount", "seq", "op"]) == ods
    assert _by_key(result.wide, "order_id",
                   ["customer_id", "status", "amount", "order_seq", "carrier", "ship_status", "ship_seq"]) == wide
    got = {r["customer_id"]: (r["orders"], r["revenue"], r["delivered"]) for r in result.agg.to_pylist()}
    emptied = {k: v for k, v in got.items() if v[0] == 0}
    assert all(v == (0, decimal.Decimal(0), 0) for v in emptied.values())  # all orders moved away or deleted
    assert {k: v for k, v in got.items() if v[0] != 0} == agg
    # ... which is the GROUP BY of the source of the last hop (the wide table as read in batch).
    grouped: dict[int, tuple[int, decimal.Decimal, int]] = {}
    for w in result.wide.to_pylist():
        if w["customer_id"] is not None:
            n, revenue, delivered = grouped.get(w["customer_id"], (0, decimal.Decimal(0), 0))
            grouped[w["customer_id"]] = (n + 1, revenue + w["amount"], delivered + (w["ship_status"] == "delivered"))
    assert {k: v for k, v in got.items() if v[0] != 0} == grouped
    # The hop consumed real before-images: the wide table's changelog has -U rows, and no state table exists.
    catalog = laketide.load_catalog(warehouse=wh)
    kinds = set(catalog.table("shop.order_wide").read_changes().column("rowkind").to_pylist())
    assert {"-U", "+U"} <= kinds
    assert "agg_state" not in catalog.list_tables("shop")

    # Time travel to the end of round 0 sees exactly the first round's events applied.
    ods_table = laketide.load_catalog(warehouse=wh).table("shop.orders_ods")
    then = ods_table.read(snapshot_id=result.round_snapshots[0])
    assert _by_key(then, "order_id", ["customer_id", "status", "amount", "seq", "op"]) == \
        _expected_ods([cdc.orders[0]])


def _changes(spark, *rows: tuple[str, int | None, str, str | None]):  # noqa: ANN001, ANN202
    """A micro-batch of the wide table's changelog, as the stream source gives it (only the columns the hop reads)."""
    table = pa.table({
        "rowkind": [r[0] for r in rows], "customer_id": pa.array([r[1] for r in rows], pa.int64()),
        "amount": pa.array([decimal.Decimal(r[2]) for r in rows], demo.AMOUNT),
        "ship_status": pa.array([r[3] for r in rows], pa.string()),
    })
    return spark.createDataFrame(table.to_pandas())


def test_aggregation_hop_applies_a_replayed_batch_once(spark, wh: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    tables = demo._create_tables(wh)
    apply = demo._aggregate_batch(tables, "agg-test")
    agg = tables["agg"]

    def totals() -> dict[int, tuple[int, decimal.Decimal, int]]:
        return {r["customer_id"]: (r["orders"], r["revenue"], r["delivered"]) for r in agg.refresh().read().to_pylist()}

    first = _changes(spark, ("+I", 10, "5.00", None), ("+I", 10, "7.50", "delivered"), ("+I", 20, "1.25", None),
                     ("+I", None, "0.00", "in_transit"))  # a shipment before its order: no customer, no contribution
    apply(first, 0)
    assert totals() == {10: (2, decimal.Decimal("12.50"), 1), 20: (1, decimal.Decimal("1.25"), 0)}
    apply(first, 0)  # Spark replays a batch that landed: nothing changes
    assert totals() == {10: (2, decimal.Decimal("12.50"), 1), 20: (1, decimal.Decimal("1.25"), 0)}

    # An order moves from customer 10 to 20 and gets delivered (-U / +U), another one is deleted (-D); the job dies
    # in the aggregation commit, and Spark replays the batch.
    second = _changes(spark, ("-U", 10, "5.00", None), ("+U", 20, "6.00", "delivered"), ("-D", 20, "1.25", None))
    real_commit = type(agg).commit
    monkeypatch.setattr(type(agg), "commit", lambda self, *a, **k: (_ for _ in ()).throw(OSError("crash"))
                        if self.name.endswith("customer_agg") else real_commit(self, *a, **k))
    with pytest.raises(OSError, match="crash"):
        apply(second, 1)
    monkeypatch.undo()
    assert totals() == {10: (2, decimal.Decimal("12.50"), 1), 20: (1, decimal.Decimal("1.25"), 0)}
    apply(second, 1)
    apply(second, 1)
    assert totals() == {10: (1, decimal.Decimal("7.50"), 1), 20: (1, decimal.Decimal("6.00"), 1)}


def test_contributions_retract_and_add() -> None:
    changes = pa.table({"rowkind": ["+I", "-U", "+U", "-D", "+I"], "customer_id": pa.array([1, 1, 2, 2, None]),
                        "amount": pa.array([decimal.Decimal("1.00")] * 5, demo.AMOUNT),
                        "ship_status": ["delivered", None, None, "delivered", None]})
    out = demo.contributions(changes)
    assert out.column("op").to_pylist() == ["+U", "-U", "+U", "-U"]
    assert out.column("customer_id").to_pylist() == [1, 1, 2, 2]
    assert out.column("delivered").to_pylist() == [1, 0, 0, 1]
