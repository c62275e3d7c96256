"""BENCHMARKS.md and the ratio chart from the suites' JSON payloads (bench/worker.py's output)."""

from __future__ import annotations

import os
import platform
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.harness import Result, fmt_ratio
from bench.targets import scale_table, targets_table

LAKETIDE = ("laketide", "laketide+spark")
PEER_ORDER = ("pypaimon", "pypaimon-rust", "deltalake")
SUITE_TITLES = {
    "append": "Append table: write and full read",
    "pk": "Primary-key table (4 buckets): write, upsert (rows/4, half new keys), merge read of 2 sorted runs",
    "e2e": "End to end: write rows, upsert rows/4 (half new keys), read the merged rows, one timed call per "
           "repetition (the pk suite's table and data; rows = written + upserted + read)",
    "compaction": "Full compaction of the primary-key table (2 sorted runs per bucket -> 1)",
    "filtered": "Filtered reads on the primary key (merged table: base + upsert)",
    "merge_engines": "Merge engines: partial-update and aggregation merge reads; deletion vectors",
    "dynamic_bucket": "Dynamic buckets and cross-partition upsert: write rows + upsert rows/4, vs fixed buckets",
    "commit_latency": "Commit latency vs table history (100-row appends, one table)",
    "planning": "Planning time vs live data files (append table of 10-row files, built in 10 commits; size = "
                "live files)",
    "memory": "Peak memory (RSS, fresh process per step) of write, read and full compaction as the table grows; "
              "hashing long keys",
    "file_index": "File indexes (20-file append table): bloom / bitmap / BSI filters with the index on and off "
                  "(`file-index.read.enabled = false`), and the write overhead of the three indexes",
    "spark": "laketide through Spark (local[2]) vs Spark's native Parquet source and sink",
}
EXPLANATION = """\
**Floors** are the cheapest honest way to do the same job with no table format; the one a workload's
`vs floor` column uses is marked `(floor)` in its suite's table:
- append write / full read: `pq.write_table` / `pq.read_table` of the same rows;
- PK write / upsert: `pq.write_table` of the batch;
- **PK merge read**: read the two floor Parquet files + keep-last dedupe by key (the issue's "read + hash
  dedupe"), by hash (`group_by(key)` max of a row index + `take`) or by sort (numpy stable argsort, keep each
  key run's last row), whichever is faster in this run (bench/dedupe.py; the slower is listed as a reference).
  The in-memory sort dedupe with no file read (`pyarrow`) is listed too, as a second reference, not the floor;
- **e2e write + upsert + read**: `pq.write_table` of the base and of the upsert, read both, keep-last dedupe:
  the faster of hash / sort in this run, as for the merge read;
- compaction: read + sort + dedupe + write of one file; filtered reads: a `pyarrow.dataset` filter over the
  floor's merged, key-sorted Parquet file; merge engines: a single-threaded `pyarrow` `group_by` taking
  sum/max/last-non-null; deletion-vector read: `pq.read_table` of the live rows, one file per bucket (pypaimon
  reads laketide's table: it cannot write deletion vectors); commit latency: one Parquet file write per commit;
  dynamic buckets: the same laketide write into 4 fixed buckets; Spark rows: `spark.read.parquet` /
  `df.write.parquet`;
- planning has no floor: it is laketide's own time at N/10 and N live files.

**Peers**: pypaimon 2.1.0 (pure Python) and pypaimon with its Rust runtime (pypaimon-rust 0.4.0,
`write.native.enabled` / `read.native.enabled`) run in their own environment (`.venv-pypaimon`, pyarrow<20)
through a driver subprocess that times only its own calls; a workload where pypaimon silently fell back from
Rust to Python is reported as "cannot run" for pypaimon-rust (the Python timing is still in the JSON).
deltalake 1.6.6 runs in laketide's environment (it works with pyarrow 26); Delta has no primary keys, so its
upsert is a MERGE (copy-on-write: matched files are rewritten at write time), its "merge read" is a plain read
and its compaction only bin-packs files: same logical result, different work.

**Columns**: median, min and max of >= 3 repetitions (commit latency: the 5 commits ending at that history
length; Spark: >= 5 rounds after a warm-up round); rows/s = rows processed / median; **vs floor** = floor median /
engine median (> 1: faster than the floor); **laketide x** = engine median / laketide median (> 1: laketide is
faster than that engine). **Peak RSS** is the process's high-water mark while that engine ran that workload
(`VmHWM` reset through `/proc/self/clear_refs` before every timed call), measured in a fresh subprocess per
suite and size, so it includes the suite's input data held by the process; pypaimon's is its driver process's.
A workload an engine cannot run is listed with the reason. The memory suite instead runs each step (write,
upsert, streamed read, full compaction) in a process of its own and reports that process's peak RSS
(`getrusage`), the interpreter and its imports (~120 MB) included, at two table sizes and their ratio."""


def _results(payloads: Iterable[dict[str, Any]]) -> list[Result]:
    return [Result.from_json(r) for p in payloads for r in p.get("results", [])]


def _key(r: Result) -> tuple[int, str]:
    return r.scale, r.workload


