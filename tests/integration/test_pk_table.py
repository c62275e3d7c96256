"""Primary-key tables: LSM writes, sequence numbers, row kinds, deduplicate merge-on-read, against an oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import SchemaError
from laketide.io.kv import RowKind

SCHEMA = pa.schema([
    ("k", pa.int32()), ("part", pa.string()), ("name", pa.string()), ("v", pa.int64()), ("seq", pa.int64()),
])


def rows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA
    )


def as_dict(table: pa.Table) -> dict[tuple, tuple]:
    out = {}
    for r in table.to_pylist():
        key = (r["k"], r["part"])
        assert key not in out, f"duplicate key {key} in read result"
        out[key] = (r["name"], r["v"], r["seq"])
    return out


# An operation: (kind, rows); several operations per commit, several commits.
_row = st.tuples(
    st.integers(0, 12),                      # k: a small key space, so keys collide often
    st.sampled_from(["p0", "p1"]),           # part
    st.text(alphabet="abcxyz", max_size=12),  # name: short and long (> 7 bytes) strings
    st.integers(-5, 5),                      # v
    st.one_of(st.none(), st.integers(0, 3)),  # seq: the sequence.field (nullable)
)
_op = st.tuples(st.sampled_from(["upsert", "delete"]), st.lists(_row, min_size=1, max_size=15))
_commit = st.lists(_op, min_size=1, max_size=4)


@pytest.mark.parametrize("sequence_field", [False, True])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(_commit, min_size=1, max_size=5))
def test_pk_table_equals_dict_oracle(tmp_path_factory, sequence_field: bool, commits) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    options = {"bucket": "3", "write-buffer-size": "4 kb", "read.batch-size": "1"}
    if sequence_field:
        options["sequence.field"] = "seq"
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "part"], partition_keys=["part"], options=options)
    oracle: dict[tuple, tuple] = {}
    order: dict[tuple, tuple] = {}  # key -> (seq or -inf, arrival) of the winning row
    arrival = 0

    def newer(key: tuple, seq: int | None) -> bool:
        if not sequence_field or key not in order:
            return True
        rank = (-1 if seq is None else seq, arrival)
        return rank >= order[key]

    for commit in commits:
        w = t.new_write()
        for kind, items in commit:
            if kind == "upsert":
                w.write(rows(items))
            else:
                w.delete(rows(items))
            for k, part, name, v, seq in items:
                arrival += 1
                key = (k, part)
                if newer(key, seq):
                    order[key] = (-1 if seq is None else seq, arrival)
                    if kind == "upsert":
                        oracle[key] = (name, v, seq)
                    else:
                        oracle.pop(key, None)
        t.commit(w.prepare_commit())
        assert as_dict(t.read()) == oracle


def test_updates_deletes_and_time_travel(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], partition_keys=["part"],
                             options={"bucket": "2"})
    t.write(rows([(1, "a", "one", 1, None), (2, "a", "two", 2, None), (3, "b", "three", 3, None)]))
    t.write(rows([(2, "a", "TWO", 20, None), (4, "b", "four", 4, None)]))
    w = t.new_write()
    w.delete(pa.table({"k": pa.array([3], pa.int32()), "part": ["b"]}))
    t.commit(w.prepare_commit())
    assert as_dict(t.read()) == {(1, "a"): ("one", 1, None), (2, "a"): ("TWO", 20, None),
                                 (4, "b"): ("four", 4, None)}
    assert as_dict(t.read(snapshot_id=1))[(2, "a")] == ("two", 2, None)
    assert t.latest_snapshot().total_record_count == 6  # file-level counts, as Paimon reports them


def test_value_filters_apply_after_the_merge(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={"bucket": "1"})
    t.write(rows([(1, "a", "old", 100, None)]))
    t.write(rows([(1, "a", "new", 1, None)]))
    # filtering before the merge would drop the new version and resurrect the old one
    assert t.read(where="v > 50").num_rows == 0
    assert t.read(where="v < 50").column("name").to_pylist() == ["new"]
    # key predicates prune files by key range and still give the newest version
    assert t.read(where="k = 1").column("name").to_pylist() == ["new"]
    assert t.read(where="k = 2").num_rows == 0


def test_rowkind_field_and_ignore_delete(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    t = catalog.create_table("db.rk", schema, primary_key=["k"], options={"bucket": "2", "rowkind.field": "op"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I", "+I", "+I"]}))
    t.write(pa.table({"k": [1, 2, 2], "v": ["a", "b", "b2"], "op": ["-D", "-U", "+U"]}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 2, "v": "b2", "op": "+U"}, {"k": 3, "v": "c", "op": "+I"}]
    with pytest.raises(SchemaError, match="invalid row kinds"):
        t.write(pa.table({"k": [9], "v": ["x"], "op": ["?"]}))
    ig = catalog.create_table("db.ig", schema, primary_key=["k"],
                              options={"bucket": "1", "rowkind.field": "op", "ignore-delete": "true"})
    ig.write(pa.table({"k": [1], "v": ["a"], "op": ["+I"]}))
    ig.write(pa.table({"k": [1], "v": ["a"], "op": ["-D"]}))
    assert ig.read().num_rows == 1


def test_several_writes_in_one_commit_give_unique_keys(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={"bucket": "1"})
    w = t.new_write()
    for i in range(5):
        w.write(rows([(1, "a", f"v{i}", i, None), (2, "a", f"w{i}", i, None)]))
    messages = w.prepare_commit()
    files = [f for m in messages for f in m.new_files]
    assert len(files) == 1 and files[0].row_count == 2  # deduplicated before writing
    assert (files[0].min_sequence_number, files[0].max_sequence_number) == (8, 9)
    t.commit(messages)
    assert as_dict(t.read()) == {(1, "a"): ("v4", 4, None), (2, "a"): ("w4", 4, None)}
    # a new writer continues the bucket's sequence numbers
    t.write(rows([(1, "a", "later", 9, None)]))
    newest = max((e for s in t.scan().plan() for e in s.files), key=lambda f: f.max_sequence_number)
    assert newest.min_sequence_number == 10


def test_bad_input(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={"bucket": "1"})
    with pytest.raises(SchemaError, match="NOT NULL"):
        t.write(rows([(None, "a", "x", 1, None)]))
    assert t.latest_snapshot() is None
    with pytest.raises(SchemaError, match="partition keys"):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], partition_keys=["part"], options={"bucket": "2"})
    dyn = catalog.create_table("db.dyn", SCHEMA, primary_key=["k", "part"])  # bucket = -1: dynamic buckets
    dyn.write(rows([(1, "a", "x", 1, None)]))
    assert dyn.read().num_rows == 1
    w = t.new_write()
    with pytest.raises(SchemaError, match="missing columns"):
        w.delete(pa.table({"name": ["x"]}))  # a delete needs the primary key
    w.write(rows([(1, "a", "x", 1, None)]), row_kind=RowKind.UPDATE_AFTER)
    assert t.latest_snapshot() is None  # nothing is committed before commit()


def test_write_buffer_overflow_flushes_level0_runs(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"],
                             options={"bucket": "2", "write-buffer-size": "2 kb"})
    w = t.new_write()
    expected = {}
    for round_ in range(6):
        items = [(k, "a", f"r{round_}", round_, None) for k in range(40)]
        w.write(rows(items))
        expected.update({(k, "a"): (f"r{round_}", round_, None) for k in range(40)})
    messages = w.prepare_commit()
    files = [f for m in messages for f in m.new_files]
    assert len(files) > 2 and all(f.level == 0 for f in files)  # several sorted runs in one commit
    t.commit(messages)
    assert as_dict(t.read()) == expected


def test_key_equality_reads_only_the_keys_bucket(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", SCHEMA, primary_key=["k", "part"], partition_keys=["part"],
                             options={"bucket": "4"})
    t.write(rows([(k, "a", f"n{k}", k, None) for k in range(200)]))
    t.write(rows([(k, "a", f"m{k}", -k, None) for k in range(0, 200, 3)]))
    all_buckets = {s.bucket for s in t.scan().plan()}
    assert len(all_buckets) == 4
    for k in (0, 7, 42, 199):
        splits = t.scan(where=f"k = {k}").plan()
        assert len({s.bucket for s in splits}) == 1
        got = t.read(where=f"k = {k}").to_pylist()
        assert [(r["k"], r["name"]) for r in got] == [(k, f"m{k}" if k % 3 == 0 else f"n{k}")]
    assert {s.bucket for s in t.scan(where="k IN (1, 2, 3, 4, 5, 6, 7, 8)").plan()} <= all_buckets
    assert t.read(where="k IN (3, 4) AND k = 4").column("k").to_pylist() == [4]
    assert t.read(where="k = 1 OR k = 2").num_rows == 2  # an OR does not pin buckets: every bucket is read
