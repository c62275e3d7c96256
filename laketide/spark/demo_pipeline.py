"""The demo job (``make demo``): a streaming CDC pipeline on local Spark against an embedded local warehouse.

    python -m laketide.spark.demo_pipeline --warehouse demo-warehouse

Sources are two deterministic change streams that land as JSON-lines files, one file per stream and round, read
by Spark's file stream source:

- ``orders``: a binlog of the orders database (``op`` = c / u / d, a strictly increasing ``seq``; updates change
  status, amount and sometimes the customer; a delete carries the before-image);
- ``shipments``: the logistics system's events per order (in transit, delivered), keyed by order id.

Four Structured Streaming queries, each run with ``Trigger.AvailableNow`` once per round, in order:

1. ``ods``: orders CDC -> ``shop.orders_ods`` (primary key ``order_id``; the op becomes the row kind through
   ``rowkind.field``; ``sequence.field = seq`` orders versions whatever the shuffle does to rows of one batch);
2. ``wide_orders``: the ODS's changes (its audit log: every row with its row kind) -> the order columns of
   ``shop.order_wide``, a partial-update table whose two sequence groups let each source update only its own
   columns, in its own order; a deleted order retracts its group and removes the row;
3. ``wide_shipments``: shipments -> the shipment columns of ``shop.order_wide``;
4. ``customer_agg``: the wide table's changes -> ``shop.customer_agg`` (aggregation engine: sums per customer).

Retractions into the aggregation. The ODS and the wide table use ``changelog-producer = lookup``: each commit's
compaction looks the changed keys up and writes a changelog with the merged rows, an update as a -U (the row as it
was) / +U (the row as it is now) pair, a removed row as -D with its last image. The aggregation hop maps each
change row of the wide table to one contribution of its order (-U / -D retract it, +I / +U add it), and the sum
functions retract and add; no before-image state is kept by the job. Rows whose order has not arrived yet (a
shipment first: no customer) contribute nothing on either side. The aggregation is committed with (commit user,
batch id), so a micro-batch Spark replays after a crash is skipped if it landed and applied once otherwise. The
wide-orders hop leaves the ODS's -U rows out: the wide table takes each order's latest image (+I / +U) and its
deletion (-D).

Then the job prints the final tables, a time-travel read of the ODS, compacts the ODS as a Spark job and prints its
snapshot history.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "Cdc",
    "PipelineResult",
    "contributions",
    "generate_cdc",
    "run_pipeline",
    "main",
    "ODS_SCHEMA",
    "WIDE_SCHEMA",
    "AGG_SCHEMA",
]

AMOUNT = pa.decimal128(10, 2)
TOTAL = pa.decimal128(18, 2)

ORDER_EVENT_SCHEMA = pa.schema([
    ("op", pa.string()), ("order_id", pa.int64()), ("customer_id", pa.int64()), ("status", pa.string()),
    ("amount", AMOUNT), ("seq", pa.int64()),
])
SHIPMENT_EVENT_SCHEMA = pa.schema([
    ("op", pa.string()), ("order_id", pa.int64()), ("carrier", pa.string()), ("ship_status", pa.string()),
    ("ship_seq", pa.int64()),
])
ODS_SCHEMA = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False), ("customer_id", pa.int64()), ("status", pa.string()),
    ("amount", AMOUNT), ("seq", pa.int64()), ("op", pa.string()),
])
WIDE_SCHEMA = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False), ("customer_id", pa.int64()), ("status", pa.string()),
    ("amount", AMOUNT), ("order_seq", pa.int64()), ("carrier", pa.string()), ("ship_status", pa.string()),
    ("ship_seq", pa.int64()), ("op", pa.string()),
])
AGG_SCHEMA = pa.schema([
    pa.field("customer_id", pa.int64(), nullable=False), ("orders", pa.int64()), ("revenue", TOTAL),
    ("delivered", pa.int64()), ("op", pa.string()),
])

ODS_OPTIONS = {"bucket": "2", "rowkind.field": "op", "sequence.field": "seq", "changelog-producer": "lookup"}
WIDE_OPTIONS = {
    "bucket": "2", "merge-engine": "partial-update", "rowkind.field": "op", "changelog-producer": "lookup",
    "fields.order_seq.sequence-group": "customer_id,status,amount",
    "fields.ship_seq.sequence-group": "carrier,ship_status",
    "partial-update.remove-record-on-sequence-group": "order_seq",
}
AGG_OPTIONS = {
    "bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
    "fields.orders.aggregate-function": "sum", "fields.revenue.aggregate-function": "sum",
    "fields.delivered.aggregate-function": "sum",
}

_OPS_TO_KIND = {"c": "+I", "u": "+U", "d": "-D"}
_STATUSES = np.array(["created", "paid", "packed", "shipped"], dtype=object)
_CARRIERS = np.array(["dhl", "ups", "fedex", "post"], dtype=object)


# -- the change streams ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Cdc:
    """The generated change streams, one Arrow table per round each (events in ``seq`` order)."""

    orders: tuple[pa.Table, ...]
    shipments: tuple[pa.Table, ...]


def _grouped_cumsum(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    sums: np.ndarray = total - np.repeat(total[starts] - values[starts], counts)
    return sums


def _forward_fill(values: np.ndarray, is_set: np.ndarray) -> np.ndarray:
    """Each row takes the value of the last row at or before it with ``is_set`` (every group's first row is set)."""
    idx = np.maximum.accumulate(np.where(is_set, np.arange(len(values)), 0))
    return values[idx]


def generate_cdc(*, orders: int = 20_000, customers: int = 500, rounds: int = 4, seed: int = 7) -> Cdc:
    """Deterministic CDC events: each order is inserted, updated 0-3 times, 12% are deleted (and never shipped);
    70% of the others get shipment events, some before the order itself arrives."""
    rng = np.random.default_rng(seed)
    horizon = float(rounds) - 1e-6
    n = orders
    t0 = rng.uniform(0, rounds * 0.8, n)
    deleted = rng.random(n) < 0.12
    n_events = 1 + rng.integers(0, 4, n) + deleted
    order_ix = np.repeat(np.arange(n), n_events)
    starts = np.cumsum(n_events) - n_events
    step = np.arange(len(order_ix)) - np.repeat(starts, n_events)
    is_delete = deleted[order_ix] & (step == n_events[order_ix] - 1)
    gaps = np.where(step == 0, 0.0, rng.uniform(0, 0.9, len(order_ix)))
    t = np.minimum(t0[order_ix] + _grouped_cumsum(gaps, starts, n_events), horizon)

    first = step == 0
    update = ~first & ~is_delete
    moves = first | (update & (rng.random(len(t)) < 0.08))
    customer = _forward_fill(rng.integers(1, customers + 1, len(t)), moves)
    repriced = first | (update & (rng.random(len(t)) < 0.3))
    cents = _forward_fill(rng.integers(500, 50_000, len(t)), repriced)
    status = _forward_fill(_STATUSES[np.minimum(step, len(_STATUSES) - 1)], ~is_delete)
    op = np.where(first, "c", np.where(is_delete, "d", "u")).astype(object)
    seq = _ranks(t, order_ix, step)
    events = pa.table({
        "op": pa.array(op, pa.string()), "order_id": pa.array(order_ix + 1, pa.int64()),
        "customer_id": pa.array(customer, pa.int64()), "status": pa.array(status, pa.string()),
        "amount": pc.cast(pc.divide(pa.array(cents, pa.float64()), 100.0), AMOUNT), "seq": pa.array(seq, pa.int64()),
    })

    shipped = ~deleted & (rng.random(n) < 0.7)
    ship_orders = np.flatnonzero(shipped)
    two = rng.random(len(ship_orders)) < 0.6
    s_counts = 1 + two.astype(np.int64)
    s_order = np.repeat(ship_orders, s_counts)
    s_starts = np.cumsum(s_counts) - s_counts
    s_step = np.arange(len(s_order)) - np.repeat(s_starts, s_counts)
    s_gaps = np.where(s_step == 0, rng.uniform(-0.4, 1.2, len(s_order)), rng.uniform(0, 1.0, len(s_order)))
    s_t = np.clip(t0[s_order] + _grouped_cumsum(s_gaps, s_starts, s_counts), 0, horizon)
    shipments = pa.table({
        "op": pa.array(np.where(s_step == 0, "c", "u").astype(object), pa.string()),
        "order_id": pa.array(s_order + 1, pa.int64()),
        "carrier": pa.array(np.repeat(_CARRIERS[rng.integers(0, len(_CARRIERS), len(ship_orders))], s_counts),
                            pa.string()),
        "ship_status": pa.array(np.where(s_step == 0, "in_transit", "delivered").astype(object), pa.string()),
        "ship_seq": pa.array(_ranks(s_t, s_order, s_step), pa.int64()),
    })
    return Cdc(orders=_by_round(events, t, rounds, "seq"), shipments=_by_round(shipments, s_t, rounds, "ship_seq"))


def _ranks(t: np.ndarray, group: np.ndarray, step: np.ndarray) -> np.ndarray:
    """1-based positions in (time, group, step) order: a total order that keeps each group's lifecycle order."""
    order = np.lexsort((step, group, t))
    out = np.empty(len(t), dtype=np.int64)
    out[order] = np.arange(1, len(t) + 1)
    return out


def _by_round(events: pa.Table, t: np.ndarray, rounds: int, seq: str) -> tuple[pa.Table, ...]:
    which = np.floor(t).astype(np.int64)
    return tuple(events.filter(pa.array(which == r)).sort_by(seq) for r in range(rounds))


def _write_json_lines(table: pa.Table, path: Path) -> None:
    # Decimal amounts as JSON numbers with two decimals, as CDC tools write them; Spark reads them back exactly
    # into the declared decimal(10,2).
    floats = table
    if "amount" in table.schema.names:
        floats = table.set_column(table.schema.get_field_index("amount"), "amount",
                                  pc.cast(table.column("amount"), pa.float64()))
    floats.to_pandas().to_json(path, orient="records", lines=True)


# -- the pipeline ------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class PipelineResult:
    ods: pa.Table
    wide: pa.Table
    agg: pa.Table
    round_snapshots: tuple[int, ...]  # the ODS snapshot after each round


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return {pa.int64(): "bigint", pa.string(): "string"}[t]


def _ddl(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {_spark_type(f.type)}" for f in schema)


def _conform(df: DataFrame, schema: pa.Schema) -> DataFrame:
    """``df`` with exactly the columns of ``schema`` (missing ones as typed nulls) in its order."""
    from pyspark.sql import functions as F  # noqa: N812

    present = set(df.columns)
    return df.select(*[
        (F.col(f.name) if f.name in present else F.lit(None)).cast(_spark_type(f.type)).alias(f.name) for f in schema
    ])


def _kind_of_op(column: str) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    (first_op, first_kind), *rest = _OPS_TO_KIND.items()
    expr = F.when(F.col(column) == first_op, F.lit(first_kind))
    for op, kind in rest:
        expr = expr.when(F.col(column) == op, F.lit(kind))
    return expr


def _create_tables(warehouse: str) -> dict[str, Any]:
    import laketide

    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("shop", exist_ok=True)
    return {
        "ods": cat.create_table("shop.orders_ods", ODS_SCHEMA, primary_key=["order_id"], options=ODS_OPTIONS,
                                exist_ok=True),
        "wide": cat.create_table("shop.order_wide", WIDE_SCHEMA, primary_key=["order_id"], options=WIDE_OPTIONS,
                                 exist_ok=True),
        "agg": cat.create_table("shop.customer_agg", AGG_SCHEMA, primary_key=["customer_id"], options=AGG_OPTIONS,
                                exist_ok=True),
    }


_RETRACTIONS = ("-U", "-D")


def _aggregate_batch(tables: dict[str, Any], commit_user: str) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` of the last hop: each change row of the wide table (its lookup changelog) becomes one
    contribution of its order to its customer's sums, retracted for -U / -D, added for +I / +U."""
    from laketide.spark.writer import committed_before

    agg = tables["agg"]

    def apply(batch: DataFrame, batch_id: int) -> None:
        agg_now = agg.refresh()
        if committed_before(agg_now, commit_user, batch_id):
            return  # a replay of a batch that landed
        rows = contributions(batch.select("rowkind", "customer_id", "amount", "ship_status").toArrow())
        if rows.num_rows:
            w = agg_now.new_write()
            w.write(rows)
            agg_now.commit(w.prepare_commit(), commit_user=commit_user, commit_identifier=batch_id)

    return apply


def contributions(changes: pa.Table) -> pa.Table:
    """Change rows (``rowkind``, ``customer_id``, ``amount``, ``ship_status``) as rows of ``shop.customer_agg``:
    one order each, retracted (-U) for -U / -D, added (+U) for +I / +U; rows with no customer yet are skipped."""
    changes = changes.filter(pc.is_valid(changes.column("customer_id")))
    retract = pc.is_in(changes.column("rowkind"), value_set=pa.array(_RETRACTIONS))
    delivered = pc.cast(pc.fill_null(pc.equal(changes.column("ship_status"), "delivered"), False), pa.int64())
    n = changes.num_rows
    return pa.table({
        "customer_id": changes.column("customer_id"), "orders": pa.array(np.ones(n, np.int64)),
        "revenue": pc.cast(changes.column("amount"), TOTAL), "delivered": delivered,
        "op": pc.if_else(retract, "-U", "+U"),
    }, schema=AGG_SCHEMA)


def run_pipeline(
    spark: SparkSession,
    *,
    warehouse: str,
    work: str,
    cdc: Cdc,
    log: Callable[[str], None] = lambda _m: None,
) -> PipelineResult:
    """Feed ``cdc`` round by round and run the four streaming hops (AvailableNow) after each round."""
    import laketide.spark as ls

    tables = _create_tables(warehouse)
    inbox = Path(work) / "inbox"
    checkpoints = Path(work) / "checkpoints"
    for d in (inbox / "orders", inbox / "shipments", checkpoints):
        d.mkdir(parents=True, exist_ok=True)
    agg_user = "laketide-demo-customer-agg"

    def run(name: str, start: Callable[[str], Any]) -> None:
        q = start(str(checkpoints / name))
        q.awaitTermination()
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        log(f"  {name:15s} {len([p for p in q.recentProgress if p['numInputRows']]):2d} micro-batches, "
            f"{rows:6d} rows")

    def ods(cp: str) -> Any:
        src = (spark.readStream.schema(_ddl(ORDER_EVENT_SCHEMA)).option("maxFilesPerTrigger", 1)
               .json(str(inbox / "orders")))
        return ls.write_stream(_conform(src.withColumn("op", _kind_of_op("op")), ODS_SCHEMA), "shop.orders_ods",
                               warehouse=warehouse, checkpoint=cp, trigger={"availableNow": True}, query_name="ods")

    def wide_orders(cp: str) -> Any:
        changes = ls.read_stream(spark, "shop.orders_ods", warehouse=warehouse)
        latest = changes.where(changes["rowkind"] != "-U")  # the wide table takes after-images and deletions
        rows = latest.withColumn("order_seq", latest["seq"]).withColumn("op", latest["rowkind"])
        return ls.write_stream(_conform(rows, WIDE_SCHEMA), "shop.order_wide", warehouse=warehouse, checkpoint=cp,
                               trigger={"availableNow": True}, query_name="wide_orders")

    def wide_shipments(cp: str) -> Any:
        src = (spark.readStream.schema(_ddl(SHIPMENT_EVENT_SCHEMA)).option("maxFilesPerTrigger", 1)
               .json(str(inbox / "shipments")))
        return ls.write_stream(_conform(src.withColumn("op", _kind_of_op("op")), WIDE_SCHEMA), "shop.order_wide",
                               warehouse=warehouse, checkpoint=cp, trigger={"availableNow": True},
                               query_name="wide_shipments")

    def customer_agg(cp: str) -> Any:
        changes = ls.read_stream(spark, "shop.order_wide", warehouse=warehouse)
        return (changes.writeStream.foreachBatch(_aggregate_batch(tables, agg_user))
                .option("checkpointLocation", cp).trigger(availableNow=True).queryName("customer_agg").start())

    round_snapshots = []
    for r, (orders, shipments) in enumerate(zip(cdc.orders, cdc.shipments)):
        _write_json_lines(orders, inbox / "orders" / f"round-{r:03d}.json")
        _write_json_lines(shipments, inbox / "shipments" / f"round-{r:03d}.json")
        log(f"round {r}: {orders.num_rows} order events, {shipments.num_rows} shipment events")
        for name, start in (("ods", ods), ("wide_orders", wide_orders), ("wide_shipments", wide_shipments),
                            ("customer_agg", customer_agg)):
            run(name, start)
        latest = tables["ods"].refresh().latest_snapshot()
        round_snapshots.append(latest.id if latest is not None else 0)
    return PipelineResult(
        ods=tables["ods"].refresh().read(), wide=tables["wide"].refresh().read(),
        agg=tables["agg"].refresh().read(), round_snapshots=tuple(round_snapshots),
    )


# -- the command -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="laketide's streaming CDC demo on local Spark")
    parser.add_argument("--warehouse", default="demo-warehouse")
    parser.add_argument("--work", default=None, help="inbox and checkpoints (default: <warehouse>/_pipeline)")
    parser.add_argument("--orders", type=int, default=20_000)
    parser.add_argument("--customers", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    import warnings

    import laketide.spark as ls

    shutil.rmtree(args.warehouse, ignore_errors=True)
    warehouse = str(Path(args.warehouse).resolve())
    work = args.work or f"{warehouse}/_pipeline"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PySpark 4.3 about pandas 3
        spark = ls.session(args.master, app_name="laketide-demo", warehouse=warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        _demo(spark, args, warehouse=warehouse, work=work)
    finally:
        spark.stop()


def _demo(spark: SparkSession, args: argparse.Namespace, *, warehouse: str, work: str) -> None:
    import laketide.spark as ls

    cdc = generate_cdc(orders=args.orders, customers=args.customers, rounds=args.rounds, seed=args.seed)
    print(f"warehouse {warehouse}; CDC: {sum(t.num_rows for t in cdc.orders)} order events, "
          f"{sum(t.num_rows for t in cdc.shipments)} shipment events in {args.rounds} rounds")
    result = run_pipeline(spark, warehouse=warehouse, work=work, cdc=cdc, log=print)

    print("\n== shop.orders_ods (ODS, primary key order_id) ==")
    ls.read(spark, "shop.orders_ods").orderBy("order_id").show(5)
    print("== shop.order_wide (partial-update: order columns + shipment columns) ==")
    ls.read(spark, "shop.order_wide").where("carrier IS NOT NULL").orderBy("order_id").show(5)
    print("== shop.customer_agg (aggregation: sums per customer; customers left with no order stay at 0) ==")
    agg = ls.read(spark, "shop.customer_agg").where("orders > 0").drop("op")
    agg.orderBy("revenue", ascending=False).show(5)

    batch = ls.sql(spark, "SELECT customer_id, count(*) AS orders, sum(amount) AS revenue, "
                          "sum(CASE WHEN ship_status = 'delivered' THEN 1 ELSE 0 END) AS delivered "
                          "FROM `shop.order_wide` WHERE customer_id IS NOT NULL GROUP BY customer_id")
    same = agg.exceptAll(batch.select(*agg.columns)).count() == 0 and batch.count() == agg.count()
    print(f"streaming aggregation equals a batch GROUP BY over the wide table: {same}")

    first = result.round_snapshots[0]
    print(f"\n== time travel: shop.orders_ods at snapshot {first} (after round 0) vs now ==")
    then = ls.read(spark, "shop.orders_ods", snapshot_id=first).selectExpr("order_id", "status AS status_then",
                                                                             "amount AS amount_then")
    now = ls.read(spark, "shop.orders_ods").selectExpr("order_id", "status AS status_now", "amount AS amount_now")
    print(f"rows then: {then.count()}, rows now: {now.count()}; orders changed since (first 5):")
    then.join(now, "order_id", "left_outer").where(
        "status_then IS DISTINCT FROM status_now OR amount_then IS DISTINCT FROM amount_now"
    ).orderBy("order_id").show(5)

    sid = ls.compact(spark, "shop.orders_ods", full=True)
    print(f"compacted shop.orders_ods as a Spark job (one task per bucket): snapshot {sid}")
    print("\n== shop.orders_ods$snapshots ==")
    ls.read(spark, "shop.orders_ods$snapshots").select(
        "snapshot_id", "commit_kind", "commit_identifier", "delta_record_count", "total_record_count"
    ).orderBy("snapshot_id").show(50, truncate=False)


if __name__ == "__main__":
    main()
