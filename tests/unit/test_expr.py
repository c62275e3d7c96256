from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laketide.exceptions import PredicateError
from laketide.expr import (
    And,
    FieldStats,
    Leaf,
    Not,
    Op,
    Or,
    Predicate,
    and_,
    coerce_literal,
    col,
    evaluate_exact,
    filter_table,
    may_match,
    negate,
    or_,
    parse_where,
    pick_fields,
    referenced_fields,
    rename_fields,
    split_and,
    to_arrow_expression,
)

# --------------------------------------------------------------------------------------------
# Builder and visitors


def test_builder_builds_leaves_and_combinations() -> None:
    p = (col("dt") == "2026-11-21") & col("x").isin([1, 2]) & (col("amount") > 10)
    assert p == And(
        (
            Leaf(Op.EQ, "dt", ("2026-11-21",)),
            Leaf(Op.IN, "x", (1, 2)),
            Leaf(Op.GT, "amount", (10,)),
        )
    )
    assert (10 < col("a")) == Leaf(Op.GT, "a", (10,))
    assert ~col("x").is_null() == Not(Leaf(Op.IS_NULL, "x"))
    assert (col("a") == 1) | (col("b") != 2) == Or((Leaf(Op.EQ, "a", (1,)), Leaf(Op.NE, "b", (2,))))
    assert col("s").startswith("ab") == Leaf(Op.STARTS_WITH, "s", ("ab",))
    assert col("s").between(1, 3) == And((Leaf(Op.GE, "s", (1,)), Leaf(Op.LE, "s", (3,))))
    assert and_(col("a") == 1) == Leaf(Op.EQ, "a", (1,))
    assert or_(col("a") == 1, or_(col("b") == 1, col("c") == 1)).children[2] == Leaf(Op.EQ, "c", (1,))


def test_builder_rejects_mistakes() -> None:
    with pytest.raises(PredicateError, match="is_null"):
        col("a") == None  # noqa: B015, E711
    with pytest.raises(PredicateError, match="truth value"):
        bool(col("a") == 1)
    with pytest.raises(PredicateError, match="single value"):
        col("a").isin("abc")
    with pytest.raises(PredicateError, match="two columns"):
        col("a") == col("b")  # noqa: B015
    with pytest.raises(PredicateError, match="literal"):
        Leaf(Op.EQ, "a", ())
    with pytest.raises(PredicateError, match="at least one"):
        and_()
    with pytest.raises(PredicateError, match="two children"):
        And((Leaf(Op.IS_NULL, "a"),))


def test_predicates_are_hashable_values() -> None:
    assert len({col("a") == 1, col("a") == 1, col("a") == 2}) == 2


def test_referenced_fields_and_split_and() -> None:
    p = parse_where("a = 1 AND (b = 2 OR NOT c IS NULL) AND (d > 1 AND e < 2)")
    assert referenced_fields(p) == {"a", "b", "c", "d", "e"}
    assert [str(c) for c in split_and(p)] == ["a = 1", "(b = 2 OR NOT c IS NULL)", "d > 1", "e < 2"]
    assert split_and(col("a") == 1) == [col("a") == 1]


def test_pick_fields_keeps_only_constraints_on_allowed_columns() -> None:
    p = parse_where("dt = '1' AND x > 3 AND (dt = '2' OR hr = 1)")
    assert pick_fields(p, {"dt"}) == Leaf(Op.EQ, "dt", ("1",))
    assert pick_fields(p, {"dt", "hr"}) == parse_where("dt = '1' AND (dt = '2' OR hr = 1)")
    assert pick_fields(p, {"y"}) is None
    # An OR is relaxed branch by branch, and dropped if one branch says nothing.
    q = parse_where("(dt = 'a' AND x > 1) OR (dt = 'b' AND x < 0)")
    assert pick_fields(q, {"dt"}) == parse_where("dt = 'a' OR dt = 'b'")
    assert pick_fields(parse_where("dt = 'a' OR x = 1"), {"dt"}) is None
    # Relaxing under NOT would be unsound: NOT (dt = 'a' AND x = 1) does not imply dt != 'a'.
    assert pick_fields(parse_where("NOT (dt = 'a' AND x = 1)"), {"dt"}) is None
    assert pick_fields(parse_where("NOT dt = 'a'"), {"dt"}) == Not(Leaf(Op.EQ, "dt", ("a",)))


