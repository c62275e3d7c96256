"""Point and range reads on primary-key tables, and Table.lookup, against a dict oracle and the full read.

Key predicates prune files (key statistics) and row groups and filter rows before the merge; every such read
must return exactly what a full read filtered afterwards returns, whatever the merge engine, deletion vectors,
levels (level-0 files next to compacted ones) and sequence numbers.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.expr import and_, col, filter_table, or_, parse_where

SCHEMA = pa.schema([("k", pa.int32()), ("part", pa.string()), ("name", pa.string()), ("v", pa.int64())])
KEY = ["k", "part"]

LAYOUTS: dict[str, dict[str, str]] = {
    "deduplicate": {"bucket": "2", "write-buffer-size": "4 kb"},
    "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "dynamic-bucket": {"bucket": "-1"},
    "no-value-stats": {"bucket": "1", "metadata.stats-mode": "none"},
    "partial-update": {"bucket": "2", "merge-engine": "partial-update"},
    "aggregation": {"bucket": "2", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"bucket": "2", "merge-engine": "first-row"},
}
# Engines whose result a last-write-wins dict describes (deletes included).
DICT_ORACLE = {"deduplicate", "deletion-vectors", "dynamic-bucket", "no-value-stats"}


def rows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def as_dict(table: pa.Table) -> dict[tuple, tuple]:
    out = {}
    for r in table.to_pylist():
        key = (r["k"], r["part"])
        assert key not in out, f"duplicate key {key}"
        out[key] = (r["name"], r["v"])
    return out


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by([("k", "ascending"), ("part", "ascending")])


_key = st.tuples(st.integers(0, 40), st.sampled_from(["p0", "p1"]))
_row = st.tuples(_key, st.one_of(st.none(), st.text(alphabet="abxy", max_size=6)), st.integers(-5, 5))
_op = st.one_of(
    st.tuples(st.just("upsert"), st.lists(_row, min_size=1, max_size=20)),
    st.tuples(st.just("delete"), st.lists(_row, min_size=1, max_size=5)),
    st.tuples(st.just("compact"), st.booleans()),
)


def apply_op(t, layout: str, kind: str, payload, oracle: dict[tuple, tuple]) -> None:  # noqa: ANN001
    """One generated change (upsert / delete / compact) on ``t`` and on the dict oracle."""
    if kind == "compact":
        t.compact(full=payload)
        return
    items = [(k, part, name, v) for (k, part), name, v in payload]
    if kind == "delete":
        if layout not in DICT_ORACLE:
            return  # these engines do not keep deletes as a dict would
        w = t.new_write()
        w.delete(rows(items))
        t.commit(w.prepare_commit())
    else:
        t.write(rows(items))
    for k, part, name, v in items:
        if kind == "upsert":
            oracle[(k, part)] = (name, v)
        else:
            oracle.pop((k, part), None)


def _table(tmp_path_factory, layout: str):  # noqa: ANN001, ANN202
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_key=KEY, partition_keys=["part"], options=LAYOUTS[layout])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=6), batches=st.lists(st.lists(_key, max_size=30), min_size=1,
                                                                     max_size=3))
def test_lookup_and_key_reads_equal_oracle(tmp_path_factory, layout: str, ops, batches) -> None:  # noqa: ANN001
    t = _table(tmp_path_factory, layout)
    oracle: dict[tuple, tuple] = {}
    for kind, payload in ops:
        apply_op(t, layout, kind, payload, oracle)
    full = t.read()
    if layout in DICT_ORACLE:
        assert as_dict(full) == oracle
    for keys in batches:
        got = t.lookup(keys)
        wanted = set(keys)
        expected = full.filter(pc.is_in(pc.binary_join_element_wise(pc.cast(full["k"], pa.string()), full["part"], "|"),
                                        pa.array([f"{k}|{p}" for k, p in wanted], pa.string())))
        assert sort(got).equals(sort(expected))
        if layout in DICT_ORACLE:
            assert as_dict(got) == {key: oracle[key] for key in wanted if key in oracle}
        if keys:
            exact = or_(*(and_(col("k") == k, col("part") == part) for k, part in sorted(wanted)))
            assert sort(t.read(where=exact)).equals(sort(got))
            ks = sorted({k for k, _ in keys})
            where = f"k IN ({', '.join(map(str, ks))})"
            assert sort(t.read(where=where)).equals(sort(full.filter(pc.field("k").isin(ks))))
            lo, hi = ks[0], ks[-1]
            ranged = t.read(where=f"k >= {lo} AND k <= {hi} AND part = 'p1'")
            assert sort(ranged).equals(
                sort(full.filter((pc.field("k") >= lo) & (pc.field("k") <= hi) & (pc.field("part") == "p1"))))
            point = t.read(columns=["v"], where=f"k = {lo}")
            assert point.num_rows == full.filter(pc.field("k") == lo).num_rows


def test_lookup_shapes_columns_and_duplicates(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=KEY, partition_keys=["part"], options={"bucket": "2"})
    t.write(rows([(1, "p0", "a", 1), (2, "p0", "b", 2), (1, "p1", "c", 3)]))
    t.write(rows([(2, "p0", "B", 20)]))
    expected = {(1, "p0"): ("a", 1), (2, "p0"): ("B", 20)}
    assert as_dict(t.lookup([(1, "p0"), (2, "p0"), (2, "p0"), (9, "p0")])) == expected
    assert as_dict(t.lookup({"k": [1, 2], "part": ["p0", "p0"]})) == expected
    assert as_dict(t.lookup(pa.table({"part": ["p0", "p0"], "k": pa.array([1, 2], pa.int64()), "x": [0, 0]}))) \
        == expected
    assert as_dict(t.lookup(pa.record_batch({"k": [1], "part": ["p1"]}))) == {(1, "p1"): ("c", 3)}
    # (1, "p1") and (2, "p0") must not admit (1, "p0") or (2, "p1"): composite keys match exactly
    assert as_dict(t.lookup([(1, "p1"), (2, "p0")])) == {(1, "p1"): ("c", 3), (2, "p0"): ("B", 20)}
    only_v = t.lookup([(2, "p0")], columns=["v"])
    assert only_v.column_names == ["v"] and only_v.to_pylist() == [{"v": 20}]
    empty = t.lookup([], columns=["name", "k"])
    assert empty.num_rows == 0 and empty.column_names == ["name", "k"]
    assert t.lookup({"k": [None, 1], "part": ["p0", None]}).num_rows == 0  # a null key finds nothing


def test_lookup_one_column_key_takes_plain_values(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.one", schema, primary_key=["id"], options={"bucket": "4"})
    t.write(pa.table({"id": list(range(100)), "v": [str(i) for i in range(100)]}))
    t.write(pa.table({"id": [5, 200], "v": ["five", "new"]}))
    t.delete("id = 7")
    got = t.lookup([5, 7, 200, 300, 5])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"id": 5, "v": "five"}, {"id": 200, "v": "new"}]
    assert t.lookup([(5,)]).to_pylist() == [{"id": 5, "v": "five"}]


def test_lookup_bad_input_is_a_typed_error(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=KEY, partition_keys=["part"], options={"bucket": "2"})
    t.write(rows([(1, "p0", "a", 1)]))
    before = t.latest_snapshot().id
    with pytest.raises(SchemaError, match=r"db\.t.*\['part'\]"):
        t.lookup({"k": [1]})
    with pytest.raises(SchemaError, match="not a tuple of 2 values"):
        t.lookup([(1,)])
    with pytest.raises(SchemaError, match="not a tuple of 2 values"):
        t.lookup([1, 2])
    with pytest.raises(SchemaError, match="'k' is not int32"):
        t.lookup({"k": ["one"], "part": ["p0"]})
    with pytest.raises(SchemaError, match="unknown columns"):
        t.lookup([(1, "p0")], columns=["nope"])
    with pytest.raises(SchemaError, match="takes a pyarrow Table"):
        t.lookup("k=1")  # type: ignore[arg-type]
    append = catalog.create_table("db.append", SCHEMA)
    with pytest.raises(UnsupportedFeatureError, match="db.append has no primary key"):
        append.lookup([(1, "p0")])
    assert t.latest_snapshot().id == before


def test_key_statistics_skip_files_without_value_stats(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.ks", schema, primary_key=["id"],
                             options={"bucket": "1", "metadata.stats-mode": "none"})
    for start in range(0, 400, 100):  # four level-0 files with disjoint key ranges
        t.write(pa.table({"id": list(range(start, start + 100)), "v": ["x"] * 100}))
    scan = t.scan(where="id = 250")
    assert scan.explain().files == 1
    assert scan.to_arrow().to_pylist() == [{"id": 250, "v": "x"}]
    assert t.scan(where="id >= 150 AND id < 210").explain().files == 2
    assert t.scan(where="v = 'x'").explain().files == 4  # a value predicate cannot skip PK files


@pytest.mark.parametrize("options", [{"bucket": "1", "deletion-vectors.enabled": "true"}, {"bucket": "1"}])
def test_key_reads_over_files_of_many_row_groups(catalog, options) -> None:  # noqa: ANN001
    """Files with many row groups (as Java writes them): skipped groups keep row positions (deletion vectors)."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.rg", schema, primary_key=["id"], options=options)
    t.write(pa.table({"id": list(range(0, 2000, 2)), "v": ["base"] * 1000}))
    t.compact(full=True)
    for path in {f"{s.bucket_path}/{f.file_name}" for s in t.scan().plan() for f in s.files}:
        whole = pq.read_table(path)
        pq.write_table(whole, path, row_group_size=100, store_schema=False)  # same rows, ten row groups
        assert pq.ParquetFile(path).metadata.num_row_groups == 10
    t.write(pa.table({"id": [4, 5, 1500], "v": ["new"] * 3}))
    t.delete("id IN (6, 1502, 1998)")
    if "deletion-vectors.enabled" in options:
        t.compact()  # deletion vectors mark rows of the ten-group file by position
    full = t.read()
    for where in ["id = 4", "id = 6", "id = 1500", "id >= 1490 AND id <= 1510", "id IN (0, 5, 1502, 1996, 1998)",
                  "id < 10", "id > 1990"]:
        expected = filter_table(full, parse_where(where, {"id": pa.int64(), "v": pa.string()}))
        got = t.read(where=where)
        assert got.sort_by("id").equals(expected.sort_by("id")), where
    assert t.lookup([4, 6, 1500, 1502, 7]).sort_by("id").to_pylist() == [{"id": 4, "v": "new"},
                                                                          {"id": 1500, "v": "new"}]


