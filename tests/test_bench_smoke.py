"""A tiny run of the benchmarks, so the instruments cannot rot (timings are printed, never asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from bench import append_table, pk_table


def test_append_benchmark_smoke(tmp_path: Path) -> None:
    text = append_table.run(5_000, repeat=1, out_dir=tmp_path)
    payload = json.loads((tmp_path / "append_table_5000.json").read_text())
    engines = {(r["workload"], r["engine"]) for r in payload["results"] if r["error"] is None}
    assert engines == {("append write", "pyarrow.parquet"), ("full read", "pyarrow.parquet"),
                       ("append write", "laketide"), ("full read", "laketide")}
    assert "ratio to pyarrow.parquet" in text


def test_pk_data_upserts_half_existing_keys() -> None:
    base, upsert = pk_table.pk_data(1_000)
    assert upsert.num_rows == 250
    keys = set(upsert.column("order_id").to_pylist())
    assert len(keys & set(base.column("order_id").to_pylist())) == 125


def test_dedupe_floor_keeps_the_last_row_per_key() -> None:
    base = pa.table({"order_id": [3, 1, 2], "customer_id": [30, 10, 20]})
    upsert = pa.table({"order_id": [2, 4, 2], "customer_id": [21, 40, 22]})
    merged = pk_table.dedupe_floor(base, upsert)
    assert merged.to_pydict() == {"order_id": [1, 2, 3, 4], "customer_id": [10, 22, 30, 40]}


def test_pk_benchmark_smoke(tmp_path: Path) -> None:
    text = pk_table.run(4_000, repeat=1, out_dir=tmp_path, peers=False)
    payload = json.loads((tmp_path / "pk_table_4000.json").read_text())
    by_engine = {(r["workload"], r["engine"]): r for r in payload["results"]}
    floor_rows = {w: by_engine[(w, "pyarrow")]["rows"] for w in ("pk write", "pk upsert", "pk merge read")}
    assert floor_rows == {"pk write": 4_000, "pk upsert": 1_000, "pk merge read": 4_500}
    assert payload["expected_merge"]["rows"] == 4_500
    # Every laketide workload either ran or says why not; a wrong merge result is never reported as a timing.
    for workload in ("pk write", "pk upsert", "pk merge read"):
        result = by_engine[(workload, "laketide")]
        assert (result["error"] is None) == bool(result["seconds"])
    assert "ratio to pyarrow" in text
    assert not any(engine.startswith("pypaimon") for _, engine in by_engine)
