"""Which type changes Paimon allows and which cast executor carries each one.

Two tables decide whether ``ALTER TABLE ... MODIFY c <type>`` is accepted: Java's DataTypeCasts (implicit and
explicit casts between type roots) and CastExecutors (the cast rule that converts values at read time, looked
up by target type / root / family, then input root / family, later rules overriding earlier ones). Both are
kept here as data, in Java's order, so that :func:`can_cast` answers exactly what
``DataTypeCasts.supportsCast(source, target, allowExplicit) && CastExecutors.resolve(source, target) != null``
answers in ``SchemaManager``.

Paimon: org.apache.paimon.types.DataTypeCasts, DataTypeRoot, DataTypeFamily, org.apache.paimon.casting.CastExecutors
and the *CastRule classes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from laketide.types import (
    STRING,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    VariantType,
)

__all__ = ["Family", "Root", "can_cast", "resolve_rule", "root_of", "supports_cast"]


class Family(enum.Enum):
    """Paimon's DataTypeFamily, in Java's declaration order (the order families are tried in)."""

    PREDEFINED = 0
    CONSTRUCTED = 1
    CHARACTER_STRING = 2
    BINARY_STRING = 3
    NUMERIC = 4
    INTEGER_NUMERIC = 5
    EXACT_NUMERIC = 6
    APPROXIMATE_NUMERIC = 7
    DATETIME = 8
    TIME = 9
    TIMESTAMP = 10
    COLLECTION = 11
    EXTENSION = 12


F = Family


class Root(enum.Enum):
    """Paimon's DataTypeRoot (the roots laketide models) with its families; the first item keeps values unique."""

    CHAR = ("CHAR", F.PREDEFINED, F.CHARACTER_STRING)
    VARCHAR = ("VARCHAR", F.PREDEFINED, F.CHARACTER_STRING)
    BOOLEAN = ("BOOLEAN", F.PREDEFINED)
    BINARY = ("BINARY", F.PREDEFINED, F.BINARY_STRING)
    VARBINARY = ("VARBINARY", F.PREDEFINED, F.BINARY_STRING)
    DECIMAL = ("DECIMAL", F.PREDEFINED, F.NUMERIC, F.EXACT_NUMERIC)
    TINYINT = ("TINYINT", F.PREDEFINED, F.NUMERIC, F.INTEGER_NUMERIC, F.EXACT_NUMERIC)
    SMALLINT = ("SMALLINT", F.PREDEFINED, F.NUMERIC, F.INTEGER_NUMERIC, F.EXACT_NUMERIC)
    INTEGER = ("INTEGER", F.PREDEFINED, F.NUMERIC, F.INTEGER_NUMERIC, F.EXACT_NUMERIC)
    BIGINT = ("BIGINT", F.PREDEFINED, F.NUMERIC, F.INTEGER_NUMERIC, F.EXACT_NUMERIC)
    FLOAT = ("FLOAT", F.PREDEFINED, F.NUMERIC, F.APPROXIMATE_NUMERIC)
    DOUBLE = ("DOUBLE", F.PREDEFINED, F.NUMERIC, F.APPROXIMATE_NUMERIC)
    DATE = ("DATE", F.PREDEFINED, F.DATETIME)
    TIME_WITHOUT_TIME_ZONE = ("TIME_WITHOUT_TIME_ZONE", F.PREDEFINED, F.DATETIME, F.TIME)
    TIMESTAMP_WITHOUT_TIME_ZONE = ("TIMESTAMP_WITHOUT_TIME_ZONE", F.PREDEFINED, F.DATETIME, F.TIMESTAMP)
    TIMESTAMP_WITH_LOCAL_TIME_ZONE = (
        "TIMESTAMP_WITH_LOCAL_TIME_ZONE", F.PREDEFINED, F.DATETIME, F.TIMESTAMP, F.EXTENSION
    )
    VARIANT = ("VARIANT", F.PREDEFINED)
    ARRAY = ("ARRAY", F.CONSTRUCTED, F.COLLECTION)
    MULTISET = ("MULTISET", F.CONSTRUCTED, F.COLLECTION)
    MAP = ("MAP", F.CONSTRUCTED, F.EXTENSION)
    ROW = ("ROW", F.CONSTRUCTED)

    @property
    def families(self) -> tuple[Family, ...]:
        return tuple(f for f in self.value if isinstance(f, Family))


