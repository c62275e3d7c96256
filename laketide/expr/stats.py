"""Pruning files by column statistics, and exact evaluation on one row of partition values.

Paimon: org.apache.paimon.predicate.LeafPredicate#test(rowCount, min, max, nullCounts) and the
LeafFunction family's statistics tests. Pruning is conservative: :func:`may_match` answers False
only when no row summarised by the statistics can satisfy the predicate.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from laketide.exceptions import PredicateError
from laketide.expr.predicate import And, Leaf, Not, Op, Or, Predicate, negate

__all__ = ["FieldStats", "evaluate_exact", "may_match"]


@dataclass(frozen=True, slots=True)
class FieldStats:
    """A column's statistics over some rows; None means unknown."""

    min: object | None = None
    max: object | None = None
    null_count: int | None = None


# --------------------------------------------------------------------------------------------
# Comparing Python values of possibly different kinds


def _normalize(a: object, b: object) -> tuple[object, object]:
    if type(a) is type(b):
        if isinstance(a, _dt.datetime) and (a.tzinfo is None) != (b.tzinfo is None):  # type: ignore[attr-defined]
            return _utc(a), _utc(b)  # type: ignore[arg-type]
        return a, b
    if isinstance(a, str) and not isinstance(b, str):
        a = _parse_like(a, b)
    elif isinstance(b, str) and not isinstance(a, str):
        b = _parse_like(b, a)
    if isinstance(a, _dt.date) and isinstance(b, _dt.date):
        if isinstance(a, _dt.datetime) or isinstance(b, _dt.datetime):
            return _utc(_as_datetime(a)), _utc(_as_datetime(b))
    return a, b


def _as_datetime(v: _dt.date) -> _dt.datetime:
    return v if isinstance(v, _dt.datetime) else _dt.datetime.combine(v, _dt.time(0))


def _utc(v: _dt.datetime) -> _dt.datetime:
    return v.replace(tzinfo=_dt.timezone.utc) if v.tzinfo is None else v


def _parse_like(text: str, other: object) -> object:
    """`text` read as a value of `other`'s kind, or unchanged if it cannot be."""
    try:
        if isinstance(other, bytes):
            return text.encode("utf-8")
        if isinstance(other, _dt.datetime):
            return _dt.datetime.fromisoformat(text.strip())
        if isinstance(other, _dt.date):
            return _dt.date.fromisoformat(text.strip())
        if isinstance(other, _dt.time):
            return _dt.time.fromisoformat(text.strip())
        if isinstance(other, Decimal):
            return Decimal(text.strip())
    except (ValueError, ArithmeticError):
        return text
    return text


def _compare(a: object, b: object) -> int | None:
    """-1, 0 or 1 comparing `a` with `b`; None when they are not comparable (or NaN)."""
    a, b = _normalize(a, b)
    try:
        if a < b:  # type: ignore[operator]
            return -1
        if a > b:  # type: ignore[operator]
            return 1
        if a == b:
            return 0
    except (TypeError, ArithmeticError):
        return None
    return None  # NaN: unordered


def _is_nan(v: object) -> bool:
    return (isinstance(v, float) and math.isnan(v)) or (isinstance(v, Decimal) and v.is_nan())


# --------------------------------------------------------------------------------------------
# Statistics pruning


def may_match(p: Predicate, stats: Mapping[str, FieldStats], row_count: int) -> bool:
    """Whether rows summarised by `stats` (per column) and `row_count` might satisfy `p`.

    False is a proof that none can; missing or unusable statistics give True.
    """
    return _may_match(p, stats, row_count, negated=False)


def _may_match(p: Predicate, stats: Mapping[str, FieldStats], row_count: int, *, negated: bool) -> bool:
    # NOT is pushed down on the way (De Morgan), as negate() does, so leaves see their final op.
    if isinstance(p, Leaf):
        s = stats.get(p.field)
        if not negated:
            return _leaf_may_match(p, s, row_count)
        pushed = negate(p)
        if isinstance(pushed, Not):
            return True  # no exact opposite (LIKE): statistics cannot refute NOT of it
        if p.op in _ORDERINGS and s is not None and (isinstance(s.min, float) or isinstance(s.max, float)):
            # NaN rows sit outside float bounds and satisfy NOT (x < c) while failing x >= c.
            return True
        return _leaf_may_match(pushed, s, row_count)  # type: ignore[arg-type]
    if isinstance(p, Not):
        return _may_match(p.child, stats, row_count, negated=not negated)
    conjunction = isinstance(p, And) != negated
    results = (_may_match(c, stats, row_count, negated=negated) for c in p.children)
    return all(results) if conjunction else any(results)


_ORDERINGS = frozenset({Op.LT, Op.LE, Op.GT, Op.GE})


