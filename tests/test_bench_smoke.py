"""A tiny run of the benchmarks, so the instruments cannot rot (timings are printed, never asserted).

laketide and the floors only: no pypaimon, deltalake or Spark here (the full `make bench` runs those).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pyarrow as pa
import pytest

from bench import __main__ as bench_main
from bench import append_table, commit_latency, compaction, filtered_read, memory, merge_engines, pk_table, worker
from bench.harness import Result, measure
from bench.report import draw_chart, render
from bench.suite import Peers

FLOORS_ONLY = Peers.floors_only()


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


def test_group_by_floor_takes_last_non_null_and_aggregates() -> None:
    base = pa.table({"order_id": [1, 2], "customer_id": [10, 20], "status": ["a", "b"], "amount": [1.0, 2.0]})
    upsert = pa.table({"order_id": [2, 3], "customer_id": [5, 30], "status": [None, "c"], "amount": [4.0, 3.0]})
    partial = merge_engines.group_by_floor(base, upsert, aggregates={}).sort_by("order_id")
    assert partial.to_pydict() == {"order_id": [1, 2, 3], "customer_id": [10, 5, 30], "status": ["a", "b", "c"],
                                   "amount": [1.0, 4.0, 3.0]}
    agg = merge_engines.group_by_floor(base, upsert, aggregates={"amount": "sum", "customer_id": "max"})
    assert agg.sort_by("order_id").column("amount").to_pylist() == [1.0, 6.0, 3.0]
    assert agg.sort_by("order_id").column("customer_id").to_pylist() == [10, 20, 30]


def test_pk_benchmark_smoke(tmp_path: Path) -> None:
    text = pk_table.run(4_000, repeat=1, out_dir=tmp_path)
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
    assert not any(engine.startswith(("pypaimon", "deltalake")) for _, engine in by_engine)


@pytest.mark.parametrize("module", [compaction, filtered_read, merge_engines])
def test_pk_suites_run_laketide_against_their_floor(module: types.ModuleType, tmp_path: Path) -> None:
    suite = module.collect(3_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    assert suite.notes == []  # laketide returned the floor's rows everywhere
    ran = {(r.workload, r.engine) for r in suite.results if r.ok}
    workloads = {r.workload for r in suite.results if r.floor}
    assert workloads and all((w, "laketide") in ran for w in workloads)
    assert {r.engine for r in suite.results} <= {"laketide"} | {r.engine for r in suite.results if r.floor}
    # Peak RSS is recorded for every timing.
    assert all(r.peak_rss_mb is not None and r.peak_rss_mb > 0 for r in suite.results if r.ok)


def test_deletion_vector_reads_are_reported_not_dropped(tmp_path: Path) -> None:
    suite = merge_engines.collect(1_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    dv = [r for r in suite.results if r.workload == merge_engines.DV_READ]
    assert len(dv) == 1 and dv[0].error is not None and "not applicable" in dv[0].error


def test_commit_latency_reports_each_history_point(tmp_path: Path) -> None:
    suite = commit_latency.collect(12, repeat=3, work=tmp_path, peers=FLOORS_ONLY)
    laketide = [r for r in suite.results if r.engine == "laketide"]
    assert [r.workload for r in laketide] == ["commit @ 10 snapshots"]
    assert len(laketide[0].seconds) == commit_latency.WINDOW
    assert len(suite.meta["laketide_latencies"]) == 12


def test_memory_suite_reports_each_step_at_both_sizes(tmp_path: Path) -> None:
    suite = memory.collect(6_000, reference_rows=2_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    steps = [r for r in suite.results if r.workload.startswith(memory.WORKLOAD_PREFIX)]
    assert [(r.workload, r.scale) for r in steps] == [
        (memory.WORKLOAD_PREFIX + step, size) for size in (2_000, 6_000) for step in memory.STEPS]
    assert all(r.ok and r.peak_rss_mb and r.peak_rss_mb > 0 for r in steps), [r.error for r in steps]
    read = [r for r in steps if r.workload.endswith("read (streamed)")]
    assert [r.rows for r in read] == [2_250, 6_750]  # every key once: base + the upsert's new half
    assert len(suite.notes) == len(memory.STEPS) and all(" -> " in n for n in suite.notes)
    hashed = {(r.workload, r.engine) for r in suite.results if r.workload.startswith(memory.HASH_WORKLOAD) and r.ok}
    assert len(hashed) == 4
    assert not list(tmp_path.iterdir())  # the tables are removed after each size


def test_failures_are_results_with_a_reason() -> None:
    def boom() -> None:
        raise OSError("disk full")

    result = measure("w", "e", 10, boom, repeat=3)
    assert not result.ok and result.error == "OSError: disk full" and result.seconds == []


def test_spark_suite_without_run_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "bench.spark_bench", types.ModuleType("bench.spark_bench"))
    suite = worker.spark_suite(1_000, repeat=3, work=tmp_path)
    assert len(suite.results) == 1 and "no run() function" in (suite.results[0].error or "")


def test_spark_suite_maps_its_timings_to_results(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = types.ModuleType("bench.spark_bench")

    def run(rows: int, *, repeat: int, work: Path) -> dict[str, float]:
        return {"append read laketide s": 2.0, "append read spark.parquet s": 1.0, "ratio append read": 0.5}

    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.spark_bench", fake)
    suite = worker.spark_suite(1_000, repeat=3, work=tmp_path)
    got = {(r.workload, r.engine, r.floor, r.median) for r in suite.results}
    assert got == {("spark append read", "laketide+spark", False, 2.0),
                   ("spark append read", "spark.parquet", True, 1.0)}


def test_report_has_ratios_and_cannot_run_reasons(tmp_path: Path) -> None:
    results = [Result("w", "floor-engine", 100, seconds=[1.0, 1.0, 1.0], floor=True, scale=100),
               Result("w", "laketide", 100, seconds=[0.5, 0.5, 0.6], scale=100),
               Result("w", "deltalake", 100, seconds=[2.0, 2.0, 2.0], scale=100),
               Result("w", "pypaimon", 100, error="no driver", scale=100)]
    payloads = [{"suite": "append", "rows": 100, "results": [r.to_json() for r in results]}]
    text = render(payloads, sizes=[100], facts={"cores": "2"}, command="python -m bench", total_s=1.0, chart=None)
    assert "| w | 100 | 0.5000 | 2.00x | n/a | 4.00x |" in text  # vs floor, vs pypaimon (cannot run), vs deltalake
    assert "cannot run: no driver" in text
    pytest.importorskip("matplotlib")
    assert draw_chart(payloads, tmp_path / "ratios.png", scale=100) is not None
    assert (tmp_path / "ratios.png").read_bytes()[:4] == b"\x89PNG"


def test_entry_point_end_to_end(tmp_path: Path) -> None:
    markdown = tmp_path / "BENCHMARKS.md"
    bench_main.main(["--sizes", "1500,3000", "--no-peers", "--suites", "pk", "--out", str(tmp_path / "results"),
                     "--markdown", str(markdown)])
    payload = json.loads((tmp_path / "results" / "results.json").read_text())
    assert [(s["suite"], s["rows"]) for s in payload["suites"]] == [("pk", 1500), ("pk", 3000)]
    assert all("error" not in s for s in payload["suites"])
    text = markdown.read_text()
    assert "## Scaling" in text and "| pk merge read | laketide |" in text


def test_file_index_suite_returns_the_floors_rows(tmp_path: Path) -> None:
    from bench import file_index

    suite = file_index.collect(4_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    assert suite.notes == []  # every engine returned the floor's rows
    assert all(r.ok for r in suite.results)
    assert suite.meta[file_index.BLOOM]["files_skipped"] >= 15  # the bloom filters ruled out other files
    assert suite.meta[file_index.BITMAP]["skipped_by"].get("bitmap", 0) == file_index.FILES - 1
    assert set(file_index.ratios(suite)) >= {"write overhead of the three indexes"}
