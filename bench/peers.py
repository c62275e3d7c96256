"""pypaimon as a benchmark peer: it runs in its own environment (.venv-pypaimon, pyarrow<20) behind a subprocess.

The driver (``pypaimon_bench_driver.py``) times its own work, so interpreter start-up, imports and the
Arrow IPC hand-over are not counted; only pypaimon's write/commit and scan/read are. Its peak RSS is that of
the driver process, reset per workload like ours (see bench/harness.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.ipc

from bench.harness import Result

DRIVER = Path(__file__).with_name("pypaimon_bench_driver.py")
REPO = Path(__file__).resolve().parents[1]
PYPAIMON_PYTHON_ENV = "LAKETIDE_PYPAIMON_PYTHON"
TIMEOUT_SECONDS = 3600

Runtime = Literal["python", "rust"]
PK_WORKLOADS = ("pk write", "pk upsert", "pk merge read")


def engine_name(runtime: Runtime) -> str:
    return "pypaimon" if runtime == "python" else "pypaimon-rust"


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerRun:
    """One engine's timings plus what it read and which implementation really ran."""

    results: list[Result]
    rows_read: int | None = None
    checksum: int | None = None
    paths: Mapping[str, Sequence[str]] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)
    reads: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # workload -> (rows, checksum)


def pypaimon_python() -> Path | None:
    """The interop interpreter: $LAKETIDE_PYPAIMON_PYTHON, else the repository's .venv-pypaimon."""
    configured = os.environ.get(PYPAIMON_PYTHON_ENV)
    candidates = [Path(configured)] if configured else []
    candidates.append(REPO / ".venv-pypaimon" / "bin" / "python")
    return next((path for path in candidates if path.is_file()), None)


def _write_ipc(path: Path, table: pa.Table) -> None:
    # V5 metadata, no compression: a layout pyarrow 19 reads from pyarrow 26 without negotiation.
    options = pa.ipc.IpcWriteOptions(metadata_version=pa.ipc.MetadataVersion.V5, compression=None)
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema, options=options) as writer:
            writer.write_table(table)


def _failed(engine: str, rows: Mapping[str, int], error: str) -> PeerRun:
    return PeerRun(results=[Result(w, engine, n, error=error[:400]) for w, n in rows.items()])


def pypaimon_run(
    kind: str,
    base: pa.Table,
    upsert: pa.Table | None = None,
    *,
    runtime: Runtime,
    rows: Mapping[str, int],
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str],
    repeat: int,
    extra: Mapping[str, Any] | None = None,
) -> PeerRun:
    """Run one driver request of ``kind``; ``rows`` names the workloads it times (rows each processed).

    A peer that cannot run is reported per workload with the reason, never raised.
    """
    engine = engine_name(runtime)
    python = pypaimon_python()
    if python is None:
        return _failed(engine, rows, f"no interop environment (${PYPAIMON_PYTHON_ENV}, .venv-pypaimon): "
                                     "run `make interop-setup`")
    with tempfile.TemporaryDirectory(prefix="laketide-bench-pypaimon-") as tmp:
        work = Path(tmp)
        _write_ipc(work / "base.arrow", base)
        request: dict[str, Any] = {
            "kind": kind,
            "warehouse": str(work / "wh"),
            "base_path": str(work / "base.arrow"),
            "primary_keys": list(primary_keys),
            "options": dict(options),
            "runtime": runtime,
            "repeat": repeat,
            **(extra or {}),
        }
        if upsert is not None:
            _write_ipc(work / "upsert.arrow", upsert)
            request["upsert_path"] = str(work / "upsert.arrow")
        (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
        try:
            completed = subprocess.run([str(python), str(DRIVER), str(work / "request.json")],
                                       capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            return _failed(engine, rows, f"timed out after {TIMEOUT_SECONDS} s")
    try:
        response: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError:
        return _failed(engine, rows, f"driver exited {completed.returncode}: {completed.stderr[-300:]}")
    if "error" in response:
        return _failed(engine, rows, f"{response['error']}: {response['message']}")
    results = []
    for workload, n in rows.items():
        result = Result(workload, engine, n, seconds=list(response["seconds"].get(workload, [])),
                        peak_rss_mb=response.get("peak_rss_mb", {}).get(workload),
                        rss_scope="per workload (driver process)")
        ran = response["paths"].get(workload, [])
        if runtime == "rust" and ran != ["rust"]:
            # pypaimon falls back silently; Python timings must not pass for Rust ones (they stay in the JSON).
            result.error = f"pypaimon did not use Rust here: {', '.join(ran)}"[:400]
        results.append(result)
    reads = {w: (int(response["rows_read"][w]), int(response["checksum"].get(w, 0)))
             for w in response.get("rows_read", {})}
    first = next(iter(reads.values()), (None, None))
    return PeerRun(results=results, rows_read=first[0], checksum=first[1], paths=response["paths"],
                   versions=response["versions"], reads=reads)


def pypaimon_pk(
    base: pa.Table,
    upsert: pa.Table,
    *,
    runtime: Runtime,
    primary_keys: Sequence[str],
    options: Mapping[str, str],
    repeat: int,
    merged_rows: int,
) -> PeerRun:
    """Time pypaimon's PK write, upsert and merge read; a peer that cannot run is reported per workload."""
    rows = {"pk write": base.num_rows, "pk upsert": upsert.num_rows, "pk merge read": merged_rows}
    run = pypaimon_run("pk", base, upsert, runtime=runtime, rows=rows, primary_keys=primary_keys,
                       options=options, repeat=repeat)
    merge = run.reads.get("pk merge read")
    if merge is None:
        return run
    return PeerRun(results=run.results, rows_read=merge[0], checksum=merge[1], paths=run.paths,
                   versions=run.versions, reads=run.reads)
