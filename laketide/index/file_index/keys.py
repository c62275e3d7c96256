"""What a file index stores for a column's values, and what a predicate literal becomes in that domain.

Java maps every indexed value to a key before hashing, bucketing or slicing it (Paimon: FastHash,
BitmapFileIndex#getValueMapper, BitSliceIndexBitmapFileIndex#getValueMapper):

* integral types, DATE (days) and TIME (millis of day) are their integer value;
* TIMESTAMP / TIMESTAMP_LTZ are epoch millis at precision <= 3 and epoch micros above (``Timestamp.toMicros``,
  so nanoseconds are floored away at precision 7..9: the key is *lossy* there);
* DECIMAL is its unscaled long (BSI only);
* FLOAT / DOUBLE are the float itself (bitmap) or its ``floatToIntBits`` / ``doubleToLongBits`` (bloom);
* CHAR / VARCHAR are their UTF-8 bytes, BINARY / VARBINARY their bytes (bloom only), BOOLEAN itself (bitmap).

A literal maps to :class:`KeyLiteral` (the floor of the literal in key units, and whether it lies exactly on a
key) or to None when the index cannot answer for it (a literal the column cannot hold, a NaN, a signed
zero): callers then keep every row.
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import FileIndexValueError, PredicateError
from laketide.expr.arrow import coerce_literal
from laketide.types import (
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
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    to_arrow_type,
)

__all__ = [
    "KeyKind",
    "KeyLiteral",
    "column_array",
    "key_kind",
    "key_literal",
    "long_keys",
    "lossy_keys",
]

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


class KeyKind(enum.Enum):
    """The Java type of a key (what a bitmap index writes per value); ``LONG`` is also BSI's domain."""

    BYTE = "byte"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    BINARY = "binary"
    DECIMAL = "decimal"  # an unscaled long (BSI only)


def key_kind(dt: DataType) -> KeyKind | None:
    """The key kind of a column type, or None for types no file index takes (nested types)."""
    match dt:
        case TinyIntType():
            return KeyKind.BYTE
        case SmallIntType():
            return KeyKind.SHORT
        case IntType() | DateType() | TimeType():
            return KeyKind.INT
        case BigIntType() | TimestampType() | LocalZonedTimestampType():
            return KeyKind.LONG
        case FloatType():
            return KeyKind.FLOAT
        case DoubleType():
            return KeyKind.DOUBLE
        case BooleanType():
            return KeyKind.BOOLEAN
        case CharType() | VarCharType():
            return KeyKind.STRING
        case BinaryType() | VarBinaryType():
            return KeyKind.BINARY
        case DecimalType():
            return KeyKind.DECIMAL
    return None


def lossy_keys(dt: DataType) -> bool:
    """Whether distinct values can share a key: timestamps above microsecond precision (floored to micros)."""
    return isinstance(dt, (TimestampType, LocalZonedTimestampType)) and dt.precision > 6


# ---------------------------------------------------------------------------------------------------------
# Column values -> keys (vectorized)


def column_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous Arrow array (chunks combined, dictionaries decoded)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    return values


def valid_mask(arr: pa.Array) -> np.ndarray:
    """True where ``arr`` holds a value."""
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=np.bool_)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _ints(arr: pa.Array, dtype: type[np.integer] = np.int64) -> np.ndarray:
    target = pa.from_numpy_dtype(np.dtype(dtype))
    filled = pc.fill_null(arr.cast(target), 0) if arr.null_count else arr.cast(target)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=dtype)


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _rescale(raw: np.ndarray, from_nanos: int, to_nanos: int) -> np.ndarray:
    """Integer time values from one unit to another, flooring (Java's floorDiv) when the target is coarser."""
    if from_nanos == to_nanos:
        return raw
    if from_nanos > to_nanos:
        return raw * (from_nanos // to_nanos)
    coarser: np.ndarray = np.floor_divide(raw, to_nanos // from_nanos)
    return coarser


def long_keys(arr: pa.Array, dt: DataType) -> np.ndarray:
    """The int64 key of every value of an integral / temporal / decimal column (0 where null)."""
    match dt:
        case TimestampType() | LocalZonedTimestampType():
            if not pa.types.is_timestamp(arr.type):
                raise FileIndexValueError(f"a {dt} column needs Arrow timestamps, got {arr.type}")
            raw = _ints(arr.cast(pa.int64()))
            return _rescale(raw, _UNIT_NANOS[arr.type.unit], 1_000_000 if dt.precision <= 3 else 1_000)
        case DateType():
            if pa.types.is_date64(arr.type):
                days: np.ndarray = np.floor_divide(_ints(arr.cast(pa.int64())), 86_400_000)
                return days
            return _ints(arr.cast(pa.int32()) if pa.types.is_date32(arr.type) else arr)
        case TimeType():
            if pa.types.is_time(arr.type):
                unit = arr.type.unit
                raw = _ints(arr.cast(pa.int64() if pa.types.is_time64(arr.type) else pa.int32()))
                return _rescale(raw, _UNIT_NANOS[unit], 1_000_000)
            return _ints(arr)
        case DecimalType():
            return _unscaled_longs(arr, dt)
    return _ints(arr)


def _unscaled_longs(arr: pa.Array, dt: DecimalType) -> np.ndarray:
    if not pa.types.is_decimal(arr.type) or arr.type.scale != dt.scale:
        arr = arr.cast(pa.decimal128(max(dt.precision, 1), dt.scale))
    if arr.type.bit_width != 128:
        arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale))
    n = len(arr)
    words = np.frombuffer(arr.buffers()[1], dtype="<i8", count=2 * n, offset=16 * arr.offset).reshape(n, 2)
    low, high = words[:, 0], words[:, 1]
    valid = valid_mask(arr)
    fits = high == (low >> 63)
    if not bool(np.all(fits | ~valid)):
        raise FileIndexValueError(f"a {dt} value does not fit a long (unscaled); a BSI index cannot hold it")
    return np.where(valid, low, 0)


