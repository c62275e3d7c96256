"""Loaded-machine measurements of the append write and dynamic-bucket write paths (issue 25, helper i25e).

Run from a checkout: ``PYTHONPATH=<tree> python -m bench.write_path_rounds --rows 2000000 --repeat 5``; run it for
two trees in turn (main, a branch) and compare. Prints one JSON line:

- ``append``: per-round ratios laketide ``Table.write`` / ``pq.write_table`` (zstd) of the same rows, the two
  measured back to back in each round (load shifts hit both);
- ``dynamic``: per-round ratios of write + upsert (N/4) into a dynamic-bucket table / into 4 fixed buckets,
  alternating which goes first;
- ``critical_path``: per configuration, the CPU seconds of the main thread plus, for each thread pool, its
  busiest thread's CPU seconds: what the wall time approaches on an idle machine. On a loaded Linux machine with
  sched autogroup, a process's threads share one CPU share, so parallel encoding cannot show in wall time there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import tempfile
import threading
import time
from concurrent.futures import thread as futures_thread
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import laketide
from bench.data import orders
from bench.pk_table import KEY, pk_data

FIXED = {"bucket": "4"}
DYNAMIC: dict[str, str] = {}


class _PoolCpu:
    """Per-thread CPU seconds of thread-pool work items, pools told apart by a unique thread name prefix."""

    def __init__(self) -> None:
        self.items: list[tuple[str, float]] = []
        self._pools = itertools.count()
        init, run = futures_thread.ThreadPoolExecutor.__init__, futures_thread._WorkItem.run
        tracker = self

        def pool_init(pool: Any, *args: Any, **kwargs: Any) -> None:
            init(pool, *args, **kwargs)
            pool._thread_name_prefix = f"pool{next(tracker._pools)}"

        def item_run(item: Any) -> None:
            start = time.thread_time()
            run(item)
            tracker.items.append((threading.current_thread().name, time.thread_time() - start))

        futures_thread.ThreadPoolExecutor.__init__ = pool_init  # type: ignore[method-assign]
        futures_thread._WorkItem.run = item_run  # type: ignore[method-assign]

    def critical_path(self, main_thread_cpu: float) -> float:
        per_thread: dict[str, float] = {}
        for name, seconds in self.items:
            per_thread[name] = per_thread.get(name, 0.0) + seconds
        busiest: dict[str, float] = {}
        for name, seconds in per_thread.items():
            pool = name.rsplit("_", 1)[0]
            busiest[pool] = max(busiest.get(pool, 0.0), seconds)
        return main_thread_cpu + sum(busiest.values())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="laketide-rounds-"))
    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("b", exist_ok=True)
    names = (f"t{i}" for i in itertools.count())
    out: dict[str, Any] = {"append": [], "dynamic": [], "critical_path": {}}
    try:
        data = orders(args.rows)
        for _ in range(args.repeat):
            start = time.perf_counter()
            pq.write_table(data, work / "floor.parquet", compression="zstd")
            floor = time.perf_counter() - start
            table = catalog.create_table(f"b.{next(names)}", data.schema)
            start = time.perf_counter()
            table.write(data)
            out["append"].append(round((time.perf_counter() - start) / floor, 3))

        base, upsert = pk_data(args.rows)
        cpu = _PoolCpu()

        def write_upsert(options: dict[str, str]) -> tuple[float, float]:
            cpu.items.clear()
            table = catalog.create_table(f"b.{next(names)}", base.schema, primary_key=[KEY], options=options)
            start, main_cpu = time.perf_counter(), time.thread_time()
            table.write(base)
            writer = table.new_write()
            writer.write(upsert)
            table.commit(writer.prepare_commit())
            return time.perf_counter() - start, cpu.critical_path(time.thread_time() - main_cpu)

        paths: dict[str, list[float]] = {"fixed": [], "dynamic": []}
        for i in range(args.repeat):
            order = [("fixed", FIXED), ("dynamic", DYNAMIC)]
            timed = dict((name, write_upsert(opts)) for name, opts in (order if i % 2 == 0 else order[::-1]))
            out["dynamic"].append(round(timed["dynamic"][0] / timed["fixed"][0], 3))
            for name, (_, path) in timed.items():
                paths[name].append(path)
        fixed, dynamic = statistics.median(paths["fixed"]), statistics.median(paths["dynamic"])
        out["critical_path"] = {"fixed_s": round(fixed, 3), "dynamic_s": round(dynamic, 3),
                                "dynamic_over_fixed": round(dynamic / fixed, 3)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
