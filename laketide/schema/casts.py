"""Converting a column of an older data file to its column's current type, as Java Paimon's readers do.

``cast_array(values, source_type, target_type)`` applies the cast rule Java's CastExecutors resolves for the pair
(see ``cast_rules``), with Java's value semantics, column-wise on Arrow arrays:

- numbers narrow as Java's primitive casts do: integers wrap, DOUBLE -> INT truncates toward zero and saturates,
  NaN -> 0; DECIMAL -> integers drop the fraction; numbers -> DECIMAL round HALF_UP and become null when they
  need more digits than the precision (Decimal.fromBigDecimal);
- strings parse as BinaryStringUtils does (booleans t/true/y/yes/1 and f/false/n/no/0 in any case; "12.7" -> INT
  is 12; blanks are errors except around a DOUBLE); a string Java cannot parse raises CastError, as Java's read
  throws;
- CHAR / VARCHAR / BINARY / VARBINARY targets cut (and CHAR / BINARY pad) to their length;
- DATE / TIME / TIMESTAMP / TIMESTAMP_LTZ conversions follow DateTimeUtils, with the session time zone
  ``time_zone`` standing in for Java's JVM default (see ``cast_temporal``);
- ROW, ARRAY and MAP columns evolve inside: nested fields are matched by field id, added ones read as null,
  element / value types cast recursively (SchemaEvolutionUtil#createCastExecutor).

Paimon: org.apache.paimon.casting.*, org.apache.paimon.schema.SchemaEvolutionUtil
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import CastError, UnsupportedFeatureError
from laketide.schema import cast_strings as cs
from laketide.schema import cast_temporal as ct
from laketide.schema.cast_rules import resolve_rule
from laketide.types import (
    STRING,
    ArrayType,
    BigIntType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    MapType,
    RowType,
    SmallIntType,
    TinyIntType,
    VARIANT_ARROW_TYPE,
    VariantType,
    to_arrow_field,
    to_arrow_type,
)

__all__ = ["DEFAULT_TIME_ZONE", "cast_array"]

DEFAULT_TIME_ZONE = "UTC"

_INTEGERS: dict[type, tuple[type, int]] = {
    TinyIntType: (np.int8, 8), SmallIntType: (np.int16, 16), IntType: (np.int32, 32), BigIntType: (np.int64, 64),
}


def cast_array(
    values: pa.Array | pa.ChunkedArray,
    source: DataType,
    target: DataType,
    *,
    time_zone: str = DEFAULT_TIME_ZONE,
    context: str | None = None,
) -> pa.Array:
    """``values`` (stored as ``source``) converted to ``target`` the way Java Paimon reads them.

    ``time_zone`` is the session zone of TIMESTAMP <-> TIMESTAMP_LTZ, LTZ -> DATE / TIME / STRING and INT -> LTZ
    casts. ``context`` (a column or file name) prefixes error messages. Raises CastError where Java's cast
    throws, and for pairs with no cast rule (an ALTER Java would have refused).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        return _cast(values, source, target, time_zone)
    except CastError as e:
        if context:
            raise CastError(f"{context}: {e}") from e
        raise


