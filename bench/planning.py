"""Planning time against the number of live data files: the same table shape at N/10 and N files.

The tables are built cheaply through laketide's own write path: an unpartitioned append table with
``target-file-size = 1 b`` (the rolling writer closes a file after every Arrow batch) and ``write-only`` (no
compaction), written in ``COMMITS`` commits of 10-row batches, so N live files take N small Parquet writes and
``COMMITS`` snapshots (several manifests, as a table grown by many commits has), not N commits.

Timed, on a table object loaded fresh from the catalog before every call, the two sizes alternating call by call
(see ``_time_planning``):

- ``plan: manifest entries``: the store scan of the latest snapshot (``store.new_scan().plan(snapshot)``):
  reading the manifest list and manifests, i.e. the live-file set; the process's manifest cache emptied before
  each call (laketide.meta.manifest_cache), so every manifest is read and decoded, as in a fresh process;
- ``plan: scan().plan() splits``: the full-table read plan a reader starts with (entries, splits), cache emptied;
- ``plan: scan().plan() splits, manifests cached``: the same plan again right after it, the decoded manifests
  kept: what every later plan of the table in the process pays.

The report gives seconds per 1,000 live files and the growth from N/10 to N files (the issue: planning time
proportional to live files, i.e. 10x the files in <= ~10x the time).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pyarrow as pa

import laketide
from bench.data import orders
from bench.harness import Result, timed
from bench.suite import Peers, SuiteRun
from laketide.meta.manifest_cache import MANIFEST_CACHE

COMMITS = 10
ROWS_PER_FILE = 10
OPTIONS = {"target-file-size": "1 b", "write-only": "true"}
ENTRIES = "plan: manifest entries"
SPLITS = "plan: scan().plan() splits"
CACHED_SPLITS = "plan: scan().plan() splits, manifests cached"
WORKLOADS = (ENTRIES, SPLITS, CACHED_SPLITS)


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
    out = SuiteRun(meta={"commits": COMMITS, "rows_per_file": ROWS_PER_FILE, "table_options": OPTIONS,
                         "samples": samples(repeat)})
    names = {files: f"bench.files{files}" for files in file_counts(rows)}
    for files, name in names.items():
        build(catalog, name, files)
    out.results += _time_planning(catalog, names, repeat=repeat)
    for files, name in names.items():
        live = _live_files(_load(catalog, name))
        if live != files:
            out.notes.append(f"the {files:,}-file table has {live:,} live files (expected {files:,})")
        out.meta[f"live_files_{files}"] = live
    out.notes += growth_notes(out.results)
    return out


def samples(repeat: int) -> int:
    """Timed plans per (kind, size): more than ``repeat``; one plan of 1k files takes a few tens of ms, and the
    growth ratio divides two medians, so each needs more samples than a median of 3 to stay put on a shared VM.
    Seven were not enough: on this VM a 1k-file plan's samples spread 0.038-0.107 s in one run, and the ratio of
    medians read 6.9x to 11.8x across runs of the same code (the minimums' ratio 9.5-10.4x); 15 cost ~10 s."""
    return 4 * repeat + 3


def _load(catalog: laketide.Catalog, name: str) -> laketide.Table:
    table = catalog.table(name)
    assert isinstance(table, laketide.Table)
    return table


def _live_files(table: laketide.Table) -> int:
    snapshot = table.snapshot_manager.latest_snapshot()
    assert snapshot is not None
    return len(table.store.new_scan().plan(snapshot))


def _time_planning(catalog: laketide.Catalog, names: dict[int, str], *, repeat: int) -> list[Result]:
    """Both planning kinds at both sizes, each timed call on a freshly loaded table. The sizes alternate call by
    call (small, large, small, ...), so a slow minute of the machine falls on both sides of the growth ratio."""
    def splits(table: laketide.Table) -> int:
        return len(table.scan().plan())

    kinds = {ENTRIES: _live_files, SPLITS: splits, CACHED_SPLITS: splits}  # the cached kind right after SPLITS
    results = {(kind, files): Result(workload(kind, files), "laketide", files, scale=files)
               for kind in kinds for files in names}
    for _ in range(samples(repeat)):
        for files, name in names.items():
            for kind, plan in kinds.items():
                result = results[(kind, files)]
                if result.error is not None:
                    continue
                if kind != CACHED_SPLITS:
                    MANIFEST_CACHE.clear()
                try:
                    seconds, peak, per_call = timed(partial(plan, _load(catalog, name)))
                except Exception as e:  # noqa: BLE001 - reported in the results, as measure() does
                    result.error, result.seconds = f"{type(e).__name__}: {e}"[:400], []
                    continue
                result.add(seconds, peak)
                if not per_call:
                    result.rss_scope = "process-wide"
    return list(results.values())


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
