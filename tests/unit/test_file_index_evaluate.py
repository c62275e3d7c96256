"""Evaluating predicates against a data file's indexes: never a lost row, exact where it says so.

The oracle is laketide's Arrow filter over the same rows (an unindexed read + filter).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from laketide.exceptions import PredicateError
from laketide.expr.arrow import filter_table
from laketide.expr.predicate import And, Leaf, Not, Op, Or, Predicate, col
from laketide.index.file_index import (
    BITMAP,
    BLOOM_FILTER,
    BSI,
    FileIndexContainer,
    FileIndexResult,
    FileIndexSpec,
    ResultKind,
    build_file_index,
    evaluate_file_index,
    parse_file_index_options,
    push_not,
)
from laketide.index.file_index.result import all_of, any_of
from laketide.types import (
    BigIntType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    TimestampType,
    VarCharType,
    to_arrow_type,
)

# ---------------------------------------------------------------------------------------------------------
# Result algebra


def _rows(*values: int, exact: bool = True) -> FileIndexResult:
    return FileIndexResult.of_rows(BitMap(values), exact=exact)


def test_and_or_algebra() -> None:
    skip, remain = FileIndexResult.skip(), FileIndexResult.remain()
    assert all_of([skip, remain]).kind is ResultKind.SKIP
    assert any_of([skip, remain]).kind is ResultKind.REMAIN
    assert all_of([remain, remain]).kind is ResultKind.REMAIN
    assert any_of([skip, skip]).kind is ResultKind.SKIP
    r = all_of([_rows(1, 2, 3), _rows(2, 3, 4)])
    assert set(r.rows or ()) == {2, 3} and r.exact
    r = all_of([_rows(1, 2), remain])
    assert set(r.rows or ()) == {1, 2} and not r.exact  # the REMAIN side may drop some of them
    r = any_of([_rows(1), _rows(5, exact=False), skip])
    assert set(r.rows or ()) == {1, 5} and not r.exact
    assert all_of([_rows(1), _rows(2)]).kind is ResultKind.SKIP  # empty intersection: nothing can match
    assert FileIndexResult.of_rows(BitMap(), exact=False).kind is ResultKind.SKIP
    with pytest.raises(ValueError):
        FileIndexResult(ResultKind.REMAIN, None, True)


def test_push_not_reaches_the_leaves() -> None:
    p = Not(And((col("a") == 1, Or((col("b") < 2, Not(col("c").is_null()))))))
    assert str(push_not(p)) == str(Or((col("a") != 1, And((col("b") >= 2, col("c").is_null())))))
    assert push_not(Not(Not(col("a") == 1))) == (col("a") == 1)
    kept = push_not(Not(col("s").startswith("x")))
    assert isinstance(kept, Not)  # no opposite for LIKE-style functions: stays a NOT (keeps every row)


# ---------------------------------------------------------------------------------------------------------
# Random data, random predicate trees

COLUMNS: dict[str, DataType] = {
    "i": IntType(),
    "s": VarCharType(100),
    "d": DoubleType(),
    "t": TimestampType(9),
    "l": BigIntType(),
    "dec": DecimalType(10, 2),
    "day": DateType(),
}
SUPPORTED = {
    "i": (BITMAP, BSI, BLOOM_FILTER),
    "s": (BITMAP, BLOOM_FILTER),
    "d": (BITMAP, BLOOM_FILTER),
    "t": (BITMAP, BSI, BLOOM_FILTER),
    "l": (BITMAP, BSI, BLOOM_FILTER),
    "dec": (BSI,),
    "day": (BITMAP, BSI, BLOOM_FILTER),
}
_T0 = 1_745_542_802_000_123_000
_DAY0 = dt.date(2024, 2, 29)
POOLS: dict[str, list[object]] = {
    "i": [-5, -1, 0, 1, 2, 7, 2**31 - 1, -(2**31)],
    "s": ["", "a", "b", "ab", "é", "zz", "a" * 40],
    "d": [-1.5, 0.0, -0.0, 2.25, float("nan"), float("inf"), 1e300],
    "t": [pd.Timestamp(_T0 + k, unit="ns") for k in (-1001, -1000, -1, 0, 1, 999, 1000, 5_000_000)]
    + [pd.Timestamp(-1_744_877_000, unit="ns")],
    "l": [-(2**63) + 1, -(2**40), -3, 0, 3, 2**40, 2**63 - 1],
    "dec": [Decimal("-12.50"), Decimal("0.00"), Decimal("0.01"), Decimal("3.75"), Decimal("99999999.99")],
    "day": [_DAY0 + dt.timedelta(days=k) for k in (-20000, -1, 0, 1, 30)],
}
# Literals: the column's values plus values between and beyond them (and a few of other kinds).
EXTRA_LITERALS: dict[str, list[object]] = {
    "i": [3, 100, -100, Decimal("1.5"), Decimal("-0.5"), 2**40],
    "s": ["A", "b ", "zzz"],
    "d": [2.0, -1.0, 3.0],
    "t": [pd.Timestamp(_T0 + 500, unit="ns"), pd.Timestamp(_T0 - 1_000_000, unit="ns"), dt.datetime(2030, 1, 1)],
    "l": [1, -(2**62), 2**62, -(2**63)],
    "dec": [Decimal("3.7"), Decimal("3.755"), 1, Decimal("-12.5"), 0],
    "day": [_DAY0 + dt.timedelta(days=2), dt.date(1900, 1, 1)],
}


def _table(rows: dict[str, list[object]]) -> pa.Table:
    return pa.table({name: pa.array(values, to_arrow_type(COLUMNS[name])) for name, values in rows.items()})


@st.composite
def files(draw: st.DrawFn) -> tuple[pa.Table, FileIndexSpec]:
    n = draw(st.integers(0, 70))
    # Values come from a drawn seed (drawing every cell through hypothesis is far slower, for little gain).
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows: dict[str, list[object]] = {}
    for name, pool in POOLS.items():
        null_share = draw(st.sampled_from([0.0, 0.2, 1.0]))
        width = draw(st.integers(1, len(pool)))  # how many distinct values the column may hold
        picks = rng.integers(0, width, size=n)
        nulls = rng.random(n) < null_share
        rows[name] = [None if null else pool[k] for k, null in zip(picks.tolist(), nulls.tolist(), strict=True)]
    options: dict[str, str] = {"file-index.in-manifest-threshold": "1B"}
    for index_type in (BITMAP, BSI, BLOOM_FILTER):
        chosen = [c for c in COLUMNS if index_type in SUPPORTED[c] and draw(st.booleans())]
        if chosen:
            options[f"file-index.{index_type}.columns"] = ",".join(chosen)
    for c in COLUMNS:
        if BITMAP in SUPPORTED[c]:
            options[f"file-index.bitmap.{c}.version"] = draw(st.sampled_from(["1", "2"]))
            options[f"file-index.bitmap.{c}.index-block-size"] = draw(st.sampled_from(["16", "64", "16kb"]))
        if BLOOM_FILTER in SUPPORTED[c]:
            options[f"file-index.bloom-filter.{c}.items"] = draw(st.sampled_from(["3", "1000"]))
    options = {k: v for k, v in options.items() if _declared(k, options)}
    return _table(rows), parse_file_index_options(options, fields=COLUMNS)


def _declared(key: str, options: dict[str, str]) -> bool:
    parts = key.split(".")
    if len(parts) != 4:
        return True
    return parts[2] in options.get(f"file-index.{parts[1]}.columns", "").split(",")


_OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.IS_NOT_NULL]


@st.composite
def leaves(draw: st.DrawFn, columns: tuple[str, ...] = tuple(COLUMNS), ops: tuple[Op, ...] = tuple(_OPS)) -> Leaf:
    name = draw(st.sampled_from(columns))
    op = draw(st.sampled_from(ops))
    literal = st.sampled_from(POOLS[name] + EXTRA_LITERALS[name])
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return Leaf(op, name)
    if op in (Op.IN, Op.NOT_IN):
        values = draw(st.lists(literal, min_size=1, max_size=4))
        if draw(st.integers(0, 9)) == 0:
            values.append(None)
        return Leaf(op, name, tuple(values))
    if name == "s" and draw(st.integers(0, 9)) == 0:
        return Leaf(draw(st.sampled_from([Op.STARTS_WITH, Op.CONTAINS])), name, ("a",))
    return Leaf(op, name, (draw(literal),))


def trees(leaf: st.SearchStrategy[Leaf]) -> st.SearchStrategy[Predicate]:
    return st.recursive(
        leaf,
        lambda sub: st.one_of(
            st.lists(sub, min_size=2, max_size=3).map(lambda cs: And(tuple(cs))),
            st.lists(sub, min_size=2, max_size=3).map(lambda cs: Or(tuple(cs))),
            sub.map(Not),
        ),
        max_leaves=6,
    )


def _truth(table: pa.Table, p: Predicate) -> set[int] | None:
    """Rows where ``p`` holds; None when the unindexed filter itself refuses ``p`` (then there is no read to
    compare with: laketide's Arrow filter cannot mix decimals and ints in one IN list, for one)."""
    numbered = table.append_column("__row", pa.array(np.arange(table.num_rows), pa.int64()))
    try:
        return set(filter_table(numbered, p).column("__row").to_pylist())
    except (PredicateError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _evaluate(table: pa.Table, spec: FileIndexSpec, p: Predicate) -> FileIndexResult:
    container = build_file_index(table, spec, fields=COLUMNS)
    if container is None:
        return FileIndexResult.remain()
    return evaluate_file_index(FileIndexContainer(container, path="f.index"), p, fields=COLUMNS).result


def _assert_sound(result: FileIndexResult, truth: set[int] | None, p: Predicate) -> None:
    if truth is None:
        return
    if result.kind is ResultKind.SKIP:
        assert not truth, f"{p}: skipped but rows {sorted(truth)} match"
    elif result.kind is ResultKind.ROWS:
        rows = set(result.rows or ())
        assert truth <= rows, f"{p}: lost rows {sorted(truth - rows)}"
        if result.exact:
            assert rows == truth, f"{p}: exact {sorted(rows)} != {sorted(truth)}"


@settings(max_examples=300)
@given(file=files(), predicates=st.lists(trees(leaves()), min_size=1, max_size=8))
def test_index_answers_contain_every_matching_row(
    file: tuple[pa.Table, FileIndexSpec], predicates: list[Predicate]
) -> None:
    table, spec = file
    container = build_file_index(table, spec, fields=COLUMNS)
    parsed = FileIndexContainer(container, path="f.index") if container is not None else None
    for p in predicates:
        result = FileIndexResult.remain() if parsed is None else evaluate_file_index(parsed, p, fields=COLUMNS).result
        _assert_sound(result, _truth(table, p), p)


# Exact trees: bitmap answers = != IN NOT-IN and null tests exactly on integer, string and date columns, and
# BSI answers comparisons exactly on integral, decimal and date columns (literals that are values of the column).
_EXACT_BITMAP = ("i", "s", "l", "day")
_EXACT_BSI = ("i", "l", "dec", "day")


@st.composite
def exact_leaves(draw: st.DrawFn) -> Leaf:
    bsi = draw(st.booleans())
    name = draw(st.sampled_from(_EXACT_BSI if bsi else _EXACT_BITMAP))
    ops = (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.IS_NOT_NULL) if bsi else (
        Op.EQ, Op.NE, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.IS_NOT_NULL)
    op = draw(st.sampled_from(ops))
    pool = POOLS[name] + EXTRA_LITERALS[name]
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        return Leaf(op, name)
    if op in (Op.IN, Op.NOT_IN):
        return Leaf(op, name, tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))))
    return Leaf(op, name, (draw(st.sampled_from(pool)),))


