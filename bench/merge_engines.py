"""Merge-read of primary-key tables with the partial-update and aggregation merge engines (two sorted runs).

The table holds the base batch and the upsert batch (half existing keys, half new), written untimed; each
repetition times one full read, which merges the runs with the engine:

- partial-update: the upsert leaves ``status`` and ``comment`` null, so existing keys keep their old values.
  Floor: ``concat`` + ``group_by(key, use_threads=False)`` taking the last non-null value of every column.
- aggregation: ``amount`` sum, ``customer_id`` max, the rest last non-null value (the engine's default).
  Floor: the same ``group_by`` with sum / max / last.
Engines: laketide, pypaimon and pypaimon-rust (pypaimon implements both engines; whether its Rust runtime does
is read from the path it took). deltalake has no merge engines (a MERGE at write time is its equivalent).
Deletion-vector reads are listed as not applicable while laketide cannot write deletion vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import laketide
from bench import delta_peer
from bench.harness import cannot_run, measure
from bench.peers import pypaimon_run
from bench.pk_table import KEY, TABLE_OPTIONS, pk_data
from bench.suite import Peers, SuiteRun

PARTIAL, AGGREGATION = "partial-update read", "aggregation read"
DV_READ = "deletion-vector read"
FLOOR = "pyarrow group_by"
OPTIONS = {
    PARTIAL: TABLE_OPTIONS | {"merge-engine": "partial-update"},
    AGGREGATION: TABLE_OPTIONS | {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                                  "fields.customer_id.aggregate-function": "max"},
}
AGGREGATES = {PARTIAL: {}, AGGREGATION: {"amount": "sum", "customer_id": "max"}}
PARTIAL_NULLS = ("status", "comment")
REASON_DELTA = "Delta Lake has no merge engines: the equivalent is a MERGE with update expressions at write time"
REASON_DV = ("not applicable: laketide does not write deletion vectors yet ('deletion-vectors.enabled' only "
             "restricts it to full compactions); reading Java-written ones is covered by the compat tests")


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
        for runtime, skip in peers.pypaimon_runtimes(rows):
            engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
            if skip is not None:
                out.skip(engine, {workload: expected.rows}, skip)
                continue
            run = pypaimon_run("merge_engine", base, upsert, runtime=runtime, rows={workload: expected.rows},
                               primary_keys=[KEY], options=OPTIONS[workload], repeat=repeat,
                               extra={"workload": workload})
            out.results += run.results
            out.meta.setdefault("pypaimon", {}).setdefault(runtime, {})[workload] = dict(run.paths)
            if workload in run.reads:
                n, customers = run.reads[workload]
                if (n, customers) != (expected.rows, expected.customers):
                    seen[engine] = Digest(rows=n, customers=customers, null_status=-1, amount=float("nan"))
                else:
                    seen[engine] = expected
        for r in out.results:
            if r.workload == workload and r.ok and (got := seen.get(r.engine)) is not None and got != expected:
                r.error = f"wrong merge result: {got}; expected {expected}"[:400]
                out.notes.append(f"{r.engine} {workload}: {r.error}")
    out.results.append(cannot_run(DV_READ, "laketide", rows, REASON_DV))
    return out
