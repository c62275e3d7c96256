"""File indexes (issue 17): selective reads of an append table of 20 files, with and without its indexes.

Data: ``rows`` rows written as 20 commits (20 data files); every file's min / max spans nearly the whole domain
of each filtered column, so column statistics prune nothing and only the indexes can:

- bloom: ``name = <one value>`` on a high-cardinality string (unique per row): the bloom filters skip the 19
  files that do not hold it;
- bitmap: ``category = <c>`` on a low-cardinality int (1000 values, 5 per file): one file holds ``c``;
- BSI: a 0.1% range on ``amount`` (uniform over [0, 1e9)): every file holds matching rows, BSI selects them.

Engines: ``laketide`` (indexes on), ``laketide, index off`` (the same table with ``file-index.read.enabled =
false``), and the floor, ``pyarrow.dataset`` filtering the same 20 Parquet files. Write overhead: the 20 commits
into a table with all three indexes against the same commits into a plain table. Every read must return the
floor's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

import laketide
from laketide.schema.changes import SetOption
from bench.harness import Result, measure
from bench.suite import Peers, SuiteRun

FILES = 20
CATEGORIES = 1000
PER_FILE = 5
FLOOR = "pyarrow.dataset filter"
ON, OFF = "laketide", "laketide, index off"
BLOOM, BITMAP, BSI = "bloom: name = x", "bitmap: category = c", "bsi: 0.1% amount range"
WRITE = "write: 20 commits (laketide: bloom + bitmap + bsi)"
PLAIN = "laketide, no index"
INDEX_OPTIONS = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bitmap.columns": "category",
    "file-index.bsi.columns": "amount",
}


def chunks(rows: int, *, seed: int = 17) -> list[pa.Table]:
    """The 20 commits' rows."""
    rng = np.random.default_rng(seed)
    per = max(rows // FILES, 1)
    cats = rng.permutation(CATEGORIES)[: FILES * PER_FILE].reshape(FILES, PER_FILE)
    # Each file also holds the extreme categories once, so min / max never prune the bitmap's filter.
    out = []
    for f in range(FILES):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        category = cats[f][rng.integers(0, PER_FILE, per)].astype(np.int32)
        category[:2] = (0, CATEGORIES - 1)
        names = pc.binary_join_element_wise("user-", pa.array(rng.permutation(ids) * 7919 % (rows * 13)).cast(
            pa.string()), "")
        amount = rng.integers(0, 1_000_000_000, per, dtype=np.int64)
        out.append(pa.table({"id": ids, "name": names, "category": category, "amount": amount}))
    return out


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:  # noqa: ARG001 - no peers here
    parts = chunks(rows)
    out = SuiteRun(meta={"files": FILES, "rows_per_file": parts[0].num_rows})
    cat = laketide.load_catalog(warehouse=str(work / "wh"))
    cat.create_database("bench", exist_ok=True)
    counter = iter(range(1_000_000))

    def write(options: dict[str, str]) -> Callable[[], None]:
        def run() -> None:
            t = cat.create_table(f"bench.w{next(counter)}", parts[0].schema, options=options)
            for p in parts:
                t.write(p)

        return run

    total = sum(p.num_rows for p in parts)
    out.results.append(measure(WRITE, PLAIN, total, write({}), repeat=repeat, floor=True))
    out.results.append(measure(WRITE, ON, total, write(INDEX_OPTIONS), repeat=repeat))

    table = cat.create_table("bench.indexed", parts[0].schema, options=INDEX_OPTIONS)
    for p in parts:
        table.write(p)
    files = sorted(str(p) for p in Path(table.path).rglob("*.parquet"))
    dataset = ds.dataset(files, format="parquet")
    target = parts[FILES // 2]
    name = target.column("name")[len(target) // 3].as_py()
    category = int(target.column("category")[len(target) // 3].as_py())
    lo = 500_000_000
    hi = lo + 1_000_000  # 0.1% of the amount domain
    filters = {
        BLOOM: (f"name = '{name}'", pc.field("name") == name),
        BITMAP: (f"category = {category}", pc.field("category") == category),
        BSI: (f"amount >= {lo} AND amount < {hi}", (pc.field("amount") >= lo) & (pc.field("amount") < hi)),
    }
    expected = {w: dataset.to_table(filter=f).num_rows for w, (_, f) in filters.items()}
    got: dict[tuple[str, str], int] = {}

    def timed(workload: str, engine: str, fn: Callable[[], pa.Table], *, floor: bool = False) -> Result:
        def call() -> None:
            got[(workload, engine)] = fn().num_rows

        return measure(workload, engine, expected[workload], call, repeat=repeat, floor=floor)

    for w, (where, expr) in filters.items():
        out.results.append(timed(w, FLOOR, lambda expr=expr: dataset.to_table(filter=expr), floor=True))
        out.results.append(timed(w, ON, lambda where=where: table.read(where=where)))
        report = table.scan(where=where).explain().file_index
        out.meta[w] = {"files_skipped": report.files_skipped, "rows_selected": report.rows_selected,
                       "skipped_by": report.skipped_by}
    off = table.alter(SetOption("file-index.read.enabled", "false"))
    for w, (where, _) in filters.items():
        out.results.append(timed(w, OFF, lambda where=where: off.read(where=where)))
    for r in out.results:
        seen = got.get((r.workload, r.engine))
        if r.ok and seen is not None and seen != expected[r.workload]:
            r.error = f"wrong rows: {seen}; expected {expected[r.workload]}"
            out.notes.append(f"{r.engine} {r.workload}: {r.error}")
    return out


def ratios(run: SuiteRun) -> dict[str, float]:
    """Speed-ups of the indexed read (index off / on, floor / on) and the write overhead (indexed / plain - 1)."""
    med = {(r.workload, r.engine): r.median for r in run.results if r.ok}
    out: dict[str, float] = {}
    for w in (BLOOM, BITMAP, BSI):
        if (w, ON) in med:
            out[f"{w}: index off / on"] = med[(w, OFF)] / med[(w, ON)]
            out[f"{w}: pyarrow.dataset / laketide"] = med[(w, FLOOR)] / med[(w, ON)]
    out["write overhead of the three indexes"] = med[(WRITE, ON)] / med[(WRITE, PLAIN)] - 1
    return out


if __name__ == "__main__":
    import argparse
    import json
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=int, nargs="?", default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="laketide-bench-file-index-") as tmp:
        result = collect(args.rows, repeat=args.repeat, work=Path(tmp), peers=Peers.floors_only())
    for r in result.results:
        print(f"{r.workload:34} {r.engine:24} {r.median:8.4f} s  {r.error or ''}")
    print(json.dumps({"ratios": ratios(result), "meta": result.meta, "notes": result.notes}, indent=1, default=str))
