"""Issue 25's targets checked against one run's results, and the scale table (time at the largest size / the
next one), for the top of BENCHMARKS.md.

Every target states its ratio the way the issue does, and says which: a **time ratio** is the measured
engine's median / the reference's median (lower is better: "<= 1.05x of pq.write_table"); a **speed ratio** is
the reference's median / the measured engine's median (higher is better: "2x faster than pypaimon-rust",
"0.7x the speed of df.write.parquet"). Each is taken at the largest size that has both medians.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bench.harness import Result
from bench.planning import SPLITS

LAKETIDE = ("laketide", "laketide+spark")
FLOOR = "<floor>"  # the workload's floor (the first floor=True result of that workload and size)
NOT_MEASURED = "not measured in this run"
# The scale criterion: 4x the rows (2M -> 8M) in <= 4.4x the time, i.e. 1.1 x the rows ratio.
SCALE_SLACK = 1.1

Kind = Literal["time", "speed"]


@dataclass(frozen=True, slots=True)
class Target:
    """``engine`` on ``workload`` against ``reference`` (an engine, or FLOOR) on ``ref_workload``."""

    name: str
    workload: str
    engine: str
    reference: str
    kind: Kind
    limit: float
    ref_workload: str | None = None
    floor_name: str = "the floor"  # what the floor is, named in a row that has no measurement

    def meets(self, ratio: float) -> bool:
        return ratio <= self.limit if self.kind == "time" else ratio >= self.limit


TARGETS: tuple[Target, ...] = (
    Target("append write <= 1.05x of pq.write_table", "append write", "laketide", FLOOR, "time", 1.05,
           floor_name="pq.write_table"),
    Target("append read <= 1.1x of pq.read_table", "full read", "laketide", FLOOR, "time", 1.1,
           floor_name="pq.read_table"),
    Target("e2e write + upsert + read <= 0.85x of the floor (write, read both, dedupe: the faster of hash / sort)",
           "e2e write+upsert+read", "laketide", FLOOR, "time", 0.85, floor_name="pq write + read + dedupe"),
    Target("e2e ahead of deltalake by >= 15% (laketide time <= 0.85x of deltalake's)", "e2e write+upsert+read",
           "laketide", "deltalake", "time", 0.85),
    Target("PK merge read <= 1.0x of the read + dedupe floor (reading the two files is part of the floor)",
           "pk merge read", "laketide", FLOOR, "time", 1.0, floor_name="pq read + dedupe"),
    Target("point lookup >= 2x faster than pypaimon-rust", "point lookup", "laketide", "pypaimon-rust", "speed", 2.0),
    Target("1% key range >= 2x faster than pypaimon-rust", "1% key range", "laketide", "pypaimon-rust", "speed", 2.0),
    Target("dynamic-bucket write <= 1.2x of fixed buckets (write N + upsert N/4 timed together; default "
           "target-row-num vs the same table with 4 fixed buckets)", "dyn write+upsert", "laketide",
           "laketide fixed 4 buckets", "time", 1.2),
    Target("Spark PK upsert >= 0.7x the speed of df.write.parquet", "spark pk upsert write", "laketide+spark",
           FLOOR, "speed", 0.7, floor_name="df.write.parquet"),
    Target("Spark cross-partition upsert >= 0.35x the speed of df.write.parquet", "spark cross-partition upsert",
           "laketide+spark", FLOOR, "speed", 0.35, floor_name="df.write.parquet"),
    Target("Spark read of a compacted PK table >= 0.9x the speed of spark.read.parquet (lts.read(native=True))",
           "spark pk compacted read laketide", "native", "spark.parquet", "speed", 0.9,
           ref_workload="spark pk compacted read"),
    Target("commit latency at history 1000 <= 2x that at history 10", "commit @ 1000 snapshots", "laketide",
           "laketide", "time", 2.0, ref_workload="commit @ 10 snapshots"),
)


def _fmt_rows(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def _medians(results: Sequence[Result]) -> tuple[dict[tuple[int, str, str], float], dict[tuple[int, str], str]]:
    """(scale, workload, engine) -> median of every result that ran; (scale, workload) -> its floor engine."""
    medians: dict[tuple[int, str, str], float] = {}
    floors: dict[tuple[int, str], str] = {}
    for r in results:
        if not r.ok:
            continue
        medians.setdefault((r.scale, r.workload, r.engine), r.median)
        if r.floor:
            floors.setdefault((r.scale, r.workload), r.engine)
    return medians, floors


def _how(target: Target, reference: str) -> str:
    ours, ref = target.engine, reference
    if target.ref_workload is not None:
        ours, ref = f"{ours} on {target.workload}", f"{ref} on {target.ref_workload}"
    if target.kind == "time":
        return f"time ratio: {ours} median / {ref} median (lower is better)"
    return f"speed ratio: {ref} median / {ours} median (higher is better)"


def check(target: Target, results: Sequence[Result]) -> tuple[float, int, str] | None:
    """(ratio, size, reference engine) at the largest size measuring both sides, or None."""
    medians, floors = _medians(results)
    ref_workload = target.ref_workload or target.workload
    for scale in sorted({r.scale for r in results}, reverse=True):
        ours = medians.get((scale, target.workload, target.engine))
        reference = floors.get((scale, ref_workload)) if target.reference == FLOOR else target.reference
        theirs = None if reference is None else medians.get((scale, ref_workload, reference))
        if ours is None or theirs is None or reference is None or ours <= 0 or theirs <= 0:
            continue
        return (ours / theirs if target.kind == "time" else theirs / ours), scale, reference
    return None


@dataclass(frozen=True, slots=True)
class Growth:
    """One laketide workload's median at a smaller and a larger size (or file count) and their ratio."""

    workload: str
    engine: str
    small: float
    large: float
    floor_ratio: float | None

    @property
    def ratio(self) -> float:
        return self.large / self.small


