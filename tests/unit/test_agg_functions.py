"""Aggregate functions: table-driven cases (nulls, retractions), and the vectorized kernels against their scalar
(Paimon row-by-row) definitions on random key groups."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from laketide.exceptions import InvalidOptionError, MergeEngineError
from laketide.mergetree.engines import merge_function_for
from laketide.mergetree.engines._kernels import Segments
from laketide.mergetree.engines.agg_functions import FieldAggregator, create_aggregator
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.options import CoreOptions
from laketide.schema.create import new_table_schema
from laketide.types import from_arrow_type

I, U_, U, D = 0, 1, 2, 3  # noqa: E741 - Paimon's row kinds +I, -U, +U, -D, named as Paimon prints them


def agg_of(name: str, arrow_type: pa.DataType, **options: str) -> FieldAggregator:
    opts = CoreOptions({f"fields.v.{k.replace('_', '-')}": val for k, val in options.items()})
    return create_aggregator(name, field="v", dtype=from_arrow_type(arrow_type), arrow_type=arrow_type, options=opts)


def merged(name: str, arrow_type: pa.DataType, rows: list[tuple[int, Any]], **options: str) -> Any:
    """Fold one key's (kind, value) rows, oldest first, through the aggregation merge engine."""
    schema = pa.schema([("k", pa.int32()), ("v", arrow_type)])
    opts = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": name}
    opts.update({f"fields.v.{k.replace('_', '-')}": val for k, val in options.items()})
    ts = new_table_schema(schema, table_name="t", primary_key=["k"], options=opts)
    table = pa.table({
        "k": pa.array([1] * len(rows), pa.int32()), "v": pa.array([v for _, v in rows], arrow_type),
        SEQUENCE_NUMBER: pa.array(range(len(rows)), pa.int64()),
        VALUE_KIND: pa.array([k for k, _ in rows], pa.int8()),
    })
    # shuffled input: the merge orders by sequence number itself
    out = merge_function_for(ts).merge(table.take(pa.array(np.random.default_rng(7).permutation(len(rows)))))
    assert out.num_rows == 1
    return out.column("v")[0].as_py()


