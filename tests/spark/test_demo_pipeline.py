"""The demo's streaming chain (CDC -> ODS -> partial-update wide table -> aggregation) equals a plain-Python
computation over the generated CDC events; the aggregation hop survives a crash between its two commits."""

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

    # Time travel to the end of round 0 sees exactly the first round's events applied.
    ods_table = laketide.load_catalog(warehouse=wh).table("shop.orders_ods")
    then = ods_table.read(snapshot_id=result.round_snapshots[0])
    assert _by_key(then, "order_id", ["customer_id", "status", "amount", "seq", "op"]) == \
        _expected_ods([cdc.orders[0]])


class _Batch:
    """Just enough of a micro-batch DataFrame for the aggregation hop: the changed order ids."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def select(self, *_columns: str) -> _Batch:
        return self

    def distinct(self) -> _Batch:
        return self

    def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
        return pa.table({"order_id": pa.array(self.ids, pa.int64())})


def _wide_rows(*rows: tuple[int, int, str, str | None]) -> pa.Table:
    return pa.Table.from_pylist([
        {"order_id": k, "customer_id": c, "status": "paid", "amount": decimal.Decimal(a), "order_seq": k,
         "carrier": "dhl" if s else None, "ship_status": s, "ship_seq": 1 if s else None, "op": "+I"}
        for k, c, a, s in rows], schema=demo.WIDE_SCHEMA)


def test_aggregation_hop_is_exactly_once_across_a_crash(wh: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = demo._create_tables(wh)
    apply = demo._aggregate_batch(tables, "agg-test")
    wide, agg = tables["wide"], tables["agg"]

    def totals() -> dict[int, tuple[int, decimal.Decimal, int]]:
        return {r["customer_id"]: (r["orders"], r["revenue"], r["delivered"]) for r in agg.refresh().read().to_pylist()}

    wide.write(_wide_rows((1, 10, "5.00", None), (2, 10, "7.50", "delivered"), (3, 20, "1.25", None)))
    apply(_Batch([1, 2, 3]), 0)
    assert totals() == {10: (2, decimal.Decimal("12.50"), 1), 20: (1, decimal.Decimal("1.25"), 0)}
    apply(_Batch([1, 2, 3]), 0)  # Spark replays a batch that landed: nothing changes
    assert totals() == {10: (2, decimal.Decimal("12.50"), 1), 20: (1, decimal.Decimal("1.25"), 0)}

    # Order 1 moves to customer 20 and gets delivered; the job dies after the state commit, before the aggregation.
    wide.write(_wide_rows((1, 20, "6.00", "delivered")))
    real_commit = type(agg).commit
    monkeypatch.setattr(type(agg), "commit", lambda self, *a, **k: (_ for _ in ()).throw(OSError("crash"))
                        if self.name.endswith("customer_agg") else real_commit(self, *a, **k))
    with pytest.raises(OSError, match="crash"):
        apply(_Batch([1]), 1)
    monkeypatch.undo()
    wide.write(_wide_rows((1, 20, "9.00", "delivered")))  # a later change the replay must not pick up yet
    apply(_Batch([1]), 1)  # the replay recomputes from the state as it was around batch 1
    assert totals() == {10: (1, decimal.Decimal("7.50"), 1), 20: (2, decimal.Decimal("7.25"), 1)}
    apply(_Batch([1]), 2)  # the next batch brings the later change
    assert totals() == {10: (1, decimal.Decimal("7.50"), 1), 20: (2, decimal.Decimal("10.25"), 1)}
