"""Primary-key table, 4 buckets: write N rows, upsert N/4 (half new keys), then read the merged rows.

Engines, all on the same rows: laketide; pypaimon pure Python and pypaimon with its Rust runtime (in their
own environment, see bench/peers.py); deltalake (write, then MERGE the upsert: copy-on-write, so its "merge
read" is a plain read); and the pyarrow floor: ``pyarrow.parquet.write_table`` of the batch for
the writes, and in-memory concat(base, upsert) + stable sort by key + keep the last row per key for the
merge read as a second reference. The merge read's floor is the issue's "read + hash dedupe": reading the two
floor files plus a keep-last dedupe, hash or sort (bench/dedupe.py), whichever is faster in this run.

Every repetition uses a fresh table: "pk write" is the base batch into an empty table, "pk upsert" the upsert
batch into the populated one, "pk merge read" reads everything after it (two sorted runs per bucket).

Issue targets: write and merge read >= 10x pypaimon (pure Python) and >= 1x pypaimon-rust; merge read at least
as fast as reading the two floor files plus a dedupe (issue 25: <= 1.0x of the read + dedupe floor).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.data import orders
from bench.dedupe import fastest_floor, hash_dedupe
from bench.harness import Result, measure, peak_rss_mb, report, timed
from bench.peers import PK_WORKLOADS, PeerRun, pypaimon_pk
from bench.suite import Peers, SuiteRun

KEY = "order_id"
BUCKETS = 4
TABLE_OPTIONS = {"bucket": str(BUCKETS)}
WARMUP_ROWS = 1000
FLOOR = "pyarrow"
SORT_READ_FLOOR = "pyarrow.parquet read + sort dedupe"
HASH_READ_FLOOR = "pyarrow.parquet read + hash dedupe"
IN_MEMORY_NOTE = "in memory, no file read: a second reference, not the floor"
# Issue targets: how many times faster laketide must be than each engine (the engine's median / laketide's).
TARGETS: dict[str, dict[str, float]] = {
    "pypaimon": {"pk write": 10.0, "pk merge read": 10.0},
    "pypaimon-rust": {"pk write": 1.0, "pk merge read": 1.0},
    HASH_READ_FLOOR: {"pk merge read": 1.0},
    SORT_READ_FLOOR: {"pk merge read": 1.0},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """What a merge read returned: its row count and the sum of a non-key column over those rows."""

    rows: int
    checksum: int

    @staticmethod
    def of(table: pa.Table) -> Merged:
        # customer_id differs between the base and upsert versions of a key, so the sum tells which survived.
        return Merged(rows=table.num_rows, checksum=int(pc.sum(table.column("customer_id")).as_py() or 0))


def pk_data(rows: int) -> tuple[pa.Table, pa.Table]:
    """The base batch (keys 0..rows) and the upsert batch of rows/4: half existing keys, half new ones."""
    upsert_rows = rows // 4
    base = orders(rows)
    upsert = orders(upsert_rows, seed=43, key_offset=rows - upsert_rows // 2)
    return base, upsert


def dedupe_floor(base: pa.Table, upsert: pa.Table) -> pa.Table:
    """Last write wins per key, vectorized: concat, stable sort by key, keep the last row of each key run."""
    both = pa.concat_tables([base, upsert])
    # A stable sort keeps upsert rows after base rows of the same key; numpy's (timsort on two sorted runs)
    # is several times faster here than Arrow's, and the floor should be the fastest honest way.
    key_values = both.column(KEY).to_numpy()
    order = np.argsort(key_values, kind="stable")
    keys = key_values[order]
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    return both.take(pa.array(order[last]))


def laketide_pk(base: pa.Table, upsert: pa.Table, *, repeat: int, warehouse: Path) -> tuple[list[Result], Merged]:
    """Time laketide's PK write, upsert and merge read, ``repeat`` times, each on a fresh table.

    Lets laketide's exceptions through (e.g. UnsupportedFeatureError while PK writes are not implemented).
    """
    results = [Result(w, "laketide", n) for w, n in zip(PK_WORKLOADS, (base.num_rows, upsert.num_rows, 0),
                                                         strict=True)]
    write, upsert_result, read = results
    catalog = laketide.load_catalog(warehouse=str(warehouse))
    catalog.create_database("bench", exist_ok=True)
    # Untimed warm-up on a tiny table, as for pypaimon: first-call imports and caches are not the workload.
    warmup = catalog.create_table("bench.warmup", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
    warmup.write(base.slice(0, WARMUP_ROWS))
    warmup.write(upsert.slice(0, WARMUP_ROWS))
    warmup.read()
    merges: list[Merged] = []
    for i in range(repeat):
        table = catalog.create_table(f"bench.pk{i}", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
        write.add(*timed(lambda table=table: table.write(base))[:2])
        upsert_result.add(*timed(lambda table=table: table.write(upsert))[:2])
        merges.append(timed_merge_read(read, table.read))
    result = odd_one_out(merges)
    read.rows = result.rows
    return results, result


def timed_merge_read(result: Result, read: Callable[[], pa.Table]) -> Merged:
    """Time one merge read into ``result``; its rows are checked untimed and dropped before the caller's next
    repetition, as the floors' are: an engine holding them while its next write runs faulted in that much fresh
    memory (~600 MB at 8M rows) in the timed write and upsert, which is not the workload."""
    got: list[pa.Table] = []
    result.add(*timed(lambda: got.append(read()))[:2])
    return Merged.of(got.pop())


def odd_one_out(merges: list[Merged]) -> Merged:
    """The first repetition's merge result, or the first later one that differs from it: checked against the
    floor, a wrong result in any repetition is caught."""
    return next((m for m in merges if m != merges[0]), merges[0])


def _laketide_or_error(base: pa.Table, upsert: pa.Table, *, repeat: int, warehouse: Path,
                       merged_rows: int) -> tuple[list[Result], Merged | None]:
    try:
        return laketide_pk(base, upsert, repeat=repeat, warehouse=warehouse)
    except Exception as e:  # noqa: BLE001 - an engine that cannot run is reported, not fatal
        error = f"{type(e).__name__}: {e}"[:300]
        rows = (base.num_rows, upsert.num_rows, merged_rows)
        return [Result(w, "laketide", n, error=error) for w, n in zip(PK_WORKLOADS, rows, strict=True)], None


def _floor(base: pa.Table, upsert: pa.Table, *, repeat: int, work: Path) -> list[Result]:
    merged_rows = dedupe_floor(base, upsert).num_rows
    base_path, upsert_path = work / "base.parquet", work / "upsert.parquet"
    results = [
        measure("pk write", FLOOR, base.num_rows,
                lambda: pq.write_table(base, base_path, compression="zstd"), repeat=repeat, floor=True),
        measure("pk upsert", FLOOR, upsert.num_rows,
                lambda: pq.write_table(upsert, upsert_path, compression="zstd"), repeat=repeat, floor=True),
    ]
    # The merge read's floor reads both files and dedupes them (the faster of hash / sort is the floor).
    results += fastest_floor("pk merge read", merged_rows, {
        HASH_READ_FLOOR: lambda: hash_dedupe(pq.read_table(base_path), pq.read_table(upsert_path), key=KEY),
        SORT_READ_FLOOR: lambda: dedupe_floor(pq.read_table(base_path), pq.read_table(upsert_path)),
    }, repeat=repeat)
    results.append(measure("pk merge read", FLOOR, merged_rows, lambda: dedupe_floor(base, upsert), repeat=repeat,
                           note=IN_MEMORY_NOTE))
    return results


def _check(results: list[Result], got: Merged | None, expected: Merged, *, engine: str) -> str | None:
    """Mark the engine's merge read as failed when it returned other rows than the floor; say why."""
    if got is None or got == expected:
        return None
    problem = f"wrong merge result: {got.rows} rows, checksum {got.checksum}; expected {expected}"
    for r in results:
        if r.engine == engine and r.workload == "pk merge read":
            r.error = problem[:300]
    return problem