def test_rename_fields() -> None:
    p = parse_where("a = 1 AND NOT (b IS NULL OR c LIKE 'x%')")
    assert rename_fields(p, {"a": "A", "c": "C"}) == parse_where("A = 1 AND NOT (b IS NULL OR C LIKE 'x%')")


def test_negate_pushes_not_to_the_leaves() -> None:
    p = parse_where("a = 1 AND (b < 2 OR c IN (1, 2)) AND d IS NULL")
    assert negate(p) == parse_where("a != 1 OR (b >= 2 AND c NOT IN (1, 2)) OR d IS NOT NULL")
    assert negate(col("s").startswith("x")) == Not(col("s").startswith("x"))
    assert negate(Not(col("a") > 1)) == (col("a") > 1)
    assert negate(negate(p)) == p


# --------------------------------------------------------------------------------------------
# Parser


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", col("a") == 1),
        ("a == 1", col("a") == 1),
        ("a <> 1", col("a") != 1),
        ("a != 1", col("a") != 1),
        ("1 < a", col("a") > 1),
        ("1 >= a", col("a") <= 1),
        ("a = -5", col("a") == -5),
        ("a = 1.50", col("a") == Decimal("1.50")),
        ("a = 1e3", col("a") == 1000.0),
        ("a = .5", col("a") == Decimal("0.5")),
        ("s = 'it''s'", col("s") == "it's"),
        ("s = ''", col("s") == ""),
        ("b = TRUE", col("b") == True),  # noqa: E712
        ("b = false", col("b") == False),  # noqa: E712
        ("`weird col` = 1", col("weird col") == 1),
        ("`a``b` = 1", col("a`b") == 1),
        ("`and` = 1", col("and") == 1),
        ("a IN (1, 2, 3)", col("a").isin([1, 2, 3])),
        ("a not in ('x', NULL)", col("a").notin(["x", None])),
        ("a IS NULL", col("a").is_null()),
        ("a is not null", col("a").is_not_null()),
        ("s LIKE 'ab%'", col("s").startswith("ab")),
        ("s LIKE 'ab%%'", col("s").startswith("ab")),
        ("s LIKE '%ab'", col("s").endswith("ab")),
        ("s LIKE '%ab%'", col("s").contains("ab")),
        ("s LIKE 'ab'", col("s") == "ab"),
        (r"s LIKE '50\%%'", col("s").startswith("50%")),
        ("s NOT LIKE 'ab%'", ~col("s").startswith("ab")),
        ("a BETWEEN 1 AND 5", col("a").between(1, 5)),
        ("a NOT BETWEEN 1 AND 5", ~col("a").between(1, 5)),
        ("d = DATE '2026-11-21'", col("d") == dt.date(2026, 11, 21)),
        ("t = TIME '10:11:12'", col("t") == dt.time(10, 11, 12)),
        ("ts < TIMESTAMP '2026-11-21 10:00:00'", col("ts") < dt.datetime(2026, 11, 21, 10)),
        ("b = X'00ff'", col("b") == b"\x00\xff"),
        ("a = 1 OR b = 2 AND c = 3", (col("a") == 1) | ((col("b") == 2) & (col("c") == 3))),
        ("(a = 1 OR b = 2) AND c = 3", ((col("a") == 1) | (col("b") == 2)) & (col("c") == 3)),
        ("NOT a = 1 AND b = 2", ~(col("a") == 1) & (col("b") == 2)),
        ("NOT (a = 1 AND b = 2)", ~((col("a") == 1) & (col("b") == 2))),
        ("NOT NOT a = 1", ~~(col("a") == 1)),
        ("a BETWEEN 1 AND 2 AND b = 3", and_(col("a").between(1, 2), col("b") == 3)),
        ("a = 1 and b = 2 and c = 3", and_(col("a") == 1, col("b") == 2, col("c") == 3)),
        ("a=1or b=2", (col("a") == 1) | (col("b") == 2)),
    ],
)
def test_parse_where(text: str, expected: Predicate) -> None:
    assert parse_where(text) == expected


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("", "empty", 0),
        ("a = NULL", "IS NULL", 4),
        ("a != NULL", "IS NOT NULL", 5),
        ("a = ", "expected a column or a literal", 4),
        ("a = 1 b = 2", "expected AND, OR", 6),
        ("(a = 1", "expected ')'", 6),
        ("a = 'oops", "unterminated", 4),
        ("1 = 2", "column on one side", 0),
        ("a = b", "two columns", 0),
        ("s LIKE 'a_c'", "LIKE", 7),
        ("s LIKE 'a%c'", "LIKE", 7),
        ("a IN ()", "literal", 6),
        ("a # 1", "unexpected character", 2),
        ("d = DATE 'nope'", "invalid DATE", 9),
        ("a NOT = 1", "IN, LIKE or BETWEEN", 6),
        ("a BETWEEN 1 OR 2", "expected AND", 12),
        ("1 IS NULL", "column name", 0),
    ],
)
def test_parse_errors_name_the_problem_and_position(text: str, message: str, position: int) -> None:
    with pytest.raises(PredicateError, match=re.escape(message)) as info:
        parse_where(text)
    assert f"at position {position}" in str(info.value)


