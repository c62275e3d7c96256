"""Deletion vectors and changelog producers: read and write cost on a 4-bucket primary-key table.

A base of N rows, then 5 updates of N/10 random existing keys each (5 overlapping sorted runs for a table that
does not compact). Tables, all with the same rows:

* ``MOR``: ``write-only`` (nothing compacted), so a read merges the base and the 5 runs per bucket;
* ``DV``: ``deletion-vectors.enabled`` (each write compacts its level 0 by lookup into deletion vectors), so a
  read takes the files above level 0 through their vectors, with no merge;
* ``MOR+compaction``: the default (each write compacts as universal compaction picks), for the write cost;
* ``lookup``: ``changelog-producer = lookup`` (each write compacts level 0 and emits a changelog);
* ``DV+lookup``: both (the changelog's lookup and the deletion vectors' in one compaction).

Reads: the DV and MOR tables, and ``pyarrow.parquet`` reading the same live rows from one file per bucket.
Issue targets: DV read >= 2x MOR read, DV read >= 0.8x the pyarrow read; DV and lookup writes <= 2x MOR writes.

    python -m bench.deletion_vectors --rows 2000000
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import laketide
from bench.data import orders

KEY = "order_id"
OPTIONS = {"bucket": "4"}
TABLES = {
    "MOR": {"write-only": "true"},
    "DV": {"deletion-vectors.enabled": "true"},
    "MOR+compaction": {},
    "lookup": {"changelog-producer": "lookup"},
    "DV+lookup": {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
}


def _best(fn, repeat: int) -> float:  # noqa: ANN001
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(rows: int, *, repeat: int = 3, updates: int = 5) -> dict[str, float]:
    base = orders(rows)
    rng = np.random.default_rng(18)
    batches = []
    for i in range(updates):
        picked = np.sort(rng.choice(rows, size=max(1, rows // 10), replace=False))
        batch = base.take(pa.array(picked))
        batches.append(batch.set_column(batch.schema.get_field_index("customer_id"), "customer_id",
                                         pa.array(np.full(len(picked), i, dtype=np.int64))))
    out: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="laketide-bench-dv-"))
    try:
        cat = laketide.load_catalog(warehouse=str(root))
        cat.create_database("db")
        tables = {}
        for name, extra in TABLES.items():
            t = cat.create_table(f"db.t_{name.lower().replace('+', '_')}", base.schema, primary_key=[KEY],
                                 options={**OPTIONS, **extra})
            t.write(base)
            start = time.perf_counter()
            for batch in batches:
                t.write(batch)
            out[f"write {updates} updates: {name}"] = time.perf_counter() - start
            tables[name] = t
        live = tables["DV"].read()
        assert live.num_rows == tables["MOR"].read().num_rows == rows
        floor_dir = root / "floor"
        floor_dir.mkdir()
        for b in range(4):  # one file per bucket, as the table has
            pq.write_table(live.slice(b * rows // 4, rows // 4 + (rows % 4 if b == 3 else 0)),
                           floor_dir / f"part-{b}.parquet")
        out["read: DV"] = _best(lambda: tables["DV"].read(), repeat)
        out["read: MOR (6 runs)"] = _best(lambda: tables["MOR"].read(), repeat)
        out["read: pyarrow.parquet (live rows)"] = _best(lambda: pq.read_table(floor_dir), repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    res = run(args.rows, repeat=args.repeat)
    for name, seconds in res.items():
        print(f"{name:45s} {seconds:8.3f} s")
    dv, mor, floor = res["read: DV"], res["read: MOR (6 runs)"], res["read: pyarrow.parquet (live rows)"]
    print(f"DV read vs MOR read: {mor / dv:.2f}x faster; vs pyarrow.parquet: {floor / dv:.2f}x")
    base_write = res["write 5 updates: MOR+compaction"]
    print(f"DV writes / MOR+compaction writes: {res['write 5 updates: DV'] / base_write:.2f}x; "
          f"lookup writes / MOR+compaction writes: {res['write 5 updates: lookup'] / base_write:.2f}x; "
          f"DV+lookup writes / MOR+compaction writes: {res['write 5 updates: DV+lookup'] / base_write:.2f}x")


if __name__ == "__main__":
    main()
