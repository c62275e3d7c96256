"""A tiny run of the benchmarks, so the instruments cannot rot (timings are printed, never asserted).

laketide and the floors only: no pypaimon or Spark here (the full `make bench` runs those); deltalake only in the
commit-latency peer-cap test, skipped when it is not installed.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pyarrow as pa
import pytest

from bench import __main__ as bench_main
from bench import (
    append_table,
    commit_latency,
    compaction,
    dedupe,
    e2e,
    filtered_read,
    memory,
    memory_warmth,
    merge_engines,
    pk_table,
    planning,
    rounds,
    targets,
    worker,
)
from bench import harness
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


def test_deletion_vector_read_is_timed_against_the_live_rows(tmp_path: Path) -> None:
    suite = merge_engines.collect(1_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    dv = {r.engine: r for r in suite.results if r.workload == merge_engines.DV_READ}
    assert set(dv) == {"laketide", merge_engines.DV_FLOOR} and dv[merge_engines.DV_FLOOR].floor
    assert all(r.ok and r.rows == 1_125 for r in dv.values())  # every key once: base + the upsert's new half
    assert suite.notes == []  # the table had vectors, and laketide read the live rows


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


def test_short_workloads_take_more_samples_by_one_rule() -> None:
    calls: list[int] = []
    quick = measure("w", "e", 1, lambda: calls.append(1), repeat=3, short=True)
    assert len(quick.seconds) == harness.SHORT_OP_MAX_SAMPLES == len(calls)  # microseconds: the sample cap
    assert len(measure("w", "e", 1, lambda: None, repeat=3).seconds) == 3  # not short: repeat as asked
    # a slow short workload stops at repeat; a few-ms one once its samples add up to the total
    assert not harness.more_samples([0.2, 0.2, 0.2], repeat=3, short=True)
    assert harness.more_samples([0.02] * 3, repeat=3, short=True)
    assert not harness.more_samples([0.02] * 15, repeat=3, short=True)
    assert not harness.more_samples([0.04] * 8, repeat=3, short=True)  # 0.32 s of samples
    # pypaimon's driver runs in its own environment and restates the rule: the same numbers, the same answers
    source = (Path(bench_main.__file__).parent / "pypaimon_bench_driver.py").read_text()
    for name in ("SHORT_OP_SECONDS", "SHORT_OP_TOTAL_SECONDS", "SHORT_OP_MAX_SAMPLES"):
        assert f"{name} = {getattr(harness, name)!r}\n" in source
    namespace: dict[str, object] = {}
    exec(compile(source, "driver", "exec"), namespace)  # defines only; main() runs under __name__ == "__main__"
    driver_more = namespace["_more_samples"]
    for seconds in ([], [0.2] * 3, [0.02] * 3, [0.02] * 15, [0.04] * 8, [0.001] * 14):
        assert driver_more(seconds, repeat=3) == harness.more_samples(seconds, repeat=3, short=True)  # type: ignore[operator]


def test_spark_suite_without_run_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "bench.spark_bench", types.ModuleType("bench.spark_bench"))
    suite = worker.spark_suite(1_000, repeat=3, work=tmp_path)
    assert len(suite.results) == 1 and "no run() function" in (suite.results[0].error or "")


def test_spark_suite_maps_its_timings_to_results(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = types.ModuleType("bench.spark_bench")

    asked: list[int] = []

    def run(rows: int, *, repeat: int, work: Path) -> dict[str, float | list[float]]:
        asked.append(repeat)
        return {"append read laketide s": [2.0, 3.0, 2.5, 9.0, 2.2], "append read spark.parquet s": [1.0, 1.1, 0.9],
                "ratio append read": 0.5}

    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench.spark_bench", fake)
    suite = worker.spark_suite(1_000, repeat=3, work=tmp_path)
    got = {(r.workload, r.engine, r.floor, r.median, len(r.seconds)) for r in suite.results}
    assert got == {("spark append read", "laketide+spark", False, 2.5, 5),
                   ("spark append read", "spark.parquet", True, 1.0, 3)}
    assert asked == [worker.SPARK_ROUNDS]  # Spark's rounds: at least SPARK_ROUNDS, whatever the other suites run


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
    bench_main.main(["--sizes", "1500,3000", "--no-peers", "--suites", "pk", "--rounds", "2",
                     "--out", str(tmp_path / "results"), "--markdown", str(markdown)])
    payload = json.loads((tmp_path / "results" / "results.json").read_text())
    assert [(s["suite"], s["rows"]) for s in payload["suites"]] == [("pk", 1500), ("pk", 3000)]
    assert all("error" not in s and s["rounds"] == 2 for s in payload["suites"])
    merge_read = [r for r in payload["suites"][0]["results"]
                  if (r["workload"], r["engine"]) == ("pk merge read", "laketide")]
    assert len(merge_read) == 1 and len(merge_read[0]["seconds"]) == 2 * 3  # two rounds of --repeat 3
    text = markdown.read_text()
    assert "## Scaling" in text and "| pk merge read | laketide |" in text


def test_rounds_alternate_sizes_suite_by_suite() -> None:
    assert rounds.sized_plan(["append", "pk"], [2, 8], 2) == [
        ("append", 2), ("append", 8), ("append", 2), ("append", 8), ("pk", 2), ("pk", 8), ("pk", 2), ("pk", 8)]


def test_rounds_pool_samples_per_workload_and_name_a_failed_round() -> None:
    def payload(rows: int, seconds: list[float], *, engine: str = "laketide") -> dict[str, object]:
        result = Result("full read", engine, rows, seconds=seconds, scale=rows, peak_rss_mb=seconds[0])
        return {"suite": "append", "rows": rows, "results": [result.to_json()], "notes": ["checked"],
                "meta": {}, "seconds": 1.0, "wall_s": 2.0}

    failed = {"suite": "append", "rows": 8, "error": "worker exited 1: boom", "wall_s": 0.5}
    pooled = rounds.pool([payload(2, [1.0, 1.0, 9.0]), payload(8, [4.0, 4.0, 4.0]), payload(2, [1.0, 9.0, 9.0]),
                          failed])
    assert [(p["suite"], p["rows"]) for p in pooled] == [("append", 2), ("append", 8)]
    small, large = (Result.from_json(p["results"][0]) for p in pooled)
    assert small.seconds == [1.0, 1.0, 9.0, 1.0, 9.0, 9.0] and pooled[0]["results"][0]["median"] == 5.0
    assert small.peak_rss_mb == 1.0 and pooled[0]["rounds"] == 2 and pooled[0]["wall_s"] == 4.0
    assert pooled[0]["notes"] == ["checked"]
    assert large.seconds == [4.0, 4.0, 4.0] and pooled[1]["rounds"] == 1
    assert (pooled[1]["seconds"], pooled[1]["wall_s"]) == (1.0, 2.5)  # the failed round's wall time counts
    assert pooled[1]["notes"][-1] == "round 2 of 2 failed: worker exited 1: boom"
    # A workload one round could not run takes the samples of a round that ran it; one only a later round has
    # is added.
    no_driver = Result("full read", "laketide", 2, error="no driver", scale=2).to_json()
    first = {"suite": "append", "rows": 2, "results": [no_driver], "notes": [], "meta": {}}
    second = payload(2, [3.0]) | {"results": [Result("full read", "laketide", 2, seconds=[3.0], scale=2).to_json(),
                                              Result("full read", "pyarrow", 2, seconds=[1.0], scale=2).to_json()]}
    merged = rounds.pool([first, second])[0]
    assert [(r["engine"], r["seconds"], r["error"]) for r in merged["results"]] == [
        ("laketide", [3.0], None), ("pyarrow", [1.0], None)]
    assert rounds.pool([failed]) == [failed]


def test_file_index_suite_returns_the_floors_rows(tmp_path: Path) -> None:
    from bench import file_index

    suite = file_index.collect(4_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    assert suite.notes == []  # every engine returned the floor's rows
    assert all(r.ok for r in suite.results)
    assert suite.meta[file_index.BLOOM]["files_skipped"] >= 15  # the bloom filters ruled out other files
    assert suite.meta[file_index.BITMAP]["skipped_by"].get("bitmap", 0) == file_index.FILES - 1
    assert set(file_index.ratios(suite)) >= {"write overhead of the three indexes"}


def test_hash_dedupe_keeps_the_last_row_per_key_like_the_sort_floor() -> None:
    base = pa.table({"order_id": [3, 1, 2], "customer_id": [30, 10, 20]})
    upsert = pa.table({"order_id": [2, 4, 2], "customer_id": [21, 40, 22]})  # key 2 twice in one batch
    hashed = dedupe.hash_dedupe(base, upsert, key="order_id").sort_by("order_id")
    assert hashed.to_pydict() == {"order_id": [1, 2, 3, 4], "customer_id": [10, 22, 30, 40]}
    assert hashed.equals(pk_table.dedupe_floor(base, upsert))
    big_base, big_upsert = pk_table.pk_data(3_000)
    assert (pk_table.Merged.of(dedupe.hash_dedupe(big_base, big_upsert, key="order_id"))
            == pk_table.Merged.of(pk_table.dedupe_floor(big_base, big_upsert)))


def test_fastest_floor_marks_exactly_one_floor_and_keeps_the_others_as_references() -> None:
    def boom() -> None:
        raise ValueError("no")

    ranked = dedupe.fastest_floor("w", 10, {"a": lambda: sum(range(100)), "b": lambda: None, "c": boom}, repeat=3)
    assert [r.floor for r in ranked] == [True, False, False]
    assert ranked[0].ok and ranked[1].ok and len(ranked[0].seconds) == 3
    assert ranked[0].median <= ranked[1].median and dedupe.SLOWER_NOTE in (ranked[1].note or "")
    assert ranked[2].engine == "c" and ranked[2].error == "ValueError: no"


def test_pk_merge_read_floor_reads_the_files(tmp_path: Path) -> None:
    suite = pk_table.collect(2_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    reads = [r for r in suite.results if r.workload == "pk merge read"]
    floor = next(r for r in reads if r.floor)
    assert floor.engine in (pk_table.HASH_READ_FLOOR, pk_table.SORT_READ_FLOOR)
    # The in-memory dedupe is still listed, as a reference, not as the floor.
    in_memory = next(r for r in reads if r.engine == pk_table.FLOOR)
    assert in_memory.ok and not in_memory.floor and in_memory.note == pk_table.IN_MEMORY_NOTE


def test_e2e_suite_checks_every_engine_against_the_floor(tmp_path: Path) -> None:
    suite = e2e.collect(3_000, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    assert suite.notes == []  # laketide returned the floor's rows
    by_engine = {r.engine: r for r in suite.results}
    assert set(by_engine) == {e2e.HASH_FLOOR, e2e.SORT_FLOOR, "laketide"}
    assert sum(r.floor for r in suite.results) == 1
    assert all(r.ok and r.rows == 3_000 + 750 + 3_375 for r in suite.results)
    assert suite.meta["expected_merge"]["rows"] == 3_375


def test_e2e_checks_every_repetition_and_holds_none_of_them() -> None:
    # A repetition's rows are dropped before the next one runs (holding them all made later repetitions fault in
    # fresh memory at 8M rows), and every repetition's rows are checked, not only the last one's.
    import weakref

    held: list[weakref.ref[pa.Table]] = []

    def run(i: int) -> pa.Table:
        assert all(ref() is None for ref in held), "an earlier repetition's rows are still alive"
        table = pa.table({"customer_id": pa.array([i, 1], pa.int64())})
        held.append(weakref.ref(table))
        return table

    result, merged = e2e._timed_runs("laketide", 2, run, repeat=3)
    assert result.ok and len(result.seconds) == 3
    assert merged == [pk_table.Merged(rows=2, checksum=c) for c in (1, 2, 3)]


def test_memory_warmth_touches_memory_and_reads_machine_facts(tmp_path: Path) -> None:
    (touched,) = memory_warmth.measure(4, [0.0])
    assert touched.gap_s == 0.0 and touched.wall_s > 0 and touched.system_s >= 0
    assert memory_warmth.machine_facts(tmp_path) == {"transparent huge pages": "unknown",
                                                     "balloon free page reporting": "no balloon device"}
    (tmp_path / "kernel/mm/transparent_hugepage").mkdir(parents=True)
    (tmp_path / "kernel/mm/transparent_hugepage/enabled").write_text("always [madvise] never\n")
    devices = tmp_path / "bus/virtio/devices"
    for name, device, features in (("virtio0", "0x0001", "11111111"), ("virtio1", "0x0005", "01100101")):
        (devices / name).mkdir(parents=True)
        (devices / name / "device").write_text(device + "\n")
        (devices / name / "features").write_text(features + "\n")
    assert memory_warmth.machine_facts(tmp_path) == {"transparent huge pages": "always [madvise] never",
                                                     "balloon free page reporting": "yes"}
    (devices / "virtio1" / "features").write_text("01100000\n")
    assert memory_warmth.machine_facts(tmp_path)["balloon free page reporting"] == "no"


def test_pk_merge_reads_are_checked_one_by_one_and_none_is_held() -> None:
    # As for e2e: the pk suite's next repetition (its timed write and upsert) runs with no earlier merge result
    # alive, for laketide and deltalake alike, and a wrong result in any repetition reaches the floor check.
    import weakref

    held: list[weakref.ref[pa.Table]] = []

    def read() -> pa.Table:
        assert all(ref() is None for ref in held), "an earlier repetition's rows are still alive"
        table = pa.table({"customer_id": pa.array([len(held), 1], pa.int64())})
        held.append(weakref.ref(table))
        return table

    result = Result("pk merge read", "laketide", 2)
    merges = [pk_table.timed_merge_read(result, read) for _ in range(3)]
    assert all(ref() is None for ref in held)
    assert result.ok and len(result.seconds) == 3
    assert merges == [pk_table.Merged(rows=2, checksum=c) for c in (1, 2, 3)]
    assert pk_table.odd_one_out(merges) == merges[1]
    assert pk_table.odd_one_out([merges[0]] * 3) == merges[0]


def test_planning_suite_builds_both_file_counts(tmp_path: Path) -> None:
    suite = planning.collect(40, repeat=1, work=tmp_path, peers=FLOORS_ONLY)
    assert suite.meta["live_files_10"] == 10 and suite.meta["live_files_40"] == 40
    assert sorted((r.workload, r.scale) for r in suite.results) == sorted(
        (planning.workload(kind, n), n) for kind in planning.WORKLOADS for n in (10, 40))
    assert all(r.ok for r in suite.results)
    assert all(len(r.seconds) == planning.samples(1) > 1 for r in suite.results)
    assert len([n for n in suite.notes if "per 1k files" in n]) == len(planning.WORKLOADS)


def test_commit_latency_peers_stop_at_their_cap(tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    peers = Peers(pypaimon=False, pypaimon_rust=False, max_peer_commits=10)
    suite = commit_latency.collect(100, repeat=3, work=tmp_path, peers=peers)
    ran = {(r.engine, r.workload) for r in suite.results if r.ok}
    assert ("laketide", "commit @ 100 snapshots") in ran and ("deltalake", "commit @ 10 snapshots") in ran
    assert ("deltalake", "commit @ 100 snapshots") not in ran
    assert any(n.startswith("laketide: latency @ 100 / latency @ 10") for n in suite.notes)


def test_spark_suites_do_not_follow_a_scale_run_to_8m() -> None:
    assert bench_main.default_spark_rows([100_000, 500_000, 2_000_000]) == 500_000
    assert bench_main.default_spark_rows([2_000_000, 8_000_000]) == bench_main.SPARK_DEFAULT_MAX_ROWS
    assert bench_main.default_spark_rows([50_000, 200_000]) == 200_000


def _result(workload: str, engine: str, scale: int, seconds: float, *, floor: bool = False) -> Result:
    return Result(workload, engine, scale, seconds=[seconds] * 3, floor=floor, scale=scale)


def test_targets_state_time_and_speed_ratios_with_verdicts() -> None:
    results = [
        _result("append write", "pyarrow.parquet", 100, 1.0, floor=True),
        _result("append write", "laketide", 100, 1.5),
        _result("append write", "pyarrow.parquet", 400, 1.0, floor=True),
        _result("append write", "laketide", 400, 1.02),
        _result("point lookup", "pypaimon-rust", 400, 3.0), _result("point lookup", "laketide", 400, 1.0),
        _result("spark pk upsert write", "df.write.parquet", 50, 1.0, floor=True),
        _result("spark pk upsert write", "laketide+spark", 50, 2.0),
    ]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in targets.targets_table(results, [100, 400])}
    append = rows["append write <= 1.05x of pq.write_table"]
    assert "time ratio: laketide median / pyarrow.parquet median" in append
    assert "| 1.02x (<= 1.05x) | 400 rows | met |" in append  # the largest size that has it
    lookup = rows["point lookup >= 2x faster than pypaimon-rust"]
    assert "speed ratio: pypaimon-rust median / laketide median" in lookup and "| 3.00x (>= 2x) |" in lookup
    spark = rows["Spark PK upsert >= 0.7x the speed of df.write.parquet"]
    assert "| 0.50x (>= 0.7x) | 50 rows | missed |" in spark
    assert targets.NOT_MEASURED in rows["commit latency at history 1000 <= 2x that at history 10"]
    scale = next(line for key, line in rows.items() if key.startswith("8M / 2M"))
    assert "0.68x" in scale and "| met |" in scale  # append write 1.02 / 1.5 between the two sizes
    table = "\n".join(targets.scale_table(results, [100, 400]))
    assert "| append write | laketide | 1.500 | 1.020 | 0.68x | 1.00x | met |" in table


def test_report_puts_targets_and_scale_first() -> None:
    payloads = [worker.run_suite("e2e", n, repeat=1, peers=FLOORS_ONLY) for n in (1_000, 2_000)]
    payloads.append(worker.run_suite("planning", 20, repeat=1, peers=FLOORS_ONLY))
    text = render(payloads, sizes=[1_000, 2_000], facts={"cores": "2"}, command="python -m bench", total_s=1.0,
                  chart=None)
    assert text.index("## Targets (issue 25)") < text.index("## Scale") < text.index("## Machine")
    assert "| e2e write+upsert+read | laketide |" in text.split("## Scale")[1].split("## Machine")[0]
    e2e_row = next(line for line in text.splitlines() if line.startswith("| e2e write + upsert + read <= 0.85x"))
    assert "time ratio: laketide median / pyarrow.parquet write + read + " in e2e_row
    planning_row = next(line for line in text.splitlines() if line.startswith("| planning time proportional"))
    assert "at 20 files / at 10 files" in planning_row
    commit_row = next(line for line in text.splitlines() if line.startswith("| commit latency at history 1000"))
    assert targets.NOT_MEASURED in commit_row