FIELD_TYPES = {
    "id": pa.int32(),
    "tiny": pa.int8(),
    "amount": pa.decimal128(10, 2),
    "f": pa.float64(),
    "s": pa.string(),
    "bin": pa.binary(),
    "flag": pa.bool_(),
    "dt": pa.date32(),
    "ts": pa.timestamp("us"),
    "tsz": pa.timestamp("ms", tz="UTC"),
    "tm": pa.time64("us"),
    "arr": pa.list_(pa.int32()),
}


def test_parse_with_types_coerces_literals() -> None:
    p = parse_where(
        "dt = '2026-11-21' AND amount > 10 AND f = 1 AND ts >= '2026-01-02 03:04:05'"
        " AND tsz < '2026-01-02' AND tm = '10:00' AND bin = 'ab' AND amount IN (1, 2.5)",
        FIELD_TYPES,
    )
    assert split_and(p) == [
        col("dt") == dt.date(2026, 11, 21),
        col("amount") > Decimal(10),
        col("f") == 1.0,
        col("ts") >= dt.datetime(2026, 1, 2, 3, 4, 5),
        col("tsz") < dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc),
        col("tm") == dt.time(10),
        col("bin") == b"ab",
        col("amount").isin([Decimal(1), Decimal("2.5")]),
    ]
    assert isinstance(split_and(p)[2].literals[0], float)  # type: ignore[union-attr]
    assert isinstance(split_and(p)[1].literals[0], Decimal)  # type: ignore[union-attr]
    # A fractional literal on an integer column keeps its value.
    assert parse_where("id > 1.5", FIELD_TYPES) == (col("id") > Decimal("1.5"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nope = 1", r"unknown column 'nope'; columns are id, tiny"),
        ("s = 10", "string literal"),
        ("dt = 'yesterday'", "'dt'"),
        ("flag = 1", "TRUE or FALSE"),
        ("id = TRUE", "boolean"),
        ("arr = 1", "cannot be compared"),
    ],
)
def test_parse_with_types_rejects_bad_literals(text: str, message: str) -> None:
    with pytest.raises(PredicateError, match=message) as info:
        parse_where(text, FIELD_TYPES)
    assert "at position" in str(info.value)


def test_coerce_literal_timestamps_treat_naive_as_utc() -> None:
    aware = dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert coerce_literal(aware, pa.timestamp("us")) == dt.datetime(2026, 1, 1, 10)
    assert coerce_literal("2026-01-01", pa.timestamp("us", tz="UTC")) == dt.datetime(
        2026, 1, 1, tzinfo=dt.timezone.utc
    )
    assert coerce_literal(dt.date(2026, 1, 1), pa.timestamp("s")) == dt.datetime(2026, 1, 1)