def ratios(results: Sequence[Result]) -> dict[tuple[int, str], dict[str, Any]]:
    """Per (scale, workload): the floor's median, laketide's median, and every engine's median."""
    out: dict[tuple[int, str], dict[str, Any]] = defaultdict(lambda: {"floor": None, "laketide": None, "engines": {}})
    for r in results:
        if not r.ok:
            continue
        entry = out[_key(r)]
        if r.floor and entry["floor"] is None:
            entry["floor"] = r.median
        if r.engine in LAKETIDE:
            entry["laketide"] = r.median
        entry["engines"][r.engine] = r.median
    return out


def _fmt_rows(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def _suite_table(results: list[Result], table: dict[tuple[int, str], dict[str, Any]], *, millis: bool) -> list[str]:
    unit = "ms" if millis else "s"
    scale = 1000.0 if millis else 1.0
    lines = [f"| size | workload | engine | rows | median {unit} | min-max {unit} | rows/s | peak RSS MB | vs floor | "
             "laketide x |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        size = _fmt_rows(r.scale)
        if not r.ok:
            lines.append(f"| {size} | {r.workload} | {r.engine} | {r.rows:,} | - | - | - | - | - | "
                         f"cannot run: {r.error} |")
            continue
        entry = table[_key(r)]
        vs_floor = None if entry["floor"] is None else entry["floor"] / r.median
        ours = entry["laketide"]
        vs_ours = None if ours is None or r.engine in LAKETIDE else r.median / ours
        rss = "-" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f}"
        engine = f"{r.engine} (floor)" if r.floor else r.engine
        note = f" <sub>{r.note}</sub>" if r.note else ""
        lines.append(
            f"| {size} | {r.workload} | {engine}{note} | {r.rows:,} | {r.median * scale:.3f} | "
            f"{min(r.seconds) * scale:.3f}-{max(r.seconds) * scale:.3f} | {r.rows_per_s:,.0f} | {rss} | "
            f"{fmt_ratio(vs_floor)} | {fmt_ratio(vs_ours)} |")
    return lines


def headline(results: list[Result], *, scale: int) -> list[str]:
    """laketide against the floor and each peer, per workload, at ``scale``."""
    table = ratios(results)
    keys = list(dict.fromkeys(_key(r) for r in results if r.scale == scale))
    engines = [e for e in PEER_ORDER if any(r.engine == e for r in results)]
    lines = ["| workload | rows | laketide median s | vs floor | " + " | ".join(f"vs {e}" for e in engines) + " |",
             "|---|---|---|---|" + "---|" * len(engines)]
    for key in keys:
        entry = table.get(key)
        if entry is None or entry["laketide"] is None:
            continue
        ours = entry["laketide"]
        floor = fmt_ratio(entry["floor"] / ours) if entry["floor"] else "-"
        cells = [fmt_ratio(entry["engines"][e] / ours) if e in entry["engines"] else "n/a" for e in engines]
        lines.append(f"| {key[1]} | {_fmt_rows(key[0])} | {ours:.4f} | {floor} | " + " | ".join(cells) + " |")
    return lines


def scaling(results: list[Result], *, suites: dict[str, list[Result]], sizes: Sequence[int]) -> list[str]:
    """Median seconds of every engine at each size for the core suites, and the growth from first to last."""
    if len(sizes) < 2:
        return []
    lines = ["| workload | engine | " + " | ".join(_fmt_rows(s) for s in sizes) +
             f" | growth ({_fmt_rows(sizes[0])} -> {_fmt_rows(sizes[-1])}, rows x{sizes[-1] / sizes[0]:g}) |",
             "|---|---|" + "---|" * (len(sizes) + 1)]
    for suite in ("append", "pk", "e2e", "compaction", "filtered", "merge_engines"):
        rows = suites.get(suite, [])
        pairs = list(dict.fromkeys((r.workload, r.engine) for r in rows))
        for workload, engine in pairs:
            medians = {r.scale: r.median for r in rows if (r.workload, r.engine) == (workload, engine) and r.ok}
            if not medians:
                continue
            cells = [f"{medians[s]:.3f}" if s in medians else "-" for s in sizes]
            first, last = medians.get(sizes[0]), medians.get(sizes[-1])
            growth = f"x{last / first:.1f}" if first and last else "-"
            lines.append(f"| {workload} | {engine} | " + " | ".join(cells) + f" | {growth} |")
    return lines


def machine_facts() -> dict[str, str]:
    def pkg(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = "unknown"
    try:
        kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal")))
        memory = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    # A run from an exported snapshot (no .git) names its source through this variable.
    commit = os.environ.get("LAKETIDE_BENCH_SOURCE") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False,
        cwd=Path(__file__).parent).stdout.strip() or "unknown"
    return {
        "cpu": cpu, "cores": str(os.cpu_count()), "memory": memory, "os": platform.platform(),
        "python": platform.python_version(), "laketide commit": commit,
        **{name: pkg(name) for name in ("pyarrow", "numpy", "deltalake", "matplotlib", "pyspark")},
        # mimalloc (pyarrow's default) or what ARROW_DEFAULT_MEMORY_POOL chose: it moves the 8M times (see the
        # scale notes in bench/memory_warmth.py).
        "arrow memory pool": pa.default_memory_pool().backend_name,
    }


def render(payloads: list[dict[str, Any]], *, sizes: Sequence[int], facts: dict[str, str], command: str,
           total_s: float, chart: str | None) -> str:
    results = _results(payloads)
    by_suite: dict[str, list[Result]] = defaultdict(list)
    for p in payloads:
        by_suite[p["suite"]] += [Result.from_json(r) for r in p.get("results", [])]
    table = ratios(results)
    main_size = max(sizes)
    text = ["# laketide benchmarks", "",
            f"Generated by `{command}` in {total_s:.0f} s. Do not edit by hand: rerun `make bench`.", ""]
    text += ["## Targets (issue 25)", "",
             "Each target as the issue states it, from this run's medians, at the largest size that has both "
             "sides. A **time ratio** is the measured engine's time / the reference's (lower is better); a "
             "**speed ratio** is the reference's time / the measured engine's (higher is better: \"2x faster\", "
             "\"0.7x the speed\"). Missing measurements say so.", ""]
    text += targets_table(results, sizes)
    text += ["", "## Scale", ""] + scale_table(results, sizes) + [""]
    text += ["## Machine", "", "| fact | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in facts.items()]
    versions = sorted({f"{k} {v}" for p in payloads for rt in p.get("meta", {}).get("pypaimon", {}).values()
                       if isinstance(rt, dict) for k, v in rt.get("versions", {}).items()})
    if versions:
        text.append(f"| peer environment | {', '.join(versions)} |")
    text += ["", "## How to read this", "", EXPLANATION, ""]
    text += ["## laketide against the floor and each peer", "",
             "Each cell: the other engine's median / laketide's (> 1: laketide is faster); `vs floor` likewise; "
             "n/a: that engine could not run it (reason in the suite's table).", ""]
    for size in sorted(sizes, reverse=True):
        text += [f"### {_fmt_rows(size)} rows", ""] + headline(results, scale=size) + [""]
    if chart:
        text += [f"![laketide's speed-up over the floor and each peer at {_fmt_rows(main_size)} rows, and commit "
                 f"latency vs history]({chart})"]
    text += ["", "## Scaling: median seconds at each size", ""]
    text += scaling(results, suites=by_suite, sizes=sizes)
    failed = [p for p in payloads if "error" in p]
    for suite in SUITE_TITLES:
        suite_payloads = [p for p in payloads if p["suite"] == suite]
        if not suite_payloads:
            continue
        text += ["", f"## {SUITE_TITLES[suite]}", ""]
        text += _suite_table(by_suite[suite], table, millis=suite == "commit_latency")
        notes = [n for p in suite_payloads for n in p.get("notes", [])]
        notes += [f"suite failed at {p['rows']:,} rows: {p['error']}" for p in suite_payloads if "error" in p]
        if notes:
            text += [""] + [f"- {n}" for n in dict.fromkeys(notes)]
    if failed:
        text += ["", "## Failed suites", ""] + [f"- {p['suite']} at {p['rows']:,}: {p['error']}" for p in failed]
    return "\n".join(text) + "\n"


def draw_chart(payloads: list[dict[str, Any]], path: Path, *, scale: int) -> str | None:
    """A PNG: laketide's speed-up over the floor and each peer per workload, and commit latency vs history."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    results = _results(payloads)
    table = ratios(results)
    workloads = [w for (s, w), e in table.items() if s == scale and e["laketide"] is not None
                 and not w.startswith("commit @")]
    others = ["floor", *[e for e in PEER_ORDER if any(r.engine == e and r.ok for r in results)]]
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(15, 6.5), gridspec_kw={"width_ratios": [2.2, 1]})
    height = 0.8 / max(len(others), 1)
    for i, other in enumerate(others):
        values = []
        for w in workloads:
            entry = table[(scale, w)]
            theirs = entry["floor"] if other == "floor" else entry["engines"].get(other)
            values.append(theirs / entry["laketide"] if theirs else float("nan"))
        positions = [j + i * height for j in range(len(workloads))]
        bars.barh(positions, values, height=height, label=other)
    bars.set_yticks([j + 0.4 - height / 2 for j in range(len(workloads))], workloads)
    bars.invert_yaxis()
    bars.set_xscale("log")
    bars.axvline(1.0, color="black", linewidth=0.8)
    bars.set_xlabel("other engine's median / laketide's (log; > 1 = laketide faster)")
    bars.set_title(f"laketide vs floor and peers, {_fmt_rows(scale)} rows (missing bar: cannot run)")
    bars.legend(loc="lower right", fontsize=8)
    commits = [r for r in results if r.workload.startswith("commit @") and r.ok]
    for engine in dict.fromkeys(r.engine for r in commits):
        points = sorted((int(r.workload.split()[2]), r.median * 1000) for r in commits if r.engine == engine)
        lines.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=engine)
    lines.set_xscale("log")
    lines.set_xlabel("snapshots in the table's history")
    lines.set_ylabel("commit latency, median ms")
    lines.set_title("commit latency vs history")
    if commits:
        lines.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
