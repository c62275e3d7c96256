"""Timing, peak memory and result records for the benchmarks.

Peak RSS is measured per workload: before each timed call the process's high-water mark (``VmHWM``) is reset
through ``/proc/self/clear_refs`` (Linux >= 4.0) and read back after it, so a Result's ``peak_rss_mb`` is the
largest resident set of the process while that engine ran that workload. The number includes what the process
already held (the suite's input data), which is why each suite runs in a fresh subprocess (bench/worker.py).
Where the reset is not possible the process-wide peak since start is recorded and ``rss_scope`` says so.

Repetitions: ``measure`` runs ``repeat`` timed calls (3 by default). A workload that opts in with ``short=True``
(the filtered suite's point lookup and 1% key range, for every engine and the floor alike) keeps going while its
median is under ``SHORT_OP_SECONDS``: until its samples add up to ``SHORT_OP_TOTAL_SECONDS`` or it has
``SHORT_OP_MAX_SAMPLES`` of them, whichever comes first. A median of 3 calls of a few milliseconds swings with one
slow repetition on a shared machine; 15 samples do not. bench/pypaimon_bench_driver.py applies the same rule in
pypaimon's own process (it cannot import this module).
"""

from __future__ import annotations

import json
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_CLEAR_REFS = Path("/proc/self/clear_refs")
# Short workloads (``measure(..., short=True)``): more samples while the median is under SHORT_OP_SECONDS.
SHORT_OP_SECONDS = 0.05
SHORT_OP_TOTAL_SECONDS = 0.3
SHORT_OP_MAX_SAMPLES = 15
_STATUS = Path("/proc/self/status")


@dataclass
class Result:
    """One engine on one workload at one scale: every repetition's seconds, or why it could not run."""

    workload: str
    engine: str
    rows: int
    seconds: list[float] = field(default_factory=list)
    error: str | None = None
    peak_rss_mb: float | None = None
    rss_scope: str = "per workload"
    floor: bool = False
    note: str | None = None
    scale: int = 0  # the suite's size (base rows); ``rows`` is what this workload processed

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.median if self.seconds and self.median > 0 else float("nan")

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.seconds)

    def add(self, seconds: float, peak_mb: float | None) -> None:
        self.seconds.append(seconds)
        if peak_mb is not None:
            self.peak_rss_mb = max(self.peak_rss_mb or 0.0, peak_mb)

    def to_json(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["median"] = self.median if self.seconds else None
        payload["min"] = min(self.seconds) if self.seconds else None
        payload["max"] = max(self.seconds) if self.seconds else None
        payload["rows_per_s"] = self.rows_per_s if self.seconds else None
        return payload

    @staticmethod
    def from_json(payload: dict[str, Any]) -> Result:
        names = {f for f in Result.__dataclass_fields__}
        return Result(**{k: v for k, v in payload.items() if k in names})


def cannot_run(workload: str, engine: str, rows: int, reason: str, *, scale: int = 0) -> Result:
    return Result(workload, engine, rows, error=reason[:400], scale=scale)


def _reset_peak() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def _vm_hwm_mb() -> float | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """The process-wide peak resident set since start, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn: Callable[[], object]) -> tuple[float, float | None, bool]:
    """Run ``fn`` once: (seconds, peak RSS MiB during it, whether the peak is per call or process-wide)."""
    per_call = _reset_peak()
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    peak = _vm_hwm_mb() if per_call else None
    return seconds, peak if peak is not None else peak_rss_mb(), per_call


def more_samples(seconds: list[float], *, repeat: int, short: bool) -> bool:
    """Whether to time another call: ``repeat`` calls, and for a short workload more (see the module's doc)."""
    if len(seconds) < repeat:
        return True
    if not short or len(seconds) >= SHORT_OP_MAX_SAMPLES:
        return False
    return statistics.median(seconds) < SHORT_OP_SECONDS and sum(seconds) < SHORT_OP_TOTAL_SECONDS


def measure(workload: str, engine: str, rows: int, fn: Callable[[], object], *, repeat: int = 3,
            setup: Callable[[], object] | None = None, floor: bool = False, note: str | None = None,
            short: bool = False) -> Result:
    """Time ``repeat`` runs of ``fn`` (``setup`` runs before each, untimed); ``short``: more runs of a workload
    of a few milliseconds (see the module's doc). A failure is recorded, not raised."""
    res = Result(workload, engine, rows, floor=floor, note=note)
    try:
        while more_samples(res.seconds, repeat=repeat, short=short):
            if setup is not None:
                setup()
            seconds, peak, per_call = timed(fn)
            res.add(seconds, peak)
            if not per_call:
                res.rss_scope = "process-wide"
    except Exception as e:  # noqa: BLE001 - a peer that cannot run a workload is reported, not fatal
        res.error = f"{type(e).__name__}: {e}"[:400]
        res.seconds.clear()
    return res


def fmt_ratio(value: float | None) -> str:
    if value is None or value != value:  # NaN
        return "-"
    if value < 0.1:
        return f"{value:.3f}x"
    return f"{value:.2f}x" if value < 100 else f"{value:.0f}x"


def report(results: list[Result], *, floor_engine: str, out_dir: Path, name: str) -> str:
    """Save ``results`` as ``<name>.json`` and return a Markdown table with each ratio to the floor (>1 = faster)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    floors = {r.workload: r.median for r in results if r.engine == floor_engine and r.ok}
    lines = ["| workload | engine | rows | median s | min s | max s | rows/s | peak RSS MB "
             f"| ratio to {floor_engine} |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if not r.ok:
            lines.append(f"| {r.workload} | {r.engine} | {r.rows} | - | - | - | - | - | cannot run: {r.error} |")
            continue
        ratio = floors.get(r.workload, float("nan")) / r.median
        rss = "-" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f}"
        lines.append(
            f"| {r.workload} | {r.engine} | {r.rows} | {r.median:.3f} | {min(r.seconds):.3f} | "
            f"{max(r.seconds):.3f} | {r.rows_per_s:,.0f} | {rss} | {fmt_ratio(ratio)} |"
        )
    payload = {"results": [r.to_json() for r in results], "peak_rss_mb": peak_rss_mb()}
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=2))
    return "\n".join(lines)
