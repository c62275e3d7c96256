"""write-buffer-size bounds dynamic-bucket and cross-partition writes however large one write() call is
(write/routed_pieces.py): rows reach the buffers in pieces of a quarter of the budget, bounded after each.

A single call of 20x the budget stays within budget + one piece; the results equal dict oracles with a tiny
buffer (keys moving partitions, deletes, partial-update); a key lives in exactly one place; pieces concatenate to
the groups of an unbounded route; an abort after mid-write flushes leaves no file and the writer can go on.
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
from laketide.write.bucket_assigner import DynamicBucketIndex, HashBucketAssigner, assigner_layout, plan_dynamic
from laketide.write.routed_pieces import group_pieces
from laketide.write.table_write import TableWrite
from laketide.write.cross_partition import CrossPartitionAssigner, key_bytes
from laketide.write.write_budget import MIN_PIECE_ROWS
from tests import table_checks

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("name", pa.string()), ("v", pa.int64())])
BUDGET = 64 * 1024
PARTS = np.array(["a", "b", "c"])


def _rows(keys: np.ndarray, rng: np.random.Generator, *, nulls: bool = False) -> pa.Table:
    n = len(keys)
    names = np.array([f"name-{i:06d}" for i in rng.integers(0, 1000, n)])
    mask = rng.random(n) < 0.3 if nulls else None
    return pa.table({"k": pa.array(keys, pa.int64()), "p": pa.array(PARTS[rng.integers(0, len(PARTS), n)]),
                     "name": pa.array(names, mask=mask), "v": pa.array(rng.integers(-1000, 1000, n), pa.int64(),
                                                                      mask=mask)}, schema=SCHEMA)


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


def _create(root: Path, mode: str, **options: str) -> laketide.Table:
    cat = laketide.load_catalog(warehouse=str(root / "wh"))
    cat.create_database("db", exist_ok=True)
    keys = ["k", "p"] if mode == "dynamic" else ["k"]  # dynamic: the partition is part of the key
    return cat.create_table("db.t", SCHEMA, primary_key=keys, partition_keys=["p"],
                            options={"bucket": "-1", "write-buffer-size": str(BUDGET), **options})


def _data_files(t: laketide.Table) -> list[Path]:
    return sorted(Path(t.path.removeprefix("file://")).glob("p=*/bucket-*/data-*"))


def _buffered_peaks(t: laketide.Table, data: pa.Table) -> list[int]:
    """Write ``data`` in one call and commit; the sum of all buffers after every piece buffered."""
    recorders: list[_Recorder] = []
    totals: list[int] = []

    def wrap(tw: TableWrite, partition: bytes, bucket: int, writer: MergeTreeWriter) -> _Recorder:
        rec = _Recorder(writer)
        original = rec.write

        def write(rows: pa.Table) -> None:
            original(rows)
            totals.append(sum(r.buffered_bytes for r in recorders))

        rec.write = write  # type: ignore[method-assign]
        recorders.append(rec)
        return rec

    w = t.store.new_write(wrap_writer=wrap, restore_sequence=t._sequence_restorer())  # as Table.new_write
    w.write(data)
    t.commit(w.prepare_commit())
    return totals


@pytest.mark.parametrize("mode", ["dynamic", "cross-partition"])
def test_one_write_20x_the_buffer_stays_within_it(tmp_path: Path, mode: str) -> None:
    t = _create(tmp_path, mode, **{"dynamic-bucket.target-row-num": "15000"})
    rng = np.random.default_rng(1)
    data = _rows(rng.permutation(60_000), rng)
    assert data.nbytes > 20 * BUDGET  # one call, many times the buffer, several buckets per partition
    piece_bytes = data.slice(0, MIN_PIECE_ROWS).nbytes * 2  # a piece in the key-value layout, generously
    totals = _buffered_peaks(t, data)
    assert len(totals) > 5 and max(totals) <= BUDGET + piece_bytes
    assert len(_data_files(t)) > 5  # flushed as several level-0 runs
    assert t.read().sort_by("k").to_pydict() == data.sort_by("k").to_pydict()
    # the upsert: 20x the buffer again, every key changes partition (cross-partition: a delete in the old one)
    moved = data.set_column(1, "p", pa.array(np.where(data.column("p").to_numpy(zero_copy_only=False) == "a",
                                                       "b", "a")))
    totals = _buffered_peaks(t, moved)
    assert max(totals) <= BUDGET + piece_bytes
    got = t.read().sort_by([("k", "ascending"), ("p", "ascending")])
    if mode == "cross-partition":
        assert got.to_pydict() == moved.sort_by("k").to_pydict()
        assert all(len(places) == 1 for places in table_checks.key_locations(t, "k").values())
    else:  # (k, p) is the key: both versions live
        assert got.num_rows == 2 * data.num_rows


def _oracle_apply(oracle: dict[int, dict[str, object]], batch: pa.Table, *, engine: str, mode: str,
                  deleted: bool = False) -> None:
    for r in batch.to_pylist():
        key = r["k"] if mode == "cross-partition" else (r["k"], r["p"])
        if deleted:
            oracle.pop(key, None)  # type: ignore[call-overload]
        elif engine == "deduplicate":
            oracle[key] = r  # type: ignore[index]
        else:  # partial-update: the key keeps its first partition; non-null fields win
            old = oracle.get(key, {})  # type: ignore[call-overload]
            oracle[key] = {c: (r[c] if r[c] is not None else old.get(c)) for c in SCHEMA.names}  # type: ignore[index]
            if old:
                oracle[key]["p"] = old["p"]  # type: ignore[index]


@pytest.mark.parametrize(("mode", "engine"), [("dynamic", "deduplicate"), ("cross-partition", "deduplicate"),
                                              ("cross-partition", "partial-update")])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), writes=st.integers(1, 3))
def test_large_writes_with_tiny_buffer_equal_dict_oracle(tmp_path_factory, mode: str, engine: str,  # noqa: ANN001
                                                         seed: int, writes: int) -> None:
    t = _create(tmp_path_factory.mktemp("t"), mode, **{"write-buffer-size": "16 kb", "merge-engine": engine,
                                                         "dynamic-bucket.target-row-num": "700"})
    rng = np.random.default_rng(seed)
    oracle: dict[object, dict[str, object]] = {}
    for _ in range(writes):
        n = int(rng.integers(1, 12_000))
        batch = _rows(rng.integers(0, 2_500, n), rng, nulls=engine == "partial-update")
        t.write(batch)  # keys repeat and move partition within the call, across its pieces and flushes
        _oracle_apply(oracle, batch, engine=engine, mode=mode)
        if engine == "deduplicate" and rng.random() < 0.6:
            gone = _rows(rng.integers(0, 2_500, 400), rng)
            w = t.new_write()
            w.write(gone, row_kind=RowKind.DELETE)
            t.commit(w.prepare_commit())
            _oracle_apply(oracle, gone, engine=engine, mode=mode, deleted=True)
    got = t.read().to_pylist()
    assert len(got) == len(oracle)
    key = (lambda r: r["k"]) if mode == "cross-partition" else (lambda r: (r["k"], r["p"]))
    assert {key(r): r for r in got} == oracle
    if mode == "cross-partition":
        assert all(len(places) == 1 for places in table_checks.key_locations(t, "k").values())


def _groups(groups) -> dict[tuple, pa.Table]:  # noqa: ANN001
    out: dict[tuple, list[pa.Table]] = {}
    for g in groups:
        out.setdefault((g.partition, g.bucket), []).append(g.rows)
    return {k: pa.concat_tables(v).combine_chunks() for k, v in out.items()}


def test_pieces_concatenate_to_the_unbounded_groups(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    t = _create(tmp_path, "dynamic", **{"dynamic-bucket.target-row-num": "3000"})
    t.write(_rows(np.arange(5_000), rng))  # an index to start from: known keys and partly full buckets
    data = t.store.new_write().prepare(_rows(rng.integers(0, 20_000, 30_000), rng))

    def dynamic(max_rows: int | None) -> dict[tuple, pa.Table]:
        index = DynamicBucketIndex.latest(file_io=t.file_io, table_path=t.path, schema=t.schema)
        assigner = HashBucketAssigner(index=index, layout=assigner_layout(t.schema.core_options),
                                      target_row_num=3000, seed=0)
        planned = plan_dynamic(data, schema=t.schema, partition_types=[f.type for f in t.schema.partition_fields],
                               index=index, assigner=assigner)
        got = _groups(group_pieces(planned, max_rows))
        if max_rows is not None:
            assert all(len(parts) for parts in got.values())
        return got

    whole, pieces = dynamic(None), dynamic(997)
    assert whole.keys() == pieces.keys() and len(whole) > 3
    assert all(pieces[k].equals(whole[k]) for k in whole)

    c = _create(tmp_path / "c", "cross-partition", **{"dynamic-bucket.target-row-num": "3000"})
    c.write(_rows(np.arange(5_000), rng))
    data = c.store.new_write().prepare(_rows(rng.integers(0, 20_000, 30_000), rng))

    def cross(max_rows: int | None) -> dict[tuple, pa.Table]:
        assigner = CrossPartitionAssigner.bootstrap(file_io=c.file_io, table_path=c.path, schema=c.schema)
        return _groups(assigner.route(data, max_rows=max_rows))

    whole, pieces = cross(None), cross(997)
    assert whole.keys() == pieces.keys() and len(whole) > 3
    assert all(pieces[k].equals(whole[k]) for k in whole)
    deletes = sum(int((g.column("_VALUE_KIND").to_numpy() == int(RowKind.DELETE)).sum()) for g in whole.values())
    assert deletes > 0  # moved keys left a delete behind


@pytest.mark.parametrize("mode", ["dynamic", "cross-partition"])
def test_abort_after_mid_write_flushes_leaves_no_files(tmp_path: Path, mode: str) -> None:
    t = _create(tmp_path, mode, **{"write-only": "true", "dynamic-bucket.target-row-num": "10000"})
    rng = np.random.default_rng(2)
    first = _rows(np.arange(100), rng)
    t.write(first)
    before = _data_files(t)
    w = t.new_write()
    w.write(_rows(np.arange(40_000), rng))
    assert len(_data_files(t)) > len(before)  # flushed while writing
    w.abort()
    assert _data_files(t) == before
    # the same writer goes on after the abort: what it routed then is forgotten
    again = _rows(np.arange(50, 150), rng)
    w.write(again)
    t.commit(w.prepare_commit())
    key = (lambda r: r["k"]) if mode == "cross-partition" else (lambda r: (r["k"], r["p"]))
    expected = {key(r): r for r in first.to_pylist()} | {key(r): r for r in again.to_pylist()}
    got = t.read().to_pylist()
    assert {key(r): r for r in got} == expected and len(got) == len(expected)
    if mode == "cross-partition":
        assert all(len(places) == 1 for places in table_checks.key_locations(t, "k").values())


def test_empty_write_with_a_tiny_buffer(tmp_path: Path) -> None:
    for mode in ("dynamic", "cross-partition"):
        t = _create(tmp_path / mode, mode, **{"write-buffer-size": "1 b"})
        assert t.write(SCHEMA.empty_table()) is None
        assert t.read().num_rows == 0
        t.write(_rows(np.arange(10), np.random.default_rng(0)))
        assert t.read().num_rows == 10


@pytest.mark.parametrize("key_type", [pa.int64(), pa.string()])
def test_bootstrap_keeps_the_first_of_a_key_in_two_places(tmp_path: Path, key_type: pa.DataType) -> None:
    schema = pa.schema([pa.field("k", key_type, nullable=False), pa.field("p", pa.string(), nullable=False),
                        ("v", pa.int64())])
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema, primary_key=["k"], partition_keys=["p"], options={"bucket": "-1"})
    keys = pa.array([1, 2, 3]).cast(key_type)
    t.write(pa.table({"k": keys, "p": ["a", "a", "b"], "v": [1, 2, 3]}, schema=schema))
    before = CrossPartitionAssigner.bootstrap(file_io=t.file_io, table_path=t.path, schema=t.schema)
    assert before.bootstrap_stats is not None and before.bootstrap_stats.duplicate_keys == 0
    assert {pid: dict(c) for pid, c in before.counts.items()} == {0: {0: 2}, 1: {0: 1}}
    # a second job (here: buckets handed over, as Spark's assigner stage does) put key 1 in partition b too
    w = t.new_write()
    w.write(pa.table({"k": keys.slice(0, 1), "p": ["b"], "v": [9]}, schema=schema), buckets=[0])
    t.commit(w.prepare_commit())
    after = CrossPartitionAssigner.bootstrap(file_io=t.file_io, table_path=t.path, schema=t.schema)
    assert after.bootstrap_stats is not None and after.bootstrap_stats.duplicate_keys == 1
    assert len(after.keys) == 3
    one = key_bytes(pa.table({"k": keys.slice(0, 1)}), ["k"], [t.schema.field("k").type])[0].as_py()
    at = after.keys.to_pylist().index(one)
    assert (after.part_of[at], after.bucket_of[at]) == (0, 0)  # the first planned bucket wins
    assert {pid: dict(c) for pid, c in after.counts.items()} == {0: {0: 2}, 1: {0: 1}}
