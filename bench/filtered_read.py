"""Filtered reads on the primary key of the merged table (base + upsert): one key, a 1% key range, 1000 keys.

- laketide: ``Table.read(where=...)``; key-range pruning of files and row groups, the key filter before the
  merge of what is left; the 1000 keys through ``Table.lookup`` (Paimon's local table query).
- floor: ``pyarrow.dataset`` with the same filter over the floor's merged Parquet file (sorted by key, written
  by ``pyarrow.parquet.write_table``: row-group statistics prune).
- deltalake: ``to_pyarrow_table(filters=...)`` (file skipping by Delta's stats) after write + MERGE.
- pypaimon / pypaimon-rust: a read builder with the predicate pushed down (the 1000 keys as ``is_in``).
Tables are prepared once, untimed; each repetition is one read. Every engine must return the same rows.
The point lookup and the 1% key range take a few milliseconds: every engine (and the floor) times them with more
repetitions than ``repeat`` (bench/harness.py ``measure(short=True)``; the same rule in pypaimon's driver).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.harness import Result, measure
from bench.peers import pypaimon_run
from bench.pk_table import KEY, TABLE_OPTIONS, Merged, dedupe_floor, pk_data
from bench.suite import Peers, SuiteRun
from laketide.scan.lookup_cache import drop_lookup_caches

POINT, RANGE, LOOKUP = "point lookup", "1% key range", "lookup 1000 keys"
SHORT = (POINT, RANGE)  # timed with more repetitions (harness.measure short=True)
# Table.lookup keeps the files it decodes as local lookup files (Paimon's local table query): the cold row drops
# them before every repetition (a first call, comparable with the peers' reads); the warm row is the same lookup
# repeated in one process, where the peers have no cache (they are listed under the cold row only).
LOOKUP_WARM = "lookup 1000 keys, warm cache"
LOOKUP_KEYS = 1000
FLOOR = "pyarrow.dataset filter"


def keys(rows: int) -> tuple[int, int, int]:
    """The looked-up key (an upserted one, so it lives in two runs) and the range [lo, hi) of 1% of the keys."""
    point = rows - rows // 16
    lo = rows // 2
    return point, lo, lo + max(rows // 100, 1)


def lookup_keys(rows: int) -> list[int]:
    """1000 keys spread over the whole key space (base, upserted and new keys), some of them absent."""
    space = rows + rows // 4 + LOOKUP_KEYS  # past the last written key: misses
    rng = np.random.default_rng(7)
    return sorted(int(k) for k in rng.choice(space, size=min(LOOKUP_KEYS, space), replace=False))


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    base, upsert = pk_data(rows)
    merged = dedupe_floor(base, upsert)
    point, lo, hi = keys(rows)
    batch = lookup_keys(rows)
    batch_filter = pc.field(KEY).isin(batch)
    expected = {POINT: Merged.of(merged.filter(pc.field(KEY) == point)),
                RANGE: Merged.of(merged.filter((pc.field(KEY) >= lo) & (pc.field(KEY) < hi))),
                LOOKUP: Merged.of(merged.filter(batch_filter))}
    expected[LOOKUP_WARM] = expected[LOOKUP]
    rows_out = {w: m.rows for w, m in expected.items()}
    out = SuiteRun(meta={"point_key": point, "range": [lo, hi]})
    got: dict[tuple[str, str], Merged] = {}

    def timed_read(workload: str, engine: str, fn: Callable[[], pa.Table], *, floor: bool = False,
                   setup: Callable[[], object] | None = None) -> Result:
        def call() -> None:
            got[(workload, engine)] = Merged.of(fn())

        return measure(workload, engine, rows_out[workload], call, repeat=repeat, floor=floor, setup=setup,
                       short=workload in SHORT)

    path = work / "merged.parquet"
    pq.write_table(merged, path, compression="zstd")
    dataset = ds.dataset(path, format="parquet")
    point_filter = pc.field(KEY) == point
    range_filter = (pc.field(KEY) >= lo) & (pc.field(KEY) < hi)
    out.results.append(timed_read(POINT, FLOOR, lambda: dataset.to_table(filter=point_filter), floor=True))
    out.results.append(timed_read(RANGE, FLOOR, lambda: dataset.to_table(filter=range_filter), floor=True))
    out.results.append(timed_read(LOOKUP, FLOOR, lambda: dataset.to_table(filter=batch_filter), floor=True))
    out.results.append(timed_read(LOOKUP_WARM, FLOOR, lambda: dataset.to_table(filter=batch_filter), floor=True))

    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    table = catalog.create_table("bench.filtered", base.schema, primary_key=[KEY], options=TABLE_OPTIONS)
    table.write(base)
    table.write(upsert)
    out.results.append(timed_read(POINT, "laketide", lambda: table.read(where=f"{KEY} = {point}")))
    out.results.append(timed_read(RANGE, "laketide", lambda: table.read(where=f"{KEY} >= {lo} AND {KEY} < {hi}")))
    out.results.append(timed_read(LOOKUP, "laketide", lambda: table.lookup(batch),
                                  setup=lambda: drop_lookup_caches(table.path)))
    table.lookup(batch)  # fills the cache, untimed
    out.results.append(timed_read(LOOKUP_WARM, "laketide", lambda: table.lookup(batch)))
    drop_lookup_caches(table.path)

    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, rows_out, reason)
        else:
            dpath = work / "delta"
            delta_peer.write(dpath, base)
            delta_peer.merge(dpath, upsert, key=KEY)
            out.results.append(timed_read(POINT, delta_peer.ENGINE,
                                          lambda: delta_peer.read(dpath, filters=[(KEY, "=", point)])))
            out.results.append(timed_read(RANGE, delta_peer.ENGINE,
                                          lambda: delta_peer.read(dpath, filters=[(KEY, ">=", lo), (KEY, "<", hi)])))
            out.results.append(timed_read(LOOKUP, delta_peer.ENGINE,
                                          lambda: delta_peer.read(dpath, filters=[(KEY, "in", batch)])))
            out.meta["deltalake"] = delta_peer.version()
    for runtime, skip in peers.pypaimon_runtimes(rows):
        engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
        if skip is not None:
            out.skip(engine, rows_out, skip)
            continue
        run = pypaimon_run("filtered", base, upsert, runtime=runtime, rows=rows_out, primary_keys=[KEY],
                           options=TABLE_OPTIONS, repeat=repeat,
                           extra={"point_key": point, "range_lo": lo, "range_hi": hi, "lookup_keys": batch})
        out.results += run.results
        for workload, (n, checksum) in run.reads.items():
            got[(workload, engine)] = Merged(rows=n, checksum=checksum)
        out.meta.setdefault("pypaimon", {})[runtime] = {"versions": dict(run.versions), "paths": dict(run.paths)}
    _check(out, got, expected)
    return out


def _check(out: SuiteRun, got: dict[tuple[str, str], Merged], expected: dict[str, Merged]) -> None:
    """A read that returned other rows than the floor's filter is an error, not a timing."""
    for r in out.results:
        seen = got.get((r.workload, r.engine))
        if r.ok and seen is not None and seen != expected[r.workload]:
            r.error = f"wrong rows: {seen}; expected {expected[r.workload]}"
            out.notes.append(f"{r.engine} {r.workload}: {r.error}")

