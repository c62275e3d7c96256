"""Java-identical BinaryRow bytes and BinaryRow.hashCode(), per value and vectorized over Arrow batches.

Paimon: org.apache.paimon.data.BinaryRow, BinaryRowWriter, AbstractBinaryWriter, BinarySegmentUtils,
org.apache.paimon.utils.MurmurHashUtils, SerializationUtils.serializeBinaryRow.

Layout of a row of ``n`` fields: a null bit set of ``((n + 63 + 8) // 64) * 8`` bytes whose first byte is the
RowKind (always 0 = +I here) and whose bit ``i + 8`` marks field ``i`` null; then one 8-byte little-endian slot
per field; then the variable-length part, each piece padded with zeros to a multiple of 8 bytes.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import os
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError, UnsupportedFeatureError
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
)

__all__ = [
    "EMPTY_ROW_BYTES",
    "RowBuffers",
    "deserialize_binary_row",
    "deserialize_row",
    "fixed_part_size",
    "hash_bytes_by_words",
    "hash_rows",
    "null_bits_size",
    "serialize_binary_row",
    "serialize_row",
    "serialize_rows_arrow",
]

EMPTY_ROW_BYTES = bytes(8)
"""The bytes of Java's ``BinaryRow.EMPTY_ROW`` (0 fields: only the header word)."""

_MAX_INLINE = 7  # BinarySection.MAX_FIX_PART_DATA_SIZE
_SEED = 42  # MurmurHashUtils.DEFAULT_SEED
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M32 = 0xFFFFFFFF
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_DECIMAL_CONTEXT = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP)

_STRING_TYPES = (CharType, VarCharType)
_BINARY_TYPES = (BinaryType, VarBinaryType)
_TS_TYPES = (TimestampType, LocalZonedTimestampType)


