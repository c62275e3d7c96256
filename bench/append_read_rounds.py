"""Append read vs ``pq.read_table``, interleaved round by round in one process (a loaded machine's noise hits both).

Writes N ``orders`` rows once as ``pq.write_table(zstd)`` (the floor file of bench/append_table.py) and once
through laketide, then times in each round the floor's read and ``Table.read()`` back to back; prints the
per-round ratios' median, wall and CPU (``time.process_time``: all threads of the process), and the layout of
both files (row groups), so that a file-layout difference is visible next to a reader difference.

    PYTHONPATH=<tree> python bench/append_read_rounds.py --rows 2000000 --rounds 9

Run it alternately with two trees' PYTHONPATH to compare them in the same window.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import shutil
import statistics
import tempfile
import time

import pyarrow.parquet as pq

import laketide
from bench.data import orders


def _timed(fn) -> tuple[float, float]:  # noqa: ANN001
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    del out
    return wall, cpu


def _row_groups(path: str) -> list[int]:
    meta = pq.ParquetFile(path).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    data = orders(args.rows)
    work = tempfile.mkdtemp(prefix="laketide-read-rounds-")
    try:
        floor_path = os.path.join(work, "floor.parquet")
        pq.write_table(data, floor_path, compression="zstd")
        catalog = laketide.load_catalog(warehouse=os.path.join(work, "wh"))
        catalog.create_database("bench", exist_ok=True)
        table = catalog.create_table("bench.orders", data.schema)
        table.write(data)
        if table.read().num_rows != args.rows:
            raise SystemExit("laketide read a wrong row count")
        files = sorted(glob.glob(os.path.join(work, "wh", "**", "*.parquet"), recursive=True))
        floor: list[tuple[float, float]] = []
        lake: list[tuple[float, float]] = []
        for _ in range(args.rounds):
            floor.append(_timed(lambda: pq.read_table(floor_path)))
            lake.append(_timed(table.read))
        med = statistics.median
        print(json.dumps({
            "tree": os.environ.get("PYTHONPATH", ""), "rows": args.rows, "rounds": args.rounds,
            "ratio_wall": round(med(lw / fw for (lw, _), (fw, _) in zip(lake, floor)), 3),
            "ratio_cpu": round(med(lc / fc for (_, lc), (_, fc) in zip(lake, floor)), 3),
            "floor_wall_s": round(med(w for w, _ in floor), 3), "laketide_wall_s": round(med(w for w, _ in lake), 3),
            "floor_cpu_s": round(med(c for _, c in floor), 3), "laketide_cpu_s": round(med(c for _, c in lake), 3),
            "floor_row_groups": _row_groups(floor_path), "laketide_files_row_groups": [_row_groups(f) for f in files],
            "load_average": os.getloadavg()[0],
        }))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