def _cast(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    if source.copy(nullable=True) == target.copy(nullable=True):
        return _conform(arr, target)
    if isinstance(source, RowType) and isinstance(target, RowType):
        return _evolve_row(arr, source, target, tz)
    if isinstance(source, ArrayType) and isinstance(target, ArrayType):
        return _evolve_array(arr, source, target, tz)
    if isinstance(source, MapType) and isinstance(target, MapType):
        return _evolve_map(arr, source, target, tz)
    rule = resolve_rule(source, target)
    if rule is None:
        raise CastError(f"Paimon has no cast from {source} to {target}")
    out = _KERNELS[rule](_conform(arr, source), source, target, tz)
    expected = to_arrow_type(target)
    return out if out.type.equals(expected) else out.cast(expected)


def _conform(arr: pa.Array, dt: DataType) -> pa.Array:
    """The same values in laketide's Arrow type for ``dt`` (a file may store wider units, large strings...)."""
    expected = to_arrow_type(dt)
    if arr.type.equals(expected):
        return arr
    if isinstance(dt, VariantType) and not _plain_variant(arr.type):
        raise UnsupportedFeatureError(
            f"VARIANT stored as {arr.type} (shredded) cannot be read yet; laketide reads unshredded variants only"
        )
    try:
        return arr.cast(expected)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CastError(f"Cannot read {arr.type} values as {dt}: {e}") from e


def _plain_variant(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) and sorted(t.field(i).name for i in range(t.num_fields)) == sorted(
        VARIANT_ARROW_TYPE.field(i).name for i in range(VARIANT_ARROW_TYPE.num_fields)
    )


# ------------------------------------------------------------------------------------------------
# nested types (SchemaEvolutionUtil)
# ------------------------------------------------------------------------------------------------


def _evolve_row(arr: pa.Array, source: RowType, target: RowType, tz: str) -> pa.Array:
    by_id = {f.id: f for f in source.fields}
    children = []
    # flatten(): the children with the row's nulls applied (a null row's slots may hold anything)
    flat = arr.flatten() if arr.type.num_fields else []
    for f in target.fields:
        old = by_id.get(f.id)
        index = arr.type.get_field_index(old.name) if old is not None else -1
        if old is None or index < 0:
            children.append(pa.nulls(len(arr), to_arrow_type(f.type)))
        else:
            children.append(_cast(flat[index], old.type, f.type, tz))
    fields = [to_arrow_field(f) for f in target.fields]
    if not fields:
        return pa.array([{}] * len(arr), pa.struct([]), mask=arr.is_null())
    return pa.StructArray.from_arrays(children, fields=fields, mask=arr.is_null())


def _list_parts(arr: pa.Array) -> tuple[pa.Array, int, int]:
    offsets = arr.offsets
    start = offsets[0].as_py()
    return pc.subtract(offsets, start), start, offsets[len(offsets) - 1].as_py()


def _live(arr: pa.Array, children: pa.Array) -> pa.Array:
    """``children`` (the values of list / map ``arr``'s slice) with those of null lists nulled: a null list may
    still own a range of values, which no reader looks at."""
    if not arr.null_count or not len(children):
        return children
    # (pc.list_parent_indices aborts the process on map arrays in pyarrow 26: count lengths instead)
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    dead = np.repeat(np.asarray(arr.is_null().to_numpy(zero_copy_only=False)), np.diff(offsets))
    return pc.if_else(pa.array(dead), pa.scalar(None, children.type), children)


def _evolve_array(arr: pa.Array, source: ArrayType, target: ArrayType, tz: str) -> pa.Array:
    offsets, start, end = _list_parts(arr)
    values = _live(arr, arr.values.slice(start, end - start))
    values = _cast(values, source.element, target.element, tz)
    return pa.ListArray.from_arrays(offsets, values, type=to_arrow_type(target), mask=arr.is_null())


def _evolve_map(arr: pa.Array, source: MapType, target: MapType, tz: str) -> pa.Array:
    if source.key != target.key:
        raise CastError(f"Cannot cast map type {source} to {target}: the key types differ")
    offsets, start, end = _list_parts(arr)
    keys = _conform(arr.keys.slice(start, end - start), target.key)
    items = _cast(_live(arr, arr.items.slice(start, end - start)), source.value, target.value, tz)
    return pa.MapArray.from_arrays(offsets, keys, items, type=to_arrow_type(target), mask=arr.is_null())


# ------------------------------------------------------------------------------------------------
# numbers and booleans
# ------------------------------------------------------------------------------------------------


def _valid(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))


def _numbers(arr: pa.Array, dtype: type) -> np.ndarray:
    zero = pa.scalar(0, arr.type) if not pa.types.is_boolean(arr.type) else pa.scalar(False)
    return np.asarray(pc.fill_null(arr, zero).to_numpy(zero_copy_only=False)).astype(dtype)


def _integral_from_float(values: np.ndarray, target: DataType) -> np.ndarray:
    # JLS narrowing: NaN -> 0, truncate toward zero, saturate at int (or long); byte / short wrap from int.
    np_type, bits = _INTEGERS[type(target)]
    wide_bits = 64 if bits == 64 else 32
    low, high = -(2 ** (wide_bits - 1)), 2 ** (wide_bits - 1) - 1
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.where(np.isnan(values), 0.0, values))
        too_big = t >= float(2 ** (wide_bits - 1))
        too_small = t < float(low)
        middle = np.where(too_big | too_small, 0.0, t).astype(np.int64)
    out = np.where(too_big, high, np.where(too_small, low, middle)).astype(np.int64)
    return out.astype(np.int32).astype(np_type) if bits < 32 else out.astype(np_type)


