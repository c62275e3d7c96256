"""Merge engines partial-update, aggregation and first-row: the seed's worked examples, errors, and property tests
against plain-Python reference engines with random interleavings of write calls and commits."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import InvalidOptionError, RowKindError
from laketide.io.kv import RowKind

INT = pa.int32()


def insert(t, schema: pa.Schema, *rows: tuple) -> None:  # noqa: ANN001
    """One SQL INSERT: one write + commit."""
    t.write(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema))


def read_rows(t, schema: pa.Schema) -> list[tuple]:  # noqa: ANN001
    table = t.read()
    return sorted(tuple(r[n] for n in schema.names) for r in table.to_pylist())


def _read_all_levels(t, monkeypatch: pytest.MonkeyPatch) -> pa.Table:  # noqa: ANN001
    """First-row tables hide level 0 until compaction: compact first when the table can, else read every level."""
    if hasattr(t, "compact"):
        t.compact(full=True)
        return t.read()
    import laketide.table.read as read_mod

    class _NoFirstRowSkip:
        FIRST_ROW = object()

    with monkeypatch.context() as m:
        m.setattr(read_mod, "MergeEngine", _NoFirstRowSkip)
        return t.read()


# -- the seed's worked examples ----------------------------------------------------------------------------------
def test_seed_partial_update_non_null_fields_overwrite(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("price", pa.float64()), ("n", INT), ("title", pa.string())])
    t = catalog.create_table("db.pu", schema, primary_key=["k"],
                             options={"bucket": "1", "merge-engine": "partial-update"})
    insert(t, schema, (1, 23.0, 10, None))
    insert(t, schema, (1, None, None, "This is a book"))
    insert(t, schema, (1, 25.2, None, None))
    assert read_rows(t, schema) == [(1, 25.2, 10, "This is a book")]


@pytest.mark.parametrize("one_commit", [False, True])
def test_seed_sequence_groups(catalog, one_commit: bool) -> None:  # noqa: ANN001
    schema = pa.schema([(n, INT) for n in ("k", "a", "b", "g_1", "c", "d", "g_2")])
    t = catalog.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "write-buffer-size": "1 b",
        "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"})
    rows = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None), (1, 3, 3, 1, 3, 3, 3)]
    if one_commit:
        w = t.new_write()
        for r in rows:  # a 1-byte buffer: each write call is its own level-0 run
            w.write(pa.Table.from_pylist([dict(zip(schema.names, r))], schema=schema))
        t.commit(w.prepare_commit())
        assert read_rows(t, schema) == [(1, 2, 2, 2, 3, 3, 3)]
        return
    insert(t, schema, rows[0])
    insert(t, schema, rows[1])
    assert read_rows(t, schema) == [(1, 2, 2, 2, 1, 1, 1)]
    insert(t, schema, rows[2])
    assert read_rows(t, schema) == [(1, 2, 2, 2, 3, 3, 3)]


def test_seed_sequence_group_with_two_sequence_fields(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([(n, INT) for n in ("k", "a", "b", "g_1", "c", "d", "g_2", "g_3")])
    t = catalog.create_table("db.sg", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update",
        "fields.g_1.sequence-group": "a,b", "fields.g_2,g_3.sequence-group": "c,d"})
    insert(t, schema, (1, 1, 1, 1, 1, 1, 1, 1))
    insert(t, schema, (1, 2, 2, 2, 2, 2, 1, None))
    assert read_rows(t, schema) == [(1, 2, 2, 2, 1, 1, 1, 1)]
    insert(t, schema, (1, 3, 3, 1, 3, 3, 3, 1))
    assert read_rows(t, schema) == [(1, 2, 2, 2, 3, 3, 3, 1)]


@pytest.mark.parametrize("one_commit", [False, True])
def test_seed_partial_update_with_aggregation(catalog, one_commit: bool) -> None:  # noqa: ANN001
    schema = pa.schema([(n, INT) for n in ("k", "a", "b", "c", "d")])
    t = catalog.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "write-buffer-size": "1 b",
        "fields.a.sequence-group": "b", "fields.b.aggregate-function": "first_value",
        "fields.c.sequence-group": "d", "fields.d.aggregate-function": "sum"})
    rows = [(1, 1, 1, None, None), (1, None, None, 1, 1), (1, 2, 2, None, None), (1, None, None, 2, 2)]
    if one_commit:
        w = t.new_write()
        for r in rows:
            w.write(pa.Table.from_pylist([dict(zip(schema.names, r))], schema=schema))
        t.commit(w.prepare_commit())
    else:
        for r in rows:
            insert(t, schema, r)
    assert read_rows(t, schema) == [(1, 2, 1, 2, 3)]


def test_seed_aggregation_max_and_sum(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("product_id", pa.int64()), ("price", pa.float64()), ("sales", pa.int64())])
    t = catalog.create_table("db.my_table", schema, primary_key=["product_id"], options={
        "bucket": "1", "merge-engine": "aggregation",
        "fields.price.aggregate-function": "max", "fields.sales.aggregate-function": "sum"})
    insert(t, schema, (1, 23.0, 15))
    insert(t, schema, (1, 30.2, 20))
    assert read_rows(t, schema) == [(1, 30.2, 35)]


def test_first_row_keeps_the_first_row(catalog, monkeypatch) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("v", pa.string())])
    t = catalog.create_table("db.fr", schema, primary_key=["k"],
                             options={"bucket": "1", "merge-engine": "first-row"})
    insert(t, schema, (1, "first"), (2, "two"))
    insert(t, schema, (1, "second"), (3, "three"))
    got = _read_all_levels(t, monkeypatch)
    assert sorted((r["k"], r["v"]) for r in got.to_pylist()) == [(1, "first"), (2, "two"), (3, "three")]


# -- deletes and retractions ---------------------------------------------------------------------------------
def _kv_schema() -> pa.Schema:
    return pa.schema([("k", INT), ("a", INT), ("b", pa.string()), ("op", pa.string())])


def _ops(*rows: tuple) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(_kv_schema().names, r)) for r in rows], schema=_kv_schema())


@pytest.mark.parametrize("engine", ["partial-update", "first-row"])
def test_delete_is_a_typed_error_at_write_time(catalog, engine: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", _kv_schema(), primary_key=["k"],
                             options={"bucket": "1", "merge-engine": engine, "rowkind.field": "op"})
    t.write(_ops((1, 1, "x", "+I")))
    before = t.latest_snapshot().id  # (first-row writers may compact in their own snapshot)
    with pytest.raises(RowKindError, match="ignore-delete"):
        t.write(_ops((1, 1, "x", "-D")))
    w = t.new_write()
    with pytest.raises(RowKindError):
        w.delete(pa.table({"k": pa.array([1], INT)}))
    assert t.latest_snapshot().id == before  # nothing written


@pytest.mark.parametrize("engine", ["partial-update", "first-row", "aggregation"])
def test_ignore_delete(catalog, engine: str, monkeypatch) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", _kv_schema(), primary_key=["k"], options={
        "bucket": "1", "merge-engine": engine, "rowkind.field": "op", "ignore-delete": "true"})
    t.write(_ops((1, 1, "x", "+I")))
    t.write(_ops((1, 1, "x", "-D"), (2, 2, "y", "+I")))
    got = _read_all_levels(t, monkeypatch) if engine == "first-row" else t.read()
    assert sorted((r["k"], r["a"]) for r in got.to_pylist()) == [(1, 1), (2, 2)]


def test_partial_update_remove_record_on_delete(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", _kv_schema(), primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
        "partial-update.remove-record-on-delete": "true"})
    t.write(_ops((1, 1, "x", "+I"), (2, 2, "y", "+I")))
    t.write(_ops((1, None, "z", "+I")))
    t.write(_ops((1, None, None, "-D")))
    assert sorted((r["k"], r["a"], r["b"]) for r in t.read().to_pylist()) == [(2, 2, "y")]
    t.write(_ops((1, None, "again", "+I")))  # starts over: no value of the deleted row comes back
    assert sorted((r["k"], r["a"], r["b"]) for r in t.read().to_pylist()) == [(1, None, "again"), (2, 2, "y")]


def test_sequence_group_retracts_its_columns(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("a", INT), ("g1", INT), ("c", INT), ("g2", INT), ("s", INT), ("op", pa.string())])
    t = catalog.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
        "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "c,s", "fields.s.aggregate-function": "sum"})
    insert(t, schema, (1, 10, 1, 20, 1, 5, "+I"))
    insert(t, schema, (1, None, None, 30, 2, 7, "+I"))
    # retract group g2 only (g1 is null in the retraction): c goes null, s loses 7
    insert(t, schema, (1, None, None, 30, 3, 7, "-U"))
    assert [r[:6] for r in read_rows(t, schema)] == [(1, 10, 1, None, 3, 5)]
    # an older retraction of g1 (sequence 0 < 1) leaves a alone
    insert(t, schema, (1, 10, 0, None, None, None, "-D"))
    assert [r[:6] for r in read_rows(t, schema)] == [(1, 10, 1, None, 3, 5)]


def test_remove_record_on_sequence_group(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("a", INT), ("g1", INT), ("c", INT), ("g2", INT), ("op", pa.string())])
    t = catalog.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
        "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "c",
        "partial-update.remove-record-on-sequence-group": "g1"})
    insert(t, schema, (1, 1, 1, 2, 1, "+I"), (2, 1, 1, 2, 1, "+I"))
    insert(t, schema, (1, None, None, None, 5, "-D"))  # a g2 retraction: c goes null, the row stays
    insert(t, schema, (2, None, 5, None, None, "-D"))  # a g1 delete: the whole row goes
    assert [r[:5] for r in read_rows(t, schema)] == [(1, 1, 1, None, 5)]


def test_aggregation_retractions(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("total", pa.int64()), ("n", pa.int64()), ("last", pa.string()),
                        ("hi", INT), ("op", pa.string())])
    opts = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
            "fields.total.aggregate-function": "sum", "fields.n.aggregate-function": "count",
            "fields.last.aggregate-function": "last_value", "fields.hi.aggregate-function": "max"}
    t = catalog.create_table("db.t", schema, primary_key=["k"], options=opts)
    insert(t, schema, (1, 10, 100, "a", 3, "+I"), (1, 5, 7, "b", 9, "+I"))
    assert read_rows(t, schema) == [(1, 15, 2, "b", 9, "+I")]
    with pytest.raises(RowKindError, match="ignore-retract"):
        insert(t, schema, (1, 5, 7, "b", 9, "-U"))
    ok = catalog.create_table("db.ok", schema, primary_key=["k"],
                              options={**opts, "fields.hi.ignore-retract": "true"})
    insert(ok, schema, (1, 10, 100, "a", 3, "+I"), (1, 5, 7, "b", 9, "+I"))
    insert(ok, schema, (1, 5, 7, "b", 1, "-U"))
    assert read_rows(ok, schema) == [(1, 10, 1, None, 9, None)]  # last_non_null_value retracts op too


def test_aggregation_remove_record_on_delete(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("total", pa.int64()), ("op", pa.string())])
    t = catalog.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
        "fields.total.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"})
    insert(t, schema, (1, 10, "+I"), (2, 1, "+I"))
    insert(t, schema, (1, 0, "-D"))
    assert read_rows(t, schema) == [(2, 1, "+I")]
    insert(t, schema, (1, 4, "+I"))
    assert read_rows(t, schema) == [(1, 4, "+I"), (2, 1, "+I")]


# -- creation-time checks ------------------------------------------------------------------------------------
_BAD_OPTIONS = [
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "sum"}, "cannot aggregate field 's'"),
    ({"merge-engine": "aggregation", "fields.i.aggregate-function": "listagg"}, "STRING"),
    ({"merge-engine": "aggregation", "fields.i.aggregate-function": "bool_or"}, "BOOLEAN"),
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "rbm32"}, "VARBINARY"),
    ({"merge-engine": "aggregation", "fields.i.aggregate-function": "collect"}, "ARRAY"),
    ({"merge-engine": "aggregation", "fields.i.aggregate-function": "merge_map"}, "MAP"),
    ({"merge-engine": "aggregation", "fields.s.aggregate-function": "count"}, "INT or BIGINT"),
    ({"merge-engine": "aggregation", "fields.i.aggregate-function": "median"}, "unknown aggregate function"),
    ({"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"}, "cannot aggregate field 's'"),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "nope"}, "can not be found"),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "k"}, "primary key"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "i"}, "sequence field 's' has type"),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "i", "fields.g2.sequence-group": "i"},
     "defined repeatedly"),
    ({"merge-engine": "partial-update", "fields.i.aggregate-function": "sum"}, "must belong to a sequence group"),
    ({"merge-engine": "partial-update", "ignore-delete": "true",
      "partial-update.remove-record-on-delete": "true"}, "cannot both"),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "i",
      "partial-update.remove-record-on-delete": "true"}, "sequence groups"),
    ({"merge-engine": "first-row", "sequence.field": "g"}, "FIRST_ROW"),
    ({"merge-engine": "aggregation", "sequence.field": "g", "fields.g.aggregate-function": "max"},
     "sequence field"),
]


@pytest.mark.parametrize(("options", "message"), _BAD_OPTIONS)
def test_bad_engine_options_fail_at_creation(catalog, options: dict, message: str) -> None:  # noqa: ANN001
    schema = pa.schema([("k", INT), ("i", INT), ("s", pa.string()), ("g", INT), ("g2", INT)])
    with pytest.raises(InvalidOptionError, match=message):
        catalog.create_table("db.bad", schema, primary_key=["k"], options={"bucket": "1", **options})
    with pytest.raises(LookupError):
        catalog.table("db.bad")


# -- property tests against reference engines ------------------------------------------------------------------
def _ref_partial_update(rows: list[dict[str, Any]], groups: dict[str, tuple[str, ...]],
                        sums: set[str]) -> dict[str, Any]:
    """Paimon's partial-update over one key's rows (oldest first): the plain-Python reference."""
    out: dict[str, Any] = {}
    grouped = {f for fields in groups.values() for f in fields} | set(groups)
    for r in rows:
        for name, v in r.items():
            if name not in grouped and v is not None:
                out[name] = v
        for seq, fields in groups.items():
            if r[seq] is None:
                continue
            newer = out.get(seq) is None or r[seq] >= out[seq]
            for f in fields:
                if f in sums:
                    if r[f] is not None:
                        out[f] = r[f] if out.get(f) is None else out[f] + r[f]
                elif newer:
                    out[f] = r[f]
            if newer:
                out[seq] = r[seq]
    return out


def _ref_aggregation(rows: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """sum and count (with retractions), max, last_non_null_value, first_non_null_value, listagg, bool_or."""
    total = hi = last = first = joined = any_true = None
    count = None
    first_seen = False
    for kind, r in rows:
        sign = -1 if kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE) else 1
        if r["total"] is not None:
            total = sign * r["total"] if total is None else total + sign * r["total"]
        if r["n"] is not None:
            count = sign if count is None else count + sign
        if sign < 0:
            continue
        if r["hi"] is not None:
            hi = r["hi"] if hi is None else max(hi, r["hi"])
        if r["last"] is not None:
            last = r["last"]
        if not first_seen and r["first"] is not None:
            first, first_seen = r["first"], True
        if r["tags"] is not None and r["tags"].strip():
            joined = r["tags"] if joined is None else f"{joined}|{r['tags']}"
        if r["flag"] is not None:
            any_true = r["flag"] if any_true is None else (any_true or r["flag"])
    return {"total": total, "n": count, "hi": hi, "last": last, "first": first, "tags": joined, "flag": any_true}


_PU_SCHEMA = pa.schema([("k", INT), ("x", INT), ("y", pa.string()), ("sa", INT), ("a1", INT), ("a2", pa.string()),
                        ("sb", INT), ("b1", pa.int64())])
_pu_row = st.fixed_dictionaries({
    "k": st.integers(0, 6), "x": st.one_of(st.none(), st.integers(0, 9)),
    "y": st.one_of(st.none(), st.sampled_from(["p", "qq", "a-longer-string"])),
    "sa": st.one_of(st.none(), st.integers(0, 4)), "a1": st.one_of(st.none(), st.integers(0, 9)),
    "a2": st.one_of(st.none(), st.sampled_from(["u", "v"])),
    "sb": st.one_of(st.none(), st.integers(0, 4)), "b1": st.one_of(st.none(), st.integers(-5, 5)),
})


@pytest.mark.parametrize("grouped", [False, True])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.lists(_pu_row, min_size=1, max_size=8), min_size=1, max_size=3),
                        min_size=1, max_size=4))
def test_partial_update_equals_reference(tmp_path_factory, grouped: bool, commits) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    options = {"bucket": "2", "merge-engine": "partial-update", "write-buffer-size": "2 kb"}
    groups: dict[str, tuple[str, ...]] = {}
    sums: set[str] = set()
    if grouped:
        options.update({"fields.sa.sequence-group": "a1,a2", "fields.sb.sequence-group": "b1",
                        "fields.b1.aggregate-function": "sum"})
        groups, sums = {"sa": ("a1", "a2"), "sb": ("b1",)}, {"b1"}
    t = cat.create_table("db.t", _PU_SCHEMA, primary_key=["k"], options=options)
    history: dict[int, list[dict]] = {}

    def check() -> None:
        # a key with one version is that version, as written (Paimon's reducer wrapper)
        expected = {k: rows[0] if len(rows) == 1 else _ref_partial_update(rows, groups, sums)
                    for k, rows in history.items()}
        got = {r["k"]: r for r in t.read().to_pylist()}
        assert set(got) == set(expected)
        for k, row in expected.items():
            assert {n: got[k][n] for n in _PU_SCHEMA.names} == {n: row.get(n) for n in _PU_SCHEMA.names}, k

    for commit in commits:
        for call in commit:
            for r in call:
                history.setdefault(r["k"], []).append(r)
        w = t.new_write()
        for call in commit:
            w.write(pa.Table.from_pylist(call, schema=_PU_SCHEMA))
        t.commit(w.prepare_commit())
        check()


_AGG_SCHEMA = pa.schema([("k", INT), ("total", pa.int64()), ("n", pa.int64()), ("hi", pa.float64()),
                         ("last", pa.string()), ("first", INT), ("tags", pa.string()), ("flag", pa.bool_()),
                         ("op", pa.string())])
_agg_row = st.fixed_dictionaries({
    "k": st.integers(0, 6), "total": st.one_of(st.none(), st.integers(-50, 50)),
    "n": st.one_of(st.none(), st.integers(0, 3)), "hi": st.one_of(st.none(), st.floats(-10, 10)),
    "last": st.one_of(st.none(), st.sampled_from(["a", "bb", "a-long-string"])),
    "first": st.one_of(st.none(), st.integers(0, 9)), "tags": st.one_of(st.none(), st.sampled_from(["t", " ", "uu"])),
    "flag": st.one_of(st.none(), st.booleans()), "op": st.sampled_from(["+I", "+I", "+U", "-U", "-D"]),
})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.lists(_agg_row, min_size=1, max_size=8), min_size=1, max_size=3),
                        min_size=1, max_size=4))
def test_aggregation_equals_reference(tmp_path_factory, commits) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    t = cat.create_table("db.t", _AGG_SCHEMA, primary_key=["k"], options={
        "bucket": "2", "merge-engine": "aggregation", "write-buffer-size": "2 kb", "rowkind.field": "op",
        "fields.total.aggregate-function": "sum", "fields.n.aggregate-function": "count",
        "fields.hi.aggregate-function": "max", "fields.last.aggregate-function": "last_non_null_value",
        "fields.first.aggregate-function": "first_non_null_value", "fields.tags.aggregate-function": "listagg",
        "fields.tags.list-agg-delimiter": "|", "fields.flag.aggregate-function": "bool_or",
        # retractions only reach the functions whose retraction is associative (sum, count)
        **{f"fields.{f}.ignore-retract": "true" for f in ("hi", "last", "first", "tags", "flag", "op")},
    })
    history: dict[int, list[tuple[int, dict]]] = {}
    codes = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
    for commit in commits:
        w = t.new_write()
        for call in commit:
            w.write(pa.Table.from_pylist(call, schema=_AGG_SCHEMA))
            for r in call:
                history.setdefault(r["k"], []).append((codes[r["op"]], r))
        t.commit(w.prepare_commit())
        got = {r["k"]: r for r in t.read().to_pylist()}
        # a key whose only version is a retraction stays a retraction (it retracts nothing yet): not shown
        shown = {k for k, rows in history.items() if not (len(rows) == 1 and rows[0][0] in (1, 3))}
        assert set(got) == shown
        for k, rows in history.items():
            if k not in shown:
                continue
            expected = _ref_aggregation(rows)
            if len(rows) == 1:  # one version is kept as written (count columns hold 1 per value)
                only = rows[0][1]
                expected = {n: only[n] for n in expected} | {"n": None if only["n"] is None else 1}
            assert {n: got[k][n] for n in expected} == expected, k


_fr_row = st.tuples(st.integers(0, 8), st.text(alphabet="xyz", max_size=9))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(st.lists(st.lists(_fr_row, min_size=1, max_size=8), min_size=1, max_size=3),
                        min_size=1, max_size=4))
def test_first_row_equals_reference(tmp_path_factory, commits) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    schema = pa.schema([("k", INT), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["k"], options={
        "bucket": "2", "merge-engine": "first-row", "write-buffer-size": "2 kb"})
    oracle: dict[int, str] = {}
    mp = pytest.MonkeyPatch()
    try:
        for commit in commits:
            w = t.new_write()
            for call in commit:
                w.write(pa.Table.from_pylist([{"k": k, "v": v} for k, v in call], schema=schema))
                for k, v in call:
                    oracle.setdefault(k, v)
            t.commit(w.prepare_commit())
            got = _read_all_levels(t, mp)
            assert {r["k"]: r["v"] for r in got.to_pylist()} == oracle
    finally:
        mp.undo()


@pytest.mark.parametrize(("engine", "options", "expected"), [
    ("aggregation", {"fields.v.aggregate-function": "sum"}, {1: 13, 2: 5}),
    ("partial-update", {}, {1: 10, 2: 5}),
    ("first-row", {}, {1: 1, 2: 5}),
])
def test_engines_with_the_partition_inside_the_primary_key(catalog, engine: str, options: dict[str, str],
                                                           expected: dict[int, int]) -> None:  # noqa: ANN001
    """The partition column is part of the key but not of the merge key (trimmed): it is never aggregated."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                        ("v", pa.int64())])
    t = catalog.create_table("db.pp", schema, primary_key=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1", "merge-engine": engine, **options})
    t.write(pa.table({"id": [1, 1, 2], "p": ["a", "a", "b"], "v": [1, 2, 5]}, schema=schema))
    t.write(pa.table({"id": [1], "p": ["a"], "v": [10]}, schema=schema))
    t.compact(full=True)
    rows = t.read()
    assert dict(zip(rows["id"].to_pylist(), rows["v"].to_pylist())) == expected
    assert dict(zip(rows["id"].to_pylist(), rows["p"].to_pylist())) == {1: "a", 2: "b"}