def scale_growth(results: Sequence[Result], small: int, large: int) -> list[Growth]:
    """Every laketide workload measured at both sizes: its time ratio, and its floor's for comparison."""
    medians, floors = _medians(results)
    out = []
    for workload, engine in dict.fromkeys((r.workload, r.engine) for r in results if r.engine in LAKETIDE):
        a, b = medians.get((small, workload, engine)), medians.get((large, workload, engine))
        if not a or not b:
            continue
        fa, fb = floors.get((small, workload)), floors.get((large, workload))
        floor_a = medians.get((small, workload, fa)) if fa else None
        floor_b = medians.get((large, workload, fb)) if fb else None
        out.append(Growth(workload, engine, a, b, floor_b / floor_a if floor_a and floor_b else None))
    return out


def scale_table(results: Sequence[Result], sizes: Sequence[int]) -> list[str]:
    """The "Scale" table: laketide's time at the largest size / the next size, per workload present at both."""
    if len(sizes) < 2:
        return [f"Only one size in this run ({', '.join(map(_fmt_rows, sizes))}): {NOT_MEASURED}."]
    small, large = sorted(sizes)[-2:]
    limit = SCALE_SLACK * large / small
    growth = scale_growth(results, small, large)
    lines = [f"Time ratio = laketide's median at {_fmt_rows(large)} / at {_fmt_rows(small)} rows (rows x"
             f"{large / small:g}); the issue's criterion is <= {limit:.2f}x (1.1 x the rows ratio: 4.4x for "
             "8M/2M). The floor's own ratio is shown for comparison.", "",
             f"| workload | engine | {_fmt_rows(small)} s | {_fmt_rows(large)} s | {_fmt_rows(large)}/"
             f"{_fmt_rows(small)} | floor's ratio | <= {limit:.2f}x |", "|---|---|---|---|---|---|---|"]
    for g in growth:
        floor = "-" if g.floor_ratio is None else f"{g.floor_ratio:.2f}x"
        lines.append(f"| {g.workload} | {g.engine} | {g.small:.3f} | {g.large:.3f} | {g.ratio:.2f}x | {floor} | "
                     f"{'met' if g.ratio <= limit else 'missed'} |")
    if not growth:
        lines.append(f"| (no laketide workload at both sizes) | | | | | | {NOT_MEASURED} |")
    return lines


def _planning_row(results: Sequence[Result]) -> list[str]:
    points = sorted((r.scale, r.median) for r in results if r.ok and r.engine == "laketide"
                    and r.workload.startswith(SPLITS + " @"))
    name = "planning time proportional to live files (10x the files in <= 1.1 x 10x the time)"
    if len(points) < 2:
        return [f"| {name} | - | {NOT_MEASURED} | - | - |"]
    (few, t_few), (many, t_many) = points[0], points[-1]
    limit = SCALE_SLACK * many / few
    ratio = t_many / t_few
    return [f"| {name} | time ratio: scan().plan() median at {many:,} files / at {few:,} files (files x"
            f"{many / few:g}; {t_many / many * 1000:.4f} vs {t_few / few * 1000:.4f} s per 1k files) | "
            f"{ratio:.2f}x (<= {limit:.1f}x) | {many:,} files | {'met' if ratio <= limit else 'missed'} |"]


def _scale_row(results: Sequence[Result], sizes: Sequence[int]) -> list[str]:
    name = "8M / 2M rows <= 4.4x for every workload (1.1 x the rows ratio)"
    if len(sizes) < 2:
        return [f"| {name} | - | {NOT_MEASURED} (one size) | - | - |"]
    small, large = sorted(sizes)[-2:]
    growth = scale_growth(results, small, large)
    if not growth:
        return [f"| {name} | - | {NOT_MEASURED} | - | - |"]
    limit = SCALE_SLACK * large / small
    worst = max(growth, key=lambda g: g.ratio)
    missed = sum(g.ratio > limit for g in growth)
    return [f"| {name} | time ratio: laketide median at {_fmt_rows(large)} / at {_fmt_rows(small)}, worst "
            f"workload ({worst.workload}) | {worst.ratio:.2f}x (<= {limit:.2f}x; {missed} of {len(growth)} "
            f"workloads over) | {_fmt_rows(small)} -> {_fmt_rows(large)} | {'met' if missed == 0 else 'missed'} |"]


def targets_table(results: Sequence[Result], sizes: Sequence[int]) -> list[str]:
    """One row per issue-25 target: how the ratio is taken, its value at the largest size that has it, met?"""
    lines = ["| target | ratio as measured | measured | at | verdict |", "|---|---|---|---|---|"]
    for target in TARGETS:
        found = check(target, results)
        if found is None:
            reference = target.floor_name if target.reference == FLOOR else target.reference
            lines.append(f"| {target.name} | {_how(target, reference)} | {NOT_MEASURED} | - | - |")
            continue
        ratio, scale, reference = found
        bound = f"{'<=' if target.kind == 'time' else '>='} {target.limit:g}x"
        at = f"{scale:,} commits" if target.workload.startswith("commit @") else f"{_fmt_rows(scale)} rows"
        lines.append(f"| {target.name} | {_how(target, reference)} | {ratio:.2f}x ({bound}) | {at} | "
                     f"{'met' if target.meets(ratio) else 'missed'} |")
    return lines + _planning_row(results) + _scale_row(results, sizes)
