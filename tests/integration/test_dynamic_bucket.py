"""Dynamic bucket mode (bucket = -1) and cross-partition upsert, end to end against a dict oracle."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laketide.exceptions import CommitConflictError
from laketide.index.hash_index import read_hash_index
from laketide.meta.binary_row import hash_rows
from tests import table_checks

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64())])


def rows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def key_buckets(t) -> dict[tuple, set[int]]:
    """(partition, key) -> buckets whose merged rows hold it."""
    return table_checks.key_buckets(t, "k")


def hash_files(t) -> dict[tuple[bytes, int], np.ndarray]:
    latest = t.latest_snapshot()
    if latest is None:
        return {}
    return {(e.partition, e.bucket): read_hash_index(t.file_io, f"{t.path}/index/{e.index_file.file_name}")
            for e in t.file_scan().index_entries(latest) if e.index_file.index_type == "HASH"}


def test_worked_example_bucket_ids(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"dynamic-bucket.target-row-num": "1000"})
    t.write(rows([(k, "x", "a", k) for k in range(600)]))
    t.write(rows([(k, "x", "b", k) for k in range(300, 1000)]))  # 300 updates, 400 new keys: bucket 0 is full
    assert {b for s in key_buckets(t).values() for b in s} == {0}
    t.write(rows([(1000, "x", "c", 0), (5, "x", "c", 0)]))    # the 1001st key opens bucket 1; key 5 stays
    kb = key_buckets(t)
    assert kb[((), 1000)] == {1} and kb[((), 5)] == {0}
    files = hash_files(t)
    assert sorted((b, len(h)) for (_, b), h in files.items()) == [(0, 1000), (1, 1)]
    keys = pa.table({"k": pa.array([1000], pa.int64())})
    (bucket1,) = [h for (_, b), h in files.items() if b == 1]
    assert bucket1.tolist() == hash_rows(keys, ["k"], [t.schema.field("k").type]).tolist()
    assert t.read().num_rows == 1001


def test_two_assigners_own_disjoint_buckets(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "dynamic-bucket.target-row-num": "50", "dynamic-bucket.initial-buckets": "2"})
    t.write(rows([(k, "x", "a", k) for k in range(300)]))
    kb = key_buckets(t)
    buckets = sorted({b for s in kb.values() for b in s})
    assert buckets[:2] == [0, 1] and len(buckets) >= 6 and all(len(s) == 1 for s in kb.values())
    w = t.new_write()
    w.write(rows([(k, "x", "z", k) for k in range(400)]))
    t.commit(w.prepare_commit())
    assert all(len(s) == 1 for s in key_buckets(t).values())
    assert len(key_buckets(t)) == 400


def test_max_buckets_bounds_the_bucket_count(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "dynamic-bucket.target-row-num": "10", "dynamic-bucket.max-buckets": "3"})
    t.write(rows([(k, "x", "a", k) for k in range(100)]))
    kb = key_buckets(t)
    assert {b for s in kb.values() for b in s} == {0, 1, 2} and all(len(s) == 1 for s in kb.values())


_op = st.tuples(st.sampled_from(["up", "up", "del"]), st.integers(0, 40), st.sampled_from(["d1", "d2"]),
                st.integers(0, 9))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.lists(_op, max_size=25), min_size=1, max_size=3), min_size=1, max_size=4),
       st.sampled_from(["1", "2"]))
def test_random_upserts_and_deletes_match_oracle(catalog, commits, parallelism) -> None:
    name = f"db.p{uuid.uuid4().hex}"
    t = catalog.create_table(name, SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"], options={
        "dynamic-bucket.target-row-num": "4", "dynamic-bucket.assigner-parallelism": parallelism})
    oracle: dict[tuple, tuple] = {}
    for i, writes in enumerate(commits):
        w = t.new_write()  # writers in sequence: each starts from the latest snapshot's hash index
        for ops in writes:
            # consecutive ops of one kind form one batch (within it the last row of a key wins)
            run: list[tuple] = []
            for j, (kind, k, dt, n) in enumerate(ops):
                run.append((k, dt, f"c{i}", n))
                if j + 1 == len(ops) or ops[j + 1][0] != kind:
                    (w.upsert if kind == "up" else w.delete)(rows(run))
                    run = []
                if kind == "up":
                    oracle[(k, dt)] = (f"c{i}", n)
                else:
                    oracle.pop((k, dt), None)
        t.commit(w.prepare_commit())
    got = {(r["k"], r["dt"]): (r["v"], r["n"]) for r in t.read().to_pylist()}
    assert got == oracle
    assert all(len(b) == 1 for b in key_buckets(t).values())
    # every written key's hash sits in exactly one hash index file of its partition
    per_part: dict[bytes, list[np.ndarray]] = {}
    for (part, _), hashes in hash_files(t).items():
        per_part.setdefault(part, []).append(hashes)
    for chunks in per_part.values():
        allh = np.concatenate(chunks)
        assert len(np.unique(allh)) == len(allh)


def test_concurrent_writer_is_detected(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"dynamic-bucket.target-row-num": "100"})
    t.write(rows([(k, "x", "a", k) for k in range(10)]))
    w1, w2 = t.new_write(), t.new_write()
    w1.write(rows([(100, "x", "w1", 0)]))
    w2.write(rows([(200, "x", "w2", 0)]))
    first = t.commit(w1.prepare_commit())
    before = t.latest_snapshot()
    # refused by the sequence-number check (both restored the same bucket) before the hash-index check
    with pytest.raises(CommitConflictError, match="one job|only writer of its buckets"):
        t.commit(w2.prepare_commit())
    assert t.latest_snapshot() == before and first == before.id
    # a writer that starts after the commit builds on it
    t.write(rows([(200, "x", "w3", 0)]))
    assert {r["k"] for r in t.read().to_pylist()} == set(range(10)) | {100, 200}


def test_index_carried_over_and_partitions_evicted(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"])
    t.write(rows([(k, d, "a", k) for k in range(5) for d in ("d1", "d2")]))
    manifest = t.latest_snapshot().index_manifest
    t.write(rows([(1, "d1", "b", 1)]))                  # an update: no new hash, the index manifest is reused
    assert t.latest_snapshot().index_manifest == manifest
    t.compact(full=True)
    assert t.latest_snapshot().index_manifest == manifest
    w = t.new_write()
    w.write(rows([(9, "d1", "c", 0), (9, "d2", "c", 0)]))
    t.commit(w.prepare_commit())
    assert len(w.bucket_assigner.cached_partitions) == 2
    w.write(rows([(10, "d2", "c", 0)]))
    t.commit(w.prepare_commit())
    w.write(rows([(11, "d2", "c", 0)]))
    t.commit(w.prepare_commit())
    assert len(w.bucket_assigner.cached_partitions) == 1  # d1 untouched for a commit: dropped
    w.write(rows([(9, "d1", "again", 0), (12, "d1", "c", 0)]))  # reloads d1 from the index files it wrote
    t.commit(w.prepare_commit())
    got = {(r["k"], r["dt"]): r["v"] for r in t.read().to_pylist()}
    assert got[(9, "d1")] == "again" and len(got) == 10 + 5
    assert all(len(b) == 1 for b in key_buckets(t).values())


def test_overwrite_drops_the_partition_index(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "3"})
    t.write(rows([(k, d, "a", k) for k in range(7) for d in ("d1", "d2")]))
    t.write(rows([(50, "d1", "o", 0)]), mode="overwrite", partition={"dt": "d1"})
    assert {(r["k"], r["dt"]) for r in t.read().to_pylist()} == {(50, "d1")} | {(k, "d2") for k in range(7)}
    per_bucket = {b: len(h) for (p, b), h in hash_files(t).items() if b'd1' in p}
    assert sum(per_bucket.values()) <= 7 + 1  # overwritten keys may linger in the writer's rebuilt file


def test_memory_per_key_200k(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"write-buffer-size": "64 mb"})
    n = 200_000
    keys = np.random.default_rng(7).permutation(n).astype(np.int64)
    data = pa.table({"k": keys, "dt": pa.array(["x"] * n), "v": pa.nulls(n, pa.string()), "n": keys}, schema=SCHEMA)
    w = t.new_write()
    w.write(data)
    t.commit(w.prepare_commit())
    per_key = w.bucket_assigner.nbytes / n
    assert per_key <= 10  # Paimon's Int2ShortHashMap: ~10 bytes a key; ours: sorted int32 + int16 = 6


# -- cross-partition upsert -------------------------------------------------------------------------------------
XSCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                     ("v", pa.int64())])


def xrows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(XSCHEMA.names, r)) for r in items], schema=XSCHEMA)


def xread(t) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for r in t.read().to_pylist():
        assert r["id"] not in out, f"key {r['id']} in two partitions"
        out[r["id"]] = (r["dt"], r["v"])
    return out


_xop = st.tuples(st.sampled_from(["up", "up", "up", "del"]), st.integers(0, 25), st.sampled_from(["a", "b", "c"]),
                 st.integers(0, 99))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_xop, min_size=1, max_size=20), min_size=1, max_size=4))
def test_cross_partition_deduplicate_moves_keys(catalog, commits) -> None:
    name = f"db.x{uuid.uuid4().hex}"
    t = catalog.create_table(name, XSCHEMA, primary_key=["id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "5"})
    oracle: dict[int, tuple] = {}
    for ops in commits:
        w = t.new_write()
        for kind, k, dt, v in ops:  # row by row keeps the order a delete and an upsert of one key have
            (w.upsert if kind == "up" else w.delete)(xrows([(k, dt, v)]))
            if kind == "up":
                oracle[k] = (dt, v)
            elif k in oracle:
                del oracle[k]
        t.commit(w.prepare_commit())
        # one batch with every op as an upsert also agrees (the last row of a key decides its partition)
    assert xread(t) == oracle


def test_cross_partition_batch_last_row_wins(catalog) -> None:
    t = catalog.create_table("db.x", XSCHEMA, primary_key=["id"], partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "2"})
    t.write(xrows([(1, "a", 1), (2, "a", 2), (3, "b", 3)]))
    t.write(xrows([(1, "b", 10), (1, "c", 11), (2, "a", 20), (3, "a", 30), (3, "b", 31), (4, "c", 40)]))
    assert xread(t) == {1: ("c", 11), 2: ("a", 20), 3: ("b", 31), 4: ("c", 40)}
    w = t.new_write()
    w.delete(xrows([(1, "a", None)]))  # a delete names another partition: the key goes wherever it is
    t.commit(w.prepare_commit())
    assert xread(t) == {2: ("a", 20), 3: ("b", 31), 4: ("c", 40)}
    stats = t.new_write()
    stats.write(xrows([(9, "a", 9)]))
    assert stats.bucket_assigner.bootstrap_stats.keys == 3


@pytest.mark.parametrize("engine,expected", [
    ("partial-update", {1: ("a", 5, "x"), 2: ("b", 7, "y")}),
    ("first-row", {1: ("a", 1, "x"), 2: ("b", 7, "y")}),
])
def test_cross_partition_other_engines_keep_the_old_partition(catalog, engine, expected) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("v", pa.int64()), ("s", pa.string())])
    t = catalog.create_table("db.e", schema, primary_key=["id"], partition_keys=["dt"],
                             options={"merge-engine": engine})
    t.write(pa.Table.from_pylist([{"id": 1, "dt": "a", "v": 1, "s": "x"}], schema=schema))
    t.write(pa.Table.from_pylist([{"id": 1, "dt": "b", "v": 5, "s": None},
                                  {"id": 2, "dt": "b", "v": 7, "s": "y"}], schema=schema))
    if engine == "first-row":
        t.compact(full=True)  # first-row reads skip level 0
    got = {r["id"]: (r["dt"], r["v"], r["s"]) for r in t.read().to_pylist()}
    assert got == expected


def test_cross_partition_aggregation_updates_old_partition(catalog) -> None:
    t = catalog.create_table("db.agg", XSCHEMA, primary_key=["id"], partition_keys=["dt"],
                             options={"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    t.write(xrows([(1, "a", 1)]))
    t.write(xrows([(1, "b", 2), (1, "c", 3)]))
    assert xread(t) == {1: ("a", 6)}


def test_cross_partition_index_ttl_skips_old_buckets(catalog) -> None:
    from laketide.write.cross_partition import CrossPartitionAssigner

    t = catalog.create_table("db.ttl", XSCHEMA, primary_key=["id"], partition_keys=["dt"],
                             options={"cross-partition-upsert.index-ttl": "1 h"})
    t.write(xrows([(1, "a", 1), (2, "b", 2)]))
    fresh = CrossPartitionAssigner.bootstrap(file_io=t.file_io, table_path=t.path, schema=t.schema)
    assert fresh.bootstrap_stats.keys == 2 and fresh.bootstrap_stats.buckets_skipped_by_ttl == 0
    later = CrossPartitionAssigner.bootstrap(file_io=t.file_io, table_path=t.path, schema=t.schema,
                                             now_ms=2**62)
    assert later.bootstrap_stats.keys == 0 and later.bootstrap_stats.buckets_skipped_by_ttl == 2


def test_cross_partition_index_ttl_forgets_unwritten_keys_of_a_long_lived_writer(catalog) -> None:
    t = catalog.create_table("db.ttl2", XSCHEMA, primary_key=["id"], partition_keys=["dt"],
                             options={"cross-partition-upsert.index-ttl": "1 h"})
    w = t.new_write()
    w.write(xrows([(1, "a", 1), (2, "a", 2)]))
    assigner = w.bucket_assigner
    now = [assigner.clock_ms() + 1000]
    assigner.clock_ms = lambda: now[0]
    w.write(xrows([(1, "a", 1), (2, "a", 3)]))  # both keys written (again) at t0
    now[0] += 3_600_000 - 1
    w.write(xrows([(2, "b", 4)]))  # key 2 moves (still known); key 1 now untouched for 1 h - 1 ms
    now[0] += 2
    w.write(xrows([(1, "c", 5)]))  # key 1 expired: treated as new, its old row stays (Paimon's TTL trade-off)
    t.commit(w.prepare_commit())
    rows = sorted((r["id"], r["dt"], r["v"]) for r in t.read().to_pylist())
    assert rows == [(1, "a", 1), (1, "c", 5), (2, "b", 4)]


def test_cross_partition_second_writer_is_detected(catalog) -> None:
    t = catalog.create_table("db.xc", XSCHEMA, primary_key=["id"], partition_keys=["dt"])
    t.write(xrows([(1, "a", 1)]))
    long_lived, other = t.new_write(), t.new_write()
    long_lived.write(xrows([(2, "a", 2)]))  # looked keys up at snapshot 1
    t.commit(long_lived.prepare_commit())
    t.compact(full=True)  # compactions add no keys: never a conflict
    long_lived.write(xrows([(3, "b", 3)]))  # its own earlier commit is no conflict either
    t.commit(long_lived.prepare_commit())
    other.write(xrows([(2, "b", 20)]))  # another job, planned at snapshot 3: key 2 moves to b
    t.commit(other.prepare_commit())
    before = t.latest_snapshot()
    long_lived.write(xrows([(2, "c", 200)]))  # would still delete key 2 from a, not b: two copies
    with pytest.raises(CommitConflictError, match="written by another job"):
        t.commit(long_lived.prepare_commit())
    assert t.latest_snapshot() == before
    assert xread(t) == {1: ("a", 1), 2: ("b", 20), 3: ("b", 3)}
