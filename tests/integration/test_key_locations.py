"""Keyed lookups of a cross-partition table's keys (laketide.write.key_locations) against the full bootstrap.

The bootstrap reads every live key of the table with its partition and bucket: it is the oracle for where a key
lives and how many live keys a bucket holds, on tables whose buckets have overlapping files, deletes and moves.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid

import numpy as np
import pyarrow as pa
import pytest

from laketide.write.cross_partition import CrossPartitionAssigner, KeyBootstrap, key_bytes
from laketide.write.key_locations import KeyLocations, exact_key_count

KEYS = {
    "int": ([pa.field("id", pa.int64(), nullable=False)], lambda r: r.randint(0, 60)),
    "string": ([pa.field("id", pa.string(), nullable=False)], lambda r: f"k/{r.randint(0, 60)}.."),
    # timestamps: row groups are not pruned by binary search (naive vs aware values), rows still filtered exactly
    "timestamp": ([pa.field("id", pa.timestamp("us"), nullable=False)],
                  lambda r: dt.datetime(2026, 1, 1) + dt.timedelta(seconds=r.randint(0, 60))),
    # (id, name) pairs share ids across names: a per-column IN admits pairs that are not keys
    "composite": ([pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.string(), nullable=False)],
                  lambda r: (r.randint(0, 12), r.choice("xyzw"))),
}


def _schema(kind: str) -> pa.Schema:
    return pa.schema([*KEYS[kind][0], pa.field("dt", pa.string(), nullable=False), ("v", pa.int64()),
                      ("op", pa.string())])


def _rows(kind: str, schema: pa.Schema, items: list[tuple]) -> pa.Table:
    out = []
    for key, part, v, op in items:
        key = key if isinstance(key, tuple) else (key,)
        out.append(dict(zip(schema.names, (*key, part, v, op))))
    return pa.Table.from_pylist(out, schema=schema)


def _build(catalog, kind: str, seed: int, *, compact: bool):  # noqa: ANN001, ANN202
    schema = _schema(kind)
    pk = [f.name for f in KEYS[kind][0]]
    t = catalog.create_table(f"db.k{uuid.uuid4().hex}", schema, primary_key=pk, partition_keys=["dt"],
                             options={"dynamic-bucket.target-row-num": "7", "rowkind.field": "op"})
    rnd = random.Random(seed)
    for _ in range(4):  # several commits: level-0 files overlap, deletes and moves between partitions
        items = [(KEYS[kind][1](rnd), rnd.choice("abc"), rnd.randint(0, 9), "-D" if rnd.random() < 0.2 else "+I")
                 for _ in range(rnd.randint(10, 50))]
        t.write(_rows(kind, schema, items))
    if compact:
        t.compact(full=True)
    return catalog.table(t.name), pk


@pytest.mark.parametrize("kind", list(KEYS))
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_locate_and_counts_match_the_bootstrap(catalog, kind: str, compact: bool, seed: int) -> None:
    t, pk = _build(catalog, kind, seed, compact=compact)
    schema = t.schema
    types = [schema.field(k).type for k in pk]
    oracle = CrossPartitionAssigner.bootstrap(file_io=t.file_io, table_path=t.path, schema=schema)
    plan = KeyBootstrap.plan(file_io=t.file_io, table_path=t.path, schema=schema)
    rnd = random.Random(seed + 100)
    query = _rows(kind, _schema(kind), [(KEYS[kind][1](rnd), "a", 0, None) for _ in range(80)]).select(pk)
    part, bucket = KeyLocations(plan).locate(query)
    assert 0 < part.null_count < len(part)  # keys the table holds and keys it does not

    where = dict(zip(oracle.keys.to_pylist(), zip(oracle.part_of.tolist(), oracle.bucket_of.tolist())))
    for kb, p, b in zip(key_bytes(query, pk, types).to_pylist(), part.to_pylist(), bucket.to_pylist()):
        if kb in where and where[kb][0] >= 0:
            assert (plan.partitions[p], b) == (oracle.partitions[where[kb][0]], where[kb][1])
        else:
            assert p is None and b is None

    counts = dict(KeyLocations(plan).live_counts(set(plan.partitions), lambda _b: True))
    expected = {(oracle.partitions[pid], b): n for pid, per in oracle.counts.items() for b, n in per.items()}
    # a bucket whose keys were all deleted is planned (its files are live) and counts 0
    assert {k: v for k, v in counts.items() if v} == expected


def test_exact_count_only_from_metadata_that_says_it(catalog) -> None:
    t, _ = _build(catalog, "int", 5, compact=False)
    plan = KeyBootstrap.plan(file_io=t.file_io, table_path=t.path, schema=t.schema)
    assert plan.splits and all(exact_key_count(s) is None for s in plan.splits if len(s.files) > 1)
    t.compact(full=True)
    t = catalog.table(t.name)
    plan = KeyBootstrap.plan(file_io=t.file_io, table_path=t.path, schema=t.schema)
    for s in plan.splits:  # one sorted run without retractions: the row count is the live-key count
        assert exact_key_count(s) == sum(b.num_rows for b in KeyLocations(plan)._reader().read(s))


def test_empty_inputs(catalog) -> None:
    t, pk = _build(catalog, "int", 7, compact=False)
    plan = KeyBootstrap.plan(file_io=t.file_io, table_path=t.path, schema=t.schema)
    part, bucket = KeyLocations(plan).locate(pa.table({"id": pa.array([], pa.int64())}))
    assert len(part) == len(bucket) == 0
    assert list(KeyLocations(plan).live_counts(set(), lambda _b: True)) == []
    empty = catalog.create_table("db.empty", _schema("int"), primary_key=["id"], partition_keys=["dt"])
    plan = KeyBootstrap.plan(file_io=empty.file_io, table_path=empty.path, schema=empty.schema)
    part, _ = KeyLocations(plan).locate(pa.table({"id": pa.array(np.arange(3), pa.int64())}))
    assert part.null_count == 3
