"""Full compaction of a primary-key table holding the base batch and the upsert batch (two sorted runs).

- laketide: ``Table.compact(full=True)`` merges every bucket into one sorted run at the top level.
- floor: read both floor Parquet files, stable sort + dedupe by key (bench.pk_table.dedupe_floor), write one file.
- deltalake: ``optimize.compact()`` after write + MERGE. Delta's MERGE already rewrote the matched files, so this
  only bin-packs small files: less work than a merge, reported for what it is.
- pypaimon: cannot run, see REASON_PYPAIMON.
Each repetition prepares a fresh table (untimed) and times only the compaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.harness import Result, measure
from bench.pk_table import KEY, TABLE_OPTIONS, Merged, dedupe_floor, pk_data
from bench.suite import Peers, SuiteRun

WORKLOAD = "full compaction"
FLOOR = "pyarrow read+sort+dedupe+write"
REASON_PYPAIMON = ("pypaimon 2.1.0 has no compaction API (its commit rejects compact increments: "
                   "'Committing a compact increment requires a separate COMPACT snapshot'); pypaimon-rust 0.4.0 "
                   "exposes none either")


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    base, upsert = pk_data(rows)
    expected = Merged.of(dedupe_floor(base, upsert))
    out = SuiteRun()
    base_path, upsert_path, merged_path = work / "base.parquet", work / "upsert.parquet", work / "merged.parquet"
    pq.write_table(base, base_path, compression="zstd")
    pq.write_table(upsert, upsert_path, compression="zstd")

    def floor() -> None:
        merged = dedupe_floor(pq.read_table(base_path), pq.read_table(upsert_path))
        pq.write_table(merged, merged_path, compression="zstd")

    out.results.append(measure(WORKLOAD, FLOOR, expected.rows, floor, repeat=repeat, floor=True))

    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    counter = iter(range(10_000))
    tables: list[laketide.Table] = []

    def fresh_table() -> None:
        table = catalog.create_table(f"bench.c{next(counter)}", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
        table.write(base)
        table.write(upsert)
        tables[:] = [table]

    out.results.append(measure(WORKLOAD, "laketide", expected.rows, lambda: tables[0].compact(full=True),
                               repeat=repeat, setup=fresh_table))
    if tables and (got := Merged.of(tables[0].read())) != expected:
        out.notes.append(f"laketide: compacted table holds {got}, expected {expected}")

    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, {WORKLOAD: expected.rows}, reason)
        else:
            out.results.append(_deltalake(base, upsert, expected, repeat=repeat, work=work, notes=out.notes))
            out.meta["deltalake"] = delta_peer.version()
    if peers.pypaimon or peers.pypaimon_rust:
        for engine in ("pypaimon-rust", "pypaimon"):
            out.skip(engine, {WORKLOAD: expected.rows}, REASON_PYPAIMON)
    return out


def _deltalake(base: pa.Table, upsert: pa.Table, expected: Merged, *, repeat: int, work: Path,
               notes: list[str]) -> Result:
    path = work / "delta-compact"
    metrics: list[dict[str, Any]] = []

    def prepare() -> None:
        delta_peer.write(path, base)
        delta_peer.merge(path, upsert, key=KEY)

    result = measure(WORKLOAD, delta_peer.ENGINE, expected.rows,
                     lambda: metrics.append(delta_peer.compact(path)), repeat=repeat, setup=prepare,
                     note="optimize.compact(): bin-packing only, MERGE already deduplicated (copy-on-write)")
    if metrics:
        last = metrics[-1]
        result.note = (f"{result.note}; files removed/added per run: "
                       f"{last.get('numFilesRemoved')}/{last.get('numFilesAdded')}")
        if (got := Merged.of(delta_peer.read(path))) != expected:
            notes.append(f"deltalake: compacted table holds {got}, expected {expected}")
    return result
