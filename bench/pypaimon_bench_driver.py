"""Time pypaimon's workloads from inside its own environment.

This script runs INSIDE the interop environment (.venv-pypaimon: pypaimon 2.1.0, pyarrow 19, optionally
pypaimon-rust), never in laketide's, so it imports neither laketide nor bench. It times its own work with
``time.perf_counter`` so interpreter start-up and the import of pypaimon are not counted. Usage::

    python pypaimon_bench_driver.py <request.json>

Request: ``kind`` (below; ``"pk"`` when absent), ``warehouse`` (an empty directory), ``base_path`` and
``upsert_path`` (Arrow IPC files), ``primary_keys``, ``options`` (table options, e.g. ``{"bucket": "4"}``),
``runtime`` (``"python"`` or ``"rust"``: the latter sets pypaimon's ``write.native.enabled`` and
``read.native.enabled``), ``repeat``, plus what the kind needs. Kinds:

- ``pk``: per repetition a fresh table; times "pk write" (base), "pk upsert" (upsert), "pk merge read".
- ``append``: per repetition a fresh append table; times "append write" (base) and "full read".
- ``filtered``: one table with base + upsert (untimed); times "point lookup" (``point_key``) and
  "1% key range" (``range_lo`` <= key < ``range_hi``) reads with a predicate pushed to pypaimon, and "lookup 1000
  keys" (``lookup_keys``, an ``is_in`` predicate) when the request lists keys. The point lookup and the range are
  timed ``repeat`` times and then more while they take a few milliseconds (bench/harness.py's rule, SHORT_OP_*).
- ``merge_engine``: one table (``options`` carry the engine) with base + upsert (untimed); times ``workload``.
- ``read_table``: times ``workload``, a full read of the table ``table`` that another engine wrote in the
  warehouse ``table_warehouse`` (e.g. laketide's deletion vectors, which pypaimon cannot write).
- ``commits``: an append table; times each of ``commits`` small writes+commits of the base batch.

After an untimed warm-up on a tiny table, each timed call runs with the process's peak RSS reset
(/proc/self/clear_refs) so ``peak_rss_mb`` is per workload. Response (one JSON object on stdout):
``{"seconds": {workload: [s, ...]}, "peak_rss_mb": {workload: MiB}, "rows_read": {workload: n},
"checksum": {workload: n}, "paths": {workload: ["rust" | "python (<why>)", ...]}, "versions": {...}}``.
``paths`` says which implementation really ran each workload, because pypaimon falls back from Rust to Python
silently. On failure the exit code is 1 and stdout holds ``{"error", "message", "traceback"}``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc

WARMUP_ROWS = 1000
RUST_OPTIONS = {"write.native.enabled": "true", "read.native.enabled": "true"}
# The same values as bench/harness.py's (this script cannot import it): short workloads get more repetitions.
SHORT_OP_SECONDS = 0.05
SHORT_OP_TOTAL_SECONDS = 0.3
SHORT_OP_MAX_SAMPLES = 15


def _read_ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("pypaimon", "pypaimon-rust", "pyarrow"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


class _ReadPathProbe:
    """Record why pypaimon's reader fell back to Python (its fallback only logs at debug level)."""

    def __init__(self) -> None:
        from pypaimon.read.table_read import TableRead

        self.reasons: list[str] = []
        original = TableRead._native_fallback
        probe = self

        def recording(read: Any, reason: str, *args: Any, **kwargs: Any) -> Any:
            probe.reasons.append(reason)
            return original(read, reason, *args, **kwargs)

        TableRead._native_fallback = recording


def _write_path(table_write: Any) -> str:
    if type(table_write).__name__ != "NativeTableWrite":
        return f"python ({type(table_write).__name__})"
    # NativeTableWrite hands over to a Python writer for routes Rust lacks.
    return "python (native writer switched)" if table_write._python_writer is not None else "rust"


def _write(table: Any, data: pa.Table) -> str:
    builder = table.new_batch_write_builder()
    table_write = builder.new_write()
    table_commit = builder.new_commit()
    try:
        table_write.write_arrow(data)
        path = _write_path(table_write)
        table_commit.commit(table_write.prepare_commit())
    finally:
        table_write.close()
        table_commit.close()
    return path


def _read(table: Any, where: Callable[[Any], Any] | None = None) -> pa.Table:
    builder = table.new_read_builder()
    if where is not None:
        builder = builder.with_filter(where(builder.new_predicate_builder()))
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits)


def _checksum(result: pa.Table) -> int:
    # Sum of a non-key column over the merged rows: equal only if the same version of each key survived.
    return int(pc.sum(result.column("customer_id")).as_py() or 0)


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class _Recorder:
    """Seconds, per-workload peak RSS, rows and checksums, and which implementation ran."""

    def __init__(self, probe: _ReadPathProbe) -> None:
        self.probe = probe
        self.seconds: dict[str, list[float]] = {}
        self.peak: dict[str, float] = {}
        self.rows: dict[str, int] = {}
        self.checksum: dict[str, int] = {}
        self.paths: dict[str, set[str]] = {}

    def time(self, workload: str, fn: Callable[[], Any], *, reads: bool) -> Any:
        self.probe.reasons.clear()
        _reset_peak()
        t0 = time.perf_counter()
        out = fn()
        self.seconds.setdefault(workload, []).append(time.perf_counter() - t0)
        peak = _peak_mb()
        if peak is not None:
            self.peak[workload] = max(self.peak.get(workload, 0.0), peak)
        paths = self.paths.setdefault(workload, set())
        if reads:
            paths |= {f"python ({reason})" for reason in self.probe.reasons} or {"rust"}
            self.rows[workload] = out.num_rows
            self.checksum[workload] = _checksum(out) if "customer_id" in out.column_names else 0
        else:
            paths.add(out)
        return out