def _leaf_may_match(p: Leaf, s: FieldStats | None, row_count: int) -> bool:
    if s is None:
        return True
    nulls = s.null_count
    all_null = nulls is not None and nulls >= row_count
    if p.op is Op.IS_NULL:
        return nulls is None or nulls > 0
    if p.op is Op.IS_NOT_NULL:
        return not all_null
    # Every other function is unknown (so filtered out) on a null value.
    if all_null:
        return False
    lo, hi = s.min, s.max
    if p.op in (Op.IN, Op.NOT_IN):
        return _in_may_match(p, lo, hi)
    lit = p.literal
    if lit is None:
        return False
    if lo is None or hi is None or _is_nan(lo) or _is_nan(hi):
        return True
    match p.op:
        case Op.EQ:
            return _maybe(_compare(lit, lo), (0, 1)) and _maybe(_compare(lit, hi), (-1, 0))
        case Op.NE:
            # NaN rows (absent from float bounds) are != everything, so float bounds never prune.
            if isinstance(lo, float) or isinstance(hi, float):
                return True
            return not (_compare(lit, lo) == 0 and _compare(lit, hi) == 0)
        case Op.LT:
            return _maybe(_compare(lit, lo), (1,))
        case Op.LE:
            return _maybe(_compare(lit, lo), (0, 1))
        case Op.GT:
            return _maybe(_compare(lit, hi), (-1,))
        case Op.GE:
            return _maybe(_compare(lit, hi), (-1, 0))
        case Op.STARTS_WITH:
            return _starts_with_may_match(lit, lo, hi)
        case _:
            return True  # ENDS_WITH / CONTAINS: min/max say nothing about suffixes


def _maybe(cmp: int | None, ok: tuple[int, ...]) -> bool:
    return cmp is None or cmp in ok


def _in_may_match(p: Leaf, lo: object, hi: object) -> bool:
    if any(v is None for v in p.literals):
        # `x IN (.., NULL)` is never false but can be true; `x NOT IN (.., NULL)` is never true.
        if p.op is Op.NOT_IN:
            return False
    if lo is None or hi is None or _is_nan(lo) or _is_nan(hi):
        return True
    values = [v for v in p.literals if v is not None]
    if p.op is Op.IN:
        return any(
            _maybe(_compare(v, lo), (0, 1)) and _maybe(_compare(v, hi), (-1, 0)) for v in values
        )
    if isinstance(lo, float) or isinstance(hi, float):
        return True
    return not any(_compare(v, lo) == 0 and _compare(v, hi) == 0 for v in values)


def _starts_with_may_match(prefix: object, lo: object, hi: object) -> bool:
    lo, prefix = _normalize(lo, prefix)
    hi, prefix = _normalize(hi, prefix)
    kinds = {type(lo), type(hi), type(prefix)}
    if kinds != {str} and kinds != {bytes}:
        return True
    # Values with the prefix lie in [prefix, prefix + max). A bound that neither carries the
    # prefix nor sits on the right side of it shuts that range out.
    lo_ok = lo.startswith(prefix) or lo <= prefix  # type: ignore[attr-defined,operator]
    hi_ok = hi.startswith(prefix) or hi >= prefix  # type: ignore[attr-defined,operator]
    return bool(lo_ok and hi_ok)


# --------------------------------------------------------------------------------------------
# Exact evaluation on one row


def evaluate_exact(p: Predicate, values: Mapping[str, object]) -> bool:
    """`p` on one row (e.g. a partition's values); unknown counts as False, as in a filter."""
    return _eval(p, values) is True


def _eval(p: Predicate, values: Mapping[str, object]) -> bool | None:
    if isinstance(p, Leaf):
        try:
            v = values[p.field]
        except KeyError as e:
            raise PredicateError(
                f"column {p.field!r} has no value; known: {sorted(values)}"
            ) from e
        return _eval_leaf(p, v)
    if isinstance(p, And):
        result: bool | None = True
        for c in p.children:
            r = _eval(c, values)
            if r is False:
                return False
            if r is None:
                result = None
        return result
    if isinstance(p, Or):
        result = False
        for c in p.children:
            r = _eval(c, values)
            if r is True:
                return True
            if r is None:
                result = None
        return result
    r = _eval(p.child, values)
    return None if r is None else not r


def _strict_compare(a: object, b: object, field: str) -> int | None:
    cmp = _compare(a, b)
    if cmp is None and not (_is_nan(a) or _is_nan(b)):
        raise PredicateError(f"cannot compare {field!r} value {a!r} with literal {b!r}")
    return cmp


def _eval_leaf(p: Leaf, v: object) -> bool | None:
    op = p.op
    if op is Op.IS_NULL:
        return v is None
    if op is Op.IS_NOT_NULL:
        return v is not None
    if v is None:
        return None
    if op in (Op.IN, Op.NOT_IN):
        found: bool | None = False
        for lit in p.literals:
            if lit is None:
                found = None
            elif _strict_compare(v, lit, p.field) == 0:
                found = True
                break
        if found is None or op is Op.IN:
            return found
        return not found
    lit = p.literal
    if lit is None:
        return None
    if op in (Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS):
        s, pattern = _normalize(v, lit)
        if type(s) is not type(pattern) or not isinstance(s, (str, bytes)):
            raise PredicateError(f"{op.name} needs a string column; {p.field!r} holds {v!r}")
        if op is Op.STARTS_WITH:
            return s.startswith(pattern)  # type: ignore[arg-type]
        if op is Op.ENDS_WITH:
            return s.endswith(pattern)  # type: ignore[arg-type]
        return pattern in s  # type: ignore[operator]
    cmp = _strict_compare(v, lit, p.field)
    if cmp is None:  # NaN: every comparison but != is false
        return op is Op.NE
    match op:
        case Op.EQ:
            return cmp == 0
        case Op.NE:
            return cmp != 0
        case Op.LT:
            return cmp < 0
        case Op.LE:
            return cmp <= 0
        case Op.GT:
            return cmp > 0
        case _:
            return cmp >= 0