R = Root

_ROOTS: dict[type, Root] = {
    CharType: R.CHAR, VarCharType: R.VARCHAR, BooleanType: R.BOOLEAN, BinaryType: R.BINARY,
    VarBinaryType: R.VARBINARY, DecimalType: R.DECIMAL, TinyIntType: R.TINYINT, SmallIntType: R.SMALLINT,
    IntType: R.INTEGER, BigIntType: R.BIGINT, FloatType: R.FLOAT, DoubleType: R.DOUBLE, DateType: R.DATE,
    TimeType: R.TIME_WITHOUT_TIME_ZONE, TimestampType: R.TIMESTAMP_WITHOUT_TIME_ZONE,
    LocalZonedTimestampType: R.TIMESTAMP_WITH_LOCAL_TIME_ZONE, VariantType: R.VARIANT, ArrayType: R.ARRAY,
    MultisetType: R.MULTISET, MapType: R.MAP, RowType: R.ROW,
}


def root_of(dt: DataType) -> Root:
    """The type root of ``dt`` (Paimon: DataType.getTypeRoot)."""
    return _ROOTS[type(dt)]


def _roots_of(*families: Family) -> set[Root]:
    return {r for r in Root if any(f in r.families for f in families)}


# ------------------------------------------------------------------------------------------------
# DataTypeCasts: target root -> (implicit sources, explicit sources)
# ------------------------------------------------------------------------------------------------

_TIMESTAMPS = (R.TIMESTAMP_WITHOUT_TIME_ZONE, R.TIMESTAMP_WITH_LOCAL_TIME_ZONE)
_FROM_BOOL_AND_TIMESTAMPS = {R.BOOLEAN, *_TIMESTAMPS}


def _casting_rules() -> dict[Root, tuple[set[Root], set[Root]]]:
    rules: dict[Root, tuple[set[Root], set[Root]]] = {r: ({r}, set()) for r in Root}  # identity casts

    def cast_to(target: Root, implicit: set[Root], explicit: set[Root]) -> None:
        # As Java's builder: a declared target replaces its identity rule (every declaration lists itself).
        rules[target] = (implicit, explicit)

    string_sources = _roots_of(F.CHARACTER_STRING)
    cast_to(R.CHAR, {R.CHAR}, _roots_of(F.PREDEFINED, F.CONSTRUCTED))
    cast_to(R.VARCHAR, string_sources, _roots_of(F.PREDEFINED, F.CONSTRUCTED))
    cast_to(R.BOOLEAN, {R.BOOLEAN}, _roots_of(F.CHARACTER_STRING, F.INTEGER_NUMERIC))
    cast_to(R.BINARY, {R.BINARY}, string_sources | {R.VARBINARY})
    cast_to(R.VARBINARY, _roots_of(F.BINARY_STRING), string_sources | {R.BINARY})
    cast_to(R.DECIMAL, _roots_of(F.NUMERIC), string_sources | _FROM_BOOL_AND_TIMESTAMPS)
    numeric_or_string = _roots_of(F.NUMERIC, F.CHARACTER_STRING)
    cast_to(R.TINYINT, {R.TINYINT}, numeric_or_string | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.SMALLINT, {R.TINYINT, R.SMALLINT}, numeric_or_string | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.INTEGER, {R.TINYINT, R.SMALLINT, R.INTEGER}, numeric_or_string | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.BIGINT, {R.TINYINT, R.SMALLINT, R.INTEGER, R.BIGINT}, numeric_or_string | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.FLOAT, {R.TINYINT, R.SMALLINT, R.INTEGER, R.BIGINT, R.FLOAT, R.DECIMAL},
            numeric_or_string | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.DOUBLE, _roots_of(F.NUMERIC), string_sources | _FROM_BOOL_AND_TIMESTAMPS)
    cast_to(R.DATE, {R.DATE, R.TIMESTAMP_WITHOUT_TIME_ZONE}, _roots_of(F.TIMESTAMP, F.CHARACTER_STRING))
    cast_to(R.TIME_WITHOUT_TIME_ZONE, {R.TIME_WITHOUT_TIME_ZONE, R.TIMESTAMP_WITHOUT_TIME_ZONE},
            _roots_of(F.TIME, F.TIMESTAMP, F.CHARACTER_STRING))
    datetime_string_numeric = _roots_of(F.DATETIME, F.CHARACTER_STRING, F.NUMERIC)
    cast_to(R.TIMESTAMP_WITHOUT_TIME_ZONE, set(_TIMESTAMPS), datetime_string_numeric)
    cast_to(R.TIMESTAMP_WITH_LOCAL_TIME_ZONE, set(_TIMESTAMPS), datetime_string_numeric)
    return rules