@given(
    st.recursive(
        st.one_of(
            st.builds(lambda f, v: Leaf(Op.EQ, f, (v,)), st.sampled_from(["a", "b c", "and"]), st.integers()),
            st.builds(lambda v: Leaf(Op.IN, "s", tuple(v)), st.lists(st.text() | st.none(), min_size=1, max_size=3)),
            st.builds(lambda v: Leaf(Op.STARTS_WITH, "s", (v,)), st.text()),
            st.builds(lambda v: Leaf(Op.LT, "d", (v,)), st.decimals(allow_nan=False, allow_infinity=False)),
            st.builds(lambda v: Leaf(Op.GE, "f", (v,)), st.floats(allow_nan=False, allow_infinity=False)),
            st.just(Leaf(Op.IS_NOT_NULL, "x")),
        ),
        lambda inner: st.one_of(
            st.builds(Not, inner),
            st.lists(inner, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
        ),
        max_leaves=6,
    )
)
@settings(max_examples=150, deadline=None)
def test_str_parses_back_to_the_same_predicate(p: Predicate) -> None:
    assert parse_where(str(p)) == _flatten(p)


def _flatten(p: Predicate) -> Predicate:
    """`p` with nested ANDs / ORs merged, the shape the parser produces."""
    if isinstance(p, And):
        return and_(*(_flatten(c) for c in p.children))
    if isinstance(p, Or):
        return or_(*(_flatten(c) for c in p.children))
    if isinstance(p, Not):
        return Not(_flatten(p.child))
    return p


# --------------------------------------------------------------------------------------------
# Arrow filtering: SQL semantics against a row-by-row oracle


def _oracle(p: Predicate, row: dict[str, object]) -> bool | None:
    """Three-valued SQL evaluation of `p` on one row, written independently of laketide."""
    if isinstance(p, And):
        rs = [_oracle(c, row) for c in p.children]
        return False if False in rs else (None if None in rs else True)
    if isinstance(p, Or):
        rs = [_oracle(c, row) for c in p.children]
        return True if True in rs else (None if None in rs else False)
    if isinstance(p, Not):
        r = _oracle(p.child, row)
        return None if r is None else not r
    v = row[p.field]
    if p.op is Op.IS_NULL:
        return v is None
    if p.op is Op.IS_NOT_NULL:
        return v is not None
    if p.op in (Op.IN, Op.NOT_IN):
        if v is None:
            return None
        if any(v == lit for lit in p.literals if lit is not None):
            hit: bool | None = True
        elif None in p.literals:
            hit = None
        else:
            hit = False
        return hit if p.op is Op.IN or hit is None else not hit
    lit = p.literals[0]
    if v is None or lit is None:
        return None
    ops = {
        Op.EQ: lambda a, b: a == b,
        Op.NE: lambda a, b: a != b,
        Op.LT: lambda a, b: a < b,
        Op.LE: lambda a, b: a <= b,
        Op.GT: lambda a, b: a > b,
        Op.GE: lambda a, b: a >= b,
        Op.STARTS_WITH: lambda a, b: a.startswith(b),
        Op.ENDS_WITH: lambda a, b: a.endswith(b),
        Op.CONTAINS: lambda a, b: b in a,
    }
    return bool(ops[p.op](v, lit))


_INTS = st.integers(-5, 5)
_FLOATS = st.sampled_from([-2.5, -1.0, 0.0, 0.5, 1.0, 3.0])
_STRS = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "é", "z"])
_COLUMNS = {
    "i": (pa.int64(), _INTS),
    "f": (pa.float64(), _FLOATS | st.just(math.nan)),
    "s": (pa.string(), _STRS),
}
# Literals for each column (ints also meet floats: cross-type comparisons must agree).
_LITERALS = {"i": _INTS | _FLOATS, "f": _FLOATS | _INTS, "s": _STRS}


@st.composite
def _leaves(draw: st.DrawFn) -> Leaf:
    field = draw(st.sampled_from(sorted(_COLUMNS)))
    lits = _LITERALS[field]
    ops = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.IS_NOT_NULL]
    if field == "s":
        ops += [Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS]
    op = draw(st.sampled_from(ops))
    if op.arity == 0:
        return Leaf(op, field)
    if op.arity is None:
        return Leaf(op, field, tuple(draw(st.lists(lits | st.none(), min_size=1, max_size=4))))
    if op in (Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS):
        return Leaf(op, field, (draw(lits),))
    return Leaf(op, field, (draw(lits | st.just(None)) if draw(st.integers(0, 9)) == 0 else draw(lits),))


_predicates = st.recursive(
    _leaves(),
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
        st.lists(inner, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
    ),
    max_leaves=5,
)


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(0, 12))
    cols = {}
    for name, (typ, values) in _COLUMNS.items():
        cols[name] = pa.array(draw(st.lists(values | st.none(), min_size=n, max_size=n)), type=typ)
    return pa.table(cols)


def _is_true(r: bool | None) -> bool:
    return r is True


@given(_tables(), _predicates)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_arrow_filter_matches_sql_oracle(table: pa.Table, p: Predicate) -> None:
    rows = table.to_pylist()
    expected = [r for r in rows if _is_true(_oracle(p, r))]
    got = filter_table(table, p).to_pylist()
    assert _same_rows(got, expected)
    # Exact single-row evaluation agrees too.
    assert [r for r in rows if evaluate_exact(p, r)] == expected or _same_rows(
        [r for r in rows if evaluate_exact(p, r)], expected
    )


