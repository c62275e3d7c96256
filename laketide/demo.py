"""The demo job: an orders table on a local warehouse — write, append, overwrite a partition, evolve, read.

Run with ``make demo`` (``python -m laketide.demo --warehouse demo-warehouse``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil

import numpy as np
import pyarrow as pa

import laketide
from laketide.types import DoubleType


def orders(n: int, *, day: str, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "order_id": pa.array(np.arange(n, dtype=np.int64) + seed * 1_000_000),
        "customer": pa.array(rng.integers(0, 1000, n), pa.int64()),
        "status": pa.array(rng.choice(["new", "paid", "shipped", "done", "returned"], n)),
        "amount": pa.array(rng.uniform(1, 500, n).round(2)),
        "dt": pa.array([day] * n),
        "created": pa.array(
            [dt.datetime(2026, 11, 21) + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 86400, n)],
            pa.timestamp("us"),
        ),
    })


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warehouse", default="demo-warehouse")
    parser.add_argument("--rows", type=int, default=200_000)
    args = parser.parse_args(argv)
    shutil.rmtree(args.warehouse, ignore_errors=True)

    cat = laketide.load_catalog(warehouse=args.warehouse)
    cat.create_database("shop", exist_ok=True)
    schema = orders(1, day="x", seed=0).schema
    t = cat.create_table("shop.orders", schema, partition_keys=["dt"],
                         options={"bucket": "4", "bucket-key": "order_id"})
    print(f"created {t.name} at {t.path}")
    for i, day in enumerate(["2026-11-20", "2026-11-21"]):
        sid = t.write(orders(args.rows, day=day, seed=i + 1))
        print(f"snapshot {sid}: appended {args.rows} orders for {day}")
    sid = t.write(orders(args.rows // 10, day="2026-11-21", seed=9), mode="overwrite",
                  partition={"dt": "2026-11-21"})
    print(f"snapshot {sid}: overwrote partition dt=2026-11-21")
    t.alter(laketide.AddColumn(name="discount", type=DoubleType()))
    print("schema evolved: added column 'discount'")
    big = t.read(columns=["order_id", "amount", "dt"], where="amount > 450 AND dt = '2026-11-20'")
    print(f"orders over 450 on 2026-11-20: {big.num_rows}")
    total = t.read(columns=["dt"]).group_by("dt").aggregate([("dt", "count")])
    print(total.sort_by("dt").to_pandas().to_string(index=False))
    print(cat.table("shop.orders$snapshots").read().select(["snapshot_id", "commit_kind", "total_record_count"])
          .to_pandas().to_string(index=False))


if __name__ == "__main__":
    main()