_CASTING_RULES = _casting_rules()


def supports_cast(source: DataType, target: DataType, *, allow_explicit: bool = True) -> bool:
    """Paimon's DataTypeCasts.supportsCast: whether the type system allows the cast at all."""
    if source.nullable and not target.nullable and not allow_explicit:
        return False
    if source.copy(nullable=True) == target.copy(nullable=True):
        return True
    implicit, explicit = _CASTING_RULES[root_of(target)]
    source_root = root_of(source)
    return source_root in implicit or (allow_explicit and source_root in explicit)


# ------------------------------------------------------------------------------------------------
# CastExecutors: the rules, added in Java's order
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    inputs: tuple[Root | Family, ...]
    targets: tuple[Root | Family | DataType, ...]


_NUMERIC_PRIMITIVE = (F.INTEGER_NUMERIC, F.APPROXIMATE_NUMERIC)

_RULES = (
    _Rule("DecimalToDecimal", (R.DECIMAL,), (R.DECIMAL,)),
    _Rule("NumericPrimitiveToDecimal", _NUMERIC_PRIMITIVE, (R.DECIMAL,)),
    _Rule("DecimalToNumericPrimitive", (R.DECIMAL,), _NUMERIC_PRIMITIVE),
    _Rule("NumericPrimitive", _NUMERIC_PRIMITIVE, _NUMERIC_PRIMITIVE),
    _Rule("NumericPrimitiveToTimestamp", (F.NUMERIC,), _TIMESTAMPS),
    _Rule("BooleanToNumeric", (R.BOOLEAN,), (F.NUMERIC,)),
    _Rule("NumericToBoolean", (F.INTEGER_NUMERIC,), (R.BOOLEAN,)),
    _Rule("NumericToString", (F.NUMERIC,), (F.CHARACTER_STRING,)),
    _Rule("BooleanToString", (R.BOOLEAN,), (F.CHARACTER_STRING,)),
    _Rule("TimestampToString", (F.TIMESTAMP,), (STRING,)),
    _Rule("TimeToString", (R.TIME_WITHOUT_TIME_ZONE,), (STRING,)),
    _Rule("DateToString", (R.DATE,), (STRING,)),
    _Rule("StringToString", (F.CHARACTER_STRING,), (F.CHARACTER_STRING,)),
    _Rule("ArrayToString", (R.ARRAY,), (F.CHARACTER_STRING,)),
    _Rule("MapToString", (R.MAP,), (F.CHARACTER_STRING,)),
    _Rule("RowToString", (R.ROW,), (F.CHARACTER_STRING,)),
    _Rule("StringToBoolean", (F.CHARACTER_STRING,), (R.BOOLEAN,)),
    _Rule("StringToDecimal", (F.CHARACTER_STRING,), (R.DECIMAL,)),
    _Rule("StringToNumericPrimitive", (F.CHARACTER_STRING,), _NUMERIC_PRIMITIVE),
    _Rule("StringToDate", (F.CHARACTER_STRING,), (R.DATE,)),
    _Rule("StringToTime", (F.CHARACTER_STRING,), (R.TIME_WITHOUT_TIME_ZONE,)),
    _Rule("StringToTimestamp", (F.CHARACTER_STRING,), (F.TIMESTAMP,)),
    _Rule("StringToBinary", (F.CHARACTER_STRING,), (F.BINARY_STRING,)),
    _Rule("StringToArray", (F.CHARACTER_STRING,), (R.ARRAY,)),
    _Rule("StringToMap", (F.CHARACTER_STRING,), (R.MAP,)),
    _Rule("StringToRow", (F.CHARACTER_STRING,), (R.ROW,)),
    _Rule("TimestampToTimestamp", _TIMESTAMPS, _TIMESTAMPS),
    _Rule("TimestampToDate", _TIMESTAMPS, (R.DATE,)),
    _Rule("TimestampToTime", _TIMESTAMPS, (R.TIME_WITHOUT_TIME_ZONE,)),
    _Rule("DateToTimestamp", (R.DATE,), _TIMESTAMPS),
    _Rule("TimeToTimestamp", (R.TIME_WITHOUT_TIME_ZONE,), _TIMESTAMPS),
    _Rule("TimestampToNumericPrimitive", _TIMESTAMPS, (R.BIGINT, R.INTEGER)),
    _Rule("BinaryToBinary", (F.BINARY_STRING,), (F.BINARY_STRING,)),
    _Rule("BinaryToString", (F.BINARY_STRING,), (F.CHARACTER_STRING,)),
)


