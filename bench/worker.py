"""Run one suite at one size in this (fresh) process and write its results as JSON.

``python -m bench`` starts one worker per (suite, size), so each suite's peak RSS starts from a clean
interpreter and one suite's memory or crash cannot leak into the next. Usage::

    python -m bench.worker SUITE ROWS --repeat 3 --out result.json [--peers '{"deltalake": false}']
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    append_table,
    commit_latency,
    compaction,
    dynamic_bucket,
    e2e,
    file_index,
    filtered_read,
    memory,
    merge_engines,
    pk_table,
    planning,
    spark_sql,
)
from bench.harness import Result, cannot_run
from bench.suite import Peers, SuiteRun

SUITES: dict[str, Callable[..., SuiteRun]] = {
    "append": append_table.collect,
    "pk": pk_table.collect,
    "e2e": e2e.collect,
    "compaction": compaction.collect,
    "filtered": filtered_read.collect,
    "merge_engines": merge_engines.collect,
    "dynamic_bucket": dynamic_bucket.collect,
    "commit_latency": commit_latency.collect,
    "planning": planning.collect,
    "memory": memory.collect,
    "file_index": file_index.collect,
    "spark_sql": spark_sql.collect,
}
SPARK = "spark"
# spark_bench's own result keys end in " <engine> s"; these are the engines it names.
SPARK_ENGINES = ("laketide", "spark.parquet", "df.write.parquet")
SPARK_FLOORS = ("spark.parquet", "df.write.parquet")
# Spark's times spread more than the Python suites' (JIT, shuffle files, GC): at least this many rounds, medians.
SPARK_ROUNDS = 5


def spark_suite(rows: int, *, repeat: int, work: Path) -> SuiteRun:
    """laketide on local Spark against Spark's own Parquet source/sink, through bench.spark_bench.run."""
    out = SuiteRun()
    rounds = max(repeat, SPARK_ROUNDS)
    try:
        from bench import spark_bench

        run = getattr(spark_bench, "run", None)
        if run is None:
            raise AttributeError("bench.spark_bench has no run() function")
        accepted = inspect.signature(run).parameters
        kwargs: dict[str, Any] = {k: v for k, v in {"repeat": rounds, "work": work}.items() if k in accepted}
        raw = run(rows, **kwargs)
    except Exception as e:  # noqa: BLE001 - Spark needs a JVM; a missing one is reported, not fatal
        out.results.append(cannot_run("spark workloads", "laketide+spark", rows, f"{type(e).__name__}: {e}"))
        return out
    out.meta["spark_raw"] = raw
    out.notes.append("spark_bench: a warm-up round left out, then the workloads' engines in alternation, "
                     f"{rounds} rounds")
    for key, value in dict(raw).items():
        samples = value if isinstance(value, list) else [value]
        if not key.endswith(" s") or not samples or not all(isinstance(v, (int, float)) for v in samples):
            continue
        stem = key[: -len(" s")]
        engine = next((e for e in SPARK_ENGINES if stem.endswith(" " + e)), stem.rsplit(" ", 1)[-1])
        # Prefixed so that Spark's "pk merge read" never shares a row group with the Python API's.
        name = "spark " + stem[: -len(engine)].strip()
        out.results.append(Result(name, "laketide+spark" if engine == "laketide" else engine, rows,
                                  seconds=[float(v) for v in samples], floor=engine in SPARK_FLOORS,
                                  rss_scope="process-wide (the JVM is a child process: not counted)"))
    return out


def run_suite(suite: str, rows: int, *, repeat: int, peers: Peers) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"laketide-bench-{suite}-"))
    t0 = time.perf_counter()
    try:
        if suite == SPARK:
            result = spark_suite(rows, repeat=repeat, work=work)
        else:
            result = SUITES[suite](rows, repeat=repeat, work=work, peers=peers)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in result.results:
        r.scale = r.scale or rows  # a suite measuring several sizes (memory) sets its own
    return {"suite": suite, "rows": rows, "results": [r.to_json() for r in result.results],
            "notes": result.notes, "meta": result.meta, "seconds": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=[*SUITES, SPARK])
    parser.add_argument("rows", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--peers", default="{}", help="JSON of bench.suite.Peers fields")
    args = parser.parse_args(argv)
    try:
        payload = run_suite(args.suite, args.rows, repeat=args.repeat, peers=Peers(**json.loads(args.peers)))
    except Exception as e:  # noqa: BLE001 - the parent reports a failed suite with its reason
        traceback.print_exc()
        payload = {"suite": args.suite, "rows": args.rows, "error": f"{type(e).__name__}: {e}"[:400]}
    args.out.write_text(json.dumps(payload, indent=1, default=str))
    return 0 if "error" not in payload else 1


if __name__ == "__main__":
    sys.exit(main())
