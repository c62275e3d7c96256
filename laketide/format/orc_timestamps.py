"""ORC ``timestamp`` columns as Java's ORC reader decodes them.

ORC stores a timestamp as seconds relative to 2015-01-01 00:00:00 in the writer's time zone (the stripe
footer names it) plus the nanoseconds of the second. Java's writer takes the seconds as ``millis / 1000``,
rounded toward zero, so an instant before 1970 with a fraction of at least 1 ms is stored one second
"late"; every reader takes that second back when the *absolute* writer seconds are negative and the fraction is
at least 1 ms (ORC-306, ORC-763).

Java's reader applies that correction before converting the writer's zone to the reader's. The C++ reader in
pyarrow (ORC < 2.3.1, fixed by ORC-2151) applies it after: when the writer's zone is not UTC and the conversion
flips the sign of the seconds (wall-clock times within the zone's offset of 1970-01-01 00:00), pyarrow returns
a value one second off - one second late for zones east of UTC, e.g. Java's ``1970-01-01 00:00:00.001`` written
in Asia/Shanghai reads as ``00:00:01.001``. ``timestamp with local time zone`` columns are stored in UTC and are
not affected.

:func:`fix_stripe` undoes the difference on what pyarrow returns, using the stripe's writer zone, when
:func:`reader_needs_fix` finds (once per process, by reading a probe file) that pyarrow's reader has the old
order. :func:`encode_timestamp_file` lays out a minimal file as Java's writer does (the probe, and tests).

Paimon: format.orc (ORC 1.9 TimestampTreeWriter / TreeReaderFactory.TimestampTreeReader)
"""

from __future__ import annotations

import datetime as _dt
import functools
import io
import zlib
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "JavaTimestamp",
    "OrcTail",
    "encode_timestamp_file",
    "fix_stripe",
    "read_tail",
    "reader_needs_fix",
]

_BASE_UTC_SECONDS = 1_420_070_400  # 2015-01-01 00:00:00 UTC
_NANOS = 1_000_000_000

# ------------------------------------------------------------------------------------------------
# protobuf, just enough for the file tail
# ------------------------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a protobuf message; varints as ints, length-delimited as bytes."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, wire, value))
    return out


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _encode_varint(number << 3) + _encode_varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _encode_varint(number << 3 | 2) + _encode_varint(len(data)) + data


# ------------------------------------------------------------------------------------------------
# decompression of ORC's chunked streams (3-byte headers: length << 1 | is-original)
# ------------------------------------------------------------------------------------------------

_NONE, _ZLIB, _SNAPPY, _LZO, _LZ4, _ZSTD = range(6)


def _decompress(data: bytes, kind: int, *, what: str) -> bytes:
    if kind == _NONE:
        return data
    out = bytearray()
    pos = 0
    while pos + 3 <= len(data):
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        pos += 3
        length, original = header >> 1, header & 1
        chunk = data[pos:pos + length]
        pos += length
        out += chunk if original else _decompress_chunk(chunk, kind, what=what)
    return bytes(out)


def _decompress_chunk(chunk: bytes, kind: int, *, what: str) -> bytes:
    if kind == _ZLIB:
        return zlib.decompress(chunk, -15)
    if kind == _ZSTD:
        from backports import zstd  # the laketide dependency behind Avro's zstd too

        return zstd.decompress(chunk)
    if kind == _SNAPPY:
        size, _ = _varint(chunk, 0)  # snappy streams start with their uncompressed length
        raw: bytes = pa.Codec("snappy").decompress(chunk, decompressed_size=size, asbytes=True)
        return raw
    if kind == _LZ4:
        return _lz4_block(chunk)
    raise ValueError(f"cannot decompress the metadata of {what} (ORC compression kind {kind})")


def _lz4_block(src: bytes) -> bytes:
    # The LZ4 block format (ORC writes raw blocks); metadata blocks are small, a plain loop is enough.
    out = bytearray()
    i = 0
    while i < len(src):
        token = src[i]
        i += 1
        literal = token >> 4
        if literal == 15:
            while True:
                b = src[i]
                i += 1
                literal += b
                if b != 255:
                    break
        out += src[i:i + literal]
        i += literal
        if i >= len(src):
            break
        offset = src[i] | src[i + 1] << 8
        i += 2
        match = (token & 15) + 4
        if token & 15 == 15:
            while True:
                b = src[i]
                i += 1
                match += b
                if b != 255:
                    break
        start = len(out) - offset
        for k in range(match):
            out.append(out[start + k])
    return bytes(out)


# ------------------------------------------------------------------------------------------------
# the tail: stripes and their writer time zones
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OrcTail:
    """Per stripe, the writer time zone its footer names (``GMT`` when absent, as ORC's readers assume)."""

    writer_timezones: tuple[str, ...]


