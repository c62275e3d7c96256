"""CPU time (all threads) and wall time of the e2e / PK / append workloads and their floors, for A/B runs of two
checkouts on a loaded machine, where wall-clock ratios swing by 2x between runs.

    cd /tmp && PYTHONPATH=<checkout> python <this file> --rows 2000000 --repeat 5 --out result.json

(laketide and bench.* come from PYTHONPATH's checkout: run it from outside both checkouts.)

Run it once per checkout with the same arguments, interleaved; compare the medians. Each repetition starts from
a fresh table (as bench/e2e.py). The floors are bench/e2e.py's: ``pq.write_table`` of the base and the upsert,
read both, keep-last dedupe (sort), and ``pq.write_table`` of the append rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq

import laketide
from bench.pk_table import KEY, TABLE_OPTIONS, WARMUP_ROWS, dedupe_floor, pk_data


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    base, upsert = pk_data(args.rows)
    samples: dict[str, list[tuple[float, float]]] = {}

    def add(name: str, value: tuple[float, float]) -> None:
        samples.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(prefix="encoding-ab-") as tmp:
        work = Path(tmp)
        catalog = laketide.load_catalog(warehouse=str(work / "wh"))
        catalog.create_database("ab", exist_ok=True)
        warm = catalog.create_table("ab.warm", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
        warm.write(base.slice(0, WARMUP_ROWS))
        warm.read()
        for i in range(args.repeat):
            pk = catalog.create_table(f"ab.pk{i}", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
            w, u, r = _timed(partial(pk.write, base)), _timed(partial(pk.write, upsert)), _timed(pk.read)
            add("pk write", w)
            add("pk upsert", u)
            add("pk merge read", r)
            add("e2e (write + upsert + read)", (w[0] + u[0] + r[0], w[1] + u[1] + r[1]))
            app = catalog.create_table(f"ab.app{i}", base.schema)
            add("append write", _timed(partial(app.write, base)))
            add("floor: pq.write_table (append)", _timed(
                lambda: pq.write_table(base, work / "a.parquet", compression="zstd")))

            def floor() -> None:
                pq.write_table(base, work / "b.parquet", compression="zstd")
                pq.write_table(upsert, work / "u.parquet", compression="zstd")
                dedupe_floor(pq.read_table(work / "b.parquet"), pq.read_table(work / "u.parquet"))

            add("floor: e2e (write x2 + read + sort dedupe)", _timed(floor))
            catalog.drop_table(f"ab.pk{i}")
            catalog.drop_table(f"ab.app{i}")
    medians = {name: {"cpu_s": statistics.median(c for c, _ in v), "wall_s": statistics.median(w for _, w in v)}
               for name, v in samples.items()}
    args.out.write_text(json.dumps({"laketide": laketide.__file__, "rows": args.rows, "repeat": args.repeat,
                                    "medians": medians, "samples": samples}, indent=1))
    print("laketide from", laketide.__file__)
    for name, m in medians.items():
        print(f"{name:45s} cpu {m['cpu_s']:.3f} s  wall {m['wall_s']:.3f} s")


if __name__ == "__main__":
    main()