def float_bits(arr: pa.Array, kind: KeyKind) -> np.ndarray:
    """``floatToIntBits`` / ``doubleToLongBits`` (NaN canonical) of every value, as int32 / int64 (0 where null)."""
    if kind is KeyKind.FLOAT:
        values = np.asarray(pc.fill_null(arr.cast(pa.float32()), 0).to_numpy(zero_copy_only=False), np.float32)
        bits32 = values.view(np.int32).copy()
        bits32[np.isnan(values)] = 0x7FC00000
        return bits32
    values64 = np.asarray(pc.fill_null(arr.cast(pa.float64()), 0).to_numpy(zero_copy_only=False), np.float64)
    bits64 = values64.view(np.int64).copy()
    bits64[np.isnan(values64)] = 0x7FF8000000000000
    return bits64


def binary_values(arr: pa.Array) -> pa.Array:
    """The bytes of a string / binary column as an Arrow binary array (nulls kept)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    return arr.cast(pa.large_binary())


# ---------------------------------------------------------------------------------------------------------
# Literals -> keys


@dataclass(frozen=True, slots=True)
class KeyLiteral:
    """A literal in key units: ``key`` is its floor (for ordered keys), ``exact`` whether it equals a key."""

    key: object
    exact: bool = True


_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)


def key_literal(value: object, dt: DataType) -> KeyLiteral | None:
    """``value`` (a predicate literal, not None) in the key domain of a column of type ``dt``.

    None means no index can answer for this literal (keep the rows).
    """
    try:
        lit = coerce_literal(value, to_arrow_type(dt))
    except PredicateError:
        return None
    kind = key_kind(dt)
    try:
        match kind:
            case KeyKind.STRING:
                return KeyLiteral(lit.encode("utf-8")) if isinstance(lit, str) else None
            case KeyKind.BINARY:
                return KeyLiteral(bytes(lit)) if isinstance(lit, (bytes, bytearray)) else None
            case KeyKind.BOOLEAN:
                return KeyLiteral(lit) if isinstance(lit, bool) else None
            case KeyKind.FLOAT | KeyKind.DOUBLE:
                return _float_literal(lit, kind)
            case KeyKind.DECIMAL:
                return _decimal_literal(lit, dt)  # type: ignore[arg-type]
            case KeyKind.BYTE | KeyKind.SHORT | KeyKind.INT | KeyKind.LONG:
                return _integral_literal(lit, dt)
    except (ArithmeticError, InvalidOperation, OverflowError, TypeError, ValueError):
        return None
    return None


def _floor_exact(value: int | float | Decimal) -> KeyLiteral | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return KeyLiteral(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    floor = math.floor(value)
    return KeyLiteral(int(floor), exact=floor == value)


def _float_literal(lit: object, kind: KeyKind) -> KeyLiteral | None:
    if not isinstance(lit, float) or not math.isfinite(lit) or lit == 0.0:
        # NaN compares unequal to itself, and 0.0 / -0.0 are one SQL value but two index keys.
        return None
    if kind is KeyKind.FLOAT and float(np.float32(lit)) != lit:
        return None  # not a float32 value: Arrow compares in double, the index holds float32 keys
    return KeyLiteral(lit)


def _decimal_literal(lit: object, dt: DecimalType) -> KeyLiteral | None:
    if not isinstance(lit, Decimal):
        return None
    return _floor_exact(lit.scaleb(dt.scale))


def _integral_literal(lit: object, dt: DataType) -> KeyLiteral | None:
    match dt:
        case TimestampType() | LocalZonedTimestampType():
            if not isinstance(lit, _dt.datetime):
                return None
            epoch = _EPOCH if lit.tzinfo is None else _EPOCH_UTC
            micros = (lit - epoch) // _dt.timedelta(microseconds=1)
            nanos = int(getattr(lit, "nanosecond", 0))  # pandas Timestamps carry nanoseconds
            if dt.precision <= 3:
                return KeyLiteral(micros // 1000, exact=micros % 1000 == 0 and nanos == 0)
            return KeyLiteral(micros, exact=nanos == 0)
        case DateType():
            if not isinstance(lit, _dt.date) or isinstance(lit, _dt.datetime):
                return None
            return KeyLiteral((lit - _EPOCH_DATE).days)
        case TimeType():
            if not isinstance(lit, _dt.time):
                return None
            micros = ((lit.hour * 60 + lit.minute) * 60 + lit.second) * 1_000_000 + lit.microsecond
            return KeyLiteral(micros // 1000, exact=micros % 1000 == 0)
    if isinstance(lit, (int, float, Decimal)):
        return _floor_exact(lit)
    return None
