"""Property: for random data and random predicate trees (AND / OR / NOT over every operator an index answers,
nulls included), a read that uses the file indexes returns exactly the unindexed read + filter."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.expr.arrow import filter_table
from laketide.expr.predicate import Predicate, and_, col, or_

SCHEMA = pa.schema([("i", pa.int32()), ("s", pa.string()), ("b", pa.int64())])
OPTIONS = {
    "file-index.bitmap.columns": "i,s",
    "file-index.bsi.columns": "i,b",
    "file-index.bloom-filter.columns": "s,b",
    "file-index.bloom-filter.s.items": "50",
    "file-index.bloom-filter.b.items": "50",
}
INT_VALUES = st.integers(-4, 4)
STR_VALUES = st.sampled_from(["a", "b", "c", "dd", ""])
BIG_VALUES = st.integers(-3, 3).map(lambda v: v * 1_000_000_007)
INTS, STRS, BIGS = (st.one_of(st.none(), v) for v in (INT_VALUES, STR_VALUES, BIG_VALUES))


def rows_strategy() -> st.SearchStrategy[list[tuple[object, object, object]]]:
    return st.lists(st.tuples(INTS, STRS, BIGS), min_size=0, max_size=40)


def leaf(name: str, lit: st.SearchStrategy[object]) -> st.SearchStrategy[Predicate]:
    c = col(name)
    values = st.one_of(st.none(), lit)
    return st.one_of(
        lit.map(lambda v: c == v), lit.map(lambda v: c != v), lit.map(lambda v: c < v), lit.map(lambda v: c <= v),
        lit.map(lambda v: c > v), lit.map(lambda v: c >= v),
        st.lists(values, min_size=1, max_size=3).map(lambda vs: c.isin(vs)),
        st.lists(values, min_size=1, max_size=3).map(lambda vs: c.notin(vs)),
        st.just(c.is_null()), st.just(c.is_not_null()),
    )


LEAVES = st.one_of(leaf("i", INT_VALUES), leaf("s", STR_VALUES), leaf("b", BIG_VALUES))
TREES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda cs: and_(*cs)),
        st.lists(children, min_size=2, max_size=3).map(lambda cs: or_(*cs)),
        children.map(lambda c: ~c),
    ),
    max_leaves=6,
)


def canonical(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(rows_strategy(), min_size=1, max_size=3), predicates=st.lists(TREES, min_size=1, max_size=4),
       threshold=st.sampled_from(["1 b", "1 mb"]))
def test_indexed_read_equals_unindexed_read_and_filter(batches, predicates, threshold: str) -> None:  # noqa: ANN001
    with tempfile.TemporaryDirectory() as warehouse:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, options={**OPTIONS, "file-index.in-manifest-threshold": threshold})
        for rows in batches:
            if rows:
                t.write(pa.table(list(zip(*rows)), schema=SCHEMA))
        everything = t.read()
        for p in predicates:
            assert canonical(t.read(where=p)) == canonical(filter_table(everything, p)), str(p)
