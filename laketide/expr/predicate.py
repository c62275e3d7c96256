"""Predicate trees over named columns, a small builder and the visitors that rewrite them.

Paimon: org.apache.paimon.predicate.Predicate, LeafPredicate, CompoundPredicate (And / Or),
PredicateBuilder and the LeafFunction family (Equal, NotEqual, LessThan, ..., In, NotIn, IsNull,
IsNotNull, StartsWith, EndsWith, Contains).

Leaves name columns instead of holding field indexes, so a predicate can be written before a table's
schema is known and moved between schemas by :func:`rename_fields`. Semantics are SQL's three-valued
logic: a comparison with a null operand is unknown, and a filter keeps only rows that are true.
"""

from __future__ import annotations

import datetime as _dt
import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Generic, TypeAlias, TypeVar

from laketide.exceptions import PredicateError

__all__ = [
    "And",
    "Column",
    "Leaf",
    "Not",
    "Op",
    "Or",
    "Predicate",
    "and_",
    "col",
    "negate",
    "or_",
    "pick_fields",
    "referenced_fields",
    "rename_fields",
    "split_and",
]


class Op(enum.Enum):
    """Leaf functions; values are Paimon's LeafFunction JSON names."""

    EQ = "EQUAL"
    NE = "NOT_EQUAL"
    LT = "LESS_THAN"
    LE = "LESS_OR_EQUAL"
    GT = "GREATER_THAN"
    GE = "GREATER_OR_EQUAL"
    IN = "IN"
    NOT_IN = "NOT_IN"
    IS_NULL = "IS_NULL"
    IS_NOT_NULL = "IS_NOT_NULL"
    STARTS_WITH = "STARTS_WITH"
    ENDS_WITH = "ENDS_WITH"
    CONTAINS = "CONTAINS"

    @property
    def arity(self) -> int | None:
        """Number of literals the op takes; None means any number (IN lists)."""
        if self in _UNARY:
            return 0
        if self in (Op.IN, Op.NOT_IN):
            return None
        return 1


_UNARY = frozenset({Op.IS_NULL, Op.IS_NOT_NULL})
COMPARISONS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
STRING_OPS = frozenset({Op.STARTS_WITH, Op.ENDS_WITH, Op.CONTAINS})

# Negations that are exact under three-valued logic (NOT unknown = unknown on both sides).
# The string functions have none, as in Paimon, so NOT stays above them.
_NEGATED: dict[Op, Op] = {
    Op.EQ: Op.NE,
    Op.NE: Op.EQ,
    Op.LT: Op.GE,
    Op.GE: Op.LT,
    Op.GT: Op.LE,
    Op.LE: Op.GT,
    Op.IN: Op.NOT_IN,
    Op.NOT_IN: Op.IN,
    Op.IS_NULL: Op.IS_NOT_NULL,
    Op.IS_NOT_NULL: Op.IS_NULL,
}

# What a comparison becomes when its operands swap sides (`10 < x` is `x > 10`).
FLIPPED: dict[Op, Op] = {
    Op.EQ: Op.EQ,
    Op.NE: Op.NE,
    Op.LT: Op.GT,
    Op.GT: Op.LT,
    Op.LE: Op.GE,
    Op.GE: Op.LE,
}

_SYMBOLS: dict[Op, str] = {
    Op.EQ: "=",
    Op.NE: "!=",
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
}


class _Combinators:
    """`&`, `|` and `~` for every predicate node."""

    __slots__ = ()

    def __and__(self, other: object) -> Predicate:
        if not isinstance(other, (Leaf, And, Or, Not)):
            return NotImplemented
        return and_(self, other)  # type: ignore[arg-type]

    def __or__(self, other: object) -> Predicate:
        if not isinstance(other, (Leaf, And, Or, Not)):
            return NotImplemented
        return or_(self, other)  # type: ignore[arg-type]

    def __invert__(self) -> Not:
        return Not(self)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        # `a and b` / `a or b` would silently keep one side; make that mistake loud.
        raise PredicateError("a predicate has no truth value; combine predicates with &, | and ~")


