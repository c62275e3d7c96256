"""Timing, peak memory and result files for the benchmarks."""

from __future__ import annotations

import json
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Result:
    workload: str
    engine: str
    rows: int
    seconds: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.median if self.seconds else float("nan")


def measure(workload: str, engine: str, rows: int, fn: Callable[[], object], *, repeat: int = 3,
            setup: Callable[[], object] | None = None) -> Result:
    """Median of ``repeat`` runs of ``fn`` (``setup`` runs before each, untimed). A failure is recorded."""
    res = Result(workload, engine, rows)
    try:
        for _ in range(repeat):
            if setup is not None:
                setup()
            t0 = time.perf_counter()
            fn()
            res.seconds.append(time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - a peer that cannot run a workload is reported, not fatal
        res.error = f"{type(e).__name__}: {e}"[:300]
        res.seconds.clear()
    return res


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(results: list[Result], *, floor_engine: str, out_dir: Path, name: str) -> str:
    """Print and save a table with each engine's ratio to the floor of the same workload (>1 = faster)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    floors = {r.workload: r.median for r in results if r.engine == floor_engine and r.seconds}
    lines = [f"| workload | engine | rows | median s | min s | max s | rows/s | ratio to {floor_engine} |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.error:
            lines.append(f"| {r.workload} | {r.engine} | {r.rows} | - | - | - | - | cannot run: {r.error} |")
            continue
        ratio = floors.get(r.workload, float("nan")) / r.median
        lines.append(
            f"| {r.workload} | {r.engine} | {r.rows} | {r.median:.3f} | {min(r.seconds):.3f} | "
            f"{max(r.seconds):.3f} | {r.rows_per_s:,.0f} | {ratio:.2f}x |"
        )
    table = "\n".join(lines)
    payload = {
        "results": [asdict(r) | {"median": r.median, "rows_per_s": r.rows_per_s} for r in results],
        "peak_rss_mb": peak_rss_mb(),
    }
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2))
    return table