def test_primary_key_files_are_written_in_keyed_row_groups(tmp_path) -> None:
    # Many small row groups by default (what lets point / range reads skip them); parquet.block.size wins.
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    n = 300_000
    data = pa.table({"k": pa.array(range(n), pa.int32()), "part": ["p"] * n,
                     "name": [f"name-{i:08d}" for i in range(n)], "v": pa.array(range(n), pa.int64())})
    keyed = cat.create_table("db.keyed", SCHEMA, primary_key=KEY, options={"bucket": "1"})
    big = cat.create_table("db.big", SCHEMA, primary_key=KEY,
                           options={"bucket": "1", "parquet.block.size": str(256 << 20)})
    for t in (keyed, big):
        t.write(data)

    def row_groups(t: laketide.Table) -> list[int]:
        return [pq.ParquetFile(p).metadata.num_row_groups for s in t.scan().plan() for p in s.file_paths()]

    assert min(row_groups(keyed)) > 4
    assert row_groups(big) == [1]
    hit = keyed.read(where="k = 123456")
    assert hit.to_pylist() == [{"k": 123456, "part": "p", "name": "name-00123456", "v": 123456}]
    assert keyed.read(where="k >= 1000 AND k < 4000").num_rows == 3000
    assert keyed.lookup([(7, "p"), (299_999, "p"), (300_000, "p")]).num_rows == 2