def _same_rows(a: list[dict[str, object]], b: list[dict[str, object]]) -> bool:
    def key(r: dict[str, object]) -> tuple[object, ...]:
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in r.values())

    return [key(r) for r in a] == [key(r) for r in b]


def _batch_stats(table: pa.Table) -> dict[str, FieldStats]:
    out = {}
    for name in table.column_names:
        column = table[name]
        mm = pc.min_max(column)
        out[name] = FieldStats(min=mm["min"].as_py(), max=mm["max"].as_py(), null_count=column.null_count)
    return out


@given(_tables(), _predicates)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_stats_pruning_is_sound(table: pa.Table, p: Predicate) -> None:
    if not may_match(p, _batch_stats(table), table.num_rows):
        assert filter_table(table, p).num_rows == 0
    # Unknown statistics never prune.
    assert may_match(p, {}, table.num_rows)


def test_arrow_filter_examples() -> None:
    t = pa.table({"a": pa.array([1, 2, None, 4]), "s": pa.array(["ab", "b", "abc", None])})
    assert filter_table(t, parse_where("a IN (1, NULL)"))["a"].to_pylist() == [1]
    assert filter_table(t, parse_where("NOT a IN (1, NULL)")).num_rows == 0
    assert filter_table(t, parse_where("a NOT IN (1, 2)"))["a"].to_pylist() == [4]
    assert filter_table(t, parse_where("NOT a = 1"))["a"].to_pylist() == [2, 4]
    assert filter_table(t, parse_where("NOT s LIKE 'a%'"))["s"].to_pylist() == ["b"]
    assert filter_table(t, parse_where("a > 1 OR s LIKE 'a%'"))["s"].to_pylist() == ["ab", "b", "abc", None]
    with pytest.raises(PredicateError, match="unknown column"):
        filter_table(t, parse_where("zz = 1"))


def test_arrow_filter_coerces_literals_to_column_types() -> None:
    t = pa.table(
        {
            "amount": pa.array([Decimal("1.50"), Decimal("2.25"), None], pa.decimal128(10, 2)),
            "tsz": pa.array(
                [dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2026, 1, 3, tzinfo=dt.timezone.utc),
                 None],
                pa.timestamp("us", tz="UTC"),
            ),
            "dt": pa.array([dt.date(2026, 1, 1), dt.date(2026, 1, 2), None], pa.date32()),
            "tiny": pa.array([1, 2, 3], pa.int8()),
        }
    )
    assert filter_table(t, col("amount") > 1).num_rows == 2
    assert filter_table(t, col("amount") > Decimal("1.499")).num_rows == 2
    assert filter_table(t, col("amount").isin([2.25, 7])).num_rows == 1
    assert filter_table(t, col("tsz") > dt.datetime(2026, 1, 2)).num_rows == 1
    assert filter_table(t, col("tsz") > "2026-01-02").num_rows == 1
    assert filter_table(t, col("dt") == "2026-01-02").num_rows == 1
    assert filter_table(t, col("tiny") < 1000).num_rows == 3
    expr = to_arrow_expression(col("a") == 1)
    assert isinstance(expr, pc.Expression)


# --------------------------------------------------------------------------------------------
# Statistics pruning


def _s(lo: object, hi: object, nulls: int | None = 0) -> dict[str, FieldStats]:
    return {"x": FieldStats(min=lo, max=hi, null_count=nulls)}


