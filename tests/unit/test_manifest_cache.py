"""The process's manifest cache: later plans decode nothing already decoded, what a write puts in is exactly what a
decode gives, a file unlike its recorded size is read afresh, the budget holds, and no other writer's commit is
ever hidden (keys are file names, and a new snapshot names new files)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import CorruptMetadataError, InvalidOptionError
from laketide.meta.manifest import ManifestEntry, ManifestFileMeta
from laketide.meta.manifest_cache import MANIFEST_CACHE, MEMORY_ENV, ManifestCache, parse_memory, weight
from laketide.meta.manifest_io import read_objects

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    pa.field("v", pa.float64()), pa.field("s", pa.string())])
REPO = Path(__file__).resolve().parents[2]


def rows(keys: range, p: str = "a") -> pa.Table:
    return pa.table({"k": list(keys), "p": [p] * len(keys), "v": [k / 2 for k in keys],
                     "s": [None if k % 3 else f"s{k}" for k in keys]}, schema=SCHEMA)


@pytest.fixture()
def cat(tmp_path: Path) -> laketide.Catalog:
    c = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.fixture()
def budget() -> Iterator[None]:
    """Tests that resize the process's cache give it its budget back."""
    before = MANIFEST_CACHE.max_memory
    yield
    MANIFEST_CACHE.resize(before)


def check_cached_as_decoded(table: laketide.Table) -> int:
    """Each of ``table``'s cached files holds what decoding the file gives; how many are cached."""
    prefix = f"{table.path}/manifest/"
    cached = {path: objs for (path, _), (objs, _) in list(MANIFEST_CACHE._items.items()) if path.startswith(prefix)}
    for path, objs in cached.items():
        decode = ManifestFileMeta.from_record if "/manifest-list-" in path else ManifestEntry.from_record
        assert list(objs) == read_objects(table.store.file_io.read_bytes, path, decode), path
    return len(cached)


def test_a_later_plan_decodes_nothing_and_answers_as_an_uncached_plan(cat: laketide.Catalog, budget: None) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], partition_keys=["p"], options={"bucket": "2"})
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 15), p="ab"[i % 2]))
    MANIFEST_CACHE.clear()
    first = cat.table("db.t").read().sort_by("k")
    misses, hits = MANIFEST_CACHE.misses, MANIFEST_CACHE.hits
    again = cat.table("db.t").read().sort_by("k")
    assert MANIFEST_CACHE.misses == misses, "the second plan decoded a manifest again"
    assert MANIFEST_CACHE.hits > hits
    MANIFEST_CACHE.resize(0)  # off: every plan decodes
    uncached = cat.table("db.t").read().sort_by("k")
    assert first.equals(again) and first.equals(uncached)
    assert first.num_rows == 60  # (k, p): a has 0..14 and 20..34, b has 10..24 and 30..44


@pytest.mark.parametrize("options", [
    {"bucket": "2"},
    {"bucket": "-1"},
    {"manifest.format": "orc"},
    {"manifest.format": "parquet", "deletion-vectors.enabled": "true"},
])
def test_what_a_write_puts_in_is_what_decoding_its_file_gives(cat: laketide.Catalog, options: dict[str, str]) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], partition_keys=["p"], options=options)
    t.write(rows(range(0, 20)))
    t.write(rows(range(10, 30), p="b"))
    t.compact(full=True)
    assert check_cached_as_decoded(t) >= 6  # per commit: a manifest list for base and delta, the delta's manifests


def test_an_append_table_without_partitions_is_cached_too(cat: laketide.Catalog) -> None:
    t = cat.create_table("db.a", pa.schema([("x", pa.int32())]))
    t.write(pa.table({"x": pa.array([1, 2], pa.int32())}))
    assert check_cached_as_decoded(t) >= 3  # the base and delta manifest lists, the delta's manifest


