"""A predicate compiled once for many statistics tests (files, row groups): ``k IN (...)`` by binary search.

``expr.may_match`` compares every IN value with a file's min / max: fine for a few values, but a lookup of
1000 keys asks it about every file and every row group. Here the values of each IN conjunct are sorted once and
a range [min, max] is tested with one bisection; every other conjunct goes to ``may_match`` unchanged, and so
does an IN whose values do not sort as one kind (mixed types, floats with NaN, booleans).
"""

from __future__ import annotations

import datetime as _dt
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any
from decimal import Decimal

from laketide.expr import FieldStats, Leaf, Op, Predicate, may_match, split_and

__all__ = ["StatsTest"]

# Kinds whose Python order is the column's order; type() is checked exactly (bool is not int here).
_SORTABLE = (int, str, bytes, _dt.date, Decimal)


class StatsTest:
    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate
        self._conjuncts: list[tuple[Predicate, list[Any] | None]] = []
        for c in split_and(predicate):
            self._conjuncts.append((c, _sorted_in_values(c)))

    def may_match(self, stats: Mapping[str, FieldStats], row_count: int) -> bool:
        """False only when no row summarised by ``stats`` can satisfy the predicate (as ``expr.may_match``)."""
        for conjunct, values in self._conjuncts:
            if values is None:
                if not may_match(conjunct, stats, row_count):
                    return False
                continue
            assert isinstance(conjunct, Leaf)
            s = stats.get(conjunct.field)
            if s is None or s.min is None or s.max is None:
                if s is not None and s.null_count is not None and s.null_count == row_count and row_count > 0:
                    return False  # only nulls: IN is never true
                continue
            kind = type(values[0]) if values else None
            if type(s.min) is not kind or type(s.max) is not kind:
                if not may_match(conjunct, stats, row_count):
                    return False
                continue
            i = bisect_left(values, s.min)
            if i == len(values) or values[i] > s.max:
                return False
        return True


def _sorted_in_values(p: Predicate) -> list[Any] | None:
    """The values of ``k IN (...)`` sorted, when they are all one sortable kind (and not NULL); else None."""
    if not isinstance(p, Leaf) or p.op is not Op.IN or len(p.literals) < 4:
        return None
    kinds = {type(v) for v in p.literals}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind not in _SORTABLE or (kind is _dt.datetime):
        return None
    try:
        literals: set[Any] = set(p.literals)
        return sorted(literals)
    except TypeError:
        return None
