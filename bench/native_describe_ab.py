"""The Spark-native write's describe step: footer statistics against reading every file back, in one session
(timings printed, never asserted).

    .venv/bin/python -m bench.native_describe_ab --rows 500000 --repeat 5

One local[2] session; rounds interleave ``lts.write(native=True)`` of the same cached rows into a fresh 4-bucket
primary-key table with the describe step of main (``describe_written_file`` in Python tasks: every column read
back), the footer one in Python tasks (the cluster path) and the footer one in the driver (local mode's path),
rotating which goes first. Per variant: median wall time
and CPU of the JVM's process tree (Python workers included) + this driver, of the whole write and of its describe
step. Then the describe step alone: both
functions over the same Spark-written files in this process, interleaved, median ``process_time``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
import laketide.spark as ls
import laketide.spark.native_write as nw
from bench.data import orders
from bench.spark_write_floors import _cpu


def _read_back_describe(spark: Any, ref: Any, staging: str) -> list[tuple[Any, int]]:
    """main's describe step: each staged file read back and described by laketide's stats functions."""
    staged = nw._staged_files(staging)
    if not staged:
        return []

    def describe(item: tuple[str, int]) -> tuple[Any, int]:
        path, bucket = item
        return ref.data_table().store.describe_written_file(path), bucket

    return list(spark.sparkContext.parallelize(staged, len(staged)).map(describe).collect())


def run(rows: int, *, repeat: int, work: Path) -> None:
    spark = ls.session("local[2]", app_name="laketide-describe-ab")
    spark.sparkContext.setLogLevel("ERROR")
    jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    wh = str(work / "wh")
    cat = laketide.load_catalog(warehouse=wh)
    cat.create_database("b", exist_ok=True)
    data = orders(rows)
    pk_schema = pa.schema([pa.field("order_id", pa.int64(), nullable=False), *list(data.schema)[1:]])
    pq.write_table(data, work / "src.parquet")
    src = spark.read.parquet(str(work / "src.parquet")).repartition(4).cache()
    src.count()
    footer_describe = nw._describe
    in_driver = nw._describe_in_driver

    def footer_in_tasks(spark: Any, ref: Any, staging: str) -> list[tuple[Any, int]]:
        nw._describe_in_driver = lambda spark: False
        try:
            return footer_describe(spark, ref, staging)
        finally:
            nw._describe_in_driver = in_driver

    variants = {"read back": _read_back_describe, "footer tasks": footer_in_tasks, "footer": footer_describe}
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    step_wall: dict[str, list[float]] = {k: [] for k in variants}
    step_cpu: dict[str, list[float]] = {k: [] for k in variants}

    def timed(key: str) -> Any:
        def describe(spark: Any, ref: Any, staging: str) -> list[tuple[Any, int]]:
            c0, t0 = _cpu(jvm)[1], time.perf_counter()
            out = variants[key](spark, ref, staging)
            step_wall[key].append(time.perf_counter() - t0)
            step_cpu[key].append(_cpu(jvm)[1] - c0)
            return out

        return describe
    counter = iter(range(1_000_000))
    last = None
    for r in range(repeat + 1):  # round 0 warms up (JIT, workers), not counted
        order = list(variants)[r % len(variants):] + list(variants)[:r % len(variants)]  # rotate who goes first
        for key in order:
            name = f"b.t{next(counter)}"
            last = cat.create_table(name, pk_schema, primary_key=["order_id"], options={"bucket": "4"})
            nw._describe = timed(key)
            try:
                c0, t0 = _cpu(jvm)[1], time.perf_counter()
                ls.write(src, name, warehouse=wh, native=True)
                t1, c1 = time.perf_counter(), _cpu(jvm)[1]
            finally:
                nw._describe = footer_describe
            if r:
                wall[key].append(t1 - t0)
                cpu[key].append(c1 - c0)
    print(f"native PK write of {rows} rows, {repeat} interleaved rounds (medians)")
    for key in variants:
        print(f"  {key:12s} wall {statistics.median(wall[key]):7.3f} s   tree CPU {statistics.median(cpu[key]):7.3f} s")
    for key in ("footer tasks", "footer"):
        print(f"  {key} / read back: wall {statistics.median(wall[key]) / statistics.median(wall['read back']):.3f}x"
              f"   CPU {statistics.median(cpu[key]) / statistics.median(cpu['read back']):.3f}x")
    print("  the describe step inside those writes (Spark job of Python tasks; tree CPU includes the workers)")
    for key in variants:
        print(f"  {key:12s} wall {statistics.median(step_wall[key][1:]):7.3f} s   "
              f"tree CPU {statistics.median(step_cpu[key][1:]):7.3f} s")

    assert last is not None
    paths = [p.replace("file://", "", 1) for s in last.scan().plan() for p in s.file_paths()]
    store = last.store
    step: dict[str, list[float]] = {"read back": [], "footer": []}
    functions = {"read back": store.describe_written_file, "footer": store.describe_written_file_from_footer}
    for r in range(repeat + 1):
        for key in (list(functions) if r % 2 else list(reversed(functions))):
            c0 = time.process_time()
            for p in paths:
                functions[key](p)
            if r:
                step[key].append(time.process_time() - c0)
    print(f"describe step alone, {len(paths)} files of {rows} rows in all (median process CPU)")
    for key in step:
        print(f"  {key:10s} {statistics.median(step[key]):7.3f} s")
    print(f"  footer / read back: {statistics.median(step['footer']) / statistics.median(step['read back']):.3f}x")
    spark.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run(args.rows, repeat=args.repeat, work=Path(tmp))


if __name__ == "__main__":
    main()
