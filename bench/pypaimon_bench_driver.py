"""Time pypaimon's primary-key write, upsert and merge read from inside its own environment.

This script runs INSIDE the interop environment (.venv-pypaimon: pypaimon 2.1.0, pyarrow 19, optionally
pypaimon-rust), never in laketide's, so it imports neither laketide nor bench. It times its own work with
``time.perf_counter`` so interpreter start-up and the import of pypaimon are not counted. Usage::

    python pypaimon_bench_driver.py <request.json>

Request: ``warehouse`` (an empty directory), ``base_path`` and ``upsert_path`` (Arrow IPC files),
``primary_keys``, ``options`` (table options, e.g. ``{"bucket": "4"}``), ``runtime`` (``"python"`` or
``"rust"``: the latter sets pypaimon's ``write.native.enabled`` and ``read.native.enabled``), ``repeat``.

After an untimed warm-up on a tiny table, each repetition creates a fresh table (untimed), then times "pk write" (base batch: write + commit),
"pk upsert" (upsert batch: write + commit) and "pk merge read" (plan + read every split to one table).

Response (one JSON object on stdout): ``{"seconds": {workload: [s, ...]}, "rows_read", "checksum",
"paths": {workload: ["rust" | "python (<why>)", ...]}, "versions": {...}}``. ``paths`` says which
implementation really ran each workload, because pypaimon falls back from Rust to Python silently. On failure the exit code is 1 and stdout holds
``{"error", "message", "traceback"}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc

WARMUP_ROWS = 1000
RUST_OPTIONS = {"write.native.enabled": "true", "read.native.enabled": "true"}


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


def _read(table: Any) -> pa.Table:
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits)


def _checksum(result: pa.Table) -> int:
    # Sum of a non-key column over the merged rows: equal only if the same version of each key survived.
    return int(pc.sum(result.column("customer_id")).as_py() or 0)


def run(request: dict[str, Any]) -> dict[str, Any]:
    from pypaimon import CatalogFactory, Schema

    runtime = request["runtime"]
    if runtime not in ("python", "rust"):
        raise ValueError(f"unknown runtime {runtime!r}; expected 'python' or 'rust'")
    options = {str(k): str(v) for k, v in request["options"].items()}
    if runtime == "rust":
        options |= RUST_OPTIONS
    base = _read_ipc(request["base_path"])
    upsert = _read_ipc(request["upsert_path"])
    catalog = CatalogFactory.create({"warehouse": request["warehouse"]})
    catalog.create_database("bench", True)
    probe = _ReadPathProbe()
    seconds: dict[str, list[float]] = {"pk write": [], "pk upsert": [], "pk merge read": []}
    paths: dict[str, set[str]] = {workload: set() for workload in seconds}
    result = pa.table({})
    schema = Schema.from_pyarrow_schema(base.schema, primary_keys=list(request["primary_keys"]), options=options)

    def fresh_table(name: str) -> Any:
        catalog.create_table(f"bench.{name}", schema, False)
        return catalog.get_table(f"bench.{name}")

    # Untimed warm-up on a tiny table: lazy imports (pypaimon_rust's library among them) are start-up.
    warmup = fresh_table("warmup")
    _write(warmup, base.slice(0, WARMUP_ROWS))
    _write(warmup, upsert.slice(0, WARMUP_ROWS))
    _read(warmup)
    for i in range(int(request["repeat"])):
        table = fresh_table(f"pk{i}")
        for workload, data in (("pk write", base), ("pk upsert", upsert)):
            t0 = time.perf_counter()
            paths[workload].add(_write(table, data))
            seconds[workload].append(time.perf_counter() - t0)
        probe.reasons.clear()
        t0 = time.perf_counter()
        result = _read(table)
        seconds["pk merge read"].append(time.perf_counter() - t0)
        paths["pk merge read"] |= {f"python ({reason})" for reason in probe.reasons} or {"rust"}
    return {
        "seconds": seconds,
        "rows_read": result.num_rows,
        "checksum": _checksum(result),
        "paths": {workload: sorted(found) for workload, found in paths.items()},
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
