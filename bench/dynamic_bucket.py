"""Dynamic buckets: a primary-key write of N rows then an upsert of N/4 (half new keys), against fixed buckets.

Each repetition writes into a fresh table and times write + upsert together (the assigner's index is built by
the first and read back by the second). The reference ("floor" column) is the same laketide write into the same
table with 4 fixed buckets: issue 25's target is dynamic write + upsert time <= 1.2x of it.

- ``dyn write+upsert``: laketide dynamic buckets with the default ``dynamic-bucket.target-row-num`` (2M: one
  bucket until then) and with target-row-num = N/4 (about 4-5 buckets, like the fixed table, so the assigner
  opens buckets as it goes); pypaimon and pypaimon-rust with ``bucket = -1``.
- ``cross-partition write+upsert``: the table partitioned by ``status`` with ``order_id`` alone as the primary
  key, so keys whose status changed move partition (a delete in the old one); reference: fixed 4 buckets with
  primary key (order_id, status), which keeps both versions instead. The bootstrap (reading every key of the
  table before the upsert) is part of the timed upsert and reported on its own in the notes.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import laketide
from bench.harness import Result, timed
from bench.peers import pypaimon_pk
from bench.pk_table import KEY, pk_data
from bench.suite import Peers, SuiteRun

DYNAMIC, CROSS = "dyn write+upsert", "cross-partition write+upsert"
FIXED = "laketide fixed 4 buckets"
TARGETED = "laketide target-row-num N/4"
PARTITION = "status"


def _laketide(catalog: laketide.Catalog, name: str, base: pa.Table, upsert: pa.Table, *, repeat: int,
              keys: list[str], options: dict[str, str], partition_keys: list[str] | None = None,
              engine: str, workload: str, floor: bool = False) -> tuple[Result, int, float | None]:
    """``repeat`` fresh tables, each timed for write + upsert; the rows read back and the bootstrap seconds."""
    result = Result(workload, engine, base.num_rows + upsert.num_rows, floor=floor)
    rows, bootstrap = 0, None
    for i in range(repeat):
        table = catalog.create_table(f"bench.{name}{i}", base.schema, primary_key=keys,
                                     partition_keys=partition_keys, options=options)

        def write_both(table: laketide.Table = table) -> None:
            nonlocal bootstrap
            table.write(base)
            w = table.new_write()
            w.write(upsert)
            table.commit(w.prepare_commit())
            stats = getattr(w.bucket_assigner, "bootstrap_stats", None)
            bootstrap = None if stats is None else stats.seconds

        seconds, peak, _ = timed(write_both)
        result.add(seconds, peak)
        rows = table.read(columns=[KEY]).num_rows
    return result, rows, bootstrap


def _pypaimon(base: pa.Table, upsert: pa.Table, *, peers: Peers, rows: int, repeat: int,
              merged_rows: int) -> list[Result]:
    out = []
    for runtime, skip in peers.pypaimon_runtimes(rows):
        engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
        result = Result(DYNAMIC, engine, base.num_rows + upsert.num_rows)
        if skip is not None:
            result.error = skip
            out.append(result)
            continue
        run = pypaimon_pk(base, upsert, runtime=runtime, primary_keys=[KEY], options={"bucket": "-1"},
                          repeat=repeat, merged_rows=merged_rows)
        parts = {r.workload: r for r in run.results}
        write, up = parts.get("pk write"), parts.get("pk upsert")
        if write is None or up is None or not write.ok or not up.ok:
            failed = next((r for r in (write, up) if r is not None and r.error), None)
            result.error = failed.error if failed is not None else "pypaimon returned no timings"
        else:
            result.seconds = [a + b for a, b in zip(write.seconds, up.seconds, strict=True)]
            result.peak_rss_mb = max(write.peak_rss_mb or 0.0, up.peak_rss_mb or 0.0) or None
            result.rss_scope = write.rss_scope
        if run.rows_read is not None and run.rows_read != merged_rows:
            result.error = f"wrong merge result: {run.rows_read} rows, expected {merged_rows}"
        out.append(result)
    return out


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    base, upsert = pk_data(rows)
    merged_rows = rows + upsert.num_rows // 2
    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    out = SuiteRun()
    runs = [
        ("fixed", [KEY], {"bucket": "4"}, None, FIXED, DYNAMIC, True),
        ("dyn", [KEY], {}, None, "laketide", DYNAMIC, False),
        ("dyn_target", [KEY], {"dynamic-bucket.target-row-num": str(max(rows // 4, 1))}, None, TARGETED, DYNAMIC,
         False),
        ("fixed_part", [KEY, PARTITION], {"bucket": "4"}, [PARTITION], FIXED, CROSS, True),
        ("cross", [KEY], {}, [PARTITION], "laketide", CROSS, False),
    ]
    for name, keys, options, partition_keys, engine, workload, floor in runs:
        result, got, bootstrap = _laketide(catalog, name, base, upsert, repeat=repeat, keys=keys, options=options,
                                           partition_keys=partition_keys, engine=engine, workload=workload,
                                           floor=floor)
        if name in ("dyn", "dyn_target", "cross") and got != merged_rows:
            result.error = f"wrong result: {got} rows, expected {merged_rows}"
        out.results.append(result)
        if name == "cross" and bootstrap is not None:
            out.notes.append(f"cross-partition bootstrap (every key of the {rows:,}-row table read before the "
                             f"upsert; part of the timed upsert): {bootstrap:.3f} s")
    out.results += _pypaimon(base, upsert, peers=peers, rows=rows, repeat=repeat, merged_rows=merged_rows)
    fixed = next(r for r in out.results if r.engine == FIXED and r.workload == DYNAMIC)
    for r in out.results:
        if r.workload == DYNAMIC and r.engine in ("laketide", TARGETED) and r.ok and fixed.ok:
            out.notes.append(f"{r.engine}: dynamic-bucket time / fixed-bucket time (write + upsert) = "
                             f"{r.median / fixed.median:.2f}x (issue 25's target: <= 1.2x)")
    return out
