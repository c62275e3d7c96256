"""write-buffer-size bounds a primary-key write's buffers however large one write() call is (write/write_budget.py).

A single call with many times the budget (one bucket larger than the buffer) is buffered a slice at a time and
flushed as several level-0 runs; the result equals a dict oracle (last write wins), also for partial-update and
with deletes, and an abort after mid-write flushes leaves no file behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.io.kv import RowKind
from laketide.mergetree.writer import MergeTreeWriter
from laketide.types import BigIntType
from laketide.write.bucketing import split_by_partition_and_bucket
from laketide.write.table_write import TableWrite
from laketide.write.write_budget import MIN_PIECE_ROWS, piece_rows

SCHEMA = pa.schema([("k", pa.int64()), ("name", pa.string()), ("v", pa.int64())])
BUDGET = 64 * 1024


def _rows(keys: np.ndarray, rng: np.random.Generator, *, nulls: bool = False) -> pa.Table:
    names = np.array([f"name-{i:06d}" for i in rng.integers(0, 1000, len(keys))])
    v = rng.integers(-1000, 1000, len(keys))
    mask = rng.random(len(keys)) < 0.3 if nulls else None
    return pa.table({"k": pa.array(keys, pa.int64()), "name": pa.array(names),
                     "v": pa.array(v, pa.int64(), mask=mask)})


@dataclass
class _Recorder:
    """A bucket writer that records its buffered bytes after every write (what the budget bounds)."""

    inner: MergeTreeWriter
    peaks: list[int] = field(default_factory=list)

    def write(self, rows: pa.Table) -> None:
        self.inner.write(rows)
        self.peaks.append(self.inner.buffered_bytes)

    @property
    def buffered_bytes(self) -> int:
        return self.inner.buffered_bytes

    def flush(self) -> None:
        self.inner.flush()

    def prepare_commit(self) -> list:  # type: ignore[type-arg]
        return self.inner.prepare_commit()

    def abort(self) -> None:
        self.inner.abort()


def _table(tmp_path: Path, **options: str) -> laketide.Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_key=["k"],
                            options={"bucket": "1", "write-buffer-size": str(BUDGET), **options})


def _data_files(t: laketide.Table) -> list[Path]:
    return sorted(p for p in Path(t.path.removeprefix("file://")).glob("bucket-*/data-*"))


@pytest.mark.parametrize("partitioned", [False, True])
def test_pieces_cover_each_group_in_input_order(partitioned: bool) -> None:
    n = 100_000
    table = pa.table({"x": pa.array(np.arange(n, dtype=np.int64)),
                      "p": pa.array(np.where(np.arange(n) % 3 == 0, "a", "b"))})
    rows = piece_rows(table, 64 * 1024)
    assert rows is not None and rows >= MIN_PIECE_ROWS
    assert piece_rows(table, 1 << 30) is None  # fits: one piece
    assert piece_rows(table.slice(0, 10), 1) is None  # a tiny budget does not flush row by row
    spec = {"partition_keys": ["p"] if partitioned else [], "bucket_keys": ["x"],
            "bucket_key_types": [BigIntType()], "num_buckets": 3}
    whole = {(g.partition, g.bucket): g.rows for g in split_by_partition_and_bucket(table, **spec)}
    pieces: dict[tuple, list[pa.Table]] = {}
    for g in split_by_partition_and_bucket(table, **spec, max_rows=rows):
        assert g.rows.num_rows <= rows
        pieces.setdefault((g.partition, g.bucket), []).append(g.rows)
    assert pieces.keys() == whole.keys()
    for key, parts in pieces.items():
        assert pa.concat_tables(parts).equals(whole[key])


def test_one_write_larger_than_the_buffer_stays_within_it(tmp_path: Path) -> None:
    t = _table(tmp_path)
    rng = np.random.default_rng(1)
    data = _rows(rng.permutation(60_000), rng)
    assert data.nbytes > 20 * BUDGET  # one bucket, one call, many times the buffer
    recorders: list[_Recorder] = []

    def wrap(tw: TableWrite, partition: bytes, bucket: int, writer: MergeTreeWriter) -> _Recorder:
        recorders.append(_Recorder(writer))
        return recorders[-1]

    w = t.store.new_write(wrap_writer=wrap)
    w.write(data)
    t.commit(w.prepare_commit())
    (rec,) = recorders
    piece_bytes = data.slice(0, MIN_PIECE_ROWS).nbytes * 2  # a piece in the key-value layout, generously
    assert len(rec.peaks) > 5
    assert max(rec.peaks) <= BUDGET + piece_bytes
    assert len(_data_files(t)) > 5  # flushed as several level-0 runs
    assert t.read().sort_by("k").to_pydict() == data.sort_by("k").to_pydict()


def test_abort_after_mid_write_flushes_leaves_no_files(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write-only": "true"})
    rng = np.random.default_rng(2)
    w = t.new_write()
    w.write(_rows(np.arange(40_000), rng))
    assert _data_files(t)  # flushed while writing
    w.abort()
    assert _data_files(t) == []
    w2 = t.new_write()  # a new writer after the abort works as usual
    w2.write(_rows(np.arange(10), rng))
    t.commit(w2.prepare_commit())
    assert t.read().num_rows == 10


def test_empty_write_with_a_tiny_buffer(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"write-buffer-size": "1 b"})
    assert t.write(SCHEMA.empty_table()) is None
    assert t.read().num_rows == 0


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), writes=st.integers(1, 3))
def test_large_writes_with_tiny_buffer_equal_dict_oracle(tmp_path_factory, engine: str, seed: int,  # noqa: ANN001
                                                         writes: int) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["k"],
                         options={"bucket": "2", "write-buffer-size": "16 kb", "merge-engine": engine})
    rng = np.random.default_rng(seed)
    oracle: dict[int, dict[str, object]] = {}
    for _ in range(writes):
        n = int(rng.integers(1, 20_000))
        batch = _rows(rng.integers(0, 3_000, n), rng, nulls=engine == "partial-update")
        t.write(batch)  # keys repeat within the call, across its pieces and flushes: the last one wins
        for r in batch.to_pylist():
            if engine == "deduplicate":
                oracle[r["k"]] = r
            else:
                old = oracle.get(r["k"], {})
                oracle[r["k"]] = {c: r[c] if r[c] is not None else old.get(c) for c in SCHEMA.names}
        if engine == "deduplicate" and rng.random() < 0.5:
            gone = rng.integers(0, 3_000, 500)
            t.write(pa.table({"k": pa.array(gone, pa.int64())}).append_column(
                "name", pa.nulls(len(gone), pa.string())).append_column("v", pa.nulls(len(gone), pa.int64())),
                )  # an upsert of nulls, then a delete of the same keys in one call
            w = t.new_write()
            w.write(pa.table({"k": pa.array(gone, pa.int64())}), row_kind=RowKind.DELETE)
            t.commit(w.prepare_commit())
            for k in gone.tolist():
                oracle.pop(k, None)
    got = {r["k"]: r for r in t.read().to_pylist()}
    assert got == oracle


def test_bucket_hash_in_chunks_equals_whole_column(monkeypatch: pytest.MonkeyPatch) -> None:
    from laketide import types
    from laketide.meta import binary_row
    from laketide.meta.bucket import bucket_ids

    rng = np.random.default_rng(3)
    n = 10_000
    strings = np.array([f"s{i}" * int(rng.integers(1, 6)) for i in range(n)], dtype=object)
    strings[rng.random(n) < 0.1] = None
    table = pa.Table.from_batches(pa.table({
        "a": pa.array(rng.integers(-10**12, 10**12, n), pa.int64()),
        "s": pa.array(strings, pa.string()),
    }).to_batches(max_chunksize=3_001))  # several chunks, so chunks and hash slices do not line up
    key_types = [types.BigIntType(), types.VarCharType()]
    whole = np.asarray(bucket_ids(table.combine_chunks(), ["a", "s"], key_types, 7), dtype=np.int64)
    monkeypatch.setattr(binary_row, "HASH_CHUNK_ROWS", 1_000)
    got = bucket_ids(table, ["a", "s"], key_types, 7)
    assert (got == whole).all()
