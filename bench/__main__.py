"""``python -m bench`` (``make bench``): every suite at every size, results under bench/results/, BENCHMARKS.md.

Each (suite, size) runs in a fresh subprocess (bench/worker.py) so peak RSS is measured per workload from a
clean interpreter and one suite's failure is reported without stopping the others. A suite runs at its sizes one
after the other, ``--rounds`` times, and each workload's samples pool over the rounds (bench/rounds.py): the
scale ratios compare sizes measured in the same minutes. The default sizes and peer caps keep one round under
15 minutes on 2 cores (`make bench`, two rounds: about 20); the total is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import memory
from bench.report import draw_chart, machine_facts, render
from bench.rounds import pool, sized_plan
from bench.suite import Peers

HERE = Path(__file__).parent
ROOT = HERE.parent
SIZE_SUITES = ("append", "pk", "e2e", "compaction", "filtered", "merge_engines", "dynamic_bucket")
# memory: peak RSS at --memory-rows against 1.2M rows, each step in a fresh process (about 2 minutes at 10M).
# file_index: 2M rows in 20 files (issue 17's size) once, not at every size.
# planning: tables of --planning-files / 10 and --planning-files live files, once.
ALL_SUITES = (*SIZE_SUITES, "commit_latency", "planning", "memory", "file_index", "spark", "spark_sql")
DEFAULT_SIZES = "100000,500000,2000000"
# The Spark suites run at the middle size, at most this many rows unless --spark-rows asks (a scale run of
# --sizes 2000000,8000000 must not start local[2] Spark on 8M rows).
SPARK_DEFAULT_MAX_ROWS = 500_000
SUITE_TIMEOUT_S = 1800


def _sizes(text: str) -> list[int]:
    sizes = sorted({int(float(s)) for s in text.split(",") if s.strip()})
    if not sizes or sizes[0] <= 0:
        raise argparse.ArgumentTypeError(f"--sizes needs positive row counts, got {text!r}")
    return sizes


def default_spark_rows(sizes: list[int]) -> int:
    """The Spark suites' rows when --spark-rows is not given: the middle size, capped (not 8M in a scale run)."""
    return min(sizes[len(sizes) // 2], SPARK_DEFAULT_MAX_ROWS)


def _run_worker(suite: str, rows: int, *, repeat: int, peers: Peers, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{suite}-{rows}.json"
    command = [sys.executable, "-m", "bench.worker", suite, str(rows), "--repeat", str(repeat), "--out", str(out),
               "--peers", json.dumps(asdict(peers))]
    t0 = time.perf_counter()
    try:
        completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S,
                                   check=False)
    except subprocess.TimeoutExpired:
        return {"suite": suite, "rows": rows, "error": f"timed out after {SUITE_TIMEOUT_S} s"}
    if out.is_file():
        payload: dict[str, Any] = json.loads(out.read_text())
    else:
        payload = {"suite": suite, "rows": rows,
                   "error": f"worker exited {completed.returncode}: {completed.stderr.strip()[-300:]}"}
    payload["wall_s"] = time.perf_counter() - t0
    return payload


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_sizes, default=_sizes(DEFAULT_SIZES),
                        help=f"base row counts, comma-separated (default {DEFAULT_SIZES})")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per workload (median of them), >= 3")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of each sized suite at every size, alternating sizes; samples pool (default 1)")
    parser.add_argument("--suites", default=",".join(ALL_SUITES),
                        help="comma-separated subset of: " + ", ".join(ALL_SUITES))
    parser.add_argument("--commits", type=int, default=1000, help="history length for commit latency (laketide)")
    parser.add_argument("--peer-commits", type=int, default=Peers().max_peer_commits,
                        help="history length at which the commit-latency peers stop (they slow down with history)")
    parser.add_argument("--planning-files", type=int, default=10_000,
                        help="live data files of the planning suite's larger table; the smaller has a tenth")
    parser.add_argument("--memory-rows", type=int, default=memory.DEFAULT_ROWS,
                        help=f"table size for the memory suite, compared with {memory.REFERENCE_ROWS:,} rows "
                             f"(default {memory.DEFAULT_ROWS:,})")
    parser.add_argument("--file-index-rows", type=int, default=2_000_000,
                        help="rows of the file-index suite's 20-file table (default 2,000,000)")
    parser.add_argument("--spark-rows", type=int, default=None,
                        help="rows for the Spark suites (default: the middle size, at most "
                             f"{SPARK_DEFAULT_MAX_ROWS:,})")
    parser.add_argument("--pypaimon-max-rows", type=int, default=Peers().pypaimon_max_rows,
                        help="largest size at which pure-Python pypaimon runs (it is slow)")
    parser.add_argument("--no-peers", action="store_true", help="laketide and the floors only")
    parser.add_argument("--no-deltalake", action="store_true")
    parser.add_argument("--no-pypaimon", action="store_true", help="neither pypaimon runtime")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--markdown", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="re-render BENCHMARKS.md and the chart from a results.json, running nothing")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        _publish(saved["suites"], sizes=saved["sizes"], facts=saved["facts"], command=saved["command"],
                 total=saved["total_s"], out=args.out, markdown=args.markdown)
        return
    if args.repeat < 3:
        parser.error("--repeat must be >= 3 (results are medians with min/max)")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    peers = Peers.floors_only() if args.no_peers else Peers(
        deltalake=not args.no_deltalake, pypaimon=not args.no_pypaimon, pypaimon_rust=not args.no_pypaimon,
        pypaimon_max_rows=args.pypaimon_max_rows, max_peer_commits=args.peer_commits)
    spark_rows = args.spark_rows or default_spark_rows(args.sizes)

    plan = sized_plan([s for s in SIZE_SUITES if s in suites], args.sizes, args.rounds)
    if "commit_latency" in suites:
        plan.append(("commit_latency", args.commits))
    if "planning" in suites:
        plan.append(("planning", args.planning_files))
    if "memory" in suites:
        plan.append(("memory", args.memory_rows))
    if "file_index" in suites:
        plan.append(("file_index", args.file_index_rows))
    if "spark" in suites:
        plan.append(("spark", spark_rows))
    if "spark_sql" in suites:
        plan.append(("spark_sql", spark_rows))
    t0 = time.perf_counter()
    payloads = []
    with tempfile.TemporaryDirectory(prefix="laketide-bench-") as tmp:
        for suite, rows in plan:
            print(f"[{time.perf_counter() - t0:6.0f} s] {suite} at {rows:,} ...", flush=True)
            payload = _run_worker(suite, rows, repeat=args.repeat, peers=peers, tmp=Path(tmp))
            if "error" in payload:
                print(f"    failed: {payload['error']}", flush=True)
            payloads.append(payload)
    payloads = pool(payloads)
    total = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    facts = machine_facts()
    command = ("python -m bench " + shlex.join(argv if argv is not None else sys.argv[1:])).strip()
    (args.out / "results.json").write_text(json.dumps(
        {"command": command, "total_s": total, "sizes": args.sizes, "peers": asdict(peers), "facts": facts,
         "suites": payloads}, indent=1, default=str))
    _publish(payloads, sizes=args.sizes, facts=facts, command=command, total=total, out=args.out,
             markdown=args.markdown)


def _publish(payloads: list[dict[str, Any]], *, sizes: list[int], facts: dict[str, str], command: str,
             total: float, out: Path, markdown: Path) -> None:
    chart = draw_chart(payloads, out / "ratios.png", scale=max(sizes))
    chart_ref = None if chart is None else Path(os.path.relpath(chart, markdown.resolve().parent)).as_posix()
    text = render(payloads, sizes=sizes, facts=facts, command=command, total_s=total, chart=chart_ref)
    markdown.write_text(text)
    print(text)
    print(f"results: {out / 'results.json'}; summary: {markdown}; chart: {chart or 'matplotlib missing'}")
    print(f"total time: {total:.0f} s ({total / 60:.1f} min)")


if __name__ == "__main__":
    main()