def read_tail(stream: BinaryIO, *, what: str = "ORC file") -> OrcTail:
    """Parse the postscript, footer and stripe footers of the ORC file in ``stream`` (seekable)."""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    tail_len = min(size, 16 * 1024)
    stream.seek(size - tail_len)
    tail = stream.read(tail_len)
    ps_len = tail[-1]
    ps = dict((n, v) for n, _, v in _fields(tail[-1 - ps_len:-1]))
    footer_len = int(ps.get(1, 0))
    compression = int(ps.get(2, 0))
    if footer_len + ps_len + 1 > len(tail):
        stream.seek(size - 1 - ps_len - footer_len)
        raw_footer = stream.read(footer_len)
    else:
        raw_footer = tail[-1 - ps_len - footer_len:-1 - ps_len]
    footer = _decompress(raw_footer, compression, what=what)
    zones = []
    for number, _, value in _fields(footer):
        if number != 3:
            continue
        info = dict((n, v) for n, _, v in _fields(value))  # type: ignore[arg-type]
        offset = int(info.get(1, 0))
        footer_at = offset + int(info.get(2, 0)) + int(info.get(3, 0))
        stream.seek(footer_at)
        stripe_footer = _decompress(stream.read(int(info.get(4, 0))), compression, what=what)
        zone = "GMT"
        for n, _, v in _fields(stripe_footer):
            if n == 3 and isinstance(v, bytes):
                zone = v.decode()
        zones.append(zone)
    return OrcTail(writer_timezones=tuple(zones))


# ------------------------------------------------------------------------------------------------
# the fix
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _epoch_offset_seconds(zone: str) -> int:
    # The difference only shows for wall-clock times within the zone's offset of 1970-01-01 00:00, so the
    # offset in force at the epoch is the one that matters.
    if zone in ("GMT", "UTC", "Z", "Etc/UTC", "Etc/GMT", ""):
        return 0
    try:
        offset = zoneinfo.ZoneInfo(zone).utcoffset(_dt.datetime(1970, 1, 1))
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return 0
    return int(offset.total_seconds()) if offset is not None else 0


