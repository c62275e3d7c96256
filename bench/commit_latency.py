"""Commit latency against table history: N small appends to one table, each one timed (write + commit).

The latency at history length k is the median (min / max) of the 5 commits that produced snapshots k-4..k, so
a format whose commit cost grows with history shows it. The floor writes the same small batch as one Parquet
file (no table metadata at all), the cost a commit cannot go below.

Engines: laketide (append table), deltalake (``mode="append"``; it checkpoints its log every 100 commits by
default), pypaimon and pypaimon-rust (unaware-bucket append tables; each commit is write + commit). Peers stop at
``Peers.max_peer_commits`` (500 by default) to keep the suite short; laketide runs the whole history.

The notes give each engine's latency at its longest history / latency at 10 (issue 25: laketide's at 1000 / at
10 <= 2x).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

import laketide
from bench import delta_peer
from bench.data import orders
from bench.harness import Result, measure, timed
from bench.peers import pypaimon_run
from bench.suite import Peers, SuiteRun

BATCH_ROWS = 100
WINDOW = 5
FLOOR = "pyarrow.parquet (one file)"


def workload(snapshots: int) -> str:
    return f"commit @ {snapshots} snapshots"


def points(commits: int) -> list[int]:
    return [k for k in (10, 100, 500, 1000) if k <= commits]


def _windows(latencies: list[float], engine: str, commits: int, *, peaks: list[float] | None = None) -> list[Result]:
    results = []
    for k in points(commits):
        window = latencies[max(k - WINDOW, 0):k]
        result = Result(workload(k), engine, BATCH_ROWS, seconds=list(window))
        if peaks:
            result.peak_rss_mb = max(peaks[max(k - WINDOW, 0):k])
        results.append(result)
    return results


def collect(commits: int, *, repeat: int, work: Path, peers: Peers) -> SuiteRun:
    """``commits`` appends per engine; ``repeat`` is unused (each point already has WINDOW samples)."""
    del repeat
    batch = orders(BATCH_ROWS)
    out = SuiteRun(meta={"batch_rows": BATCH_ROWS, "window": WINDOW, "commits": commits})
    counter = iter(range(1_000_000))
    floor = measure("floor", FLOOR, BATCH_ROWS,
                    lambda: pq.write_table(batch, work / f"f{next(counter)}.parquet", compression="zstd"),
                    repeat=WINDOW, floor=True)
    for k in points(commits):
        out.results.append(Result(workload(k), FLOOR, BATCH_ROWS, seconds=list(floor.seconds),
                                  peak_rss_mb=floor.peak_rss_mb, floor=True, error=floor.error))

    catalog = laketide.load_catalog(warehouse=str(work / "wh"))
    catalog.create_database("bench", exist_ok=True)
    table = catalog.create_table("bench.history", batch.schema)
    latencies, peaks = _history(lambda: table.write(batch), commits)
    out.results += _windows(latencies, "laketide", commits, peaks=peaks)
    out.meta["laketide_latencies"] = latencies

    peer_commits = min(commits, peers.max_peer_commits)
    out.meta["peer_commits"] = peer_commits
    if peers.deltalake:
        if (reason := peers.delta_skip()) is not None:
            out.skip(delta_peer.ENGINE, {workload(k): BATCH_ROWS for k in points(peer_commits)}, reason)
        else:
            path = work / "delta"

            def delta_commit() -> None:
                # The first commit creates the table (version 0), like laketide's first snapshot.
                (delta_peer.append if path.exists() else delta_peer.write)(path, batch)

            latencies, peaks = _history(delta_commit, peer_commits)
            out.results += _windows(latencies, delta_peer.ENGINE, peer_commits, peaks=peaks)
            out.meta["deltalake_latencies"] = latencies
            out.meta["deltalake"] = delta_peer.version()
    for runtime, _ in peers.pypaimon_runtimes(BATCH_ROWS):
        engine = "pypaimon" if runtime == "python" else "pypaimon-rust"
        run = pypaimon_run("commits", batch, runtime=runtime, rows={"commit": BATCH_ROWS}, options={"bucket": "-1"},
                           repeat=1, extra={"commits": peer_commits})
        result = run.results[0]
        if result.ok:
            out.results += _windows(result.seconds, engine, peer_commits)
            out.meta[f"{engine}_latencies"] = result.seconds
        else:
            out.skip(engine, {workload(k): BATCH_ROWS for k in points(peer_commits)}, result.error or "failed")
    out.notes += growth_notes(out.results)
    return out


def growth_notes(results: list[Result]) -> list[str]:
    """Per engine: median latency at its longest history / at 10 snapshots (a time ratio, lower is better)."""
    notes = []
    for engine in dict.fromkeys(r.engine for r in results if not r.floor):
        medians = {int(r.workload.split()[2]): r.median for r in results if r.engine == engine and r.ok}
        longest = max(medians, default=0)
        if 10 in medians and longest > 10:
            notes.append(f"{engine}: latency @ {longest} / latency @ 10 snapshots = "
                         f"{medians[longest] / medians[10]:.2f}x ({medians[longest] * 1000:.2f} ms vs "
                         f"{medians[10] * 1000:.2f} ms; issue 25's target for laketide @ 1000: <= 2x)")
    return notes


def _history(commit: Callable[[], object], commits: int) -> tuple[list[float], list[float]]:
    latencies: list[float] = []
    peaks: list[float] = []
    for _ in range(commits):
        seconds, peak, _ = timed(commit)
        latencies.append(seconds)
        peaks.append(peak or 0.0)
    return latencies, peaks
