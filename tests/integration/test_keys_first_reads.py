"""Key-filtered reads of merge sections, keys first (scan/keys_first.py): same rows, same order as the plain merge.

The winners are picked from key columns and sequence numbers, values are decoded only for them, and files older
than every wanted key's newest version are not opened. Checked against a dict oracle and against the same read
with keys-first switched off, with many small row groups so that candidates sit in several groups and runs.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
import laketide.scan.keys_first as keys_first
import laketide.scan.split_read as split_read

SMALL_GROUPS = {"bucket": "1", "write-only": "true", "parquet.block.size": "300"}
_KV = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(tmp_path, name: str = "t", schema: pa.Schema = _KV, keys: tuple[str, ...] = ("k",),  # noqa: ANN001
           partition_keys: tuple[str, ...] = (), **options: str) -> laketide.Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table(f"db.{name}", schema, primary_key=list(keys), partition_keys=list(partition_keys),
                            options={**SMALL_GROUPS, **options})


def _commit(t: laketide.Table, upserts: list[dict] | None = None, deletes: list[dict] | None = None) -> None:
    w = t.new_write()
    if upserts:
        w.write(pa.Table.from_pylist(upserts, schema=t.arrow_schema))
    if deletes:
        w.delete(pa.Table.from_pylist(deletes, schema=t.arrow_schema))
    t.commit(w.prepare_commit())
    w.close()


def _plain(t: laketide.Table, monkeypatch, **kwargs) -> pa.Table:  # noqa: ANN001, ANN003
    """The same read with keys-first switched off (the streaming merge)."""
    with monkeypatch.context() as m:
        m.setattr(split_read.KeysFirst, "of", staticmethod(lambda *a, **k: None))
        return t.read(**kwargs)


def _opened(monkeypatch) -> list[str]:  # noqa: ANN001
    """File names keys-first opens for their keys."""
    seen: list[str] = []
    real = keys_first.open_data_file

    def recording(file_io, path, *, format_name):  # noqa: ANN001, ANN202
        seen.append(path.rsplit("/", 1)[-1])
        return real(file_io, path, format_name=format_name)

    monkeypatch.setattr(keys_first, "open_data_file", recording)
    return seen


_value = st.one_of(st.none(), st.text("ab", max_size=3))
_op = st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.tuples(st.integers(0, 60), _value), min_size=1, max_size=25)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 60), min_size=1, max_size=6)),
    st.tuples(st.just("compact"), st.booleans()),
)
_where = st.one_of(
    st.integers(-1, 61).map(lambda k: f"k = {k}"),
    st.lists(st.integers(-1, 61), min_size=1, max_size=6).map(lambda ks: f"k IN ({', '.join(map(str, ks))})"),
    st.tuples(st.integers(0, 60), st.integers(0, 20)).map(lambda r: f"k >= {r[0]} AND k < {r[0] + r[1]}"),
    st.integers(0, 60).map(lambda k: f"k = {k} AND v IS NOT NULL"),
    st.integers(0, 60).map(lambda k: f"k = {k} OR k = {k + 7}"),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=6), wheres=st.lists(_where, min_size=1, max_size=4),
       columns=st.sampled_from([None, ["v"], ["v", "k"]]))
def test_keys_first_equals_dict_oracle_and_plain_merge(tmp_path_factory, monkeypatch, ops, wheres, columns) -> None:  # noqa: ANN001
    t = _table(tmp_path_factory.mktemp("kf"))
    oracle: dict[int, str | None] = {}
    for kind, payload in ops:
        if kind == "compact":
            t.compact(full=payload)
        elif kind == "upsert":
            _commit(t, upserts=[{"k": k, "v": v} for k, v in payload])
            oracle.update(dict(payload))
        else:
            _commit(t, deletes=[{"k": k, "v": None} for k in payload])
            for k in payload:
                oracle.pop(k, None)
    full = pa.Table.from_pylist([{"k": k, "v": v} for k, v in sorted(oracle.items())], schema=_KV)
    for where in wheres:
        got = t.read(where=where, columns=columns)
        assert got.equals(_plain(t, monkeypatch, where=where, columns=columns))
        expected = full.filter(_arrow_filter(where))
        assert got.to_pylist() == (expected.select(columns) if columns else expected).to_pylist()


def _arrow_filter(where: str) -> pc.Expression:
    from laketide.expr import parse_where, to_arrow_expression

    return to_arrow_expression(parse_where(where, {"k": pa.int64(), "v": pa.string()}), schema=_KV)


def test_an_upserted_key_is_found_in_the_newest_file_alone(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path)
    _commit(t, upserts=[{"k": k, "v": f"base{k}"} for k in range(200)])
    _commit(t, upserts=[{"k": k, "v": f"new{k}"} for k in range(150, 260)], deletes=[{"k": 100, "v": None}])
    newest = max(t.scan().plan()[0].files, key=lambda f: f.max_sequence_number).file_name
    opened = _opened(monkeypatch)
    assert t.read(where="k = 170").to_pylist() == [{"k": 170, "v": "new170"}]
    assert opened == [newest]  # the base file holds k = 170 too, and is never opened
    opened.clear()
    assert t.read(where="k IN (160, 180, 255)")["v"].to_pylist() == ["new160", "new180", "new255"]
    assert opened == [newest]
    opened.clear()
    # a key only the base holds: the newest file (whose key range covers it) is searched, then the base
    assert t.read(where="k = 120").to_pylist() == [{"k": 120, "v": "base120"}]
    assert len(opened) == 2 and opened[0] == newest
    opened.clear()
    # deleted in the newest file: the delete wins, nothing older is opened
    assert t.read(where="k = 100").num_rows == 0
    assert opened == [newest]
    # ranges have no finite key set: every run is searched, the result is the merge's
    for where in ("k >= 140 AND k < 160", "k >= 95 AND k <= 105", "k > 1000"):
        assert t.read(where=where).equals(_plain(t, monkeypatch, where=where))


def test_many_candidates_go_back_to_the_merge(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path)
    _commit(t, upserts=[{"k": k, "v": f"a{k}"} for k in range(100)])
    _commit(t, upserts=[{"k": k, "v": f"b{k}"} for k in range(50, 150)])
    monkeypatch.setattr(keys_first, "MAX_CANDIDATES", 10)
    abandoned: list[int] = []
    real = split_read.SplitRead._merge_section

    def recording(self, section, paths):  # noqa: ANN001, ANN202
        abandoned.append(len(section))
        return real(self, section, paths)

    monkeypatch.setattr(split_read.SplitRead, "_merge_section", recording)
    got = t.read(where="k >= 40 AND k < 120")
    assert got["v"].to_pylist() == [f"a{k}" for k in range(40, 50)] + [f"b{k}" for k in range(50, 120)]
    assert abandoned  # the merge ran
    assert t.read(where="k IN (3, 60)")["v"].to_pylist() == ["a3", "b60"]  # few candidates: keys first


def test_composite_partitioned_key_and_evolved_values(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    schema = pa.schema([("part", pa.string()), ("k", pa.int32()), ("id2", pa.string()), ("v", pa.int64())])
    t = _table(tmp_path, "c", schema, keys=("part", "k", "id2"), partition_keys=("part",))
    _commit(t, upserts=[{"part": p, "k": k, "id2": s, "v": k} for p in "ab" for k in range(30) for s in ("x", "y")])
    _commit(t, upserts=[{"part": "a", "k": k, "id2": "x", "v": 1000 + k} for k in range(10, 20)],
            deletes=[{"part": "a", "k": 12, "id2": "y", "v": None}])
    for where in ("part = 'a' AND k = 15", "part = 'a' AND k = 12", "k = 15 AND id2 = 'x'", "k IN (5, 15, 25)",
                  "part = 'b' AND k >= 10 AND k < 13", "id2 = 'y' AND k = 12"):
        got = t.read(where=where)
        assert got.equals(_plain(t, monkeypatch, where=where)), where
    assert t.read(where="part = 'a' AND k = 15 AND id2 = 'x'")["v"].to_pylist() == [1015]
    assert t.read(where="part = 'a' AND k = 12")["id2"].to_pylist() == ["x"]


def test_values_read_through_schema_changes(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path, "e", pa.schema([("k", pa.int64()), ("v", pa.int32())]))
    _commit(t, upserts=[{"k": k, "v": k} for k in range(50)])
    t = t.alter(laketide.RenameColumn("v", "w"), laketide.UpdateColumnType("w", "BIGINT"),
                laketide.AddColumn(name="extra", type="STRING"))
    w = t.new_write()
    w.write(pa.table({"k": pa.array([10, 60], pa.int64()), "w": pa.array([10_000_000_000, 6], pa.int64()),
                      "extra": ["x", "y"]}))
    t.commit(w.prepare_commit())
    w.close()
    for where in ("k = 10", "k = 11", "k IN (10, 11, 60)", "k >= 9 AND k < 12"):
        assert t.read(where=where).equals(_plain(t, monkeypatch, where=where)), where
    assert t.read(where="k IN (10, 11)").to_pylist() == [{"k": 10, "w": 10_000_000_000, "extra": "x"},
                                                        {"k": 11, "w": 11, "extra": None}]


@pytest.mark.parametrize("options", [{"merge-engine": "partial-update"}, {"merge-engine": "first-row"},
                                     {"ignore-delete": "true"}, {"sequence.field": "s"}])
def test_other_engines_keep_the_merge(tmp_path, options: dict[str, str]) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("s", pa.int64())])
    t = _table(tmp_path, "o", schema, **options)
    assert t.store.new_read(read_schema=t.schema, predicate=None).keys_first is None
    from laketide.expr import parse_where

    read = t.store.new_read(read_schema=t.schema, predicate=parse_where("k = 1", {f.name: f.type for f in schema}))
    assert read.keys_first is None


@pytest.mark.parametrize("file_format", ["orc", "avro", "parquet"])
def test_every_file_format(tmp_path, monkeypatch, file_format: str) -> None:  # noqa: ANN001
    t = _table(tmp_path, f"f_{file_format}", **{"file.format": file_format})
    _commit(t, upserts=[{"k": k, "v": f"a{k}"} for k in range(300)])
    _commit(t, upserts=[{"k": k, "v": f"b{k}"} for k in range(250, 320)], deletes=[{"k": 260, "v": None}])
    opened = _opened(monkeypatch)
    for where in ("k = 270", "k = 10", "k = 260", "k IN (5, 255, 260, 319, 999)", "k >= 245 AND k < 255"):
        got = t.read(where=where)
        assert got.equals(_plain(t, monkeypatch, where=where)), where
    assert opened  # keys first ran
    assert t.read(where="k IN (5, 255, 260, 319)")["v"].to_pylist() == ["a5", "b255", "b319"]
