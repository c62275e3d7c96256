"""Merge-read of primary-key tables with the partial-update and aggregation merge engines (two sorted runs).

The table holds the base batch and the upsert batch (half existing keys, half new), written untimed; each
repetition times one full read, which merges the runs with the engine:

- partial-update: the upsert leaves ``status`` and ``comment`` null, so existing keys keep their old values.
  Floor: ``concat`` + ``group_by(key, use_threads=False)`` taking the last non-null value of every column.
- aggregation: ``amount`` sum, ``customer_id`` max, the rest last non-null value (the engine's default).
  Floor: the same ``group_by`` with sum / max / last.
- deletion-vector read: a deduplicate table with ``deletion-vectors.enabled``, so each write's compaction
  deletes the older rows of its keys by vector and a read takes every file as it is, through its vector, with
  no merge. Floor: ``pyarrow.parquet.read_table`` of the same live rows written as one file per bucket (zstd),
  what the table would be with nothing left to delete (the pk suite's merge read is the same rows merged).
Engines: laketide, pypaimon and pypaimon-rust (pypaimon implements both engines; whether its Rust runtime does
is read from the path it took; it cannot write deletion vectors, so it reads laketide's table, which is also
a check that laketide's vectors are Paimon's). deltalake has no merge engines (a MERGE at write time is its
equivalent) and its deletion vectors are its own format's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.harness import measure
from bench.peers import PeerRun, engine_name, pypaimon_run
from bench.pk_table import BUCKETS, KEY, TABLE_OPTIONS, dedupe_floor, pk_data
from bench.suite import Peers, SuiteRun

PARTIAL, AGGREGATION = "partial-update read", "aggregation read"
DV_READ = "deletion-vector read"
FLOOR = "pyarrow group_by"
DV_FLOOR = "pyarrow.parquet read (live rows)"
DV_OPTIONS = TABLE_OPTIONS | {"deletion-vectors.enabled": "true"}
OPTIONS = {
    PARTIAL: TABLE_OPTIONS | {"merge-engine": "partial-update"},
    AGGREGATION: TABLE_OPTIONS | {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                                  "fields.customer_id.aggregate-function": "max"},
}
AGGREGATES = {PARTIAL: {}, AGGREGATION: {"amount": "sum", "customer_id": "max"}}
PARTIAL_NULLS = ("status", "comment")
REASON_DELTA = "Delta Lake has no merge engines: the equivalent is a MERGE with update expressions at write time"
REASON_DELTA_DV = "Delta Lake's deletion vectors are its own format's: not a Paimon table to read"


@dataclass(frozen=True, slots=True, kw_only=True)
class Digest:
    """Rows, sum of customer_id, nulls in status and the rounded sum of amount: which values each key kept."""

    rows: int
    customers: int
    null_status: int
    amount: float

    @staticmethod
    def of(table: pa.Table) -> Digest:
        return Digest(rows=table.num_rows, customers=int(pc.sum(table.column("customer_id")).as_py() or 0),
                      null_status=table.column("status").null_count,
                      amount=round(float(pc.sum(table.column("amount")).as_py() or 0.0), 1))


def inputs(rows: int) -> dict[str, tuple[pa.Table, pa.Table]]:
    base, upsert = pk_data(rows)
    partial = upsert
    for name in PARTIAL_NULLS:
        partial = partial.set_column(partial.schema.get_field_index(name), name, pa.nulls(upsert.num_rows, pa.string()))
    return {PARTIAL: (base, partial), AGGREGATION: (base, upsert)}


def group_by_floor(base: pa.Table, upsert: pa.Table, *, aggregates: dict[str, str]) -> pa.Table:
    """One row per key: ``aggregates`` per column, else the last non-null value (ordered, so single-threaded)."""
    values = [c for c in base.column_names if c != KEY]
    specs = [(c, aggregates.get(c, "last")) for c in values]
    grouped = pa.concat_tables([base, upsert]).group_by(KEY, use_threads=False).aggregate(specs)
    return pa.table({KEY: grouped.column(KEY), **{c: grouped.column(f"{c}_{fn}") for c, fn in specs}})


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    out = SuiteRun()
    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    for workload, (base, upsert) in inputs(rows).items():
        expected = Digest.of(group_by_floor(base, upsert, aggregates=AGGREGATES[workload]))
        seen: dict[str, Digest] = {}
        out.results.append(measure(workload, FLOOR, expected.rows,
                                   lambda base=base, upsert=upsert, workload=workload: group_by_floor(
                                       base, upsert, aggregates=AGGREGATES[workload]),
                                   repeat=repeat, floor=True))
        name = "bench." + workload.split()[0].replace("-", "_")
        table = catalog.create_table(name, base.schema, primary_key=[KEY], options=OPTIONS[workload])
        table.write(base)
        table.write(upsert)
        out.results.append(measure(workload, "laketide", expected.rows,
                                   lambda seen=seen, table=table: seen.__setitem__("laketide", Digest.of(table.read())),
                                   repeat=repeat))
        if peers.deltalake:
            out.skip(delta_peer.ENGINE, {workload: expected.rows}, REASON_DELTA)
        for engine, run in _pypaimon_runs(out, peers, rows, "merge_engine", base, upsert, workload=workload,
                                          expected=expected, options=OPTIONS[workload], repeat=repeat):
            seen_by_peer(run, engine, workload, expected, seen)
        _check(out, workload, expected, seen)
    _deletion_vector_read(out, rows, repeat=repeat, work=work, catalog=catalog, peers=peers)
    return out


def _deletion_vector_read(out: SuiteRun, rows: int, *, repeat: int, work: Path, catalog: laketide.Catalog,
                          peers: Peers) -> None:
    base, upsert = pk_data(rows)
    live = dedupe_floor(base, upsert)
    expected = Digest.of(live)
    floor_dir = work / "dv_floor"
    floor_dir.mkdir()
    step = -(-live.num_rows // BUCKETS)
    for b in range(BUCKETS):
        pq.write_table(live.slice(b * step, step), floor_dir / f"bucket-{b}.parquet", compression="zstd")
    del live
    out.results.append(measure(DV_READ, DV_FLOOR, expected.rows, lambda: pq.read_table(floor_dir),
                               repeat=repeat, floor=True))
    name = "bench.deletion_vectors"
    table = catalog.create_table(name, base.schema, primary_key=[KEY], options=DV_OPTIONS)
    table.write(base)
    table.write(upsert)
    latest = table.latest_snapshot()
    assert latest is not None
    vectors = sum(m.cardinality or 0 for e in table.file_scan().index_entries(latest)
                  if e.index_file.index_type == "DELETION_VECTORS" for m in e.index_file.dv_ranges or ())
    if vectors == 0:  # else the row would time something else than reading through vectors
        out.notes.append(f"laketide {DV_READ}: the table has no deletion vector")
    seen: dict[str, Digest] = {}
    out.results.append(measure(DV_READ, "laketide", expected.rows,
                               lambda: seen.__setitem__("laketide", Digest.of(table.read())), repeat=repeat))
    if peers.deltalake:
        out.skip(delta_peer.ENGINE, {DV_READ: expected.rows}, REASON_DELTA_DV)
    # The driver's warm-up table takes the base's first rows; it reads laketide's table, untouched.
    for engine, run in _pypaimon_runs(out, peers, rows, "read_table", base, None, workload=DV_READ,
                                      expected=expected, options=DV_OPTIONS, repeat=repeat,
                                      table=name, table_warehouse=str(work / "wh")):
        seen_by_peer(run, engine, DV_READ, expected, seen)
    _check(out, DV_READ, expected, seen)


def _pypaimon_runs(out: SuiteRun, peers: Peers, rows: int, kind: str, base: pa.Table, upsert: pa.Table | None, *,
                   workload: str, expected: Digest, options: dict[str, str], repeat: int,
                   **extra: str) -> Iterator[tuple[str, PeerRun]]:
    """Each pypaimon runtime's driver run of ``workload`` (results and facts go to ``out``); a skipped one is
    reported."""
    for runtime, skip in peers.pypaimon_runtimes(rows):
        engine = engine_name(runtime)
        if skip is not None:
            out.skip(engine, {workload: expected.rows}, skip)
            continue
        run = pypaimon_run(kind, base, upsert, runtime=runtime, rows={workload: expected.rows}, primary_keys=[KEY],
                           options=options, repeat=repeat, extra={"workload": workload, **extra})
        out.results += run.results
        out.meta.setdefault("pypaimon", {}).setdefault(runtime, {})[workload] = dict(run.paths)
        yield engine, run


def seen_by_peer(run: PeerRun, engine: str, workload: str, expected: Digest, seen: dict[str, Digest]) -> None:
    """What the peer read, as far as its driver reports it (rows and the customer_id sum)."""
    if workload in run.reads:
        n, customers = run.reads[workload]
        if (n, customers) != (expected.rows, expected.customers):
            seen[engine] = Digest(rows=n, customers=customers, null_status=-1, amount=float("nan"))
        else:
            seen[engine] = expected


def _check(out: SuiteRun, workload: str, expected: Digest, seen: dict[str, Digest]) -> None:
    """A timing whose engine read the wrong rows becomes an error (and a note)."""
    for r in out.results:
        if r.workload == workload and r.ok and (got := seen.get(r.engine)) is not None and got != expected:
            r.error = f"wrong merge result: {got}; expected {expected}"[:400]
            out.notes.append(f"{r.engine} {workload}: {r.error}")