@dataclass(frozen=True, slots=True)
class Leaf(_Combinators):
    """`op` applied to column `field` and `literals` (none for IS [NOT] NULL, one or more for IN)."""

    op: Op
    field: str
    literals: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.op, Op):
            raise PredicateError(f"leaf op must be an Op, got {self.op!r}")
        if not isinstance(self.field, str) or not self.field:
            raise PredicateError(f"leaf field must be a non-empty column name, got {self.field!r}")
        if not isinstance(self.literals, tuple):
            object.__setattr__(self, "literals", tuple(self.literals))
        arity = self.op.arity
        if arity is not None and len(self.literals) != arity:
            raise PredicateError(
                f"{self.op.name} on {self.field!r} takes {arity} literal(s), got {len(self.literals)}"
            )
        if self.op in STRING_OPS and not isinstance(self.literals[0], (str, bytes)):
            raise PredicateError(
                f"{self.op.name} on {self.field!r} needs a string pattern, got {self.literals[0]!r}"
            )

    @property
    def literal(self) -> object:
        """The single literal of a binary leaf."""
        return self.literals[0]

    def __str__(self) -> str:
        name = _quote_ident(self.field)
        op = self.op
        if op in COMPARISONS:
            return f"{name} {_SYMBOLS[op]} {format_literal(self.literal)}"
        if op in (Op.IN, Op.NOT_IN):
            items = ", ".join(format_literal(v) for v in self.literals)
            return f"{name} {'IN' if op is Op.IN else 'NOT IN'} ({items})"
        if op is Op.IS_NULL:
            return f"{name} IS NULL"
        if op is Op.IS_NOT_NULL:
            return f"{name} IS NOT NULL"
        pattern = _escape_like(self.literal)  # type: ignore[arg-type]
        pattern = {Op.STARTS_WITH: f"{pattern}%", Op.ENDS_WITH: f"%{pattern}"}.get(op, f"%{pattern}%")
        return f"{name} LIKE {format_literal(pattern)}"


@dataclass(frozen=True, slots=True)
class And(_Combinators):
    """All children hold."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        _check_children(self, self.children)

    def __str__(self) -> str:
        return "(" + " AND ".join(str(c) for c in self.children) + ")"


@dataclass(frozen=True, slots=True)
class Or(_Combinators):
    """At least one child holds."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        _check_children(self, self.children)

    def __str__(self) -> str:
        return "(" + " OR ".join(str(c) for c in self.children) + ")"


@dataclass(frozen=True, slots=True)
class Not(_Combinators):
    """The child does not hold (unknown stays unknown)."""

    child: Predicate

    def __post_init__(self) -> None:
        if not isinstance(self.child, (Leaf, And, Or, Not)):
            raise PredicateError(f"NOT needs a predicate, got {self.child!r}")

    def __str__(self) -> str:
        return f"NOT {self.child}"


Predicate: TypeAlias = Leaf | And | Or | Not


def _check_children(node: object, children: object) -> None:
    if not isinstance(children, tuple):
        object.__setattr__(node, "children", tuple(children))  # type: ignore[arg-type]
        children = node.children  # type: ignore[attr-defined]
    assert isinstance(children, tuple)
    if len(children) < 2:
        raise PredicateError(f"{type(node).__name__} needs at least two children; use and_/or_")
    for c in children:
        if not isinstance(c, (Leaf, And, Or, Not)):
            raise PredicateError(f"{type(node).__name__} child is not a predicate: {c!r}")


def and_(*predicates: Predicate) -> Predicate:
    """Conjunction of one or more predicates, flattening nested ANDs."""
    return _combine(And, predicates)


def or_(*predicates: Predicate) -> Predicate:
    """Disjunction of one or more predicates, flattening nested ORs."""
    return _combine(Or, predicates)


def _combine(kind: type[And] | type[Or], predicates: tuple[Predicate, ...]) -> Predicate:
    flat: list[Predicate] = []
    for p in predicates:
        if isinstance(p, kind):
            flat.extend(p.children)
        elif isinstance(p, (Leaf, And, Or, Not)):
            flat.append(p)
        else:
            raise PredicateError(f"{kind.__name__.lower()}_ needs predicates, got {p!r}")
    if not flat:
        raise PredicateError(f"{kind.__name__.lower()}_ needs at least one predicate")
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