def _ratios(results: list[Result]) -> list[str]:
    """laketide against each peer per workload, with the issue's target where it sets one."""
    medians = {(r.workload, r.engine): r.median for r in results if r.seconds and r.error is None}
    lines = []
    for workload in PK_WORKLOADS:
        ours = medians.get((workload, "laketide"))
        for peer in ("pypaimon", "pypaimon-rust", delta_peer.ENGINE, FLOOR, HASH_READ_FLOOR, SORT_READ_FLOOR):
            theirs = medians.get((workload, peer))
            if theirs is None:
                continue
            target = TARGETS.get(peer, {}).get(workload)
            if ours is None:
                lines.append(f"- {workload}: laketide vs {peer}: laketide did not run")
                continue
            verdict = "" if target is None else (
                f" (target >= {target:.2f}x: {'met' if theirs / ours >= target else 'NOT met'})")
            lines.append(f"- {workload}: laketide is {theirs / ours:.2f}x {peer}{verdict}")
    return lines


def deltalake_pk(base: pa.Table, upsert: pa.Table, *, repeat: int, work: Path) -> tuple[list[Result], Merged | None]:
    """deltalake: write the base batch to a fresh table, MERGE the upsert batch into it, read the result."""
    results = [Result(w, delta_peer.ENGINE, n, note=delta_peer.MERGE_NOTE if w != "pk write" else None)
               for w, n in zip(PK_WORKLOADS, (base.num_rows, upsert.num_rows, 0), strict=True)]
    write, upsert_result, read = results
    path = work / "delta-pk"
    merges: list[Merged] = []
    try:
        for _ in range(repeat):
            write.add(*timed(lambda: delta_peer.write(path, base))[:2])
            upsert_result.add(*timed(lambda: delta_peer.merge(path, upsert, key=KEY))[:2])
            merges.append(timed_merge_read(read, lambda: delta_peer.read(path)))
    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        for r in results:
            r.error, r.seconds = f"{type(e).__name__}: {e}"[:400], []
        return results, None
    result = odd_one_out(merges)
    read.rows = result.rows
    return results, result


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    """Every engine on the same data at one size; the merge result of each is checked against the floor's."""
    base, upsert = pk_data(rows)
    expected = Merged.of(dedupe_floor(base, upsert))
    out = SuiteRun()
    out.results = _floor(base, upsert, repeat=repeat, work=work)
    ours, merged = _laketide_or_error(base, upsert, repeat=repeat, warehouse=work / "wh", merged_rows=expected.rows)
    out.results += ours
    if (problem := _check(out.results, merged, expected, engine="laketide")) is not None:
        out.notes.append(f"laketide: {problem}")
    engine_rows = {"pk write": base.num_rows, "pk upsert": upsert.num_rows, "pk merge read": expected.rows}
    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, engine_rows, reason)
        else:
            delta, got = deltalake_pk(base, upsert, repeat=repeat, work=work)
            out.results += delta
            if (problem := _check(out.results, got, expected, engine=delta_peer.ENGINE)) is not None:
                out.notes.append(f"deltalake: {problem}")
            out.meta["deltalake"] = delta_peer.version()
    peer_runs: dict[str, PeerRun] = {}
    for runtime, skip in peers.pypaimon_runtimes(rows):
        engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
        if skip is not None:
            out.skip(engine, engine_rows, skip)
            continue
        peer = pypaimon_pk(base, upsert, runtime=runtime, primary_keys=[KEY], options=TABLE_OPTIONS,
                           repeat=repeat, merged_rows=expected.rows)
        peer_runs[engine] = peer
        out.results += peer.results
        got = None if peer.rows_read is None else Merged(rows=peer.rows_read, checksum=peer.checksum or 0)
        if (problem := _check(out.results, got, expected, engine=engine)) is not None:
            out.notes.append(f"{engine}: {problem}")
    out.meta |= {
        "expected_merge": {"rows": expected.rows, "checksum": expected.checksum},
        "laketide_merge": None if merged is None else {"rows": merged.rows, "checksum": merged.checksum},
        "table_options": TABLE_OPTIONS,
        "peers": {engine: {"rows_read": p.rows_read, "checksum": p.checksum, "paths": dict(p.paths),
                           "versions": dict(p.versions)} for engine, p in peer_runs.items()},
    }
    return out


