"""A tiny run of the benchmark, so the instrument cannot rot (timings are printed, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import append_table


def test_append_benchmark_smoke(tmp_path: Path) -> None:
    text = append_table.run(5_000, repeat=1, out_dir=tmp_path)
    payload = json.loads((tmp_path / "append_table_5000.json").read_text())
    engines = {(r["workload"], r["engine"]) for r in payload["results"] if r["error"] is None}
    assert engines == {("append write", "pyarrow.parquet"), ("full read", "pyarrow.parquet"),
                       ("append write", "laketide"), ("full read", "laketide")}
    assert "ratio to pyarrow.parquet" in text
