"""Hash index files hold exactly the hashes of every key ever written to their bucket (Paimon's
DynamicBucketIndexMaintainer), now that only the assigner's new hashes reach them; abort forgets the new ones."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from laketide.meta.binary_row import hash_rows
from laketide.types import BigIntType
from tests import table_checks
from tests.integration.test_dynamic_bucket import SCHEMA, hash_files


def _batch(keys: np.ndarray, dt: str, tag: str) -> pa.Table:
    n = len(keys)
    return pa.table({"k": pa.array(keys, pa.int64()), "dt": pa.array([dt] * n), "v": pa.array([tag] * n),
                     "n": pa.array(keys, pa.int64())}, schema=SCHEMA)


def _hashes(keys) -> np.ndarray:
    return hash_rows(pa.table({"k": pa.array(list(keys), pa.int64())}), ["k"], [BigIntType(nullable=False)])


def _check(t, written: dict[str, set[int]]) -> None:
    """Per partition ("" when unpartitioned): the files are sorted, disjoint, cover every key ever written
    (deleted ones too), and each live key's hash is in the file of the bucket holding it."""
    files = hash_files(t)
    live = table_checks.key_buckets(t, "k")
    for dt, keys in written.items():
        mine = {b: h for (p, b), h in files.items() if dt.encode() in p}
        for h in mine.values():
            assert bool((h[1:] > h[:-1]).all())
        union = np.concatenate(list(mine.values()))
        assert len(union) == len(set(union.tolist()))
        assert set(union.tolist()) == set(_hashes(sorted(keys)).tolist())
        live_keys = [(k, b) for (part, k), buckets in live.items() if part in ((dt,), ()) for b in buckets]
        set_of = {b: set(h.tolist()) for b, h in mine.items()}
        live_hashes = _hashes([k for k, _ in live_keys]).tolist()
        for h, (_, bucket) in zip(live_hashes, live_keys):
            assert h in set_of[bucket]


@pytest.mark.parametrize("parallelism", ["1", "3"])
def test_index_files_cover_every_written_key(catalog, parallelism: str) -> None:
    t = catalog.create_table(f"db.t{parallelism}", SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"], options={
        "dynamic-bucket.target-row-num": "3000", "dynamic-bucket.assigner-parallelism": parallelism})
    rng = np.random.default_rng(11)
    written: dict[str, set[int]] = {"a": set(), "b": set()}
    for commit in range(3):
        w = t.new_write()
        for _ in range(3):  # several batches per commit: small and large (>= 4096 keys), repeats inside
            dt = "a" if rng.random() < 0.6 else "b"
            keys = rng.integers(0, 12_000, int(rng.choice([7, 900, 5000])))
            if rng.random() < 0.3:
                w.delete(_batch(keys, dt, "d"))  # a delete of a never-written key is indexed too (Java)
            else:
                w.upsert(_batch(keys, dt, f"c{commit}"))
            written[dt] |= set(keys.tolist())
        t.commit(w.prepare_commit())
        _check(t, {dt: keys for dt, keys in written.items() if keys})


def test_abort_then_rewrite_indexes_the_keys_again(catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"dynamic-bucket.target-row-num": "50"})
    t.write(_batch(np.arange(30), "x", "base"))
    w = t.new_write()
    w.write(_batch(np.arange(30, 130), "x", "lost"))
    w.abort()
    w.write(_batch(np.arange(100, 160), "x", "again"))  # 100..129 were assigned before the abort
    t.commit(w.prepare_commit())
    _check(t, {"": set(range(30)) | set(range(100, 160))})
    files = hash_files(t)
    # the aborted keys left no trace in the buckets' fill: 30 + 20 in bucket 0, then 40 in bucket 1
    assert sorted((b, len(h)) for (_, b), h in files.items()) == [(0, 50), (1, 40)]
    assert {r["k"] for r in t.read().to_pylist()} == set(range(30)) | set(range(100, 160))