def _fix_values(arr: pa.Array, offset: int) -> pa.Array:
    if pa.types.is_timestamp(arr.type) and arr.type.tz is None:
        ns = arr.cast(pa.timestamp("ns")).cast(pa.int64())
        values = np.asarray(pc.fill_null(ns, 0).to_numpy(), dtype=np.int64)
        seconds, nanos = np.divmod(values, _NANOS)
        c_pyarrow = seconds < 0  # pyarrow took a second back when the converted seconds were negative
        writer_seconds = seconds + c_pyarrow - offset
        c_java = writer_seconds < 0  # Java did when the writer's own seconds were
        shift = np.where(nanos > 999_999, c_pyarrow.astype(np.int64) - c_java.astype(np.int64), 0)
        if not shift.any():
            return arr
        fixed = pa.array(values + shift * _NANOS, pa.int64(), mask=np.asarray(arr.is_null()))
        return fixed.cast(pa.timestamp("ns")).cast(arr.type)
    if pa.types.is_struct(arr.type):
        children = [_fix_values(arr.field(i), offset) for i in range(arr.type.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=arr.is_null())
    if pa.types.is_map(arr.type):
        start, end = arr.offsets[0].as_py(), arr.offsets[len(arr)].as_py()
        keys = _fix_values(arr.keys.slice(start, end - start), offset)
        items = _fix_values(arr.items.slice(start, end - start), offset)
        return pa.MapArray.from_arrays(pc.subtract(arr.offsets, start), keys, items, type=arr.type,
                                       mask=arr.is_null())
    if pa.types.is_list(arr.type):
        start, end = arr.offsets[0].as_py(), arr.offsets[len(arr)].as_py()
        values = _fix_values(arr.values.slice(start, end - start), offset)
        return pa.ListArray.from_arrays(pc.subtract(arr.offsets, start), values, type=arr.type, mask=arr.is_null())
    return arr


def has_local_timestamps(t: pa.DataType) -> bool:
    """Whether ``t`` holds ORC ``timestamp`` (zone-less) values anywhere."""
    if pa.types.is_timestamp(t):
        return t.tz is None
    if pa.types.is_struct(t):
        return any(has_local_timestamps(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return has_local_timestamps(t.key_type) or has_local_timestamps(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_local_timestamps(t.value_type)
    return False


def fix_stripe(stripe: pa.RecordBatch, writer_timezone: str) -> pa.RecordBatch:
    """The stripe's zone-less timestamps as Java reads them (see the module docstring)."""
    offset = _epoch_offset_seconds(writer_timezone)
    if offset == 0:
        return stripe
    columns = [
        _fix_values(col, offset) if has_local_timestamps(col.type) else col for col in stripe.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=stripe.schema)


# ------------------------------------------------------------------------------------------------
# Java's writer, for one timestamp column
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JavaTimestamp:
    """A value as Java hands it to ORC: wall-clock (or, for instants, UTC) seconds and nanos of the second."""

    seconds: int
    nanos: int = 0


def _format_nanos(nanos: int) -> int:
    # TimestampTreeWriter.formatNanos: trailing decimal zeros are stored as a count in the low 3 bits.
    if nanos == 0:
        return 0
    if nanos % 100 != 0:
        return nanos << 3
    nanos //= 100
    zeros = 1
    while nanos % 10 == 0 and zeros < 7:
        nanos //= 10
        zeros += 1
    return nanos << 3 | zeros


def _rle_v1(values: Sequence[int], *, signed: bool) -> bytes:
    out = bytearray()
    for start in range(0, len(values), 128):
        chunk = values[start:start + 128]
        out.append((256 - len(chunk)) & 0xFF)  # a literal run of len(chunk) values
        for v in chunk:
            out += _encode_varint((v << 1) ^ (v >> 63) if signed else v)
    return bytes(out)


def _byte_rle(data: bytes) -> bytes:
    out = bytearray()
    for start in range(0, len(data), 128):
        chunk = data[start:start + 128]
        out.append((256 - len(chunk)) & 0xFF)
        out += chunk
    return bytes(out)


def encode_timestamp_file(
    values: Sequence[JavaTimestamp | None], *, writer_timezone: str, instant: bool = False
) -> bytes:
    """An uncompressed ORC file with one column ``ts`` (``timestamp``, or ``timestamp with local time zone``
    when ``instant``) holding ``values`` the way ORC 1.9's Java writer stores them, as written from a JVM whose
    default zone is ``writer_timezone`` (an IANA name)."""
    zone_offset = 0 if instant else _zone_offset_at(writer_timezone, _BASE_UTC_SECONDS)
    base = _BASE_UTC_SECONDS - zone_offset
    present = [v is not None for v in values]
    seconds, nanos = [], []
    for v in values:
        if v is None:
            continue
        offset = 0 if instant else _zone_offset_at(writer_timezone, v.seconds)
        millis = (v.seconds - offset) * 1000 + v.nanos // 1_000_000  # java.sql.Timestamp#getTime
        whole = millis // 1000 if millis >= 0 else -((-millis) // 1000)  # Java's long division: toward zero
        seconds.append(whole - base)
        nanos.append(_format_nanos(v.nanos))
    streams: list[tuple[int, bytes]] = []
    if not all(present):
        bits = bytearray((len(present) + 7) // 8)
        for i, p in enumerate(present):
            if p:
                bits[i // 8] |= 0x80 >> (i % 8)
        streams.append((0, _byte_rle(bytes(bits))))  # PRESENT
    streams.append((1, _rle_v1(seconds, signed=True)))  # DATA
    streams.append((5, _rle_v1(nanos, signed=False)))  # SECONDARY
    data = b"".join(payload for _, payload in streams)
    stripe_footer = b"".join(
        _field(1, _field(1, kind) + _field(2, 1) + _field(3, len(payload))) for kind, payload in streams
    )
    stripe_footer += _field(2, _field(1, 0)) + _field(2, _field(1, 0))  # DIRECT encodings (RLE v1)
    stripe_footer += _field(3, writer_timezone)
    header = b"ORC"
    stripe_info = _field(1, len(header)) + _field(2, 0) + _field(3, len(data)) + _field(4, len(stripe_footer))
    stripe_info += _field(5, len(values))
    struct_type = _field(1, 12) + _field(2, _encode_varint(1)) + _field(3, "ts")
    ts_type = _field(1, 18 if instant else 9)
    content = len(header) + len(data) + len(stripe_footer)
    footer = _field(1, len(header)) + _field(2, content) + _field(3, stripe_info)
    footer += _field(4, struct_type) + _field(4, ts_type) + _field(6, len(values)) + _field(8, 0)
    postscript = _field(1, len(footer)) + _field(2, 0) + _field(4, _encode_varint(0) + _encode_varint(12))
    postscript += _field(5, 0) + _field(6, 9) + _field(8000, "ORC")
    return header + data + stripe_footer + footer + postscript + bytes([len(postscript)])


def _zone_offset_at(zone: str, local_seconds: int) -> int:
    # The JVM's view of a wall-clock time in ``zone`` (Timestamp.valueOf), at second precision.
    if zone in ("GMT", "UTC"):
        return 0
    tz = zoneinfo.ZoneInfo(zone)
    wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=local_seconds)
    offset = wall.replace(tzinfo=tz).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


# ------------------------------------------------------------------------------------------------
# does this pyarrow need it?
# ------------------------------------------------------------------------------------------------

_PROBE_ZONE = "Etc/GMT-8"  # UTC+8 all year: the tz database's fixed-offset zone


@functools.cache
def reader_needs_fix() -> bool:
    """Whether pyarrow's ORC reader reads Java's ``1970-01-01 00:00:00.001`` written at UTC+8 one second late
    (checked once per process on an in-memory file)."""
    import pyarrow.orc as orc

    data = encode_timestamp_file([JavaTimestamp(0, 1_000_000)], writer_timezone=_PROBE_ZONE)
    try:
        value = orc.ORCFile(pa.BufferReader(data)).read().column(0)[0].value
    except (pa.ArrowException, OSError):
        return False  # a reader that cannot place the zone cannot read such Java files at all
    return bool(value == _NANOS + 1_000_000)
