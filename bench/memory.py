"""Peak memory of a primary-key table's write, read and full compaction as the table grows; hashing long keys.

Every step runs in a fresh subprocess (``python -m bench.memory --child STEP ...``) and reports the process's
RSS high-water mark (``getrusage(RUSAGE_SELF).ru_maxrss``), so a step's number includes the interpreter and its
imports but nothing any earlier step held. The table: 4 buckets, ``write-buffer-size`` 16 mb, default options
otherwise (writers compact). The rows are generated in chunks inside the child, so the input never sits in
memory whole:

- ``write``: N rows (bench.data.orders with scattered keys, so every flushed run spans the whole key range)
  through one ``new_write()`` and one commit; writers compact;
- ``write (write-only)``: the same into a table with ``write-only`` = true (no compaction in the writer);
- ``upsert``: N/4 rows, half of them existing keys, into the written table (merging with what is there);
- ``read (streamed)``: the merged table through ``scan().to_batches()``, counting rows (a merge read of a
  bucket larger than memory must not load it whole);
- ``full compaction``: ``compact(full=True)`` of that table.

Bounded memory means the 10M-row numbers stay close to the 1.2M ones: the suite reports the ratio of each step's
peak at the largest size to the smallest (issue 14's target for full compaction: within 1.3x).

``hash long keys`` times bucket hashing (BinaryRow murmur hash of the key) of one 1 MB key and of 1,000 keys of
5,000 bytes against reading the same keys back from an uncompressed Parquet file: hashing should cost no more
than reading.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.harness import Result, measure
from bench.suite import Peers, SuiteRun

ROOT = Path(__file__).parent.parent
KEY = "order_id"
TABLE = "bench.mem"
WRITE_ONLY_TABLE = "bench.mem_wo"
TABLE_OPTIONS = {"bucket": "4", "write-buffer-size": "16 mb"}
CHUNK = 250_000
REFERENCE_ROWS = 1_200_000  # every run compares its size with this one
DEFAULT_ROWS = 10_000_000
STEPS = ("write", "write (write-only)", "upsert", "read (streamed)", "full compaction")
WORKLOAD_PREFIX = "peak RSS: "
HASH_WORKLOAD = "hash long keys"
CHILD_TIMEOUT_S = 1800


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scrambled_keys(start: int, n: int) -> np.ndarray:
    """Keys of rows ``start .. start + n``: a bijection of the row number onto scattered non-negative int64s.

    Keys in random order make every flushed run span the whole key range, so compaction and merge reads have
    to merge all runs at once (increasing keys would give runs that overlap nothing: the easy case).
    """
    i = np.arange(start, start + n, dtype=np.uint64)
    return ((i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(12345)) & np.uint64((1 << 63) - 1)).astype(np.int64)


def _write_rows(table: Any, rows: int, *, seed: int, key_offset: int) -> None:
    from bench.data import orders

    w = table.new_write()
    try:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            chunk = orders(n, seed=seed + start)
            chunk = chunk.set_column(0, KEY, pa.array(scrambled_keys(key_offset + start, n)))
            w.write(chunk)
        table.commit(w.prepare_commit())
    finally:
        w.close()


def _child(step: str, warehouse: Path, rows: int) -> dict[str, Any]:
    """One step in this process; returns its seconds, the rows it touched and the process's peak RSS."""
    import laketide

    catalog = laketide.load_catalog(warehouse=str(warehouse))
    idle = _peak_mb()
    t0 = time.perf_counter()
    touched = rows
    if step == "write":
        catalog.create_database("bench", exist_ok=True)
        schema = _schema()
        table = catalog.create_table(TABLE, schema, primary_key=[KEY], options=TABLE_OPTIONS)
        _write_rows(table, rows, seed=42, key_offset=0)
    elif step == "write (write-only)":
        catalog.create_database("bench", exist_ok=True)
        table = catalog.create_table(WRITE_ONLY_TABLE, _schema(), primary_key=[KEY],
                                     options={**TABLE_OPTIONS, "write-only": "true"})
        _write_rows(table, rows, seed=42, key_offset=0)
    elif step == "upsert":
        touched = rows // 4
        _write_rows(catalog.table(TABLE), touched, seed=43, key_offset=rows - touched // 2)
    elif step == "read (streamed)":
        touched = sum(b.num_rows for b in catalog.table(TABLE).scan().to_batches())
    elif step == "full compaction":
        touched = rows + rows // 4  # the rows it merges: the base and the upsert
        catalog.table(TABLE).compact(full=True)
    else:
        raise ValueError(f"unknown step {step!r}")
    return {"seconds": time.perf_counter() - t0, "rows": touched, "peak_rss_mb": _peak_mb(), "idle_rss_mb": idle}


def _schema() -> pa.Schema:
    from bench.data import orders

    return orders(1).schema


def _run_child(step: str, warehouse: Path, rows: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.memory", "--child", step, "--warehouse", str(warehouse),
               "--rows", str(rows)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{step} at {rows:,} rows failed: {done.stderr.strip()[-400:]}")
    payload: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return payload


def table_steps(rows: int, *, work: Path) -> list[Result]:
    """Every step at ``rows``, each in a fresh subprocess, in order (each needs the table the earlier left)."""
    warehouse = work / f"wh-{rows}"
    results = []
    failed: str | None = None
    for step in STEPS:
        if failed is not None:
            results.append(Result(WORKLOAD_PREFIX + step, "laketide", rows, error=f"not run: {failed}", scale=rows))
            continue
        try:
            got = _run_child(step, warehouse, rows)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            failed = f"{type(e).__name__}: {e}"[:400]
            results.append(Result(WORKLOAD_PREFIX + step, "laketide", rows, error=failed, scale=rows))
            continue
        results.append(Result(WORKLOAD_PREFIX + step, "laketide", got["rows"], seconds=[got["seconds"]],
                              peak_rss_mb=got["peak_rss_mb"],
                              rss_scope="process (fresh subprocess per step)",
                              note=f"interpreter + imports: {got['idle_rss_mb']:.0f} MB", scale=rows))
    shutil.rmtree(warehouse, ignore_errors=True)
    return results


def growth(small: list[Result], large: list[Result]) -> list[str]:
    """Each step's peak RSS at the large size over the small one."""
    lines = []
    by_step = {r.workload: r for r in small}
    for r in large:
        s = by_step.get(r.workload)
        if s is None or not (s.ok and r.ok) or not s.peak_rss_mb or r.peak_rss_mb is None:
            continue
        lines.append(f"{r.workload}: peak RSS {s.peak_rss_mb:.0f} MB at {s.scale:,} rows -> {r.peak_rss_mb:.0f} MB "
                     f"at {r.scale:,} rows: {r.peak_rss_mb / s.peak_rss_mb:.2f}x")
    return lines


# -- hashing long keys -------------------------------------------------------------------------------------------
def long_key_tables() -> dict[str, pa.Table]:
    rng = np.random.default_rng(7)
    one = pa.table({"k": pa.array([rng.bytes(1 << 20)], pa.binary())})
    many = pa.table({"k": pa.array([rng.bytes(5000) for _ in range(1000)], pa.binary())})
    return {"1 key of 1 MB": one, "1,000 keys of 5,000 bytes": many}


def hashing(*, repeat: int, work: Path) -> list[Result]:
    """Bucket hashing of long keys vs reading the same keys from an uncompressed Parquet file."""
    from laketide.meta.bucket import bucket_ids
    from laketide.types import VarBinaryType

    results = []
    for label, table in long_key_tables().items():
        path = work / "keys.parquet"
        pq.write_table(table, path, compression="none")
        nbytes = table.nbytes
        results.append(measure(f"{HASH_WORKLOAD}: {label}", "pyarrow.parquet read", table.num_rows,
                               lambda path=path: pq.read_table(path), repeat=repeat, floor=True))
        results.append(measure(f"{HASH_WORKLOAD}: {label}", "laketide bucket hash", table.num_rows,
                               lambda table=table: bucket_ids(table, ["k"], [VarBinaryType(2_147_483_647)], 4),
                               repeat=repeat,
                               note=f"{nbytes / 1e6:.1f} MB of key"))
        path.unlink()
    return results


def collect(rows: int, *, repeat: int, work: Path, peers: Peers, reference_rows: int | None = None) -> SuiteRun:
    """The table steps at ``rows`` and at ``reference_rows`` (default 1.2M, when smaller), plus long-key hashing.

    ``python -m bench`` runs this once, at ``--memory-rows`` (default 10M); the peaks at both sizes and their
    ratios are in the results and the notes.
    """
    del peers  # laketide only: the peers' memory is in the other suites' peak RSS columns
    out = SuiteRun()
    reference = reference_rows if reference_rows is not None else (REFERENCE_ROWS if rows > REFERENCE_ROWS else None)
    small = table_steps(reference, work=work) if reference is not None else []
    large = table_steps(rows, work=work)
    out.results += small + large
    if small:
        out.notes += growth(small, large)
        out.meta["peak_rss_mb"] = {r.workload: {str(s.scale): s.peak_rss_mb, str(r.scale): r.peak_rss_mb}
                                   for s, r in zip(small, large)}
    out.meta["table_options"] = TABLE_OPTIONS
    out.results += hashing(repeat=repeat, work=work)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, nargs="+", default=[REFERENCE_ROWS, DEFAULT_ROWS],
                        help="table sizes (default 1.2M 10M)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of the hashing timings")
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(_child(args.child, args.warehouse, args.rows[0])))
        return
    work = Path(tempfile.mkdtemp(prefix="laketide-bench-memory-"))
    try:
        by_size = {rows: table_steps(rows, work=work) for rows in args.rows}
        for rows, results in by_size.items():
            for r in results:
                shown = f"{r.median:.2f} s, peak RSS {r.peak_rss_mb:.0f} MB ({r.note})" if r.ok else r.error
                print(f"{rows:>12,} rows  {r.workload:<32} {shown}")
        sizes = sorted(by_size)
        if len(sizes) > 1:
            print("\n".join(growth(by_size[sizes[0]], by_size[sizes[-1]])))
        for r in hashing(repeat=args.repeat, work=work):
            print(f"{r.workload:<40} {r.engine:<22} median {r.median * 1000:8.2f} ms" if r.ok else r.error)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
