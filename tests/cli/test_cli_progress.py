"""The import progress bar: drawn on a terminal, absent from pipes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import laketide
from tests.cli.conftest import run_cli


def _inputs(tmp_path: Path, warehouse: str) -> list[str]:
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    paths = []
    for i in range(3):
        p = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"id": pa.array(range(1000), pa.int64()), "v": ["x"] * 1000}), p)
        paths.append(str(p))
    return paths


def _run_in_pty(args: list[str]) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal; everything it drew, decoded."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "laketide.cli", *args], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    paths = _inputs(tmp_path, warehouse)
    code, screen = _run_in_pty(["--warehouse", warehouse, "write", "db.t", *paths])
    assert code == 0, screen
    assert "importing" in screen and "3/3 files" in screen and "3,000 rows" in screen
    assert "━" in screen  # the bar itself
    piped = run_cli("--warehouse", warehouse, "write", "db.t", *paths)
    assert piped.code == 0 and piped.err == ""
    assert "importing" not in piped.out and "━" not in piped.out
    assert piped.out.startswith("wrote 3,000 rows from 3 files")
    assert laketide.load_catalog(warehouse).table("db.t").read().num_rows == 6000