class Column:
    """A column reference for building predicates: ``col("amount") > 10``."""

    __slots__ = ("name",)
    __hash__ = None  # type: ignore[assignment]  # == builds a predicate, so columns are not hashable

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise PredicateError(f"column name must be a non-empty string, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"col({self.name!r})"

    def _cmp(self, op: Op, other: object) -> Leaf:
        if isinstance(other, Column):
            raise PredicateError(f"comparing two columns ({self.name}, {other.name}) is not supported")
        if other is None:
            hint = "is_null()" if op is Op.EQ else "is_not_null()" if op is Op.NE else None
            raise PredicateError(
                f"comparing {self.name!r} with None is never true"
                + (f"; use col({self.name!r}).{hint}" if hint else "")
            )
        return Leaf(op, self.name, (other,))

    def __eq__(self, other: object) -> Leaf:  # type: ignore[override]
        return self._cmp(Op.EQ, other)

    def __ne__(self, other: object) -> Leaf:  # type: ignore[override]
        return self._cmp(Op.NE, other)

    def __lt__(self, other: object) -> Leaf:
        return self._cmp(Op.LT, other)

    def __le__(self, other: object) -> Leaf:
        return self._cmp(Op.LE, other)

    def __gt__(self, other: object) -> Leaf:
        return self._cmp(Op.GT, other)

    def __ge__(self, other: object) -> Leaf:
        return self._cmp(Op.GE, other)

    def isin(self, values: Iterable[object]) -> Leaf:
        """``column IN (values)``."""
        return Leaf(Op.IN, self.name, tuple(_literal_list(values)))

    def notin(self, values: Iterable[object]) -> Leaf:
        """``column NOT IN (values)``."""
        return Leaf(Op.NOT_IN, self.name, tuple(_literal_list(values)))

    def is_null(self) -> Leaf:
        return Leaf(Op.IS_NULL, self.name)

    def is_not_null(self) -> Leaf:
        return Leaf(Op.IS_NOT_NULL, self.name)

    def startswith(self, prefix: str | bytes) -> Leaf:
        return Leaf(Op.STARTS_WITH, self.name, (prefix,))

    def endswith(self, suffix: str | bytes) -> Leaf:
        return Leaf(Op.ENDS_WITH, self.name, (suffix,))

    def contains(self, part: str | bytes) -> Leaf:
        return Leaf(Op.CONTAINS, self.name, (part,))

    def between(self, low: object, high: object) -> Predicate:
        """``low <= column AND column <= high`` (SQL BETWEEN, bounds included)."""
        return And((self >= low, self <= high))


def _literal_list(values: Iterable[object]) -> list[object]:
    if isinstance(values, (str, bytes)):
        raise PredicateError(f"IN needs a collection of values, got the single value {values!r}")
    return list(values)


def col(name: str) -> Column:
    """Reference column `name` in a predicate."""
    return Column(name)


# --------------------------------------------------------------------------------------------
# Visitors


T = TypeVar("T")


class _Visitor(Generic[T]):
    """Bottom-up fold over a predicate tree; subclasses override the node hooks."""

    def visit(self, p: Predicate) -> T:
        if isinstance(p, Leaf):
            return self.leaf(p)
        if isinstance(p, And):
            return self.and_(p, [self.visit(c) for c in p.children])
        if isinstance(p, Or):
            return self.or_(p, [self.visit(c) for c in p.children])
        if isinstance(p, Not):
            return self.not_(p, self.visit(p.child))
        raise PredicateError(f"not a predicate: {p!r}")

    def leaf(self, p: Leaf) -> T:
        raise NotImplementedError

    def and_(self, p: And, children: list[T]) -> T:
        raise NotImplementedError

    def or_(self, p: Or, children: list[T]) -> T:
        raise NotImplementedError

    def not_(self, p: Not, child: T) -> T:
        raise NotImplementedError


class _FieldsVisitor(_Visitor[set[str]]):
    def leaf(self, p: Leaf) -> set[str]:
        return {p.field}

    def and_(self, p: And, children: list[set[str]]) -> set[str]:
        return set().union(*children)

    def or_(self, p: Or, children: list[set[str]]) -> set[str]:
        return set().union(*children)

    def not_(self, p: Not, child: set[str]) -> set[str]:
        return child


class _RenameVisitor(_Visitor[Predicate]):
    def __init__(self, rename: Callable[[str], str]) -> None:
        self._rename = rename

    def leaf(self, p: Leaf) -> Predicate:
        return Leaf(p.op, self._rename(p.field), p.literals)

    def and_(self, p: And, children: list[Predicate]) -> Predicate:
        return And(tuple(children))

    def or_(self, p: Or, children: list[Predicate]) -> Predicate:
        return Or(tuple(children))

    def not_(self, p: Not, child: Predicate) -> Predicate:
        return Not(child)


class _PickVisitor(_Visitor["Predicate | None"]):
    """Weakest-implied relaxation onto `allowed` columns (None = no constraint survives)."""

    def __init__(self, allowed: set[str]) -> None:
        self._allowed = allowed

    def leaf(self, p: Leaf) -> Predicate | None:
        return p if p.field in self._allowed else None

    def and_(self, p: And, children: list[Predicate | None]) -> Predicate | None:
        kept = [c for c in children if c is not None]
        return and_(*kept) if kept else None

    def or_(self, p: Or, children: list[Predicate | None]) -> Predicate | None:
        # One unconstrained branch admits anything, so the disjunction says nothing.
        if any(c is None for c in children):
            return None
        return or_(*children)  # type: ignore[arg-type]

    def not_(self, p: Not, child: Predicate | None) -> Predicate | None:
        # Relaxing under NOT would strengthen the result: keep the subtree only if it is whole.
        return p if referenced_fields(p.child) <= self._allowed else None


class _NegateVisitor(_Visitor[Predicate]):
    """Builds NOT p with the negation pushed to the leaves (De Morgan holds in Kleene logic)."""

    def visit(self, p: Predicate) -> Predicate:
        # NOT NOT x = x; NOTs left inside x are pushed down when a caller reaches them.
        if isinstance(p, Not):
            return p.child
        return super().visit(p)

    def leaf(self, p: Leaf) -> Predicate:
        neg = _NEGATED.get(p.op)
        return Not(p) if neg is None else Leaf(neg, p.field, p.literals)

    def and_(self, p: And, children: list[Predicate]) -> Predicate:
        return or_(*children)

    def or_(self, p: Or, children: list[Predicate]) -> Predicate:
        return and_(*children)

    def not_(self, p: Not, child: Predicate) -> Predicate:
        raise AssertionError("visit() handles NOT itself")


def referenced_fields(p: Predicate) -> set[str]:
    """Names of all columns the predicate reads."""
    return _FieldsVisitor().visit(p)


def split_and(p: Predicate) -> list[Predicate]:
    """Top-level conjuncts of `p` (nested ANDs flattened); `[p]` when `p` is not an AND."""
    if isinstance(p, And):
        out: list[Predicate] = []
        for c in p.children:
            out.extend(split_and(c))
        return out
    return [p]


def pick_fields(p: Predicate, allowed: set[str] | frozenset[str]) -> Predicate | None:
    """The strongest predicate on `allowed` columns implied by `p`, or None if there is none.

    Conjuncts on other columns are dropped; an OR survives only if each branch keeps a constraint
    (``(dt = 'a' AND x > 1) OR dt = 'b'`` gives ``dt = 'a' OR dt = 'b'``). Used to prune partitions:
    every row matching `p` matches the result.
    """
    return _PickVisitor(set(allowed)).visit(p)


def rename_fields(p: Predicate, mapping: Mapping[str, str]) -> Predicate:
    """Replace column names per `mapping`; names not in it stay."""
    return _RenameVisitor(lambda name: mapping.get(name, name)).visit(p)


def negate(p: Predicate) -> Predicate:
    """NOT `p` with the negation pushed down to the leaves.

    Comparisons, IN and IS NULL flip to their opposite; the string functions have no opposite
    (as in Paimon), so they stay wrapped in :class:`Not`. The flip is exact under three-valued
    logic except for floating NaN, which IEEE comparisons make false both ways
    (``NOT NaN < 1`` is true, ``NaN >= 1`` is false).
    """
    return _NegateVisitor().visit(p)


# --------------------------------------------------------------------------------------------
# Rendering (str(predicate) is the SQL-like text parse_where reads back)

_KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN", "TRUE", "FALSE", "DATE", "TIME", "TIMESTAMP"}
)
_SIMPLE_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")


def _quote_ident(name: str) -> str:
    if _SIMPLE_IDENT.match(name) and name.upper() not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def _escape_like(text: str | bytes) -> str:
    s = text.decode("utf-8", "backslashreplace") if isinstance(text, bytes) else text
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def format_literal(value: object) -> str:
    """A literal as the SQL-like text the parser reads."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, _dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, _dt.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, float):
        text = repr(value)
        # An exponent marks the literal as approximate, so it parses back as a float.
        return text if "e" in text or "n" in text else f"{text}E0"
    if isinstance(value, Decimal):
        text = format(value, "f")
        # A decimal point marks the literal as exact, so it parses back as a Decimal.
        return text if "." in text or not value.is_finite() else f"{text}.0"
    if isinstance(value, int):
        return str(value)
    return repr(value)
