"""Planning time against the number of live data files: the same table shape at N/10 and N files.

The tables are built cheaply through laketide's own write path: an unpartitioned append table with
``target-file-size = 1 b`` (the rolling writer closes a file after every Arrow batch) and ``write-only`` (no
compaction), written in ``COMMITS`` commits of 10-row batches, so N live files take N small Parquet writes and
``COMMITS`` snapshots (several manifests, as a table grown by many commits has), not N commits.

Timed, on a table object loaded fresh from the catalog before every repetition (no warm manifest cache):

- ``plan: manifest entries``: the store scan of the latest snapshot (``store.new_scan().plan(snapshot)``):
  reading the manifest list and manifests, i.e. the live-file set;
- ``plan: scan().plan() splits``: the full-table read plan a reader starts with (entries, splits).

The report gives seconds per 1,000 live files and the growth from N/10 to N files (the issue: planning time
proportional to live files, i.e. 10x the files in <= ~10x the time).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import laketide
from bench.data import orders
from bench.harness import Result, measure
from bench.suite import Peers, SuiteRun

COMMITS = 10
ROWS_PER_FILE = 10
OPTIONS = {"target-file-size": "1 b", "write-only": "true"}
ENTRIES = "plan: manifest entries"
SPLITS = "plan: scan().plan() splits"
WORKLOADS = (ENTRIES, SPLITS)


def workload(kind: str, files: int) -> str:
    return f"{kind} @ {files:,} files"


def file_counts(files: int) -> tuple[int, int]:
    """The two table sizes of one run: a tenth of ``files`` and ``files``."""
    return max(files // 10, COMMITS), files


def build(catalog: laketide.Catalog, name: str, files: int) -> laketide.Table:
    """An append table with ``files`` live data files (``ROWS_PER_FILE`` rows each) in ``COMMITS`` commits."""
    table = catalog.create_table(name, orders(1).schema, options=OPTIONS)
    per_commit = -(-files // COMMITS)
    written = 0
    for i in range(COMMITS):
        n = min(per_commit, files - written)
        if n <= 0:
            break
        data = orders(n * ROWS_PER_FILE, seed=i, key_offset=written * ROWS_PER_FILE)
        table.write(pa.Table.from_batches(data.to_batches(max_chunksize=ROWS_PER_FILE)))
        written += n
    return table


def collect(rows: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    """``rows`` is the larger live-file count; the smaller is a tenth of it. laketide only (no peer, no floor)."""
    del peers
    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    out = SuiteRun(meta={"commits": COMMITS, "rows_per_file": ROWS_PER_FILE, "table_options": OPTIONS})
    for files in file_counts(rows):
        name = f"bench.files{files}"
        build(catalog, name, files)
        results, live = _time_planning(catalog, name, files, repeat=repeat)
        out.results += results
        if live != files:
            out.notes.append(f"the {files:,}-file table has {live:,} live files (expected {files:,})")
        out.meta[f"live_files_{files}"] = live
    out.notes += growth_notes(out.results)
    return out


def _time_planning(catalog: laketide.Catalog, name: str, files: int, *, repeat: int) -> tuple[list[Result], int]:
    """Both planning kinds on table ``name``, each repetition on a freshly loaded table; its live-file count."""
    tables: list[laketide.Table] = []

    def fresh() -> None:
        table = catalog.table(name)
        assert isinstance(table, laketide.Table)
        tables[:] = [table]

    def entries() -> int:
        table = tables[0]
        snapshot = table.snapshot_manager.latest_snapshot()
        assert snapshot is not None
        return len(table.store.new_scan().plan(snapshot))

    def splits() -> int:
        return len(tables[0].scan().plan())

    results = []
    for kind, fn in ((ENTRIES, entries), (SPLITS, splits)):
        result = measure(workload(kind, files), "laketide", files, fn, repeat=repeat, setup=fresh)
        result.scale = files
        results.append(result)
    fresh()
    return results, entries()


def growth_notes(results: list[Result]) -> list[str]:
    """Per planning kind: seconds per 1,000 files at each size and the large / small time ratio."""
    notes = []
    for kind in WORKLOADS:
        points = sorted((r.scale, r.median) for r in results if r.ok and r.workload.startswith(kind + " @"))
        if len(points) < 2:
            continue
        (small, t_small), (large, t_large) = points[0], points[-1]
        per_k = ", ".join(f"{t / n * 1000:.4f} s per 1k files at {n:,}" for n, t in points)
        notes.append(f"{kind}: {per_k}; {large:,} / {small:,} files: time x{t_large / t_small:.2f} for files "
                     f"x{large / small:g} (proportional: <= x{large / small * 1.1:g})")
    return notes