def _exact_spec(bitmap_version: str) -> FileIndexSpec:
    return parse_file_index_options(
        {
            "file-index.bitmap.columns": ",".join(_EXACT_BITMAP),
            "file-index.bsi.columns": ",".join(_EXACT_BSI),
            **{f"file-index.bitmap.{c}.version": bitmap_version for c in _EXACT_BITMAP},
            **{f"file-index.bitmap.{c}.index-block-size": "32" for c in _EXACT_BITMAP},
        },
        fields=COLUMNS,
    )


@settings(max_examples=200)
@given(file=files(), version=st.sampled_from(["1", "2"]),
       predicates=st.lists(trees(exact_leaves()), min_size=1, max_size=6))
def test_bitmap_and_bsi_trees_are_exact(
    file: tuple[pa.Table, FileIndexSpec], version: str, predicates: list[Predicate]
) -> None:
    table, _ = file
    spec = _exact_spec(version)
    parsed = FileIndexContainer(build_file_index(table, spec, fields=COLUMNS) or b"", path="f.index")
    for p in predicates:
        result = evaluate_file_index(parsed, p, fields=COLUMNS).result
        truth = _truth(table, p)
        if truth is None:
            continue
        assert result.kind is not ResultKind.REMAIN, p
        assert result.exact, p
        assert (set(result.rows or ()) if result.kind is ResultKind.ROWS else set()) == truth, p