def _numeric_primitive(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    valid = _valid(arr)
    floating = isinstance(source, (FloatType, DoubleType))
    if isinstance(target, (FloatType, DoubleType)):
        # One rounding straight from the source value (a long goes to float directly, not through double).
        with np.errstate(over="ignore"):
            out = _numbers(arr, np.float64 if floating else np.int64).astype(
                np.float32 if isinstance(target, FloatType) else np.float64
            )
    elif floating:
        out = _integral_from_float(_numbers(arr, np.float64), target)
    else:
        out = _numbers(arr, np.int64).astype(_INTEGERS[type(target)][0])  # two's complement wrap, as Java's casts
    return pa.array(out, to_arrow_type(target), mask=~valid)


def _boolean_to_numeric(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    ones = pc.cast(arr, pa.int64())
    if isinstance(target, DecimalType):
        return _integer_to_decimal(ones, target)
    return _numeric_primitive(ones, BigIntType(), target, tz)


def _numeric_to_boolean(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return pc.not_equal(arr.cast(pa.int64()), 0)


def _integer_to_decimal(arr: pa.Array, target: DecimalType) -> pa.Array:
    return cs.fit_decimal(arr.cast(pa.int64()).cast(pa.decimal256(76, target.scale)), target)


def _numeric_to_decimal(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(target, DecimalType)
    if isinstance(source, (FloatType, DoubleType)):
        # BigDecimal.valueOf(double): the digits of Double.toString, NaN and infinities throw.
        text = cs.floats_to_strings(arr.cast(pa.float64()), single=False)
        return cs.decimal_from_strings(text, target, what=f" (from {source})")
    return _integer_to_decimal(arr, target)


def _decimal_to_decimal(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(source, DecimalType) and isinstance(target, DecimalType)
    wide = arr.cast(pa.decimal256(76, source.scale))
    if target.scale < source.scale:
        wide = pc.round(wide, target.scale, round_mode="half_towards_infinity")
    return cs.fit_decimal(wide, target)


def _decimal_to_numeric(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(source, DecimalType)
    valid = _valid(arr)
    if isinstance(target, (FloatType, DoubleType)):
        doubles = _decimal_doubles(arr, source)
        out = doubles.astype(np.float32) if isinstance(target, FloatType) else doubles
        return pa.array(out, to_arrow_type(target), mask=~valid)
    whole = pc.round(arr.cast(pa.decimal256(76, source.scale)), 0, round_mode="towards_zero")
    whole = whole.cast(pa.decimal256(76, 0))
    limit = pa.scalar(decimal.Decimal(2**63), pa.decimal256(76, 0))
    if pc.any(pc.greater_equal(pc.abs(whole), limit)).as_py():
        # BigInteger.longValue keeps the low 64 bits of values beyond a long.
        longs = np.array([0 if v is None else _low_64_bits(int(v)) for v in whole.to_pylist()], dtype=np.int64)
    else:
        longs = _numbers(whole.cast(pa.int64()), np.int64)
    out = longs.astype(np.int32).astype(_INTEGERS[type(target)][0]) if not isinstance(target, BigIntType) else longs
    return pa.array(out, to_arrow_type(target), mask=~valid)


def _low_64_bits(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def _unscaled_longs(arr: pa.Array, source: DecimalType) -> np.ndarray:
    # decimal128 stores each value as a 16-byte little-endian two's complement integer; a compact decimal
    # (precision <= 18) fits the low 8 bytes.
    arr = pc.fill_null(arr.cast(pa.decimal128(source.precision, source.scale)), pa.scalar(decimal.Decimal(0),
                       pa.decimal128(source.precision, source.scale)))
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + len(arr)))
    return words[2 * arr.offset::2].copy()


def _decimal_doubles(arr: pa.Array, source: DecimalType) -> np.ndarray:
    if source.is_compact:
        # DecimalUtils.doubleValue: (double) unscaled / 10^scale, both exact doubles up to 18 digits.
        return _unscaled_longs(arr, source).astype(np.float64) / float(10**source.scale)
    # BigDecimal.doubleValue rounds correctly; so does Arrow's parser reading the exact decimal text.
    exact = pc.fill_null(arr.cast(pa.string()), "0")
    return np.asarray(exact.cast(pa.float64()).to_numpy(), dtype=np.float64)


# ------------------------------------------------------------------------------------------------
# to and from strings
# ------------------------------------------------------------------------------------------------


def _numeric_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    if isinstance(source, (FloatType, DoubleType)):
        text = cs.floats_to_strings(arr, single=isinstance(source, FloatType))
    elif isinstance(source, DecimalType):
        text = cs.decimal_to_strings(arr)
    else:
        text = arr.cast(pa.string())
    return cs.fit_chars(text, target)


def _boolean_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.fit_chars(arr.cast(pa.string()), target)


def _string_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.fit_chars(arr, target)


def _string_to_boolean(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.booleans_from_strings(arr)


def _string_to_decimal(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(target, DecimalType)
    return cs.decimal_from_strings(arr, target)


def _string_to_numeric(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    if isinstance(target, (FloatType, DoubleType)):
        return cs.floats_from_strings(arr, single=isinstance(target, FloatType))
    np_type, bits = _INTEGERS[type(target)]
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return cs.integers_from_strings(arr, low, high, str(target)).cast(to_arrow_type(target))


def _string_to_binary(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.fit_bytes(arr.cast(pa.binary()), target)


def _binary_to_binary(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.fit_bytes(arr, target)


def _binary_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return cs.strings_from_bytes(arr)


def _strings_or_null_word(arr: pa.Array, source: DataType, tz: str) -> pa.Array:
    # Elements print through their own cast to STRING; a null prints as "null".
    text = _cast(arr, source, STRING, tz)
    return pc.fill_null(text, "null")


def _array_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(source, ArrayType)
    offsets, start, end = _list_parts(arr)
    items = _strings_or_null_word(_live(arr, arr.values.slice(start, end - start)), source.element, tz)
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, items, mask=arr.is_null()), ", ")
    return pc.binary_join_element_wise("[", joined, "]", "")


def _map_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(source, MapType)
    offsets, start, end = _list_parts(arr)
    keys = _strings_or_null_word(_live(arr, arr.keys.slice(start, end - start)), source.key, tz)
    items = _strings_or_null_word(_live(arr, arr.items.slice(start, end - start)), source.value, tz)
    entries = pc.binary_join_element_wise(keys, items, " -> ")
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, entries, mask=arr.is_null()), ", ")
    return pc.binary_join_element_wise("{", joined, "}", "")


def _row_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    assert isinstance(source, RowType)
    if not source.fields:
        body: pa.Array = pa.array([""] * len(arr), pa.string())
    else:
        flat = arr.flatten()
        texts = [_strings_or_null_word(flat[i], f.type, tz) for i, f in enumerate(source.fields)]
        body = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, ", ")
    out = pc.binary_join_element_wise("{", body, "}", "")
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))


def _string_to_constructed(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    # Java only uses these rules for default values: DataTypeCasts refuses STRING -> ARRAY / MAP / ROW changes.
    raise UnsupportedFeatureError(f"laketide does not parse strings into {target}")


# ------------------------------------------------------------------------------------------------
# dates, times, timestamps
# ------------------------------------------------------------------------------------------------


def _timestamp_to_timestamp(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamp_to_timestamp(arr, source, target, tz)


def _timestamp_to_date(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamp_to_date(arr, source, tz)


def _timestamp_to_time(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamp_to_time(arr, source, tz)


def _timestamp_to_numeric(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamp_to_integer(arr, 64 if isinstance(target, BigIntType) else 32)


def _numeric_to_timestamp(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.integer_to_timestamp(arr, target, tz)


def _date_to_timestamp(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.date_to_timestamp(arr, target, tz)


def _time_to_timestamp(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.time_to_timestamp(arr, target, tz)


def _timestamp_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamp_to_string(arr, source, tz)


def _date_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.dates_to_strings(arr)


def _time_to_string(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.times_to_strings(arr, source)


def _string_to_date(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.dates_from_strings(arr)


def _string_to_time(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.times_from_strings(arr)


def _string_to_timestamp(arr: pa.Array, source: DataType, target: DataType, tz: str) -> pa.Array:
    return ct.timestamps_from_strings(arr, target, tz)


_KERNELS = {
    "DecimalToDecimal": _decimal_to_decimal,
    "NumericPrimitiveToDecimal": _numeric_to_decimal,
    "DecimalToNumericPrimitive": _decimal_to_numeric,
    "NumericPrimitive": _numeric_primitive,
    "NumericPrimitiveToTimestamp": _numeric_to_timestamp,
    "BooleanToNumeric": _boolean_to_numeric,
    "NumericToBoolean": _numeric_to_boolean,
    "NumericToString": _numeric_to_string,
    "BooleanToString": _boolean_to_string,
    "TimestampToString": _timestamp_to_string,
    "TimeToString": _time_to_string,
    "DateToString": _date_to_string,
    "StringToString": _string_to_string,
    "ArrayToString": _array_to_string,
    "MapToString": _map_to_string,
    "RowToString": _row_to_string,
    "StringToBoolean": _string_to_boolean,
    "StringToDecimal": _string_to_decimal,
    "StringToNumericPrimitive": _string_to_numeric,
    "StringToDate": _string_to_date,
    "StringToTime": _string_to_time,
    "StringToTimestamp": _string_to_timestamp,
    "StringToBinary": _string_to_binary,
    "StringToArray": _string_to_constructed,
    "StringToMap": _string_to_constructed,
    "StringToRow": _string_to_constructed,
    "TimestampToTimestamp": _timestamp_to_timestamp,
    "TimestampToDate": _timestamp_to_date,
    "TimestampToTime": _timestamp_to_time,
    "DateToTimestamp": _date_to_timestamp,
    "TimeToTimestamp": _time_to_timestamp,
    "TimestampToNumericPrimitive": _timestamp_to_numeric,
    "BinaryToBinary": _binary_to_binary,
    "BinaryToString": _binary_to_string,
}