CASES: list[tuple[str, pa.DataType, list[tuple[int, Any]], Any, dict[str, str]]] = [
    ("sum", pa.int64(), [(I, 1), (I, None), (I, 5)], 6, {}),
    ("sum", pa.int64(), [(I, None), (I, None)], None, {}),
    ("sum", pa.int32(), [(I, 10), (U_, 3), (D, 2)], 5, {}),
    ("sum", pa.int64(), [(U_, 4), (I, 1)], -3, {}),
    ("sum", pa.float64(), [(I, 1.5), (I, 2.25)], 3.75, {}),
    ("sum", pa.decimal128(10, 2), [(I, Decimal("1.10")), (I, Decimal("2.05")), (D, Decimal("0.15"))],
     Decimal("3.00"), {}),
    ("product", pa.int64(), [(I, 2), (I, None), (I, 3), (I, 7)], 42, {}),
    ("product", pa.int64(), [(I, 12), (U_, 4)], 3, {}),
    ("product", pa.float64(), [(I, 0.5), (I, 4.0)], 2.0, {}),
    ("count", pa.int64(), [(I, 1), (I, None), (I, 1), (U_, 1)], 1, {}),  # the writer stores 1 per value
    ("max", pa.string(), [(I, "b"), (I, None), (I, "c"), (I, "a")], "c", {}),
    ("min", pa.float64(), [(I, 3.0), (I, None), (I, -1.0)], -1.0, {}),
    ("max", pa.date32(), [(I, 5), (I, 3)], __import__("datetime").date(1970, 1, 6), {}),
    ("last_value", pa.string(), [(I, "a"), (I, None)], None, {}),
    ("last_value", pa.string(), [(I, "a"), (U_, "a")], None, {}),
    ("last_non_null_value", pa.string(), [(I, "a"), (I, None)], "a", {}),
    ("last_non_null_value", pa.string(), [(I, "a"), (D, "a")], None, {}),
    ("last_non_null_value", pa.string(), [(I, "a"), (D, None)], "a", {}),
    ("first_value", pa.int32(), [(I, None), (I, 2)], None, {}),
    ("first_non_null_value", pa.int32(), [(I, None), (I, 2), (I, 3)], 2, {}),
    ("listagg", pa.string(), [(I, "a"), (I, None), (I, " "), (I, "b")], "a,b", {}),
    ("listagg", pa.string(), [(I, "a"), (I, "b")], "a;b", {"list_agg_delimiter": ";"}),
    ("listagg", pa.string(), [(I, "a,b"), (I, "b,c")], "a,b,c", {"distinct": "true"}),
    ("bool_and", pa.bool_(), [(I, True), (I, None), (I, False)], False, {}),
    ("bool_or", pa.bool_(), [(I, False), (I, None), (I, True)], True, {}),
    ("bool_or", pa.bool_(), [(I, None)], None, {}),
    ("collect", pa.list_(pa.int32()), [(I, [1, 2]), (I, None), (I, [2, 3])], [1, 2, 2, 3], {}),
    ("collect", pa.list_(pa.int32()), [(I, [1, 2]), (I, [2, 3])], [1, 2, 3], {"distinct": "true"}),
    ("collect", pa.list_(pa.string()), [(I, ["a", "b", "a"]), (U_, ["a"])], ["b", "a"], {}),
    ("merge_map", pa.map_(pa.string(), pa.int32()), [(I, [("a", 1), ("b", 2)]), (I, [("b", 3)])],
     [("a", 1), ("b", 3)], {}),
    ("merge_map", pa.map_(pa.string(), pa.int32()), [(I, [("a", 1), ("b", 2)]), (D, [("b", 0)])], [("a", 1)], {}),
    ("sum", pa.int64(), [(I, 10), (U_, 3)], 10, {"ignore_retract": "true"}),
    ("max", pa.int64(), [(I, 10), (U_, 30)], 10, {"ignore_retract": "true"}),
]


@pytest.mark.parametrize(("name", "arrow_type", "rows", "expected", "options"), CASES)
def test_aggregate_function_cases(name: str, arrow_type: pa.DataType, rows: list, expected: Any,
                                  options: dict[str, str]) -> None:
    assert merged(name, arrow_type, rows, **options) == expected


_NESTED = pa.list_(pa.struct([("id", pa.int32()), ("price", pa.int32())]))


def test_nested_update_by_nested_key_and_appending() -> None:
    rows = [(I, [{"id": 1, "price": 10}, {"id": 2, "price": 20}]), (I, [{"id": 1, "price": 11}])]
    got = merged("nested_update", _NESTED, rows, nested_key="id")
    assert sorted(got, key=lambda r: r["id"]) == [{"id": 1, "price": 11}, {"id": 2, "price": 20}]
    assert merged("nested_update", _NESTED, rows) == [
        {"id": 1, "price": 10}, {"id": 2, "price": 20}, {"id": 1, "price": 11}]
    retracted = merged("nested_update", _NESTED, rows + [(U_, [{"id": 2, "price": 0}])], nested_key="id")
    assert retracted == [{"id": 1, "price": 11}]


@pytest.mark.parametrize(("name", "cls"), [("rbm32", BitMap), ("rbm64", BitMap64)])
def test_roaring_bitmaps_union(name: str, cls: type) -> None:
    a, b = cls([1, 5, 100]).serialize(), cls([5, 7]).serialize()
    got = merged(name, pa.binary(), [(I, a), (I, None), (I, b)])
    assert set(cls.deserialize(got)) == {1, 5, 7, 100}
    with pytest.raises(MergeEngineError, match="not a"):
        merged(name, pa.binary(), [(I, a), (I, b"junk")])