def test_another_process_commit_is_seen_by_the_next_plan(cat: laketide.Catalog, tmp_path: Path) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], options={"bucket": "1"})
    t.write(rows(range(5)))
    assert cat.table("db.t").read().num_rows == 5  # this process's manifests are cached now
    script = textwrap.dedent(f"""
        import pyarrow as pa, laketide
        t = laketide.load_catalog(warehouse={str(tmp_path / 'wh')!r}).table("db.t")
        t.write(pa.table({{"k": [3, 4, 5, 6], "p": ["a"] * 4, "v": [9.0] * 4, "s": ["x"] * 4}}, schema=t.arrow_schema))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    got = cat.table("db.t").read().sort_by("k")
    assert got.column("k").to_pylist() == [0, 1, 2, 3, 4, 5, 6]
    assert got.column("v").to_pylist() == [0.0, 0.5, 1.0, 9.0, 9.0, 9.0, 9.0]
    # and a commit from this process after that one reads the other process's manifests, not stale ones
    t = cat.table("db.t")
    t.write(rows(range(6, 8)))
    assert cat.table("db.t").read().column("k").to_pylist() == list(range(8))


def test_a_file_unlike_its_recorded_size_is_read_afresh(cat: laketide.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], options={"bucket": "1"})
    t.write(rows(range(5)))
    assert cat.table("db.t").read().num_rows == 5
    snapshot = t.snapshot_manager.latest_snapshot()
    assert snapshot is not None
    scan = t.store.new_scan()
    manifest = scan.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)[0]
    path = f"{scan.manifest_dir}/{manifest.file_name}"
    Path(path).write_bytes(Path(path).read_bytes()[:-7])  # damaged: no longer the size the list records
    with pytest.raises(CorruptMetadataError, match=manifest.file_name):
        scan.manifest(manifest.file_name, manifest.file_size - 7)
    # the size the metadata records still finds what was decoded from the intact file
    assert len(scan.manifest(manifest.file_name, manifest.file_size)) == 1


def test_handed_out_lists_are_copies(cat: laketide.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], options={"bucket": "1"})
    t.write(rows(range(5)))
    snapshot = t.snapshot_manager.latest_snapshot()
    assert snapshot is not None
    scan = t.store.new_scan()
    m = scan.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)[0]
    scan.manifest(m.file_name, m.file_size).clear()
    assert len(scan.manifest(m.file_name, m.file_size)) == 1
    assert cat.table("db.t").read().num_rows == 5


def test_threads_planning_at_once_agree(cat: laketide.Catalog) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "p"], options={"bucket": "4"})
    for i in range(6):
        t.write(rows(range(i * 7, i * 7 + 10)))
    MANIFEST_CACHE.clear()
    expected = cat.table("db.t").read().sort_by("k")
    MANIFEST_CACHE.clear()
    with ThreadPoolExecutor(8) as pool:  # a thread's exception comes out of map
        got = list(pool.map(lambda _: cat.table("db.t").read().sort_by("k"), range(8)))
    assert len(got) == 8 and all(g.equals(expected) for g in got)


# -- the budget ------------------------------------------------------------------------------------------------------
def test_least_recently_used_leave_first_within_the_budget() -> None:
    cache = ManifestCache(max_memory=4 * weight([object()] * 10))  # room for four
    items = [[object()] * 10 for _ in range(6)]
    for i in range(4):
        cache.put(f"/m/{i}", 1, items[i])
    assert cache.get_or_load("/m/0", 1, lambda: pytest.fail("cached")) == items[0]  # now the most recent
    cache.put("/m/4", 1, items[4])
    cache.put("/m/5", 1, items[5])  # over the budget each time: /m/1, then /m/2 leave
    assert cache.used_memory <= cache.max_memory
    assert {p for p, _ in cache._items} == {"/m/0", "/m/3", "/m/4", "/m/5"}
    assert cache.get_or_load("/m/1", 1, lambda: ["decoded"]) == ["decoded"]
    cache.resize(0)
    assert len(cache) == 0 and cache.used_memory == 0
    cache.put("/m/5", 1, items[0])  # off: keeps nothing
    assert len(cache) == 0


def test_a_file_over_a_quarter_of_the_budget_is_not_kept() -> None:
    cache = ManifestCache(max_memory=weight([object()] * 10))
    cache.put("/big", 1, [object()] * 10)
    assert len(cache) == 0
    cache.get_or_load("/big", 1, lambda: [object()] * 10)
    assert len(cache) == 0


def test_an_unknown_size_is_never_cached() -> None:
    cache = ManifestCache(max_memory=1 << 20)
    calls = []
    for _ in range(2):
        cache.get_or_load("/m", None, lambda: calls.append(1) or [])
    assert len(calls) == 2 and len(cache) == 0


def test_the_weight_estimate_is_near_the_memory_decoded_entries_hold(cat: laketide.Catalog) -> None:
    t = cat.create_table("db.many", SCHEMA, partition_keys=["p"], options={"target-file-size": "1 b",
                                                                          "write-only": "true"})
    data = rows(range(3000))
    t.write(pa.Table.from_batches(data.to_batches(max_chunksize=10)))  # 300 files in one manifest
    snapshot = t.snapshot_manager.latest_snapshot()
    assert snapshot is not None
    scan = t.store.new_scan()
    (m,) = scan.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)
    path = f"{scan.manifest_dir}/{m.file_name}"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        entries = read_objects(t.store.file_io.read_bytes, path, ManifestEntry.from_record)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(entries) == 300
    assert 0.7 * held <= weight(entries) <= 2.0 * held, (weight(entries), held)


@pytest.mark.parametrize(("raw", "expected"), [("0", 0), ("134217728", 128 << 20), ("128mb", 128 << 20),
                                               ("64 mebibytes", 64 << 20), ("1g", 1 << 30), ("512kb", 512 << 10)])
def test_budget_values(raw: str, expected: int) -> None:
    assert parse_memory(raw, source=MEMORY_ENV) == expected


def test_a_bad_budget_in_the_environment_fails_naming_the_variable() -> None:
    with pytest.raises(InvalidOptionError, match=MEMORY_ENV):
        parse_memory("lots", source=MEMORY_ENV)
    env = {**os.environ, "PYTHONPATH": str(REPO), MEMORY_ENV: "lots"}
    bad = subprocess.run([sys.executable, "-c", "import laketide"], capture_output=True, text=True, env=env, cwd=REPO)
    assert bad.returncode != 0 and MEMORY_ENV in bad.stderr
    env[MEMORY_ENV] = "0"
    off = subprocess.run([sys.executable, "-c", "from laketide.meta.manifest_cache import MANIFEST_CACHE as c; "
                          "print(c.max_memory)"], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert off.stdout.strip() == "0"