@pytest.mark.parametrize(
    ("text", "stats", "rows", "expected"),
    [
        ("x = 5", _s(1, 10), 10, True),
        ("x = 11", _s(1, 10), 10, False),
        ("x = 0", _s(1, 10), 10, False),
        ("x < 1", _s(1, 10), 10, False),
        ("x <= 1", _s(1, 10), 10, True),
        ("x > 10", _s(1, 10), 10, False),
        ("x >= 10", _s(1, 10), 10, True),
        ("x != 5", _s(5, 5), 10, False),
        ("x != 5", _s(5, 6), 10, True),
        ("x != 5.0", _s(5.0, 5.0), 10, True),  # float bounds leave NaN rows unaccounted for
        ("x IN (0, 11)", _s(1, 10), 10, False),
        ("x IN (0, 3)", _s(1, 10), 10, True),
        ("x IN (0, NULL)", _s(1, 10), 10, False),
        ("x NOT IN (5)", _s(5, 5), 10, False),
        ("x NOT IN (1, NULL)", _s(5, 6), 10, False),
        ("x NOT IN (5)", _s(4, 5), 10, True),
        ("x IS NULL", _s(1, 10, 0), 10, False),
        ("x IS NULL", _s(None, None, 0), 10, False),
        ("x IS NULL", _s(1, 10, 2), 10, True),
        ("x IS NULL", _s(1, 10, None), 10, True),
        ("x IS NOT NULL", _s(None, None, 10), 10, False),
        ("x IS NOT NULL", _s(None, None, 9), 10, True),
        ("x = 1", _s(None, None, 10), 10, False),  # all null
        ("x != 1", _s(None, None, 10), 10, False),
        ("x = 1", _s(None, None, 3), 10, True),  # bounds unknown
        ("x = 1", _s(None, None, None), 10, True),
        ("x = 1", {}, 10, True),
        ("x = 1.5", _s(1, 2), 10, True),  # int bounds, decimal literal
        ("x = 2.5", _s(1, 2), 10, False),
        ("x = 2.5e0", _s(Decimal(1), Decimal(2)), 10, False),
        ("x = 'abc'", _s(1, 2), 10, True),  # incomparable: cannot prune
        ("x = 5", _s(float("nan"), 10.0), 10, True),
        ("x LIKE 'ab%'", _s("aa", "az"), 10, True),
        ("x LIKE 'ab%'", _s("abz", "abzz"), 10, True),
        ("x LIKE 'ab%'", _s("ac", "az"), 10, False),
        ("x LIKE 'ab%'", _s("a", "aa"), 10, False),
        ("x LIKE 'ab%'", _s("a", "ab"), 10, True),
        ("x LIKE '%ab'", _s("a", "aa"), 10, True),
        ("NOT x LIKE 'ab%'", _s("ab", "ab"), 10, True),
        ("NOT x = 5", _s(5, 5), 10, False),
        ("NOT (x > 3 OR x < 1)", _s(4, 9), 10, False),
        ("x > 20 OR x < 0", _s(1, 10), 10, False),
        ("x > 20 OR x < 2", _s(1, 10), 10, True),
        ("x > 2 AND x < 1", _s(0, 10), 10, True),
        ("x > 2 AND x > 11", _s(0, 10), 10, False),
        ("x = 1", _s(1, 1, 0), 0, False),  # an empty file matches nothing
    ],
)
def test_may_match(text: str, stats: dict[str, FieldStats], rows: int, expected: bool) -> None:
    assert may_match(parse_where(text), stats, rows) is expected


def test_may_match_mixed_temporal_and_binary_bounds() -> None:
    utc = dt.timezone.utc
    naive = _s(dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2))
    assert not may_match(col("x") > dt.datetime(2026, 1, 3, tzinfo=utc), naive, 5)
    assert may_match(col("x") > dt.datetime(2026, 1, 1, 12, tzinfo=utc), naive, 5)
    assert not may_match(col("x") > "2026-01-03", naive, 5)
    assert not may_match(col("x") == dt.date(2026, 1, 3), naive, 5)
    dates = _s(dt.date(2026, 1, 1), dt.date(2026, 1, 2))
    assert not may_match(col("x") == "2026-01-05", dates, 5)
    assert may_match(col("x") == "2026-01-02", dates, 5)
    assert not may_match(col("x").startswith("b"), _s(b"a", b"az"), 5)
    assert may_match(col("x").startswith(b"a"), _s(b"a", b"az"), 5)


def test_evaluate_exact_on_partition_values() -> None:
    values = {"dt": dt.date(2026, 11, 21), "hr": 3, "region": None}
    assert evaluate_exact(parse_where("dt = '2026-11-21' AND hr IN (1, 3)"), values)
    assert not evaluate_exact(parse_where("dt = DATE '2026-11-22'"), values)
    assert not evaluate_exact(parse_where("region = 'eu'"), values)
    assert not evaluate_exact(parse_where("NOT region = 'eu'"), values)  # unknown stays unknown
    assert evaluate_exact(parse_where("region IS NULL OR hr = 9"), values)
    assert evaluate_exact(parse_where("hr = 3.0"), values)
    assert not evaluate_exact(parse_where("hr NOT IN (1, NULL)"), values)
    ts = {"ts": dt.datetime(2026, 1, 1, 10)}
    assert evaluate_exact(col("ts") == dt.datetime(2026, 1, 1, 10, tzinfo=dt.timezone.utc), ts)
    with pytest.raises(PredicateError, match="no value"):
        evaluate_exact(parse_where("zz = 1"), values)
    with pytest.raises(PredicateError, match="cannot compare"):
        evaluate_exact(parse_where("hr = 'x'"), values)