def run(rows: int, *, repeat: int, out_dir: Path, peers: Peers | None = None) -> str:
    """One size, printed as Markdown; JSON as ``pk_table_<rows>.json`` under ``out_dir``."""
    work = Path(tempfile.mkdtemp(prefix="laketide-bench-pk-"))
    try:
        suite = collect(rows, repeat=repeat, work=work, peers=peers or Peers.floors_only())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    name = f"pk_table_{rows}"
    table = report(suite.results, floor_engine=FLOOR, out_dir=out_dir, name=name)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | suite.meta | {"notes": suite.notes}, indent=2))
    text = table + "\n\nlaketide against each engine (>1 = laketide faster):\n" + "\n".join(_ratios(suite.results))
    if suite.notes:
        text += "\n\n" + "\n".join(f"- {note}" for note in suite.notes)
    return text + f"\n\npeak RSS: {peak_rss_mb():.0f} MB\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000, help="base rows; the upsert is rows/4")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--no-peers", action="store_true", help="skip pypaimon (laketide and the floor only)")
    args = parser.parse_args(argv)
    print(run(args.rows, repeat=args.repeat, out_dir=args.out,
              peers=Peers.floors_only() if args.no_peers else Peers(pypaimon_max_rows=args.rows)))


if __name__ == "__main__":
    main()
