"""Predicates: the tree and its builder, the WHERE parser, Arrow filtering and statistics pruning.

Paimon: org.apache.paimon.predicate.
"""

from __future__ import annotations

from laketide.expr.arrow import bind, coerce_literal, filter_table, to_arrow_expression
from laketide.expr.parser import parse_where
from laketide.expr.predicate import (
    And,
    Column,
    Leaf,
    Not,
    Op,
    Or,
    Predicate,
    and_,
    col,
    negate,
    or_,
    pick_fields,
    referenced_fields,
    rename_fields,
    split_and,
)
from laketide.expr.stats import FieldStats, evaluate_exact, may_match

__all__ = [
    "And",
    "Column",
    "FieldStats",
    "Leaf",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "and_",
    "bind",
    "coerce_literal",
    "col",
    "evaluate_exact",
    "filter_table",
    "may_match",
    "negate",
    "or_",
    "parse_where",
    "pick_fields",
    "referenced_fields",
    "rename_fields",
    "split_and",
    "to_arrow_expression",
]