def test_predicates_pickle_for_executors() -> None:
    import pickle

    p = parse_where("a IN (1, NULL) AND NOT s LIKE 'x%' OR d = DATE '2026-01-01'")
    assert pickle.loads(pickle.dumps(p)) == p


# --------------------------------------------------------------------------------------------
# Integer columns against fractional, huge, infinite and NaN literals: exact, never an overflow


_INT_TYPES = [pa.int8(), pa.int32(), pa.int64()]
_CMP_OPS = {Op.EQ: "=", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}


def _int_literals() -> st.SearchStrategy[object]:
    return st.one_of(
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-(10**22), max_value=10**22),
        st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**53 + 1, 1e20, -1e20, 0.5, -0.5]),
    )


def _oracle_cmp(x: int, op: Op, v: object) -> bool:
    if isinstance(v, float) and math.isnan(v):
        return op is Op.NE
    return {
        Op.EQ: lambda: x == v, Op.NE: lambda: x != v, Op.LT: lambda: x < v,  # type: ignore[operator]
        Op.LE: lambda: x <= v, Op.GT: lambda: x > v, Op.GE: lambda: x >= v,  # type: ignore[operator]
    }[op]()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    t=st.sampled_from(_INT_TYPES),
    data=st.data(),
    op=st.sampled_from(list(_CMP_OPS)),
    literal=_int_literals(),
)
def test_integer_column_compares_exactly_with_any_number(t, data, op, literal):
    info = {8: 2**7, 32: 2**31, 64: 2**63}[t.bit_width]
    edge = [-info, info - 1, 0, 2**53 + 1 if t.bit_width == 64 else 1]
    values = data.draw(st.lists(st.one_of(st.none(), st.sampled_from(edge), st.integers(-info, info - 1)), max_size=12))
    table = pa.table({"i": pa.array(values, t)})
    got = filter_table(table, Leaf(op, "i", (literal,)))["i"].to_pylist()
    assert got == [x for x in values if x is not None and _oracle_cmp(x, op, literal)]


@settings(max_examples=200, deadline=None)
@given(
    t=st.sampled_from(_INT_TYPES),
    values=st.lists(st.one_of(st.none(), st.integers(-100, 100)), max_size=10),
    items=st.lists(st.one_of(st.integers(-100, 100), st.decimals(-100, 100, places=1), st.floats(-100, 100),
                             st.sampled_from([2**64, -(2**64), 2**63])), min_size=1, max_size=5),
    negated=st.booleans(),
)
def test_integer_in_list_mixing_ints_decimals_floats(t, values, items, negated):
    table = pa.table({"i": pa.array(values, t)})
    leaf = Leaf(Op.NOT_IN if negated else Op.IN, "i", tuple(items))
    got = filter_table(table, leaf)["i"].to_pylist()
    assert got == [x for x in values if x is not None and ((x in items) != negated)]


def test_table_read_with_literals_beyond_the_column(tmp_path):
    import laketide

    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32())])
    for pk in ([], ["id"]):
        name = f"db.t{len(pk)}"
        t = cat.create_table(name, schema, primary_key=pk or None, options={"bucket": "1"} if pk else None)
        t.write(pa.table({"id": [1, 2, 3], "n": [10, None, 30]}, schema=schema))
        assert t.read(where="n < 1e20").num_rows == 2
        assert t.read(where="n > 1e20").num_rows == 0
        assert sorted(t.read(where="n in (10, 12.5, 30)")["id"].to_pylist()) == [1, 3]
        assert t.read(where="id >= 1.5")["id"].to_pylist() == [2, 3]
        assert t.read(where="id = 2.5").num_rows == 0
        assert t.read(where="id in (2.5, 99999999999999999999999)").num_rows == 0


def test_bucket_pruning_skips_literals_no_key_can_equal(tmp_path):
    import laketide

    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["k"], options={"bucket": "4"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    assert t.read(where="k = 3000000000").num_rows == 0
    assert t.read(where="k in (2, 2.5, 3000000000)")["v"].to_pylist() == ["b"]