def test_theta_sketch_union() -> None:
    import datasketches as ds

    def sketch(values: list[int]) -> bytes:
        s = ds.update_theta_sketch()
        for v in values:
            s.update(v)
        return s.compact().serialize()

    got = merged("theta_sketch", pa.binary(), [(I, sketch([1, 2, 3])), (I, None), (I, sketch([3, 4]))])
    assert ds.compact_theta_sketch.deserialize(got).get_estimate() == 4.0


def test_overflow_and_unretractable_are_typed_errors() -> None:
    with pytest.raises(MergeEngineError, match="overflows"):
        merged("sum", pa.int32(), [(I, 2**31 - 1), (I, 1)])
    with pytest.raises(MergeEngineError, match="overflows"):
        merged("sum", pa.int64(), [(I, 2**63 - 1), (I, 1)])
    with pytest.raises(MergeEngineError, match="ignore-retract"):
        merged("max", pa.int64(), [(I, 1), (U_, 1)])


@pytest.mark.parametrize(("name", "arrow_type"), [
    ("sum", pa.string()), ("product", pa.bool_()), ("count", pa.int16()), ("max", pa.list_(pa.int32())),
    ("listagg", pa.int32()), ("bool_and", pa.int32()), ("rbm64", pa.string()), ("theta_sketch", pa.int64()),
    ("collect", pa.int32()), ("merge_map", pa.list_(pa.int32())), ("nested_update", pa.list_(pa.int32())),
])
def test_wrong_type_is_rejected(name: str, arrow_type: pa.DataType) -> None:
    with pytest.raises(InvalidOptionError, match=f"'{name}' cannot aggregate field 'v'"):
        agg_of(name, arrow_type)


# -- vectorized kernels == scalar definitions ------------------------------------------------------------------
def _scalar(agg: FieldAggregator, rows: list[tuple[bool, Any]]) -> Any:
    agg.reset()
    acc = None
    for retract, v in rows:
        acc = agg.apply_retract(acc, v) if retract else agg.agg(acc, v)
    return acc


_FUNCS = [
    ("sum", pa.int64(), st.integers(-100, 100), True), ("sum", pa.float64(), st.integers(-8, 8), True),
    ("count", pa.int64(), st.just(1), True), ("product", pa.int64(), st.integers(-3, 3), False),
    ("max", pa.string(), st.sampled_from(["a", "b", "cc"]), False), ("min", pa.int32(), st.integers(-9, 9), False),
    ("last_value", pa.int32(), st.integers(0, 9), True), ("last_non_null_value", pa.int32(), st.integers(0, 9), True),
    ("first_value", pa.int32(), st.integers(0, 9), False),
    ("first_non_null_value", pa.string(), st.sampled_from(["x", "y"]), False),
    ("listagg", pa.string(), st.sampled_from(["a", "", " ", "bc"]), False),
    ("bool_and", pa.bool_(), st.booleans(), False), ("bool_or", pa.bool_(), st.booleans(), False),
    ("collect", pa.list_(pa.int32()), st.lists(st.integers(0, 3), max_size=3), True),
]


@pytest.mark.parametrize(("name", "arrow_type", "values", "retracts"), _FUNCS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_vectorized_equals_scalar(name: str, arrow_type: pa.DataType, values: Any, retracts: bool, data) -> None:  # noqa: ANN001
    groups = data.draw(st.lists(st.lists(st.tuples(st.booleans() if retracts else st.just(False),
                                                   st.one_of(st.none(), values)), min_size=1, max_size=6),
                                min_size=1, max_size=6))
    agg = agg_of(name, arrow_type)
    flat = [row for g in groups for row in g]
    lengths = np.array([len(g) for g in groups])
    last = np.zeros(len(flat), dtype=bool)
    last[np.cumsum(lengths) - 1] = True
    segs = Segments.from_last_mask(last)
    retract = np.array([r for r, _ in flat], dtype=bool)
    got = agg.aggregate(pa.array([v for _, v in flat], arrow_type), segs,
                        active=np.ones(len(flat), dtype=bool), retract=retract).to_pylist()
    assert got == [_scalar(agg, g) for g in groups]
