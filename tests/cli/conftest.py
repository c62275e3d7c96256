"""The ``laketide`` command runs as a subprocess (``python -m laketide.cli``) on real tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: str | None = None) -> Run:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LAKETIDE_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "laketide.cli", *args], capture_output=True, text=True,
                       env=full_env, cwd=cwd, timeout=300)
    return Run(p.returncode, p.stdout, p.stderr)


def assert_one_line_error(r: Run, *needles: str, code: int = 1) -> None:
    assert r.code == code, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    assert r.err.startswith("laketide: error: ") or code == 2, r.err
    for n in needles:
        assert n in r.err, (n, r.err)


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def pk_table(warehouse: str) -> laketide.Table:
    """db.t: primary key (id, dt), partitioned by dt, 2 buckets, three commits of 20 rows."""
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())]),
                         primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    for i in range(3):
        ids = list(range(i * 10, i * 10 + 20))
        t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}"] * 20, "dt": ["a"] * 10 + ["b"] * 10}))
    return t