def _target_key(target: Root | Family | DataType) -> tuple[str, Any]:
    if isinstance(target, Root):
        return ("root", target)
    if isinstance(target, Family):
        return ("family", target)
    return ("type", target)  # a concrete type, nullability included (Java's DataType.equals)


def _build_index() -> dict[tuple[str, Any], dict[Root | Family, _Rule]]:
    index: dict[tuple[str, Any], dict[Root | Family, _Rule]] = {}
    for rule in _RULES:
        for target in rule.targets:
            by_input = index.setdefault(_target_key(target), {})
            for source in rule.inputs:
                by_input[source] = rule  # a later rule replaces an earlier one, as Java's map.put does
    return index


_INDEX = _build_index()


def resolve_rule(source: DataType, target: DataType) -> str | None:
    """The name of the cast rule CastExecutors would pick for ``source -> target`` (None: no rule, or a rule
    whose executor is null for this pair)."""
    source_root, target_root = root_of(source), root_of(target)
    keys = [("type", target), ("root", target_root), *(("family", f) for f in target_root.families)]
    for key in keys:
        by_input = _INDEX.get(key)
        if by_input is None:
            continue
        source_keys: tuple[Root | Family, ...] = (source_root, *source_root.families)
        for source_key in source_keys:
            rule = by_input.get(source_key)
            if rule is not None:
                return rule.name if _creates_executor(rule.name, source_root) else None
    return None


def _creates_executor(rule: str, source_root: Root) -> bool:
    # NumericPrimitiveToTimestamp#create returns null for every input but INT and BIGINT; the other rules
    # always build an executor for the pairs their predicates admit.
    if rule == "NumericPrimitiveToTimestamp":
        return source_root in (R.INTEGER, R.BIGINT)
    return True


def can_cast(source: DataType, target: DataType, *, allow_explicit: bool = True) -> bool:
    """Whether Java's ``ALTER TABLE ... MODIFY`` accepts changing a column of type ``source`` to ``target``.

    ``allow_explicit`` is false when the table sets ``disable-explicit-type-casting``. Changes of ROW / ARRAY /
    MAP columns go through the nested field they touch (``UpdateColumnType(("c", "element"), ...)``): a
    whole constructed type has no cast rule, so Java refuses it, and so does this.
    """
    return supports_cast(source, target, allow_explicit=allow_explicit) and resolve_rule(source, target) is not None