# ---------------------------------------------------------------------------------------------------------
# Examples worth pinning


def _example() -> tuple[pa.Table, FileIndexContainer]:
    table = _table(
        {
            "i": [1, 2, None, 2, 5],
            "s": ["a", "b", "a", None, "c"],
            "d": [1.0, float("nan"), -0.0, 0.0, None],
            "t": [None] * 5,
            "l": [1, 2, 3, 4, 5],
            "dec": [Decimal("1.00")] * 5,
            "day": [_DAY0] * 5,
        }
    )
    spec = parse_file_index_options(
        {"file-index.bitmap.columns": "i,s,d", "file-index.bsi.columns": "i", "file-index.bloom-filter.columns": "s,d"},
        fields=COLUMNS,
    )
    return table, FileIndexContainer(build_file_index(table, spec, fields=COLUMNS) or b"", path="f.index")


def test_not_of_a_bloom_maybe_keeps_the_file() -> None:
    table, c = _example()
    # `s` has a bitmap too; pick the column to be bloom-only through a container holding just the bloom.
    spec = parse_file_index_options({"file-index.bloom-filter.columns": "s"}, fields=COLUMNS)
    bloom_only = FileIndexContainer(build_file_index(table, spec, fields=COLUMNS) or b"", path="b.index")
    assert evaluate_file_index(bloom_only, col("s") == "zz", fields=COLUMNS).result.kind is ResultKind.SKIP
    assert evaluate_file_index(bloom_only, Not(col("s") == "zz"), fields=COLUMNS).result.kind is ResultKind.REMAIN
    assert evaluate_file_index(bloom_only, Not(col("s") == "a"), fields=COLUMNS).result.kind is ResultKind.REMAIN


