"""Append-table write and full read against pyarrow.parquet write_table / read_table of the same rows.

Peers: deltalake (write_deltalake into a fresh table / to_pyarrow_table), pypaimon and pypaimon-rust (an
unaware-bucket append table). Issue targets: write >= 0.8x and read >= 0.9x of the pyarrow floor.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.data import orders
from bench.harness import Result, measure, peak_rss_mb, report
from bench.peers import pypaimon_run
from bench.suite import Peers, SuiteRun

FLOOR = "pyarrow.parquet"
WORKLOADS = ("append write", "full read")


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    data = orders(rows)
    out = SuiteRun()
    pq_path = work / "floor.parquet"
    out.results.append(measure("append write", FLOOR, rows, lambda: pq.write_table(data, pq_path, compression="zstd"),
                               repeat=repeat, floor=True))
    out.results.append(measure("full read", FLOOR, rows, lambda: pq.read_table(pq_path), repeat=repeat, floor=True))

    wh = work / "wh"
    counter = iter(range(10_000))
    tables: list[laketide.Table] = []

    def fresh_table() -> None:
        shutil.rmtree(wh, ignore_errors=True)
        cat = laketide.load_catalog(warehouse=str(wh))
        cat.create_database("bench", exist_ok=True)
        tables[:] = [cat.create_table(f"bench.orders{next(counter)}", data.schema)]

    out.results.append(measure("append write", "laketide", rows, lambda: tables[0].write(data), repeat=repeat,
                               setup=fresh_table))
    if tables:
        table = tables[0]
        out.results.append(measure("full read", "laketide", rows, lambda: table.read(), repeat=repeat))
        if table.read().num_rows != rows:
            out.notes.append("laketide: full read returned a wrong row count")

    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, dict.fromkeys(WORKLOADS, rows), reason)
        else:
            path = work / "delta"
            out.results.append(measure("append write", delta_peer.ENGINE, rows, lambda: delta_peer.write(path, data),
                                       repeat=repeat))
            out.results.append(measure("full read", delta_peer.ENGINE, rows, lambda: delta_peer.read(path),
                                       repeat=repeat))
            out.meta["deltalake"] = delta_peer.version()
    for runtime, skip in peers.pypaimon_runtimes(rows):
        engine_rows = dict.fromkeys(WORKLOADS, rows)
        if skip is not None:
            out.skip("pypaimon" if runtime == "python" else "pypaimon-rust", engine_rows, skip)
            continue
        run = pypaimon_run("append", data, runtime=runtime, rows=engine_rows, options={"bucket": "-1"},
                           repeat=repeat)
        out.results += run.results
        out.meta.setdefault("pypaimon", {})[runtime] = {"versions": dict(run.versions), "paths": dict(run.paths)}
    return out


def run(rows: int, *, repeat: int, out_dir: Path, peers: Peers | None = None) -> str:
    """One size, printed as Markdown; JSON as ``append_table_<rows>.json`` under ``out_dir``."""
    work = Path(tempfile.mkdtemp(prefix="laketide-bench-"))
    try:
        suite = collect(rows, repeat=repeat, work=work, peers=peers or Peers.floors_only())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results: list[Result] = suite.results
    table = report(results, floor_engine=FLOOR, out_dir=out_dir, name=f"append_table_{rows}")
    return table + f"\n\npeak RSS: {peak_rss_mb():.0f} MB\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    print(run(args.rows, repeat=args.repeat, out_dir=args.out, peers=Peers()))


if __name__ == "__main__":
    main()
