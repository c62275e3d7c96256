"""Paimon's type casts: which ALTER ... MODIFY changes Java accepts, and the values a read of older files returns.

The expectations are written out from Java's tables (DataTypeCasts, the CastExecutors rules) and the values of
Java's own CastExecutorTest, plus the edge values each rule's code fixes (overflow, rounding, parse errors);
none is computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import given, settings

from laketide.exceptions import CastError
from laketide.schema.cast_rules import can_cast, resolve_rule, supports_cast
from laketide.schema.casts import cast_array
from laketide.types import (
    BYTES,
    STRING,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
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

# ------------------------------------------------------------------------------------------------
# which changes Java accepts
# ------------------------------------------------------------------------------------------------

TYPES: dict[str, DataType] = {
    "BOOLEAN": BooleanType(), "TINYINT": TinyIntType(), "SMALLINT": SmallIntType(), "INT": IntType(),
    "BIGINT": BigIntType(), "FLOAT": FloatType(), "DOUBLE": DoubleType(), "DECIMAL": DecimalType(10, 2),
    "CHAR": CharType(5), "VARCHAR": VarCharType(5), "STRING": STRING, "BINARY": BinaryType(5),
    "VARBINARY": VarBinaryType(5), "BYTES": BYTES, "DATE": DateType(), "TIME": TimeType(3),
    "TIMESTAMP": TimestampType(3), "LTZ": LocalZonedTimestampType(3), "ARRAY": ArrayType(IntType()),
    "MAP": MapType(IntType(nullable=False), IntType()), "ROW": RowType((DataField(0, "a", IntType()),)),
    "MULTISET": MultisetType(IntType()), "VARIANT": VariantType(),
}
NUM = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"}
STR = {"CHAR", "VARCHAR", "STRING"}
BIN = {"BINARY", "VARBINARY", "BYTES"}
# Source -> targets Java's SchemaManager accepts (supportsCast with explicit casts, and a cast rule whose
# executor is not null). Identity pairs are left out (see test_identity_is_not_always_a_cast).
ALLOWED: dict[str, set[str]] = {
    "BOOLEAN": NUM | STR,
    "TINYINT": NUM | STR | {"BOOLEAN"},  # no TIMESTAMP: NumericPrimitiveToTimestamp only takes INT / BIGINT
    "SMALLINT": NUM | STR | {"BOOLEAN"},
    "INT": NUM | STR | {"BOOLEAN", "TIMESTAMP", "LTZ"},
    "BIGINT": NUM | STR | {"BOOLEAN", "TIMESTAMP", "LTZ"},
    "FLOAT": NUM | STR,  # no BOOLEAN: only integers cast to BOOLEAN
    "DOUBLE": NUM | STR,
    "DECIMAL": NUM | STR,
    "CHAR": {"BOOLEAN"} | NUM | STR | BIN | {"DATE", "TIME", "TIMESTAMP", "LTZ"},
    "VARCHAR": {"BOOLEAN"} | NUM | STR | BIN | {"DATE", "TIME", "TIMESTAMP", "LTZ"},
    "STRING": {"BOOLEAN"} | NUM | STR | BIN | {"DATE", "TIME", "TIMESTAMP", "LTZ"},
    "BINARY": BIN | STR,
    "VARBINARY": BIN | STR,
    "BYTES": BIN | STR,
    "DATE": {"TIMESTAMP", "LTZ", "STRING"},  # DateToString targets STRING itself: not CHAR(5) / VARCHAR(5)
    "TIME": {"TIMESTAMP", "LTZ", "STRING"},
    "TIMESTAMP": {"LTZ", "DATE", "TIME", "INT", "BIGINT", "STRING"},  # no DECIMAL / DOUBLE: no rule
    "LTZ": {"TIMESTAMP", "DATE", "TIME", "INT", "BIGINT", "STRING"},
    "ARRAY": STR,
    "MAP": STR,
    "ROW": STR,
    "MULTISET": set(),  # the type system allows MULTISET -> STRING, but no rule converts it
    "VARIANT": set(),
}


@pytest.mark.parametrize("source", sorted(TYPES))
def test_alter_rules_match_java(source: str) -> None:
    accepted = {t for t in TYPES if t != source and can_cast(TYPES[source], TYPES[t])}
    assert accepted == ALLOWED[source] - {source}


@pytest.mark.parametrize(("source", "target", "implicit"), [
    (IntType(), BigIntType(), True), (BigIntType(), IntType(), False), (TinyIntType(), SmallIntType(), True),
    (IntType(), DecimalType(10, 2), True), (DecimalType(10, 2), DoubleType(), True), (DoubleType(), FloatType(), False),
    (IntType(), STRING, False), (VarCharType(5), VarCharType(10), True), (VarCharType(10), VarCharType(5), True),
    (CharType(3), STRING, True), (STRING, IntType(), False), (BinaryType(3), BYTES, True),
    (TimestampType(3), LocalZonedTimestampType(6), True), (TimestampType(6), TimestampType(3), True),
    (TimestampType(3), DateType(), True), (DateType(), TimestampType(3), False), (TimestampType(3), TimeType(), True),
])
def test_implicit_casts_only_when_explicit_ones_are_disabled(
    source: DataType, target: DataType, implicit: bool
) -> None:
    assert can_cast(source, target)
    assert can_cast(source, target, allow_explicit=False) is implicit


def test_identity_is_not_always_a_cast() -> None:
    # Java has no BOOLEAN -> BOOLEAN or DATE -> DATE rule (an unchanged type never reaches the check there);
    # apply_changes treats an unchanged type as no change before asking.
    assert not can_cast(BooleanType(), BooleanType()) and not can_cast(DateType(), DateType())
    assert can_cast(IntType(), IntType()) and can_cast(DecimalType(5, 2), DecimalType(5, 2))


def test_nested_types_change_through_their_fields_only() -> None:
    assert not can_cast(ArrayType(IntType()), ArrayType(BigIntType()))
    assert not can_cast(RowType((DataField(0, "a", IntType()),)), RowType((DataField(0, "a", BigIntType()),)))
    assert supports_cast(ArrayType(IntType()), ArrayType(BigIntType()))  # the type system alone would allow it


def test_a_not_null_string_target_has_no_rule_from_timestamps() -> None:
    # TimestampToString is registered for STRING itself (nullable), Java matches it with equals().
    assert can_cast(TimestampType(3), STRING)
    assert not can_cast(TimestampType(3), STRING.copy(nullable=False))
    assert resolve_rule(DateType(), VarCharType(10)) is None


# ------------------------------------------------------------------------------------------------
# the values a read returns
# ------------------------------------------------------------------------------------------------


def _ts(*args: int) -> dt.datetime:
    return dt.datetime(*args)  # type: ignore[arg-type]


def _utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.timezone.utc)  # type: ignore[arg-type, misc]


D = Decimal
SHANGHAI = "Asia/Shanghai"

# (source type, stored Arrow values, target type, expected values[, session zone])
CASES: list[tuple[Any, ...]] = [
    # BooleanToNumeric / NumericToBoolean
    (BooleanType(), [True, False, None], TinyIntType(), [1, 0, None]),
    (BooleanType(), [True, None], DoubleType(), [1.0, None]),
    (BooleanType(), [True, False], DecimalType(1, 0), [D("1"), D("0")]),
    (BooleanType(), [True, False], DecimalType(1, 1), [None, D("0.0")]),  # 1 needs two digits: null
    (IntType(), [0, 12, -1, None], BooleanType(), [False, True, True, None]),
    (BigIntType(), [12], BooleanType(), [True]),
    # NumericPrimitive: integers wrap, floating point truncates toward zero and saturates, NaN -> 0
    (IntType(), [300, -129, 127, None], TinyIntType(), [44, 127, 127, None]),
    (BigIntType(), [2**40 + 5, -(2**31) - 1], IntType(), [5, 2**31 - 1]),
    (SmallIntType(), [123], TinyIntType(), [123]),
    (DoubleType(), [3.7, -3.7, math.nan, 1e20, -1e20, None], IntType(), [3, -3, 0, 2**31 - 1, -(2**31), None]),
    (DoubleType(), [1e20, -1e20, 3.99], BigIntType(), [2**63 - 1, -(2**63), 3]),
    (DoubleType(), [300.5, 1e10], TinyIntType(), [44, -1]),  # (byte)(int): int saturates first, then wraps
    (FloatType(), [1.5, -2.5], SmallIntType(), [1, -2]),
    (BigIntType(), [2**53 + 1], DoubleType(), [float(2**53)]),
    (BigIntType(), [16777217], FloatType(), [16777216.0]),
    (DoubleType(), [1e300, 0.1], FloatType(), [math.inf, 0.10000000149011612]),
    (IntType(), [1, None], DoubleType(), [1.0, None]),
    # Decimals: HALF_UP, null on overflow, DOWN to integers
    (IntType(), [1, -5, None], DecimalType(10, 2), [D("1.00"), D("-5.00"), None]),
    (BigIntType(), [2**62, 99999999], DecimalType(10, 2), [None, D("99999999.00")]),
    (DecimalType(5, 2), [D("0.02"), D("333.32"), None], DecimalType(6, 3), [D("0.020"), D("333.320"), None]),
    (DecimalType(5, 3), [D("1.235"), D("-1.235"), D("99.995"), D("1.234")], DecimalType(4, 2),
     [D("1.24"), D("-1.24"), None, D("1.23")]),
    (DecimalType(10, 4), [D("1.2346")], DecimalType(10, 2), [D("1.23")]),
    (DecimalType(10, 2), [D("1.23")], DecimalType(10, 4), [D("1.2300")]),
    (DecimalType(5, 1), [D("12.9"), D("-12.9"), None], IntType(), [12, -12, None]),
    (DecimalType(38, 0), [D("18446744073709551621")], BigIntType(), [5]),  # BigInteger.longValue: low 64 bits
    (DecimalType(10, 0), [D("300")], TinyIntType(), [44]),
    (DecimalType(10, 4), [D("1.2346")], FloatType(), [1.2345999479293823]),  # Java's test: 1.2346F
    (DecimalType(10, 2), [D("1.23")], DoubleType(), [1.23]),
    (DecimalType(30, 10), [D("12345678901234567890.0123456789")], DoubleType(), [1.2345678901234567e19]),
    (DoubleType(), [1.23456, 1.235, -1.235, None], DecimalType(10, 2), [D("1.23"), D("1.24"), D("-1.24"), None]),
    (FloatType(), [1.23456], DecimalType(10, 2), [D("1.23")]),  # via the double 1.2345600128173828
    # Double.toString gives "1.0E19" (read through BigDecimal's exponent form); 1e20 needs 21 integer digits
    (DoubleType(), [0.1, 1e19, 1e20], DecimalType(38, 18),
     [D("0.100000000000000000"), D("10000000000000000000.000000000000000000"), None]),
    (DoubleType(), [12345.678], DecimalType(4, 1), [None]),
    # to strings
    (TinyIntType(), [1, None], VarCharType(5), ["1", None]),
    (BigIntType(), [1234567], VarCharType(3), ["123"]),
    (IntType(), [7], CharType(3), ["7  "]),
    (FloatType(), [1.23456, 1e7, 1.4e-45, 0.3, -0.0], STRING, ["1.23456", "1.0E7", "1.4E-45", "0.3", "-0.0"]),
    (DoubleType(), [1.23456, 1e7, 1e-4, 100.0, 0.001, 5e-324, math.inf, -math.inf, math.nan, 123456789.125,
                    1234567.0, 0.30000000000000004, None], STRING,
     ["1.23456", "1.0E7", "1.0E-4", "100.0", "0.001", "4.9E-324", "Infinity", "-Infinity", "NaN", "1.23456789125E8",
      "1234567.0", "0.30000000000000004", None]),
    (DecimalType(10, 5), [D("1.23456"), D("-0.50000")], VarCharType(20), ["1.23456", "-0.50000"]),
    (BooleanType(), [True, False, None], CharType(5), ["true ", "false", None]),
    (BooleanType(), [True], VarCharType(5), ["true"]),
    (VarCharType(10), ["1234567890"], VarCharType(5), ["12345"]),
    (VarCharType(10), ["1234567890"], CharType(20), ["1234567890          "]),
    (CharType(10), ["12345678  "], CharType(5), ["12345"]),
    (CharType(10), ["12345678  "], CharType(20), ["12345678            "]),
    (STRING, ["héllo wörld"], VarCharType(4), ["héll"]),  # characters, not bytes
    (VarBinaryType(5), [b"12345"], VarCharType(10), ["12345"]),
    (VarBinaryType(20), [b"12345678"], VarCharType(3), ["12345678"]),  # BinaryToString does not cut
    (DateType(), [19516, -1, None], STRING, ["2023-06-08", "1969-12-31", None]),
    (TimeType(2), [36115615], STRING, ["10:01:55.61"]),
    (TimeType(3), [36115000, 36115100, 36115120, 0], STRING, ["10:01:55.0", "10:01:55.1", "10:01:55.12", "00:00:00.0"]),
    (TimeType(0), [36115615], STRING, ["10:01:55"]),
    (TimestampType(9), [pa.scalar(1_732_603_136_001_000_001, pa.timestamp("ns"))], STRING,
     ["2024-11-26 06:38:56.001000001"]),
    (TimestampType(3), [_ts(2024, 11, 26, 6, 38, 56, 100000), _ts(2024, 11, 26, 6, 38, 56)], STRING,
     ["2024-11-26 06:38:56.100", "2024-11-26 06:38:56.000"]),
    (TimestampType(6), [_ts(2024, 11, 26, 6, 38, 56, 100000)], STRING, ["2024-11-26 06:38:56.100000"]),
    (TimestampType(0), [_ts(1969, 12, 31, 23, 59, 59), None], STRING, ["1969-12-31 23:59:59", None]),
    (ArrayType(IntType()), [[1, None, 2], None, []], STRING, ["[1, null, 2]", None, "[]"]),
    (MapType(IntType(nullable=False), STRING), [[(1, "i"), (2, "miss"), (3, "you"), (4, None)]], STRING,
     ["{1 -> i, 2 -> miss, 3 -> you, 4 -> null}"]),
    (RowType((DataField(0, "f0", IntType()), DataField(1, "f1", RowType((
        DataField(2, "f0", DateType()),
        DataField(3, "f1", MapType(IntType(nullable=False), ArrayType(IntType()))),
        DataField(4, "f2", IntType())))))),
     [{"f0": 1, "f1": {"f0": 20094, "f1": [(1, [1, None, 2])], "f2": None}}, None], STRING,
     ["{1, {2025-01-06, {1 -> [1, null, 2]}, null}}", None]),
    # from strings
    (STRING, ["t", "true", "y", "yes", "1", "TRUE", "Yes", None], BooleanType(),
     [True, True, True, True, True, True, True, None]),
    (STRING, ["f", "false", "n", "no", "0", "nO", "FALSE"], BooleanType(), [False] * 7),
    (STRING, ["1", "-12.7", "+5", ".", "-.", "007", "2147483647", "-2147483648", None], IntType(),
     [1, -12, 5, 0, 0, 7, 2**31 - 1, -(2**31), None]),
    (STRING, ["9223372036854775807", "-9223372036854775808"], BigIntType(), [2**63 - 1, -(2**63)]),
    (STRING, ["127", "-128"], TinyIntType(), [127, -128]),
    (STRING, ["1.23456", " 1.5 ", "1e3", "NaN", "-Infinity", "2.5f", "3d", "0x1.8p1", ".5", "5.", None],
     DoubleType(), [1.23456, 1.5, 1000.0, math.nan, -math.inf, 2.5, 3.0, 3.0, 0.5, 5.0, None]),
    (STRING, ["1.23456", "0.1"], FloatType(), [1.2345600128173828, 0.10000000149011612]),
    (STRING, ["1.233", "1.235", "-1.235", "999.995", "1e2", ".5", "12345", "0.004", "-0.005", None],
     DecimalType(5, 2), [D("1.23"), D("1.24"), D("-1.24"), None, D("100.00"), D("0.50"), None, D("0.00"),
                         D("-0.01"), None]),
    (STRING, ["12345678"], VarBinaryType(5), [b"12345"]),
    (STRING, ["12345678"], VarBinaryType(20), [b"12345678"]),
    (STRING, ["12345678"], BinaryType(10), [b"12345678\x00\x00"]),
    (BinaryType(10), [b"1234567890"], BinaryType(5), [b"12345"]),
    (BinaryType(10), [b"12345678"], BinaryType(20), [b"12345678" + b"\x00" * 12]),
    (BinaryType(10), [b"1234567890"], VarBinaryType(5), [b"12345"]),
    (BinaryType(10), [b"12345678"], VarBinaryType(20), [b"12345678"]),
    (STRING, ["2023-06-06", "2017-12-12 09:30:00.0", "19516", "-1", "2024", " 2024 - 2 - 29 ", "2024-02", None],
     DateType(), [dt.date(2023, 6, 6), dt.date(2017, 12, 12), dt.date(2023, 6, 8), dt.date(1969, 12, 31),
                  dt.date(1975, 7, 18), dt.date(2024, 2, 29), dt.date(2024, 2, 1), None]),  # a number counts days
    (STRING, ["09:30:00.0", "12:00:00.1235", "1:2", "12", "10:00:00+01:00", "10:00:00-01:30", "3600000"],
     TimeType(3), [dt.time(9, 30), dt.time(12, 0, 0, 124000), dt.time(1, 2), dt.time(0, 0, 0, 12000), dt.time(11),
                   dt.time(8, 30), dt.time(1)]),  # a number is milliseconds of the day
    (STRING, ["2017-12-12 09:30:00.0", "2024-11-26T15:28", "2024-11-26T15:28:31.5", "2024-2-30 01:02:03",
              "2023-02-31", "2024-01-01 24:00:00", "2017-12-12 09:30:00.123456789", None], TimestampType(3),
     [_ts(2017, 12, 12, 9, 30), _ts(2024, 11, 26, 15, 28), _ts(2024, 11, 26, 15, 28, 31, 500000),
      _ts(2024, 2, 29, 1, 2, 3), _ts(2023, 2, 28), _ts(2024, 1, 2), _ts(2017, 12, 12, 9, 30, 0, 123000), None]),
    (STRING, ["1721898748"], TimestampType(0), [_ts(2024, 7, 25, 9, 12, 28)]),  # the number's unit follows
    (STRING, ["1721898748123"], TimestampType(3), [_ts(2024, 7, 25, 9, 12, 28, 123000)]),  # the precision
    (STRING, ["-1"], TimestampType(6), [_ts(1969, 12, 31, 23, 59, 59, 999999)]),
    (STRING, ["2017-12-12 09:30:00.0"], LocalZonedTimestampType(3), [_utc(2017, 12, 12, 9, 30)]),
    (STRING, ["2017-12-12 09:30:00.0"], LocalZonedTimestampType(3), [_utc(2017, 12, 12, 1, 30)], SHANGHAI),
    # dates, times, timestamps
    (DateType(), [4, -44, 444, None], TimestampType(9), [_ts(1970, 1, 5), _ts(1969, 11, 18), _ts(1971, 3, 21), None]),
    (DateType(), [19514], TimestampType(5), [_ts(2023, 6, 6)]),
    (DateType(), [0], LocalZonedTimestampType(3), [_utc(1969, 12, 31, 16)], SHANGHAI),
    (TimeType(3), [43200123], TimestampType(3), [_ts(1970, 1, 1, 12, 0, 0, 123000)]),
    (TimestampType(6), [_ts(1969, 12, 31, 23, 59, 59), _ts(1960, 6, 15, 10, 30), _ts(1969, 12, 31),
                        _ts(2024, 3, 4, 5, 6, 7), None], DateType(),
     [dt.date(1969, 12, 31), dt.date(1960, 6, 15), dt.date(1969, 12, 31), dt.date(2024, 3, 4), None]),
    (TimestampType(3), [_ts(1969, 12, 31, 23), _ts(1969, 12, 31, 12, 34, 56, 789000), _ts(1970, 1, 1, 10)],
     TimeType(3), [dt.time(23), dt.time(12, 34, 56, 789000), dt.time(10)]),
    (BigIntType(), [1721898748, None], TimestampType(3), [_ts(2024, 7, 25, 9, 12, 28), None]),
    (IntType(), [0, 1, -1], LocalZonedTimestampType(6), [_utc(1970, 1, 1), _utc(1970, 1, 1, 0, 0, 1),
                                                          _utc(1969, 12, 31, 23, 59, 59)]),
    # Java keeps the wall-clock time of the instant in the session zone: 0 becomes 08:00 UTC at UTC+8.
    (IntType(), [0, -1], LocalZonedTimestampType(6), [_utc(1970, 1, 1, 8), _utc(1970, 1, 1, 7, 59, 59)], SHANGHAI),
    (TimestampType(3), [_ts(1969, 12, 31, 23, 59, 58, 500000), _ts(2024, 1, 1, 0, 0, 1), None], BigIntType(),
     [-1, 1704067201, None]),  # millis / 1000 rounds toward zero
    (TimestampType(3), [_ts(2038, 1, 19, 3, 14, 8)], IntType(), [-(2**31)]),  # (int) wraps
    (LocalZonedTimestampType(3), [_utc(2024, 1, 1, 0, 0, 1)], BigIntType(), [1704067201], SHANGHAI),  # no zone
    (TimestampType(3), [_ts(1969, 12, 31, 23, 59, 58, 450000), None], TimestampType(1),
     [_ts(1969, 12, 31, 23, 59, 58, 500000), None]),  # up to millis, truncation goes toward zero
    (TimestampType(3), [_ts(1969, 12, 31, 23, 59, 58, 450000), _ts(2024, 1, 1, 0, 0, 1, 999000)], TimestampType(0),
     [_ts(1969, 12, 31, 23, 59, 59), _ts(2024, 1, 1, 0, 0, 1)]),
    (TimestampType(9), [pa.scalar(-876_543_211, pa.timestamp("ns"))], TimestampType(4),
     [pa.scalar(-876_600_000, pa.timestamp("ns")).as_py()]),  # below millis the nanos are floored
    (TimestampType(3), [_ts(2024, 1, 1, 1, 2, 3, 456000)], TimestampType(9), [_ts(2024, 1, 1, 1, 2, 3, 456000)]),
    (TimestampType(3), [_ts(2024, 1, 1, 1, 2, 3, 456000)], LocalZonedTimestampType(3),
     [_utc(2024, 1, 1, 1, 2, 3, 456000)]),
    (TimestampType(9), [_ts(1970, 1, 1)], LocalZonedTimestampType(9), [_utc(1969, 12, 31, 16)], SHANGHAI),
    (LocalZonedTimestampType(9), [_utc(1970, 1, 1)], TimestampType(9), [_ts(1970, 1, 1, 8)], SHANGHAI),
    (LocalZonedTimestampType(6), [_utc(1970, 1, 1, 0, 0, 0, 2)], STRING, ["1970-01-01 08:00:00.000002"], SHANGHAI),
    (LocalZonedTimestampType(3), [_utc(1970, 1, 1, 20)], DateType(), [dt.date(1970, 1, 2)], SHANGHAI),
    (LocalZonedTimestampType(3), [_utc(1970, 1, 1, 20)], TimeType(3), [dt.time(4)], SHANGHAI),
    # daylight saving: a wall-clock time in the spring gap moves forward by the gap, an ambiguous one takes the
    # earlier offset (LocalDateTime.atZone)
    (TimestampType(3), [_ts(2024, 3, 31, 2, 30), _ts(2024, 10, 27, 2, 30)], LocalZonedTimestampType(3),
     [_utc(2024, 3, 31, 1, 30), _utc(2024, 10, 27, 0, 30)], "Europe/Berlin"),
]


def _arrow(values: list[Any], dt_: DataType) -> pa.Array:
    from laketide.types import to_arrow_type

    typ = to_arrow_type(dt_)
    if pa.types.is_date32(typ) and values and isinstance(next((v for v in values if v is not None), 0), int):
        return pa.array(values, pa.int32()).cast(typ)
    if pa.types.is_time32(typ) and values and isinstance(next((v for v in values if v is not None), 0), int):
        return pa.array(values, pa.int32()).cast(typ)
    if values and isinstance(values[0], pa.Scalar):
        return pa.array([v.value for v in values], pa.int64()).cast(values[0].type).cast(typ)
    return pa.array(values, typ)


def _same(a: Any, b: Any) -> bool:
    # The Arrow type is checked separately; values compare by value (pandas Timestamps equal datetimes).
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}->{c[2]}#{i}" for i, c in enumerate(CASES)])
def test_cast_values_match_java(case: tuple[Any, ...]) -> None:
    source, values, target, expected = case[:4]
    zone = case[4] if len(case) > 4 else "UTC"
    out = cast_array(_arrow(values, source), source, target, time_zone=zone)
    from laketide.types import to_arrow_type

    assert out.type.equals(to_arrow_type(target))
    got = out.to_pylist()
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert _same(g, e), f"{got} != {expected}"


ERRORS: list[tuple[DataType, list[Any], DataType, str]] = [
    (STRING, ["11"], BooleanType(), "'11'"),  # Java's test: Cannot parse '11' as BOOLEAN
    (STRING, ["maybe"], BooleanType(), "maybe"),
    (STRING, [" 12"], IntType(), "' 12'"),  # toInt trims nothing
    (STRING, ["", "1"], IntType(), "''"),
    (STRING, ["+"], IntType(), "'+'"),
    (STRING, ["2147483648"], IntType(), "overflow"),
    (STRING, ["200"], TinyIntType(), "overflow"),
    (STRING, ["1e3"], IntType(), "'1e3'"),
    (STRING, ["abc"], DoubleType(), "'abc'"),
    (STRING, ["inf"], DoubleType(), "'inf'"),  # Java spells it Infinity
    (STRING, ["abc"], DecimalType(5, 2), "'abc'"),
    (STRING, [" 1.5"], DecimalType(5, 2), "' 1.5'"),  # new BigDecimal(" 1.5") throws
    (DoubleType(), [math.nan], DecimalType(10, 2), "NaN"),  # BigDecimal.valueOf(NaN) throws
    (DoubleType(), [math.inf], DecimalType(10, 2), "Infinity"),
    (STRING, ["2024-02-30"], DateType(), "2024-02-30"),
    (STRING, ["2024/01/01"], DateType(), "2024/01/01"),
    (STRING, ["10000-01-01"], DateType(), "10000-01-01"),
    (STRING, ["2024-11-26 15:28"], TimestampType(3), "15:28"),  # the blank form needs seconds
    (STRING, ["2024-13-01"], TimestampType(3), "2024-13-01"),
    (STRING, ["1721898748"], TimestampType(2), "precisions 0, 3, 6, 9"),
    (STRING, ["1721898748"], LocalZonedTimestampType(3), "1721898748"),  # LTZ reads no numbers
    (STRING, ["10:00+01:00"], TimeType(3), "10:00+01:00"),  # parseTime reads the minutes as "00+01"
    (TimestampType(3), [dt.datetime(2300, 1, 1)], TimestampType(9), "1677-2262"),
]


@pytest.mark.parametrize(("source", "values", "target", "message"), ERRORS)
def test_values_java_cannot_cast_raise(source: DataType, values: list[Any], target: DataType, message: str) -> None:
    with pytest.raises(CastError, match=None) as info:
        cast_array(_arrow(values, source), source, target)
    assert message in str(info.value)


def test_context_names_the_column() -> None:
    with pytest.raises(CastError, match="column 'price' of data file x.parquet: Cannot cast 'abc'"):
        cast_array(pa.array(["abc"]), STRING, IntType(), context="column 'price' of data file x.parquet")


def test_empty_and_all_null_columns() -> None:
    for source, target in [(STRING, IntType()), (DoubleType(), DecimalType(10, 2)), (TimestampType(3), STRING),
                           (STRING, TimestampType(6)), (DateType(), LocalZonedTimestampType(3))]:
        from laketide.types import to_arrow_type

        empty = pa.array([], to_arrow_type(source))
        assert cast_array(empty, source, target, time_zone=SHANGHAI).to_pylist() == []
        nulls = pa.nulls(3, to_arrow_type(source))
        assert cast_array(nulls, source, target, time_zone=SHANGHAI).to_pylist() == [None] * 3


def test_sliced_and_chunked_input() -> None:
    arr = pa.chunked_array([pa.array(["1", "x"]), pa.array(["2", "3", None])])
    assert cast_array(arr.slice(2), STRING, IntType()).to_pylist() == [2, 3, None]
    lists = pa.array([[1], [2, 3], None, [4]]).slice(1)
    assert cast_array(lists, ArrayType(BigIntType()), STRING).to_pylist() == ["[2, 3]", None, "[4]"]


# ------------------------------------------------------------------------------------------------
# nested fields (SchemaEvolutionUtil)
# ------------------------------------------------------------------------------------------------


def test_row_fields_evolve_by_id() -> None:
    old = RowType((DataField(1, "a", IntType()), DataField(2, "b", STRING), DataField(3, "gone", IntType())))
    new = RowType((DataField(2, "renamed", IntType()), DataField(1, "a", BigIntType()), DataField(9, "added", STRING)))
    values = pa.array([{"a": 1, "b": "7", "gone": 0}, None, {"a": None, "b": None, "gone": 1}],
                      pa.struct([("a", pa.int32()), ("b", pa.string()), ("gone", pa.int32())]))
    out = cast_array(values, old, new)
    assert out.to_pylist() == [{"renamed": 7, "a": 1, "added": None}, None,
                               {"renamed": None, "a": None, "added": None}]


def test_array_and_map_values_cast() -> None:
    arr = pa.array([[1, None], None, []], pa.list_(pa.int32()))
    assert cast_array(arr, ArrayType(IntType()), ArrayType(STRING)).to_pylist() == [["1", None], None, []]
    m = pa.array([[("k", "1.5")], None], pa.map_(pa.string(), pa.string()))
    key = STRING.copy(nullable=False)
    out = cast_array(m, MapType(key, STRING), MapType(key, DoubleType()))
    assert out.to_pylist() == [[("k", 1.5)], None]
    with pytest.raises(CastError, match="key types differ"):
        cast_array(m, MapType(STRING.copy(nullable=False), STRING), MapType(IntType(nullable=False), STRING))


def test_nested_rows_inside_arrays_and_maps() -> None:
    old = ArrayType(RowType((DataField(5, "x", IntType()),)))
    new = ArrayType(RowType((DataField(5, "y", DoubleType()), DataField(6, "z", IntType()))))
    arr = pa.array([[{"x": 1}, None], [{"x": None}]], pa.list_(pa.struct([("x", pa.int32())])))
    assert cast_array(arr, old, new).to_pylist() == [[{"y": 1.0, "z": None}, None], [{"y": None, "z": None}]]


# ------------------------------------------------------------------------------------------------
# properties against Java's arithmetic, written independently
# ------------------------------------------------------------------------------------------------


def _java_narrow(value: int, bits: int) -> int:
    return (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


def _java_d2i(value: float, bits: int) -> int:
    # JLS 5.1.3 for int / long, then int -> byte / short
    wide = 64 if bits == 64 else 32
    if math.isnan(value):
        as_int = 0
    elif value >= 2 ** (wide - 1):
        as_int = 2 ** (wide - 1) - 1
    elif value <= -(2 ** (wide - 1)):
        as_int = -(2 ** (wide - 1))
    else:
        as_int = int(value)
    return _java_narrow(as_int, bits) if bits < 32 else as_int


_INT_TYPES = [(TinyIntType(), 8), (SmallIntType(), 16), (IntType(), 32), (BigIntType(), 64)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30), st.sampled_from(_INT_TYPES))
def test_long_narrowing_wraps(values: list[int], target: tuple[DataType, int]) -> None:
    out = cast_array(pa.array(values, pa.int64()), BigIntType(), target[0]).to_pylist()
    assert out == [_java_narrow(v, target[1]) for v in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_infinity=True, allow_nan=True), max_size=30), st.sampled_from(_INT_TYPES))
def test_double_to_integers_truncate_and_saturate(values: list[float], target: tuple[DataType, int]) -> None:
    out = cast_array(pa.array(values, pa.float64()), DoubleType(), target[0]).to_pylist()
    assert out == [_java_d2i(v, target[1]) for v in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.decimals(min_value=-(10**6), max_value=10**6, places=4, allow_nan=False), max_size=30),
       st.integers(1, 9), st.integers(0, 3))
def test_decimal_rescale_is_half_up_or_null(values: list[Decimal], precision: int, scale: int) -> None:
    scale = min(scale, precision)
    out = cast_array(pa.array(values, pa.decimal128(11, 4)), DecimalType(11, 4), DecimalType(precision, scale))
    expected = []
    for v in values:
        rounded = v.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        digits = len(rounded.as_tuple().digits) if rounded != 0 else 1
        expected.append(None if digits > precision else rounded)
    assert out.to_pylist() == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.from_regex(r"[+-]?[0-9]{0,12}(\.[0-9]{0,4})?", fullmatch=True), max_size=20))
def test_string_to_bigint_follows_to_long(values: list[str]) -> None:
    def java(text: str) -> int | None:
        if text in ("", "+", "-"):
            return None
        whole = text.split(".")[0].lstrip("+")
        return int(whole) if whole not in ("", "-") else 0

    expected = [java(v) for v in values]
    if any(e is None for e in expected):
        with pytest.raises(CastError):
            cast_array(pa.array(values), STRING, BigIntType())
    else:
        assert cast_array(pa.array(values), STRING, BigIntType()).to_pylist() == expected
