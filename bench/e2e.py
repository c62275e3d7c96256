"""End to end, one timed call: write N rows, upsert N/4 (half new keys), read every merged row back.

The issue's "e2e write + upsert + read (vs hash floor)" workload. Each repetition starts from nothing:

- laketide: a fresh primary-key table with the pk suite's options (4 buckets), ``write`` + ``write`` + ``read``;
- deltalake: a fresh table, write, MERGE the upsert (copy-on-write), read;
- pypaimon / pypaimon-rust: the pk suite's driver request (fresh table, write, upsert, merge read), each
  repetition's three timings summed (the driver times only pypaimon's own calls);
- floor: ``pq.write_table`` of the base and of the upsert, read both back, keep-last dedupe by key, hash or
  sort (bench/dedupe.py), whichever is faster in this run; the other is listed as a reference.

Every engine's merged rows are checked against the floor's (row count and a checksum), like the pk suite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.dedupe import fastest_floor, hash_dedupe
from bench.harness import Result, timed
from bench.peers import pypaimon_pk
from bench.pk_table import KEY, TABLE_OPTIONS, WARMUP_ROWS, Merged, dedupe_floor, pk_data
from bench.suite import Peers, SuiteRun

WORKLOAD = "e2e write+upsert+read"
HASH_FLOOR = "pyarrow.parquet write + read + hash dedupe"
SORT_FLOOR = "pyarrow.parquet write + read + sort dedupe"


def _floors(base: pa.Table, upsert: pa.Table, *, repeat: int, work: Path, rows: int) -> list[Result]:
    base_path, upsert_path = work / "base.parquet", work / "upsert.parquet"

    def e2e(dedupe: Callable[[pa.Table, pa.Table], pa.Table]) -> Callable[[], pa.Table]:
        def run() -> pa.Table:
            pq.write_table(base, base_path, compression="zstd")
            pq.write_table(upsert, upsert_path, compression="zstd")
            return dedupe(pq.read_table(base_path), pq.read_table(upsert_path))
        return run

    return fastest_floor(WORKLOAD, rows, {
        HASH_FLOOR: e2e(lambda b, u: hash_dedupe(b, u, key=KEY)),
        SORT_FLOOR: e2e(dedupe_floor),
    }, repeat=repeat)


def _timed_runs(engine: str, rows: int, run: Callable[[int], pa.Table], *, repeat: int,
                note: str | None = None) -> tuple[Result, list[Merged] | None]:
    """``repeat`` timed calls of ``run(i)`` (each from nothing); what each of them read.

    Each repetition's rows are checked untimed and dropped before the next one, as the floors' results are and
    as the pk suite does: holding every repetition's result made each later one fault in ~600 MB more fresh
    memory at 8M rows (their times rose 2.45 -> 3.03 -> 3.55 s), which is not the workload."""
    result = Result(WORKLOAD, engine, rows, note=note)
    merged: list[Merged] = []
    try:
        for i in range(repeat):
            got: list[pa.Table] = []

            def once(i: int = i, got: list[pa.Table] = got) -> None:
                got.append(run(i))

            seconds, peak, _ = timed(once)
            result.add(seconds, peak)
            merged.append(Merged.of(got.pop()))
    except Exception as e:  # noqa: BLE001 - an engine that cannot run is reported, not fatal
        result.error, result.seconds = f"{type(e).__name__}: {e}"[:400], []
        return result, None
    return result, merged


def _laketide(base: pa.Table, upsert: pa.Table, *, repeat: int, work: Path,
              rows: int) -> tuple[Result, list[Merged] | None]:
    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    # Untimed warm-up, as in the pk suite: first-call imports and caches are not the workload.
    warmup = catalog.create_table("bench.e2e_warmup", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
    warmup.write(base.slice(0, WARMUP_ROWS))
    warmup.write(upsert.slice(0, WARMUP_ROWS))
    warmup.read()

    def run(i: int) -> pa.Table:
        table = catalog.create_table(f"bench.e2e{i}", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
        table.write(base)
        table.write(upsert)
        return table.read()

    return _timed_runs("laketide", rows, run, repeat=repeat)


def _deltalake(base: pa.Table, upsert: pa.Table, *, repeat: int, work: Path,
               rows: int) -> tuple[Result, list[Merged] | None]:
    def run(i: int) -> pa.Table:
        path = work / f"delta-e2e{i}"
        delta_peer.write(path, base)
        delta_peer.merge(path, upsert, key=KEY)
        return delta_peer.read(path)

    return _timed_runs(delta_peer.ENGINE, rows, run, repeat=repeat, note=delta_peer.MERGE_NOTE)


def _pypaimon(base: pa.Table, upsert: pa.Table, *, peers: Peers, repeat: int, rows: int,
              expected: Merged) -> list[Result]:
    out = []
    for runtime, skip in peers.pypaimon_runtimes(base.num_rows):
        engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
        result = Result(WORKLOAD, engine, rows, note="sum of the driver's write, upsert and merge-read timings")
        out.append(result)
        if skip is not None:
            result.error = skip
            continue
        run = pypaimon_pk(base, upsert, runtime=runtime, primary_keys=[KEY], options=TABLE_OPTIONS, repeat=repeat,
                          merged_rows=expected.rows)
        parts = list(run.results)
        failed = next((r for r in parts if not r.ok), None)
        if failed is not None or len(parts) != 3:
            result.error = failed.error if failed is not None else "pypaimon returned no timings"
            continue
        result.seconds = [sum(step) for step in zip(*(r.seconds for r in parts), strict=True)]
        result.peak_rss_mb = max((r.peak_rss_mb or 0.0) for r in parts) or None
        result.rss_scope = parts[0].rss_scope
        got = Merged(rows=run.rows_read or 0, checksum=run.checksum or 0)
        if got != expected:
            result.error = f"wrong merge result: {got.rows} rows, checksum {got.checksum}; expected {expected}"
    return out


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    """Every engine on the pk suite's data at one size; each result checked against the floor's rows."""
    base, upsert = pk_data(rows)
    expected = Merged.of(dedupe_floor(base, upsert))
    processed = base.num_rows + upsert.num_rows + expected.rows  # rows written + upserted + read
    out = SuiteRun(meta={"expected_merge": {"rows": expected.rows, "checksum": expected.checksum},
                         "table_options": TABLE_OPTIONS})
    out.results = _floors(base, upsert, repeat=repeat, work=work, rows=processed)
    engines = [_laketide(base, upsert, repeat=repeat, work=work, rows=processed)]
    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, {WORKLOAD: processed}, reason)
        else:
            engines.append(_deltalake(base, upsert, repeat=repeat, work=work, rows=processed))
            out.meta["deltalake"] = delta_peer.version()
    for result, merges in engines:
        got = next((m for m in merges or () if m != expected), None)
        if got is not None:
            result.error = f"wrong merge result: {got.rows} rows, checksum {got.checksum}; expected {expected}"
            result.seconds = []
        if result.error is not None:
            out.notes.append(f"{result.engine}: {result.error}")
        out.results.append(result)
    out.results += _pypaimon(base, upsert, peers=peers, repeat=repeat, rows=processed, expected=expected)
    return out
