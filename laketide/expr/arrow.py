"""Predicates as Arrow compute expressions, and literal coercion to a column's Arrow type.

Paimon: org.apache.paimon.predicate.PredicateBuilder#convertJavaObject (literal conversion); the
filtering itself follows SQL: comparisons with null are unknown, NOT keeps unknown unknown, and
``x IN (1, NULL)`` is true for 1 and unknown otherwise. ``Table.filter`` drops unknown rows.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import PredicateError
from laketide.expr.predicate import COMPARISONS, And, Leaf, Not, Op, Or, Predicate, referenced_fields

__all__ = ["bind", "coerce_literal", "filter_table", "to_arrow_expression"]

_NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))


# --------------------------------------------------------------------------------------------
# Literal coercion


def coerce_literal(value: object, arrow_type: pa.DataType, *, field: str = "?") -> object:
    """`value` as the Python value a column of `arrow_type` holds (what ``Scalar.as_py()`` gives).

    Strings become dates / times / timestamps for temporal columns, numbers become Decimal for
    decimal columns and float for floating columns; a literal that cannot stand for a value of the
    column raises PredicateError naming the column.
    """
    if value is None:
        return None
    try:
        return _coerce(value, arrow_type)
    except (ValueError, TypeError, ArithmeticError, OverflowError) as e:
        raise PredicateError(
            f"literal {value!r} does not fit column {field!r} of type {arrow_type}: {e}"
        ) from e


def _coerce(value: object, t: pa.DataType) -> object:
    if isinstance(value, bool) and not pa.types.is_boolean(t):
        raise TypeError("a boolean literal only fits a boolean column")
    if pa.types.is_boolean(t):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise TypeError("expected TRUE or FALSE")
    if pa.types.is_integer(t):
        if isinstance(value, str):
            value = _parse_number(value)
        if isinstance(value, (float, Decimal)):
            # A fractional (or infinite, or NaN) literal keeps its value: `int_col > 1.5` must not
            # become `> 1`; the comparison itself handles it exactly.
            if isinstance(value, float) and not math.isfinite(value):
                return value
            if isinstance(value, Decimal) and not value.is_finite():
                return value
            return int(value) if value == int(value) else value
        if isinstance(value, int):
            # Out-of-range values stay: `tiny_col < 1000` is a valid (always true) comparison.
            return value
        raise TypeError("expected a number")
    if pa.types.is_floating(t):
        if isinstance(value, str):
            value = _parse_number(value)
        if isinstance(value, (int, float, Decimal)):
            return float(value)
        raise TypeError("expected a number")
    if pa.types.is_decimal(t):
        if isinstance(value, (str, int)):
            return Decimal(value)
        if isinstance(value, float):
            return Decimal(repr(value))
        if isinstance(value, Decimal):
            return value
        raise TypeError("expected a number")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        if isinstance(value, str):
            return value
        raise TypeError("expected a string literal (quote it)")
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        raise TypeError("expected a string or binary literal")
    if pa.types.is_date(t):
        if isinstance(value, _dt.datetime):
            if value.time() != _dt.time(0):
                raise ValueError("a timestamp with a time of day is not a date")
            return value.date()
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            return _dt.date.fromisoformat(value.strip())
        raise TypeError("expected a date")
    if pa.types.is_timestamp(t):
        if isinstance(value, str):
            value = _dt.datetime.fromisoformat(value.strip())
        elif isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            value = _dt.datetime.combine(value, _dt.time(0))
        if not isinstance(value, _dt.datetime):
            raise TypeError("expected a timestamp")
        # Naive means UTC everywhere in laketide; match the column's awareness.
        if t.tz is None:
            if value.tzinfo is not None:
                value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        elif value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value
    if pa.types.is_time(t):
        if isinstance(value, str):
            return _dt.time.fromisoformat(value.strip())
        if isinstance(value, _dt.time):
            return value
        raise TypeError("expected a time")
    raise TypeError(f"columns of type {t} cannot be compared with literals")


def _parse_number(text: str) -> int | Decimal:
    try:
        return int(text)
    except ValueError:
        try:
            return Decimal(text)
        except InvalidOperation as e:
            raise ValueError(f"{text!r} is not a number") from e


def bind(p: Predicate, field_types: Mapping[str, pa.DataType]) -> Predicate:
    """`p` checked against `field_types`: unknown columns raise, literals are coerced."""
    known = set(field_types)
    missing = referenced_fields(p) - known
    if missing:
        raise PredicateError(
            f"unknown column(s) {sorted(missing)} in filter; table columns: {sorted(known)}"
        )
    return _bind(p, field_types)


def _bind(p: Predicate, field_types: Mapping[str, pa.DataType]) -> Predicate:
    if isinstance(p, Leaf):
        t = field_types[p.field]
        if p.op in (Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS) and not _is_stringlike(t):
            raise PredicateError(f"{p.op.name} needs a string column; {p.field!r} is {t}")
        if pa.types.is_integer(t) and all(type(v) is int for v in p.literals):
            return p  # ints stand for themselves in an integer column (a lookup's IN of many keys: no per-value work)
        lits = tuple(coerce_literal(v, t, field=p.field) for v in p.literals)
        return p if lits == p.literals and _same_types(lits, p.literals) else Leaf(p.op, p.field, lits)
    if isinstance(p, And):
        return And(tuple(_bind(c, field_types) for c in p.children))
    if isinstance(p, Or):
        return Or(tuple(_bind(c, field_types) for c in p.children))
    return Not(_bind(p.child, field_types))


def _same_types(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return all(type(x) is type(y) for x, y in zip(a, b, strict=True))


def _is_stringlike(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    )


# --------------------------------------------------------------------------------------------
# Expressions


def to_arrow_expression(
    p: Predicate, *, schema: pa.Schema | Mapping[str, pa.DataType] | None = None
) -> pc.Expression:
    """`p` as a boolean Arrow expression with SQL three-valued semantics.

    With `schema`, literals are coerced to the columns' types first, which Arrow needs for decimal
    and time-zone-aware columns (it refuses to compare those with mismatched literals).
    """
    types: Mapping[str, pa.DataType] | None
    if schema is None:
        types = None
    elif isinstance(schema, pa.Schema):
        types = {f.name: f.type for f in schema}
    else:
        types = schema
    if types is not None:
        p = bind(p, types)
    return _expr(p, types)


def _expr(p: Predicate, types: Mapping[str, pa.DataType] | None) -> pc.Expression:
    if isinstance(p, Leaf):
        return _leaf_expr(p, None if types is None else types.get(p.field))
    if isinstance(p, And):
        out = _expr(p.children[0], types)
        for c in p.children[1:]:
            out = out & _expr(c, types)  # and_kleene: false AND unknown = false
        return out
    if isinstance(p, Or):
        out = _expr(p.children[0], types)
        for c in p.children[1:]:
            out = out | _expr(c, types)
        return out
    return ~_expr(p.child, types)


def _typed(values: list[object], t: pa.DataType | None) -> pa.Array | None:
    """`values` as an array of the column's type, or None if that would change any of them.

    Arrow truncates silently (2.5 -> 2 for int64), so the round trip is checked; on a mismatch the
    literal keeps its own type and Arrow casts the column to a common type instead.
    """
    if t is None:
        return None
    try:
        arr = pa.array(values, type=t)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
        return None
    if pa.types.is_integer(t) and all(type(v) is int for v in values):
        return arr  # an int that converted is exact (out of range raises above)
    back = arr.to_pylist()
    if any(type(a) is not type(b) or a != b for a, b in zip(back, values, strict=True)):
        return None
    return arr


def _scalar(value: object, t: pa.DataType | None) -> pc.Expression:
    arr = _typed([value], t)
    return pc.scalar(pa.scalar(value) if arr is None else arr[0])


def _leaf_expr(p: Leaf, t: pa.DataType | None) -> pc.Expression:
    f = pc.field(p.field)
    op = p.op
    if op is Op.IS_NULL:
        return f.is_null()
    if op is Op.IS_NOT_NULL:
        return f.is_valid()
    if op in COMPARISONS:
        if p.literal is None:
            return _NULL_BOOL
        if t is not None and pa.types.is_integer(t) and isinstance(p.literal, (float, Decimal)):
            return _integer_comparison(f, op, p.literal)
        if t is not None and pa.types.is_integer(t) and isinstance(p.literal, int) and not _fits_int64(p.literal):
            return _integer_comparison(f, op, p.literal)
        lit = _scalar(p.literal, t)
        match op:
            case Op.EQ:
                return f == lit
            case Op.NE:
                return f != lit
            case Op.LT:
                return f < lit
            case Op.LE:
                return f <= lit
            case Op.GT:
                return f > lit
            case _:
                return f >= lit
    if op in (Op.IN, Op.NOT_IN):
        expr = _in_expr(f, p.literals, t)
        return expr if op is Op.IN else ~expr
    pattern = p.literal
    if isinstance(pattern, bytes):
        pattern = pattern.decode("utf-8", "surrogateescape")
    if op is Op.STARTS_WITH:
        return pc.starts_with(f, pattern=pattern)
    if op is Op.ENDS_WITH:
        return pc.ends_with(f, pattern=pattern)
    return pc.match_substring(f, pattern=pattern)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _fits_int64(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _integer_comparison(f: pc.Expression, op: Op, value: float | Decimal | int) -> pc.Expression:
    """`f op value` for an integer column and a fractional or out-of-range literal, exactly.

    Arrow would compare through float64 (inexact beyond 2**53) or overflow; instead the bound is
    moved to the nearest integer on the right side (`i > 1.5` is `i >= 2`), and a bound outside
    int64 makes the comparison a constant (true or false for known values, unknown for nulls).
    """
    exact = Decimal(value) if not isinstance(value, Decimal) else value
    if exact.is_nan():  # every comparison with NaN but != is false
        return _known(f, op is Op.NE)
    if exact.is_infinite():
        above = exact > 0
        return _known(f, op is Op.NE or (above and op in (Op.LT, Op.LE)) or (not above and op in (Op.GT, Op.GE)))
    floor = int(exact.to_integral_value(rounding="ROUND_FLOOR"))
    ceil = int(exact.to_integral_value(rounding="ROUND_CEILING"))
    if op in (Op.EQ, Op.NE):
        if floor != ceil or not _fits_int64(floor):  # no integer column value equals it
            return _known(f, op is Op.NE)
        return f == pc.scalar(floor) if op is Op.EQ else f != pc.scalar(floor)
    # Integers x with x > v are those with x >= floor(v) + 1; x < v those with x <= ceil(v) - 1.
    if op in (Op.GT, Op.GE):
        lo = floor + 1 if op is Op.GT else ceil
        if lo > _INT64_MAX:
            return _known(f, False)
        return _known(f, True) if lo <= _INT64_MIN else f >= pc.scalar(lo)
    hi = ceil - 1 if op is Op.LT else floor
    if hi < _INT64_MIN:
        return _known(f, False)
    return _known(f, True) if hi >= _INT64_MAX else f <= pc.scalar(hi)


def _known(f: pc.Expression, value: bool) -> pc.Expression:
    """`value` where `f` is known, unknown where it is null (SQL: a comparison with null)."""
    return pc.if_else(f.is_valid(), pc.scalar(value), _NULL_BOOL)


def _in_expr(f: pc.Expression, literals: tuple[object, ...], t: pa.DataType | None) -> pc.Expression:
    values = [v for v in literals if v is not None]
    has_null = len(values) != len(literals)
    if t is not None and pa.types.is_integer(t):
        # A fractional or out-of-range item can equal no value of the column: it only matters as
        # "the list is not empty", which the known values below already say.
        values = [v for v in values if isinstance(v, int) and _fits_int64(v)]
    if values:
        value_set = _typed(values, t)
        if value_set is None:
            try:
                value_set = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                raise PredicateError(f"IN list {values!r} mixes incompatible types") from e
        found = pc.is_in(f, value_set=value_set)
    else:
        found = pc.scalar(False)
    # No match is false only when both the column value and every list item are known.
    if has_null:
        return pc.if_else(found, pc.scalar(True), _NULL_BOOL)
    return pc.if_else(f.is_valid(), found, _NULL_BOOL)


def filter_table(table: pa.Table | pa.RecordBatch, p: Predicate) -> pa.Table:
    """Rows of `table` for which `p` is true."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    missing = referenced_fields(p) - set(table.schema.names)
    if missing:
        raise PredicateError(
            f"unknown column(s) {sorted(missing)} in filter; table columns: {table.schema.names}"
        )
    return table.filter(to_arrow_expression(p, schema=table.schema))
