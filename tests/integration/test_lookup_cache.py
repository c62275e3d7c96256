"""Table.lookup's per-file cache (scan/lookup_cache.py): warm lookups answer exactly what an uncached lookup and a
dict oracle say, whatever happened to the table between two lookups (upserts, deletes, deletion vectors,
compaction, expiry, schema changes, a pinned snapshot), within the disk budget, from any Table object."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.schema.changes import AddColumn
from laketide.scan.lookup_cache import drop_lookup_caches, lookup_cache_for
from tests.integration.test_pk_point_reads import DICT_ORACLE, KEY, LAYOUTS, SCHEMA, _op, apply_op, as_dict, rows


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by([(n, "ascending") for n in table.column_names])


def cache_of(t) -> object:  # noqa: ANN001
    o = t.store.options
    return lookup_cache_for(t.path, local_dir=o.local_temp_dir, max_disk_size=o.lookup_cache_max_disk_size)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=6),
       keys=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["p0", "p1"])), max_size=40))
def test_warm_lookups_between_changes_equal_uncached_and_oracle(tmp_path_factory, layout, ops, keys) -> None:  # noqa: ANN001
    root = tmp_path_factory.mktemp("wh")
    cat = laketide.load_catalog(warehouse=str(root / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=KEY, partition_keys=["part"],
                         options={**LAYOUTS[layout], "local-temp-dir": str(root / "tmp")})
    oracle: dict[tuple, tuple] = {}
    asked = keys + [(99, "p0"), (3, "p9")]  # absent keys, and duplicates from the strategy
    try:
        for kind, payload in ops:
            apply_op(t, layout, kind, payload, oracle)
            # A lookup after every change: the cache is warm from the previous one.
            got = t.lookup(asked)
            assert sort(got).equals(sort(t.lookup(asked, cache=False)))
            if layout in DICT_ORACLE:
                assert as_dict(got) == {key: oracle[key] for key in set(asked) if key in oracle}
            assert sort(t.lookup(asked, columns=["v", "k"])).equals(sort(got.select(["v", "k"])))
        every = [(k, p) for k in range(41) for p in ("p0", "p1")]
        assert sort(t.lookup(every)).equals(sort(t.read()))
        cache = cache_of(t)
        assert t.read().num_rows == 0 or cache.builds + cache.hits > 0, "the cache was not used"
    finally:
        drop_lookup_caches(t.path)


@pytest.fixture
def table(catalog, tmp_path):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.c", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "2", "local-temp-dir": str(tmp_path / "lookup-tmp")})
    yield t
    drop_lookup_caches(t.path)


def test_a_warm_lookup_searches_the_cached_files_and_reads_no_stale_snapshot(catalog, table) -> None:  # noqa: ANN001
    table.write(rows([(k, "p0", "old", k) for k in range(100)]))
    keys = [(k, "p0") for k in range(0, 100, 3)]
    first = table.lookup(keys)
    cache = cache_of(table)
    assert cache.builds > 0 and cache.hits == 0
    built = cache.builds
    again = catalog.table("db.c").lookup(keys)  # another Table object of the same table shares the cache
    assert sort(again).equals(sort(first)) and cache.hits > 0 and cache.builds == built
    # The table changes: the next lookup plans the latest snapshot, new files next to the cached ones.
    table.write(rows([(k, "p0", "new", -k) for k in range(0, 100, 2)]))
    got = as_dict(table.lookup(keys))
    assert got == {(k, "p0"): ("new", -k) if k % 2 == 0 else ("old", k) for k in range(0, 100, 3)}
    # A pinned snapshot still answers from its own files.
    pinned = table.copy({"scan.snapshot-id": "1"})
    assert as_dict(pinned.lookup(keys)) == {(k, "p0"): ("old", k) for k in range(0, 100, 3)}
    # Compaction replaces every file; expiry deletes the old ones: the cache never reads them again.
    table.compact(full=True)
    table.expire_snapshots(retain_max=1, retain_min=1)
    assert as_dict(table.lookup(keys)) == got
    table.delete(where="k < 50")
    assert as_dict(table.lookup(keys)) == {key: v for key, v in got.items() if key[0] >= 50}


def test_schema_change_reads_new_columns_through_the_cache(table) -> None:  # noqa: ANN001
    table.write(rows([(k, "p1", "a", k) for k in range(20)]))
    assert table.lookup([(3, "p1")]).num_rows == 1
    table.alter(AddColumn(name="extra", type=pa.int64()))
    table.write(pa.table({"k": pa.array([4], pa.int32()), "part": ["p1"], "name": ["b"], "v": [40], "extra": [7]}))
    got = {r["k"]: r for r in table.lookup([(3, "p1"), (4, "p1")]).to_pylist()}
    assert got[3]["extra"] is None and got[4]["extra"] == 7 and got[4]["name"] == "b"


def test_the_disk_budget_evicts_and_lookups_stay_right(catalog, tmp_path) -> None:  # noqa: ANN001
    local = tmp_path / "budget"
    t = catalog.create_table("db.b", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "4", "local-temp-dir": str(local), "lookup.cache-max-disk-size": "1 b"})
    try:
        t.write(rows([(k, p, f"n{k}", k) for k in range(200) for p in ("p0", "p1")]))
        keys = [(k, p) for k in range(0, 200, 7) for p in ("p0", "p1")]
        expected = {key: (f"n{key[0]}", key[0]) for key in keys}
        for _ in range(3):
            assert as_dict(t.lookup(keys)) == expected
        cache = cache_of(t)
        assert cache.files.evictions > 0
        assert len([p for d in local.glob("laketide-table-lookup-*") for p in d.iterdir()]) == 1
    finally:
        drop_lookup_caches(t.path)
    assert not list(local.glob("laketide-table-lookup-*")), "dropping the cache removes its files"


def test_a_few_keys_in_a_large_file_keep_the_pruned_read(catalog, tmp_path) -> None:  # noqa: ANN001
    t = catalog.create_table("db.big", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "1", "local-temp-dir": str(tmp_path / "lt")})
    try:
        n = 30_000
        t.write(pa.table({"k": pa.array(np.arange(n, dtype=np.int32)), "part": ["p0"] * n,
                          "name": pa.array(np.char.add("n", np.arange(n).astype(str))), "v": np.arange(n)},
                         schema=SCHEMA))
        cache = cache_of(t)
        assert t.lookup([(17, "p0")]).to_pylist() == [{"k": 17, "part": "p0", "name": "n17", "v": 17}]
        assert cache.builds == 0, "one key of a 30k-row file: decoding its row group beats building the cache"
        keys = [(k, "p0") for k in range(0, n, n // 100)]
        assert as_dict(t.lookup(keys)) == {key: (f"n{key[0]}", key[0]) for key in keys}
        assert cache.builds == 1
        assert t.lookup([(17, "p0")]).num_rows == 1 and cache.hits == 1  # a cached file serves any lookup
    finally:
        drop_lookup_caches(t.path)


@pytest.mark.parametrize("key_type", [pa.int64(), pa.date32(), pa.string()])
def test_composite_and_non_integer_keys(catalog, key_type) -> None:  # noqa: ANN001
    schema = pa.schema([("a", key_type), ("b", pa.int16()), ("v", pa.string())])
    t = catalog.create_table("db.comp", schema, primary_key=["a", "b"], options={"bucket": "2"})
    try:
        if pa.types.is_string(key_type):
            values = pa.array([f"s{i:03d}" for i in range(50)])
        else:  # int64 / date32 (days since the epoch, through int32)
            values = pa.array(list(range(50)), pa.int32() if pa.types.is_date32(key_type) else key_type)
            values = values.view(key_type) if pa.types.is_date32(key_type) else values
        a = pa.concat_arrays([values, values])
        b = pa.array([1] * 50 + [2] * 50, pa.int16())
        t.write(pa.table({"a": a, "b": b, "v": [f"v{i}" for i in range(100)]}, schema=schema))
        # Each a with one b: the other combinations ((a0, 2) = v50, (a1, 1) = v1, ...) must not come back.
        asked = pa.table({"a": pa.array([a[i].as_py() for i in (0, 1, 49, 49, 7)], key_type),
                          "b": pa.array([1, 2, 2, 2, 3], pa.int16())})
        for _ in range(2):  # cold, then warm
            got = t.lookup(asked)
            assert sort(got).equals(sort(t.lookup(asked, cache=False)))
            assert sorted(got.column("v").to_pylist()) == ["v0", "v51", "v99"]
    finally:
        drop_lookup_caches(t.path)


def test_concurrent_lookups_share_the_cache(table) -> None:  # noqa: ANN001
    table.write(rows([(k, p, "x", k) for k in range(300) for p in ("p0", "p1")]))
    keys = [(k, "p1") for k in range(0, 300, 5)]
    expected = sort(table.lookup(keys, cache=False))
    results: list[pa.Table] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(3):
                results.append(table.lookup(keys))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(results) == 12 and all(sort(r).equals(expected) for r in results)


def test_unusable_local_temp_dir_is_a_typed_error(catalog, tmp_path: Path) -> None:  # noqa: ANN001
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    t = catalog.create_table("db.bad", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "1", "local-temp-dir": str(blocker / "sub")})
    try:
        t.write(rows([(1, "p0", "a", 1)]))
        with pytest.raises(InvalidOptionError, match="local-temp-dir"):
            t.lookup([(1, "p0")])
        assert as_dict(t.lookup([(1, "p0")], cache=False)) == {(1, "p0"): ("a", 1)}
    finally:
        drop_lookup_caches(t.path)


def test_rows_found_equal_the_filtered_read_of_many_row_groups(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.rg", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "1", "parquet.block.size": "16384", "deletion-vectors.enabled": "true"})
    try:
        n = 20_000
        t.write(pa.table({"k": pa.array(np.arange(n, dtype=np.int32)), "part": ["p0"] * n, "name": ["a"] * n,
                          "v": np.arange(n)}, schema=SCHEMA))
        t.write(rows([(k, "p0", "b", -k) for k in range(0, n, 10)]))
        t.compact(full=False)
        t.delete(where="k >= 100 AND k < 200")
        rng = np.random.default_rng(3)
        keys = sorted({int(k) for k in rng.integers(0, n + 50, 800)})
        for _ in range(2):
            got = t.lookup([(k, "p0") for k in keys])
            expected = t.read(where=f"k IN ({', '.join(map(str, keys))})")
            assert sort(got).equals(sort(expected))
        assert cache_of(t).builds > 0 and cache_of(t).hits > 0
        assert pc.sum(got.column("v")).as_py() == pc.sum(expected.column("v")).as_py()
    finally:
        drop_lookup_caches(t.path)


def test_another_process_builds_its_own_files_and_removes_them_at_exit(table, tmp_path: Path) -> None:  # noqa: ANN001
    import subprocess
    import sys

    table.write(rows([(k, "p0", "x", k) for k in range(100)]))
    keys = [(k, "p0") for k in range(0, 100, 4)]
    expected = as_dict(table.lookup(keys))  # this process's cache is warm
    local = Path(table.store.options.local_temp_dir or "")
    mine = set(local.glob("laketide-table-lookup-*"))
    script = (
        "import sys, laketide\n"
        "t = laketide.load_catalog(warehouse=sys.argv[1]).table('db.c')\n"
        "keys = [(k, 'p0') for k in range(0, 100, 4)]\n"
        "print(sorted((r['k'], r['v']) for r in t.lookup(keys).to_pylist()))\n"
    )
    warehouse = str(Path(table.path).parent.parent)
    out = subprocess.run([sys.executable, "-c", script, warehouse], capture_output=True, text=True, timeout=300,
                         check=True)
    assert out.stdout.strip() == str(sorted((k, v[1]) for (k, _), v in expected.items()))
    assert set(local.glob("laketide-table-lookup-*")) == mine, "the other process's files went with it"
    assert as_dict(table.lookup(keys)) == expected


def test_a_partition_column_leading_the_key_is_not_what_is_searched(catalog, tmp_path: Path) -> None:  # noqa: ANN001
    schema = pa.schema([("dt", pa.int32()), ("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table("db.parted", schema, primary_key=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "local-temp-dir": str(tmp_path / "lt")})
    try:
        n = 30_000
        t.write(pa.table({"dt": pa.array([7] * n, pa.int32()), "id": np.arange(n), "v": np.arange(n) * 2},
                         schema=schema))
        keys = [(7, i) for i in range(0, n, 250)] + [(8, 1)]
        for _ in range(2):
            got = t.lookup(keys)
            assert sorted(got.column("v").to_pylist()) == [i * 2 for i in range(0, n, 250)]
        cache = cache_of(t)
        assert cache.builds == 1 and cache.hits == 1, "120 ids of a 30k-row file: cached, searched by id"
    finally:
        drop_lookup_caches(t.path)


def test_an_unset_disk_budget_is_bounded(table) -> None:  # noqa: ANN001
    from laketide.scan.lookup_cache import DEFAULT_MAX_DISK_SIZE

    assert table.store.options.lookup_cache_max_disk_size is None
    table.write(rows([(1, "p0", "a", 1)]))
    table.lookup([(1, "p0")])
    assert cache_of(table).files.max_disk_size == DEFAULT_MAX_DISK_SIZE


@pytest.mark.parametrize("index", ["bitmap", "bloom-filter"])
def test_tables_with_a_file_index_on_the_key(catalog, index: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.fi", SCHEMA, primary_key=KEY, partition_keys=["part"],
                             options={"bucket": "1", f"file-index.{index}.columns": "k"})
    try:
        t.write(rows([(k, "p0", "a", k) for k in range(0, 60)]))
        t.write(rows([(k, "p0", "b", -k) for k in range(30, 90)]))
        keys = [(k, "p0") for k in (1, 29, 30, 31, 59, 60, 89, 95)]
        expected = {(k, "p0"): ("a", k) if k < 30 else ("b", -k) for k, _ in keys if k < 90}
        for _ in range(2):
            assert as_dict(t.lookup(keys)) == expected
            assert sort(t.lookup(keys)).equals(sort(t.lookup(keys, cache=False)))
        assert cache_of(t).hits > 0
    finally:
        drop_lookup_caches(t.path)


def test_a_local_dir_that_turns_unwritable_is_a_typed_error(table) -> None:  # noqa: ANN001
    import shutil

    from laketide.exceptions import FileIOError

    table.write(rows([(1, "p0", "a", 1)]))
    table.lookup([(1, "p1")])  # creates the cache's directory, builds nothing (no such key in the file range)
    root = Path(cache_of(table).files._root())
    shutil.rmtree(root)
    root.write_text("something else took the path")  # even root cannot write a file under a file
    try:
        with pytest.raises(FileIOError, match="local-temp-dir"):
            table.lookup([(1, "p0")])
    finally:
        root.unlink()
        root.mkdir()
    assert as_dict(table.lookup([(1, "p0")])) == {(1, "p0"): ("a", 1)}
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")], "no temporary file left behind"
