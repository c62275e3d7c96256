"""Append-table write and full read against pyarrow.parquet write_table / read_table of the same rows.

Issue targets: write >= 0.8x and read >= 0.9x of the pyarrow floor.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

import laketide
from bench.data import orders
from bench.harness import Result, measure, peak_rss_mb, report


def run(rows: int, *, repeat: int, out_dir: Path) -> str:
    data = orders(rows)
    work = Path(tempfile.mkdtemp(prefix="laketide-bench-"))
    results: list[Result] = []
    try:
        pq_path = work / "floor.parquet"
        results.append(measure("append write", "pyarrow.parquet", rows,
                               lambda: pq.write_table(data, pq_path, compression="zstd"), repeat=repeat))
        results.append(measure("full read", "pyarrow.parquet", rows,
                               lambda: pq.read_table(pq_path), repeat=repeat))

        wh = work / "wh"
        counter = iter(range(10_000))

        def fresh_table() -> None:
            global _table
            shutil.rmtree(wh, ignore_errors=True)
            cat = laketide.load_catalog(warehouse=str(wh))
            cat.create_database("bench", exist_ok=True)
            _table = cat.create_table(f"bench.orders{next(counter)}", data.schema)

        results.append(measure("append write", "laketide", rows, lambda: _table.write(data), repeat=repeat,
                               setup=fresh_table))
        t = _table
        results.append(measure("full read", "laketide", rows, lambda: t.read(), repeat=repeat))
        assert t.read().num_rows == rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = report(results, floor_engine="pyarrow.parquet", out_dir=out_dir, name=f"append_table_{rows}")
    return table + f"\n\npeak RSS: {peak_rss_mb():.0f} MB\n"


_table: laketide.Table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    print(run(args.rows, repeat=args.repeat, out_dir=args.out))


if __name__ == "__main__":
    main()