def null_bits_size(arity: int) -> int:
    """Bytes of the header + null bit set (Paimon: BinaryRow.calculateBitSetWidthInBytes)."""
    return ((arity + 63 + 8) // 64) * 8


def fixed_part_size(arity: int) -> int:
    """Bytes of the fixed-length part (Paimon: BinaryRow.calculateFixPartSizeInBytes)."""
    return null_bits_size(arity) + 8 * arity


def _round8(n: int) -> int:
    return (n + 7) & ~7


def _check_supported(dt: DataType) -> None:
    supported = (BooleanType, TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType, DateType, TimeType)
    if not isinstance(dt, (*supported, DecimalType, *_STRING_TYPES, *_BINARY_TYPES, *_TS_TYPES)):
        raise UnsupportedFeatureError(f"BinaryRow fields of type {dt} are not supported")


# ------------------------------------------------------------------------------------------------
# Python values <-> Java's internal representations
# ------------------------------------------------------------------------------------------------


def _unscaled(value: Any, dt: DecimalType) -> int:
    try:
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        unscaled = int(_DECIMAL_CONTEXT.scaleb(d, dt.scale).to_integral_value(decimal.ROUND_HALF_UP))
    except (decimal.InvalidOperation, ValueError, TypeError) as e:
        raise SchemaError(f"{value!r} is not a valid {dt} value") from e
    if abs(unscaled) >= 10**dt.precision:
        raise SchemaError(f"{value!r} does not fit {dt}")
    return unscaled


def _java_big_integer_bytes(n: int) -> bytes:
    """Java BigInteger.toByteArray(): minimal big-endian two's complement (at least one byte)."""
    java_bit_length = (n if n >= 0 else ~n).bit_length()
    return n.to_bytes(java_bit_length // 8 + 1, "big", signed=True)


def _epoch_nanos(value: Any, dt: DataType) -> int:
    nanosecond = getattr(value, "nanosecond", 0)  # pandas.Timestamp carries nanos beyond datetime's micros
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            delta = value - _EPOCH
        else:
            delta = value - _EPOCH_UTC
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros * 1000 + int(nanosecond)
    raise SchemaError(f"{value!r} is not a valid {dt} value (expected datetime)")


def _timestamp_value(millis: int, nano_of_milli: int, dt: DataType) -> Any:
    aware = isinstance(dt, LocalZonedTimestampType)
    if nano_of_milli % 1000:
        import pandas as pd  # only nanosecond values need pandas

        return pd.Timestamp(millis * 1_000_000 + nano_of_milli, unit="ns", tz="UTC" if aware else None)
    delta = _dt.timedelta(milliseconds=millis, microseconds=nano_of_milli // 1000)
    return (_EPOCH_UTC if aware else _EPOCH) + delta


def _time_millis(value: Any, dt: DataType) -> int:
    if isinstance(value, _dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    raise SchemaError(f"{value!r} is not a valid {dt} value (expected datetime.time)")


def _date_days(value: Any, dt: DataType) -> int:
    if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
        raise SchemaError(f"{value!r} is not a valid {dt} value (expected datetime.date)")
    return (value - _EPOCH_DATE).days


# ------------------------------------------------------------------------------------------------
# one row
# ------------------------------------------------------------------------------------------------

_INT_FORMATS: dict[type, str] = {TinyIntType: "<b", SmallIntType: "<h", IntType: "<i", BigIntType: "<q"}


def serialize_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """The BinaryRow bytes Java writes for ``values`` of ``types`` (RowKind +I)."""
    if len(values) != len(types):
        raise SchemaError(f"{len(values)} values for {len(types)} types")
    nb = null_bits_size(len(types))
    buf = bytearray(fixed_part_size(len(types)))
    for pos, (value, dt) in enumerate(zip(values, types, strict=True)):
        slot = nb + 8 * pos
        if value is None:
            # A null of any type is just its null bit: stats rows hold nulls for nested columns.
            bit = pos + 8
            buf[bit >> 3] |= 1 << (bit & 7)
            # Non-compact decimals and timestamps still reserve their var-part space when null.
            if isinstance(dt, DecimalType) and not dt.is_compact:
                buf[slot : slot + 8] = struct.pack("<Q", len(buf) << 32)
                buf += bytes(16)
            elif isinstance(dt, _TS_TYPES) and not dt.is_compact:
                buf[slot : slot + 8] = struct.pack("<Q", len(buf) << 32)
                buf += bytes(8)
            continue
        _check_supported(dt)
        try:
            _write_value(buf, slot, value, dt)
        except (struct.error, OverflowError) as e:
            raise SchemaError(f"{value!r} is not a valid {dt} value") from e
    return bytes(buf)


def _write_value(buf: bytearray, slot: int, value: Any, dt: DataType) -> None:
    if isinstance(dt, BooleanType):
        buf[slot] = 1 if value else 0
    elif type(dt) in _INT_FORMATS:
        if not isinstance(value, (int, np.integer)):
            raise SchemaError(f"{value!r} is not a valid {dt} value (expected int)")
        struct.pack_into(_INT_FORMATS[type(dt)], buf, slot, int(value))
    elif isinstance(dt, (FloatType, DoubleType)):
        if not isinstance(value, (int, float, np.integer, np.floating)):
            raise SchemaError(f"{value!r} is not a valid {dt} value (expected float)")
        struct.pack_into("<f" if isinstance(dt, FloatType) else "<d", buf, slot, float(value))
    elif isinstance(dt, DateType):
        struct.pack_into("<i", buf, slot, _date_days(value, dt))
    elif isinstance(dt, TimeType):
        struct.pack_into("<i", buf, slot, _time_millis(value, dt))
    elif isinstance(dt, DecimalType):
        unscaled = _unscaled(value, dt)
        if dt.is_compact:
            struct.pack_into("<q", buf, slot, unscaled)
        else:
            raw = _java_big_integer_bytes(unscaled)
            struct.pack_into("<Q", buf, slot, (len(buf) << 32) | len(raw))
            buf += raw + bytes(16 - len(raw))
    elif isinstance(dt, _TS_TYPES):
        millis, nano_of_milli = divmod(_epoch_nanos(value, dt), 1_000_000)
        if dt.is_compact:
            struct.pack_into("<q", buf, slot, millis)
        else:
            struct.pack_into("<Q", buf, slot, (len(buf) << 32) | nano_of_milli)
            buf += struct.pack("<q", millis)
    else:
        if isinstance(dt, _STRING_TYPES):
            if not isinstance(value, str):
                raise SchemaError(f"{value!r} is not a valid {dt} value (expected str)")
            raw = value.encode("utf-8")
        else:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise SchemaError(f"{value!r} is not a valid {dt} value (expected bytes)")
            raw = bytes(value)
        if len(raw) <= _MAX_INLINE:
            buf[slot : slot + len(raw)] = raw
            buf[slot + 7] = 0x80 | len(raw)
        else:
            struct.pack_into("<Q", buf, slot, (len(buf) << 32) | len(raw))
            buf += raw + bytes(_round8(len(raw)) - len(raw))


def deserialize_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Values of a BinaryRow (conventions of pyarrow's ``Scalar.as_py()`` for the mapped Arrow types)."""
    nb = null_bits_size(len(types))
    if len(data) < nb + 8 * len(types):
        raise SchemaError(f"BinaryRow of {len(data)} bytes is too short for {len(types)} fields")
    out: list[object] = []
    for pos, dt in enumerate(types):
        bit = pos + 8
        if data[bit >> 3] & (1 << (bit & 7)):
            out.append(None)
            continue
        _check_supported(dt)
        slot = nb + 8 * pos
        out.append(_read_value(data, slot, dt))
    return out


def _read_value(data: bytes, slot: int, dt: DataType) -> object:
    if isinstance(dt, BooleanType):
        return data[slot] != 0
    if type(dt) in _INT_FORMATS:
        return struct.unpack_from(_INT_FORMATS[type(dt)], data, slot)[0]
    if isinstance(dt, FloatType):
        return struct.unpack_from("<f", data, slot)[0]
    if isinstance(dt, DoubleType):
        return struct.unpack_from("<d", data, slot)[0]
    if isinstance(dt, DateType):
        return _EPOCH_DATE + _dt.timedelta(days=struct.unpack_from("<i", data, slot)[0])
    if isinstance(dt, TimeType):
        millis = struct.unpack_from("<i", data, slot)[0]
        return (_EPOCH + _dt.timedelta(milliseconds=millis)).time()
    (word,) = struct.unpack_from("<Q", data, slot)
    offset, size = word >> 32, word & _M32
    if isinstance(dt, DecimalType):
        if dt.is_compact:
            unscaled = struct.unpack_from("<q", data, slot)[0]
        else:
            unscaled = int.from_bytes(data[offset : offset + size], "big", signed=True)
        return decimal.Decimal(f"{unscaled}E-{dt.scale}")
    if isinstance(dt, _TS_TYPES):
        if dt.is_compact:
            return _timestamp_value(struct.unpack_from("<q", data, slot)[0], 0, dt)
        return _timestamp_value(struct.unpack_from("<q", data, offset)[0], size, dt)
    if word >> 63:  # inline: high bit marks it, the next 7 bits hold the length
        raw = bytes(data[slot : slot + ((word >> 56) & 0x7F)])
    else:
        raw = bytes(data[offset : offset + size])
    return raw.decode("utf-8") if isinstance(dt, _STRING_TYPES) else raw


def serialize_binary_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Arity (int32 big-endian) + BinaryRow bytes, as manifests store them (SerializationUtils.serializeBinaryRow)."""
    return struct.pack(">i", len(types)) + serialize_row(values, types)


def deserialize_binary_row(data: bytes, types: Sequence[DataType]) -> list[object]:
    """Inverse of :func:`serialize_binary_row`; the stored arity must match ``types``."""
    if len(data) < 4:
        raise SchemaError(f"Serialized BinaryRow of {len(data)} bytes has no arity")
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity != len(types):
        raise SchemaError(f"Serialized BinaryRow has {arity} fields, expected {len(types)}")
    return deserialize_row(data[4:], types)


# ------------------------------------------------------------------------------------------------
# MurmurHashUtils.hashBytesByWords
# ------------------------------------------------------------------------------------------------


def hash_bytes_by_words(data: bytes, seed: int = _SEED) -> int:
    """Java's MurmurHashUtils.hashBytesByWords as a signed 32-bit int; on a BinaryRow = BinaryRow.hashCode().

    On a whole number of 4-byte words it is exactly MurmurHash3_x86_32 (same block mix, no tail, then the
    length and fmix32), so it runs in mmh3's C code.
    """
    if len(data) % 4:
        raise ValueError(f"hash_bytes_by_words needs a multiple of 4 bytes, got {len(data)}")
    return int(mmh3.mmh3_32_sintdigest(data, seed & _M32))


# ------------------------------------------------------------------------------------------------
# vectorized over Arrow
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowBuffers:
    """Serialized rows packed back to back: row ``i`` is ``data[offsets[i]:offsets[i + 1]]``."""

    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len = rows + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def to_pylist(self) -> list[bytes]:
        return [self[i] for i in range(len(self))]


@dataclass(slots=True)
class _Field:
    slot: np.ndarray  # uint64 (n,): whole slot, or its low 32 bits when the field has a var part
    reserve: np.ndarray | None = None  # int64 (n,): bytes taken in the var part (multiple of 8, padding included)
    var: pa.Array | None = None  # large_binary: each row's var-part bytes, exactly ``reserve`` long


def _zero_padding(count: np.ndarray) -> pa.Array:
    """``count[i]`` zero bytes per row (0..7), as a large_binary array."""
    table = pa.array([bytes(k) for k in range(8)], pa.large_binary())
    return table.take(pa.array(count.astype(np.int8)))


def _fixed_width_binary(matrix: np.ndarray) -> pa.Array:
    n, w = matrix.shape
    fsb = pa.FixedSizeBinaryArray.from_buffers(pa.binary(w), n, [None, pa.py_buffer(np.ascontiguousarray(matrix))])
    return fsb.cast(pa.large_binary())


def _column(data: pa.RecordBatch | pa.Table, name: str) -> pa.Array:
    col = data.column(name)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(arr: pa.Array, target: pa.DataType, dtype: Any) -> np.ndarray:
    if arr.type != target:
        arr = arr.cast(target)
    if arr.null_count:
        arr = arr.fill_null(pa.scalar(0 if target != pa.bool_() else False, target))
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


def _epoch_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(millis, nano_of_milli) of a timestamp array, floored like Java's Timestamp."""
    if not pa.types.is_timestamp(arr.type):
        raise SchemaError(f"Arrow column of type {arr.type} cannot hold timestamps")
    values = _numbers(arr.cast(pa.int64()), pa.int64(), np.int64)
    unit = arr.type.unit
    if unit == "s":
        return values * 1000, np.zeros_like(values)
    if unit == "ms":
        return values, np.zeros_like(values)
    per_milli = 1000 if unit == "us" else 1_000_000
    millis, rest = np.divmod(values, per_milli)
    return millis, rest * (1_000_000 // per_milli)


def _java_bytes_matrix(arr: pa.Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, BigInteger.toByteArray() of the unscaled decimal128, left-aligned in 16 bytes, and its length."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16 : (arr.offset + n) * 16]
    be = raw.reshape(n, 16)[:, ::-1]  # decimal128 is little-endian two's complement
    sign = np.where(be[:, 0] & 0x80, 0xFF, 0).astype(np.uint8)
    # Leading bytes that only repeat the sign can go, as long as the sign bit survives.
    lead = np.logical_and.accumulate(be == sign[:, None], axis=1).sum(axis=1)
    first = be[np.arange(n), np.minimum(lead, 15)]
    length = np.where(lead == 16, 1, 16 - lead + ((first & 0x80) != (sign & 0x80)))
    out = np.zeros((n, 16), dtype=np.uint8)
    for size in np.unique(length):
        rows = length == size
        out[rows, :size] = be[rows, 16 - size :]
    return out, length.astype(np.int64)


_KIND_CHECKS: list[tuple[tuple[type, ...], Any, str]] = [
    ((BooleanType,), pa.types.is_boolean, "boolean"),
    ((TinyIntType, SmallIntType, IntType, BigIntType), pa.types.is_integer, "integer"),
    ((FloatType, DoubleType), pa.types.is_floating, "floating point"),
    ((DateType,), pa.types.is_date, "date"),
    ((TimeType,), pa.types.is_time, "time"),
    ((DecimalType,), pa.types.is_decimal, "decimal"),
    (_TS_TYPES, pa.types.is_timestamp, "timestamp"),
]
_INT_ARROW: dict[type, tuple[pa.DataType, int]] = {
    TinyIntType: (pa.int8(), 8),
    SmallIntType: (pa.int16(), 16),
    IntType: (pa.int32(), 32),
}


def _encode(arr: pa.Array, dt: DataType, valid: np.ndarray) -> _Field:
    for kinds, check, what in _KIND_CHECKS:
        if isinstance(dt, kinds) and not check(arr.type):
            raise SchemaError(f"Arrow column of type {arr.type} cannot hold {dt} (expected {what})")
    try:
        return _encode_checked(arr, dt, valid)
    except (pa.ArrowInvalid, OverflowError) as e:
        raise SchemaError(f"Arrow column of type {arr.type} does not fit {dt}: {e}") from e


def _encode_checked(arr: pa.Array, dt: DataType, valid: np.ndarray) -> _Field:
    n = len(arr)
    if isinstance(dt, BooleanType):
        return _Field(_numbers(arr, pa.bool_(), np.uint64))
    if type(dt) in _INT_ARROW:
        target, bits = _INT_ARROW[type(dt)]
        # Java writes only the type's own bytes; the rest of the slot stays zero.
        return _Field((_numbers(arr, target, np.int64) & ((1 << bits) - 1)).astype(np.uint64))
    if isinstance(dt, DateType):
        days = _numbers(arr.cast(pa.date32()).cast(pa.int32()), pa.int32(), np.int64)
        return _Field((days & _M32).astype(np.uint64))
    if isinstance(dt, BigIntType):
        return _Field(_numbers(arr, pa.int64(), np.int64).view(np.uint64))
    if isinstance(dt, FloatType):
        return _Field(_numbers(arr, pa.float32(), np.float32).view(np.uint32).astype(np.uint64))
    if isinstance(dt, DoubleType):
        return _Field(_numbers(arr, pa.float64(), np.float64).view(np.uint64))
    if isinstance(dt, TimeType):
        storage = pa.int32() if pa.types.is_time32(arr.type) else pa.int64()
        raw = _numbers(arr.cast(storage), storage, np.int64)
        unit = arr.type.unit
        millis = raw * 1000 if unit == "s" else raw // {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        return _Field((millis & _M32).astype(np.uint64))
    if isinstance(dt, DecimalType):
        arr = arr.cast(pa.decimal128(dt.precision, dt.scale))
        if dt.is_compact:
            low = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset * 2 : (arr.offset + n) * 2 : 2]
            return _Field(np.where(valid, low, 0).view(np.uint64))
        chunk, length = _java_bytes_matrix(arr, n)
        chunk[~valid] = 0
        size = np.where(valid, length, 0).astype(np.uint64)
        return _Field(size, reserve=np.full(n, 16, dtype=np.int64), var=_fixed_width_binary(chunk))
    if isinstance(dt, _TS_TYPES):
        millis, nano_of_milli = _epoch_parts(arr)
        millis = np.where(valid, millis, 0)
        if dt.is_compact:
            return _Field(millis.view(np.uint64))
        chunk = millis.astype("<i8").view(np.uint8).reshape(n, 8)
        low = np.where(valid, nano_of_milli, 0).astype(np.uint64)
        return _Field(low, reserve=np.full(n, 8, dtype=np.int64), var=_fixed_width_binary(chunk))
    if isinstance(dt, (*_STRING_TYPES, *_BINARY_TYPES)):
        return _encode_bytes(arr, dt, valid)
    _check_supported(dt)
    raise UnsupportedFeatureError(f"BinaryRow fields of type {dt} are not supported")


def _encode_bytes(arr: pa.Array, dt: DataType, valid: np.ndarray) -> _Field:
    n = len(arr)
    want_string = isinstance(dt, _STRING_TYPES)
    t = arr.type
    is_str = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
    is_bin = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
    if not (is_str or is_bin or pa.types.is_fixed_size_binary(t)) or (want_string and not is_str):
        raise SchemaError(f"Arrow column of type {t} cannot hold {dt}")
    arr = arr.cast(pa.large_binary())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    sizes = np.where(valid, np.diff(offsets), 0)
    inline = valid & (sizes <= _MAX_INLINE)
    # Inline values: bytes in the slot's low 7 bytes, (0x80 | length) in its top byte.
    slot = np.zeros(n, dtype=np.uint64)
    if inline.any():
        padded = np.concatenate([data, np.zeros(_MAX_INLINE, np.uint8)])
        cells = np.zeros((n, 8), dtype=np.uint8)
        cells[:, :_MAX_INLINE] = padded[np.minimum(starts, len(data))[:, None] + np.arange(_MAX_INLINE)]
        cells[:, :_MAX_INLINE] *= np.arange(_MAX_INLINE) < sizes[:, None]
        cells[:, 7] = 0x80 | sizes
        cells[~inline] = 0
        slot = cells.view("<u8").reshape(n).astype(np.uint64)
    outline = valid & ~inline
    if not outline.any():
        return _Field(slot)
    # Out-of-line values: the slot's low word is the length; _build adds the offset once it is known.
    reserve = np.where(outline, (sizes + 7) & ~7, 0).astype(np.int64)
    empty = pa.scalar(b"", pa.large_binary())
    body = pc.if_else(pa.array(outline), arr, empty)
    var = pc.binary_join_element_wise(body, _zero_padding(reserve - np.where(outline, sizes, 0)), empty)
    return _Field(np.where(outline, sizes.astype(np.uint64), slot), reserve=reserve, var=var)


def _build(
    data: pa.RecordBatch | pa.Table, columns: Sequence[str], types: Sequence[DataType]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    """(flat bytes, row starts, row lengths or None when all rows have the fixed width, fixed width)."""
    if len(columns) != len(types):
        raise SchemaError(f"{len(columns)} columns for {len(types)} types")
    n = data.num_rows
    k = len(types)
    nb = null_bits_size(k)
    width = nb + 8 * k
    fixed = np.zeros((n, width), dtype=np.uint8)
    fields: list[_Field] = []
    for pos, (name, dt) in enumerate(zip(columns, types, strict=True)):
        arr = _column(data, name)
        valid = _valid_mask(arr)
        f = _encode(arr, dt, valid)
        bit = pos + 8
        fixed[:, bit >> 3] |= ((~valid).astype(np.uint8) << np.uint8(bit & 7)).astype(np.uint8)
        fields.append(f)
    reserves = [f.reserve for f in fields if f.reserve is not None]
    if not reserves:
        for pos, f in enumerate(fields):
            fixed[:, nb + 8 * pos : nb + 8 * pos + 8] = f.slot.astype("<u8").view(np.uint8).reshape(n, 8)
        return fixed.reshape(-1), np.arange(n, dtype=np.int64) * width, None, width
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), width
    cursor = np.full(n, width, dtype=np.int64)  # per-row write position in the var part
    var_offsets: list[np.ndarray | None] = []
    for f in fields:
        if f.reserve is None:
            var_offsets.append(None)
            continue
        var_offsets.append(cursor.copy())
        cursor += f.reserve
    lengths = cursor
    for pos, (f, off) in enumerate(zip(fields, var_offsets, strict=True)):
        slot = f.slot
        if off is not None and f.reserve is not None:
            slot = np.where(f.reserve > 0, (off.astype(np.uint64) << np.uint64(32)) | f.slot, f.slot)
        fixed[:, nb + 8 * pos : nb + 8 * pos + 8] = slot.astype("<u8").view(np.uint8).reshape(n, 8)
    # Concatenate fixed part and var pieces row by row in Arrow's C++ kernel.
    pieces = [_fixed_width_binary(fixed)] + [f.var for f in fields if f.var is not None]
    rows = pc.binary_join_element_wise(*pieces, pa.scalar(b"", pa.large_binary()))
    row_offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset : rows.offset + n + 1]
    flat = np.frombuffer(rows.buffers()[2], dtype=np.uint8)[: row_offsets[-1]]
    starts = row_offsets[:-1]
    return flat, starts, lengths, width


def serialize_rows_arrow(
    data: pa.RecordBatch | pa.Table, columns: Sequence[str], types: Sequence[DataType]
) -> RowBuffers:
    """BinaryRow bytes of every row's projection on ``columns`` (typed ``types``), built without a row loop."""
    flat, starts, lengths, width = _build(data, columns, types)
    n = data.num_rows
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[:n] = starts
    offsets[n] = starts[-1] + (width if lengths is None else lengths[-1]) if n else 0
    return RowBuffers(flat, offsets)


def _mix_words(h: np.ndarray, words: np.ndarray) -> np.ndarray:
    k = words * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= np.uint32(_C2)
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix_array(h: np.ndarray, lengths: np.ndarray | int) -> np.ndarray:
    h = h ^ np.asarray(lengths, dtype=np.int64).astype(np.uint32)
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    out: np.ndarray = h ^ (h >> np.uint32(16))
    return out


# Rows longer than this hash one by one in C: a call costs ~0.3 us, less than 32 words of the numpy kernel,
# whose loop runs once per word of the longest row it is given.
_LONG_ROW_BYTES = 128


# Rows hashed at once: the hash's numpy temporaries of a few MiB stay in cache and are reused by the allocator;
# temporaries over a whole 8M-row column are fresh mappings each time (page faults): 0.26 s -> 0.14 s at 8M rows.
HASH_CHUNK_ROWS = 1 << 18


def hash_rows(data: pa.RecordBatch | pa.Table, columns: Sequence[str], types: Sequence[DataType]) -> np.ndarray:
    """BinaryRow.hashCode() of every row's projection on ``columns``, as int32, vectorized.

    Short rows go through numpy, one step per 4-byte word across all rows; long rows (long strings or binaries)
    through mmh3 row by row, so a key costs about as much as reading its bytes whatever its length. Large inputs
    are hashed HASH_CHUNK_ROWS rows at a time, the chunks on one thread per core: numpy's loops and Arrow's
    kernels release the GIL (same CPU time, measured; the hash is serial work before a write can flush).
    """
    n = data.num_rows
    if n <= HASH_CHUNK_ROWS:
        return _hash_rows(data, columns, types)
    starts = range(0, n, HASH_CHUNK_ROWS)

    def chunk(start: int) -> np.ndarray:
        return _hash_rows(data.slice(start, HASH_CHUNK_ROWS), columns, types)

    workers = min(len(starts), os.cpu_count() or 1)
    if workers <= 1:
        return np.concatenate([chunk(s) for s in starts])
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="laketide-hash") as pool:
        return np.concatenate(list(pool.map(chunk, starts)))


def _hash_rows(data: pa.RecordBatch | pa.Table, columns: Sequence[str], types: Sequence[DataType]) -> np.ndarray:
    n = data.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    fast = _hash_fixed_slots(data, columns, types)
    if fast is not None:
        return fast
    flat, starts, lengths, width = _build(data, columns, types)
    if lengths is None:
        if width <= _LONG_ROW_BYTES:
            # Rows are back to back and all equally long: hash the columns of a (rows, words) matrix.
            matrix = flat.view("<u4")[: n * width // 4].reshape(n, width // 4)
            h = np.full(n, _SEED, dtype=np.uint32)
            for j in range(width // 4):
                h = _mix_words(h, matrix[:, j])
            return _fmix_array(h, width).view(np.int32)
        lengths = np.full(n, width, dtype=np.int64)
    out = np.empty(n, dtype=np.int32)
    long = lengths > _LONG_ROW_BYTES
    if long.any():
        out[long] = _hash_each(flat, starts[long], lengths[long])
        short = ~long
        if short.any():
            out[short] = _hash_short(flat, starts[short], lengths[short])
        return out
    return _hash_short(flat, starts, lengths)


def _hash_fixed_slots(
    data: pa.RecordBatch | pa.Table, columns: Sequence[str], types: Sequence[DataType]
) -> np.ndarray | None:
    """The hash of rows without nulls whose fields all live in their 8-byte slot (integers, dates, compact
    timestamps and decimals, floats...), straight from the slots: the header and null-bit words are all zero,
    so their mixing is one constant, and no row bytes are laid out. None when the rows need the general path."""
    if len(columns) != len(types) or len(types) > _FAST_FIELDS_MAX or not all(map(_in_slot, types)):
        return None
    arrays = [_column(data, name) for name in columns]
    if any(a.null_count for a in arrays):
        return None
    n = data.num_rows
    fields = [_encode(a, dt, np.ones(n, dtype=bool)) for a, dt in zip(arrays, types, strict=True)]
    if any(f.reserve is not None for f in fields):
        return None
    nb = null_bits_size(len(types))
    h = np.full(1, _SEED, dtype=np.uint32)
    for _ in range(nb // 4):
        h = _mix_words(h, np.zeros(1, dtype=np.uint32))
    hashes = np.full(n, h[0], dtype=np.uint32)
    for f in fields:
        slot = f.slot.astype("<u8", copy=False).view("<u4").reshape(n, 2)
        hashes = _mix_words(hashes, slot[:, 0])
        hashes = _mix_words(hashes, slot[:, 1])
    return _fmix_array(hashes, nb + 8 * len(types)).view(np.int32)


def _in_slot(dt: DataType) -> bool:
    """Whether a non-null value of ``dt`` lives in its 8-byte slot alone (no variable-length part)."""
    if type(dt) in _INT_ARROW or isinstance(dt, (BooleanType, BigIntType, DateType, FloatType, DoubleType, TimeType)):
        return True
    return isinstance(dt, (DecimalType, *_TS_TYPES)) and bool(dt.is_compact)


# Keys of up to this many fields take the slot path (a row of 16 fields is 136 bytes: longer rows hash one by one).
_FAST_FIELDS_MAX = (_LONG_ROW_BYTES - 8) // 8


def _hash_each(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One C call per row (for long rows only: the call is cheap next to the row's bytes)."""
    view = memoryview(flat.data)  # slices of a memoryview are zero-copy
    hashes = [mmh3.mmh3_32_sintdigest(view[s : s + n], _SEED) for s, n in zip(starts.tolist(), lengths.tolist())]
    return np.array(hashes, dtype=np.int32)


def _hash_short(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Rows of different lengths, all short: ordered longest first so that word j only touches a prefix of them."""
    n = len(starts)
    words = flat.view("<u4")
    nwords = lengths // 4
    order = np.argsort(-nwords, kind="stable")
    sorted_starts = starts[order] // 4
    sorted_nwords = nwords[order]
    active = np.searchsorted(-sorted_nwords, -np.arange(int(sorted_nwords[0])), side="left")
    h = np.full(n, _SEED, dtype=np.uint32)
    for j in range(int(sorted_nwords[0])):
        m = int(active[j])
        h[:m] = _mix_words(h[:m], words[sorted_starts[:m] + j])
    h = _fmix_array(h, lengths[order])
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out.view(np.int32)