def test_signed_zero_and_nan_literals_keep_rows() -> None:
    table, c = _example()
    for p in (col("d") == 0.0, col("d") == -0.0, col("d") == float("nan"), col("d").notin([0.0])):
        result = evaluate_file_index(c, p, fields=COLUMNS).result
        assert result.kind is ResultKind.REMAIN, p
        _assert_sound(result, _truth(table, p), p)
    result = evaluate_file_index(c, col("d") != 1.0, fields=COLUMNS).result
    assert set(result.rows or ()) == _truth(table, col("d") != 1.0) == {1, 2, 3}  # NaN != 1.0 holds


def test_null_literals_and_null_rows() -> None:
    table, c = _example()
    cases = {
        col("i").notin([2, None]): ResultKind.SKIP,  # never true
        col("i").isin([2, None]): ResultKind.ROWS,
        Leaf(Op.EQ, "i", (None,)): ResultKind.SKIP,
        col("i") != 2: ResultKind.ROWS,  # excludes the null row
        col("i").is_null(): ResultKind.ROWS,
    }
    for p, kind in cases.items():
        result = evaluate_file_index(c, p, fields=COLUMNS).result
        assert result.kind is kind, p
        _assert_sound(result, _truth(table, p), p)
    assert set(evaluate_file_index(c, col("i") != 2, fields=COLUMNS).result.rows or ()) == {0, 4}


def test_usage_record_names_the_deciding_index() -> None:
    _, c = _example()
    ev = evaluate_file_index(c, col("s") == "zz", fields=COLUMNS)
    assert ev.skipped and ev.skipped_by() in ((BLOOM_FILTER,), (BITMAP,))
    ev = evaluate_file_index(c, (col("i") >= 2) & (col("s") == "b"), fields=COLUMNS)
    assert set(ev.result.rows or ()) == {1} and ev.result.exact
    assert set(ev.selected_by()) == {BSI, BITMAP}
    assert {(u.column, u.index_type) for u in ev.uses} >= {("i", BSI), ("s", BITMAP)}
    ev = evaluate_file_index(c, col("l") == 1, fields=COLUMNS)  # no index on l
    assert ev.result.kind is ResultKind.REMAIN and ev.uses == ()
    assert evaluate_file_index(c, None, fields=COLUMNS).result.kind is ResultKind.REMAIN


def test_unknown_column_type_or_field_keeps_rows() -> None:
    _, c = _example()
    assert evaluate_file_index(c, col("zz") == 1, fields=COLUMNS).result.kind is ResultKind.REMAIN
    # The file schema no longer knows the column (dropped): nothing to say.
    fields = {k: v for k, v in COLUMNS.items() if k != "i"}
    assert evaluate_file_index(c, col("i") == 1, fields=fields).result.kind is ResultKind.REMAIN


def test_every_single_leaf_over_every_pool_value() -> None:
    """Exhaustive over the pools: every op against every literal, on a file holding every value and nulls."""
    n = max(len(p) for p in POOLS.values()) + 2
    rows = {name: [pool[k % len(pool)] for k in range(n - 2)] + [None, pool[0]] for name, pool in POOLS.items()}
    table = _table(rows)
    options = {f"file-index.{t}.columns": ",".join(c for c in COLUMNS if t in SUPPORTED[c]) for t in (BITMAP, BSI)}
    for only in (BITMAP, BSI, BLOOM_FILTER):
        columns = ",".join(c for c in COLUMNS if only in SUPPORTED[c])
        spec = parse_file_index_options({f"file-index.{only}.columns": columns}, fields=COLUMNS)
        c = FileIndexContainer(build_file_index(table, spec, fields=COLUMNS) or b"", path=f"{only}.index")
        for name in COLUMNS:
            for lit in POOLS[name] + EXTRA_LITERALS[name]:
                for op in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN):
                    p = Leaf(op, name, (lit,))
                    _assert_sound(evaluate_file_index(c, p, fields=COLUMNS).result, _truth(table, p), p)
    assert options  # the combined spec parses too
    parse_file_index_options(options, fields=COLUMNS)