def _more_samples(seconds: list[float], *, repeat: int) -> bool:
    """bench/harness.py ``more_samples(short=True)``: ``repeat`` calls, then more while the median is under
    SHORT_OP_SECONDS, until the samples add up to SHORT_OP_TOTAL_SECONDS or number SHORT_OP_MAX_SAMPLES."""
    if len(seconds) < repeat:
        return True
    if len(seconds) >= SHORT_OP_MAX_SAMPLES:
        return False
    return statistics.median(seconds) < SHORT_OP_SECONDS and sum(seconds) < SHORT_OP_TOTAL_SECONDS


def run(request: dict[str, Any]) -> dict[str, Any]:
    from pypaimon import CatalogFactory, Schema

    kind = request.get("kind", "pk")
    runtime = request["runtime"]
    if runtime not in ("python", "rust"):
        raise ValueError(f"unknown runtime {runtime!r}; expected 'python' or 'rust'")
    options = {str(k): str(v) for k, v in request["options"].items()}
    if runtime == "rust":
        options |= RUST_OPTIONS
    base = _read_ipc(request["base_path"])
    upsert = _read_ipc(request["upsert_path"]) if request.get("upsert_path") else base.slice(0, 0)
    catalog = CatalogFactory.create({"warehouse": request["warehouse"]})
    catalog.create_database("bench", True)
    rec = _Recorder(_ReadPathProbe())
    primary_keys = list(request.get("primary_keys") or [])
    schema = Schema.from_pyarrow_schema(base.schema, primary_keys=primary_keys or None, options=options)
    repeat = int(request["repeat"])

    def fresh_table(name: str) -> Any:
        catalog.create_table(f"bench.{name}", schema, False)
        return catalog.get_table(f"bench.{name}")

    # Untimed warm-up on a tiny table: lazy imports (pypaimon_rust's library among them) are start-up.
    warmup = fresh_table("warmup")
    _write(warmup, base.slice(0, WARMUP_ROWS))
    if upsert.num_rows:
        _write(warmup, upsert.slice(0, WARMUP_ROWS))
    _read(warmup)
    if kind == "pk":
        for i in range(repeat):
            table = fresh_table(f"pk{i}")
            rec.time("pk write", lambda table=table: _write(table, base), reads=False)
            rec.time("pk upsert", lambda table=table: _write(table, upsert), reads=False)
            rec.time("pk merge read", lambda table=table: _read(table), reads=True)
    elif kind == "append":
        for i in range(repeat):
            table = fresh_table(f"append{i}")
            rec.time("append write", lambda table=table: _write(table, base), reads=False)
            rec.time("full read", lambda table=table: _read(table), reads=True)
    elif kind in ("filtered", "merge_engine"):
        table = fresh_table("t")
        _write(table, base)
        _write(table, upsert)
        if kind == "merge_engine":
            for _ in range(repeat):
                rec.time(request["workload"], lambda table=table: _read(table), reads=True)
        else:
            key = primary_keys[0]
            point, lo, hi = int(request["point_key"]), int(request["range_lo"]), int(request["range_hi"])
            batch = [int(k) for k in request.get("lookup_keys") or []]
            # The two short workloads get more repetitions, by the rule of bench/harness.py (SHORT_OP_*).
            while _more_samples(rec.seconds.get("point lookup", []), repeat=repeat):
                rec.time("point lookup", lambda table=table: _read(table, lambda pb: pb.equal(key, point)), reads=True)
            while _more_samples(rec.seconds.get("1% key range", []), repeat=repeat):
                rec.time("1% key range", lambda table=table: _read(table, lambda pb: pb.between(key, lo, hi - 1)),
                         reads=True)
            for _ in range(repeat if batch else 0):
                rec.time("lookup 1000 keys", lambda table=table: _read(table, lambda pb: pb.is_in(key, batch)),
                         reads=True)
    elif kind == "read_table":
        table = CatalogFactory.create({"warehouse": request["table_warehouse"]}).get_table(request["table"])
        if runtime == "rust":
            table = table.copy(RUST_OPTIONS)
        for _ in range(repeat):
            rec.time(request["workload"], lambda table=table: _read(table), reads=True)
    elif kind == "commits":
        table = fresh_table("history")
        for _ in range(int(request["commits"])):
            rec.time("commit", lambda table=table: _write(table, base), reads=False)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return {
        "seconds": rec.seconds,
        "peak_rss_mb": rec.peak,
        "rows_read": rec.rows,
        "checksum": rec.checksum,
        "paths": {workload: sorted(found) for workload, found in rec.paths.items()},
        "versions": _versions(),
    }


def main(argv: list[str]) -> int:
    """Run one request; the JSON response is the only thing written to the real stdout."""
    response_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        if len(argv) != 2:
            raise ValueError("usage: pypaimon_bench_driver.py <request.json>")
        response, code = run(json.loads(Path(argv[1]).read_text(encoding="utf-8"))), 0
    except Exception as e:  # noqa: BLE001 - every failure must reach the caller as JSON
        response = {"error": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}
        code = 1
    sys.stdout.flush()
    with os.fdopen(response_fd, "w", encoding="utf-8") as out:
        json.dump(response, out)
        out.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
