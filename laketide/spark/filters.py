"""Spark's pushed-down filters as laketide predicates.

Spark hands a Python source the AND of simple filters; each one we can express exactly (same three-valued logic)
is taken over by laketide (partition, manifest and file-stats pruning, then an exact Arrow filter after the merge);
the rest stay with Spark. Spark's Python filter API has no And / Or nodes: Spark only pushes conjuncts whose
parts are all simple, so a disjunction is evaluated by Spark.

Paimon: paimon-spark SparkFilterConverter
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide.exceptions import LaketideError
from laketide.expr import Leaf, Op, Predicate, and_, bind, negate

__all__ = ["convert_filter", "split_filters"]


def convert_filter(f: Any) -> Predicate | None:
    """The laketide predicate of one Spark ``pyspark.sql.datasource.Filter``; None if it has none."""
    from pyspark.sql import datasource as ds

    if isinstance(f, ds.Not):
        inner = convert_filter(f.child)
        return None if inner is None else negate(inner)
    attribute = getattr(f, "attribute", None)
    if attribute is None or len(attribute) != 1:
        return None  # nested fields are not pushed
    name = attribute[0]
    if isinstance(f, ds.IsNull):
        return Leaf(Op.IS_NULL, name, ())
    if isinstance(f, ds.IsNotNull):
        return Leaf(Op.IS_NOT_NULL, name, ())
    value = getattr(f, "value", None)
    if isinstance(f, ds.In):
        values = tuple(value or ())
        if any(v is None for v in values):
            return None  # `x IN (1, NULL)` is never false, only unknown: leave it to Spark
        return Leaf(Op.IN, name, values)
    if value is None or isinstance(value, (list, tuple, dict)):
        return None
    if isinstance(f, ds.EqualTo) or isinstance(f, ds.EqualNullSafe):
        # With a non-null literal, `<=>` keeps the same rows as `=`.
        return Leaf(Op.EQ, name, (value,))
    simple = {
        ds.GreaterThan: Op.GT, ds.GreaterThanOrEqual: Op.GE, ds.LessThan: Op.LT, ds.LessThanOrEqual: Op.LE,
        ds.StringStartsWith: Op.STARTS_WITH, ds.StringEndsWith: Op.ENDS_WITH, ds.StringContains: Op.CONTAINS,
    }
    op = simple.get(type(f))
    return None if op is None else Leaf(op, name, (value,))


def split_filters(filters: Sequence[Any], field_types: Mapping[str, pa.DataType]) -> tuple[Predicate | None, list[Any]]:
    """(the AND of every filter laketide takes, the filters Spark must still evaluate)."""
    taken: list[Predicate] = []
    rest: list[Any] = []
    for f in filters:
        pred = convert_filter(f)
        if pred is not None:
            try:
                taken.append(bind(pred, field_types))
                continue
            except LaketideError:
                pass  # e.g. a literal laketide cannot coerce: Spark keeps the filter
        rest.append(f)
    return (and_(*taken) if taken else None), rest
