"""Java behaviours the file-index bytes depend on, vectorized: hashes, HashMap iteration order, modified UTF-8.

* ``xxh64`` of byte strings (seed 0): the bloom-filter hash of strings and binaries (net.openhft LongHashFunction.xx).
* Thomas Wang's 64-bit integer hash: the bloom-filter hash of numbers (Paimon: FastHash#getLongHash).
* ``hashCode`` of the boxed keys a bitmap index collects (Integer, Long, Float, Double, Boolean, BinaryString)
  and Java ``HashMap`` iteration order, which decides where Java puts each value's entry and bitmap; emulating
  it gives byte-identical indexes (see :func:`hashmap_order` for the one case where it does not).
* ``DataOutput.writeUTF`` (modified UTF-8 with a 2-byte length): column and index names in the container head.

All array functions take and return numpy arrays and never loop per value in Python.
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np
import pyarrow as pa

__all__ = [
    "binary_string_hashcodes",
    "hashmap_order",
    "java_string_hashcode",
    "read_utf",
    "wang_hash64",
    "write_utf",
    "xxh64_binary",
]

_U64 = np.uint64
_MASK64: Final = (1 << 64) - 1

# ---------------------------------------------------------------------------------------------------------
# Thomas Wang's 64-bit integer hash (signed Java long arithmetic).


def wang_hash64(keys: np.ndarray) -> np.ndarray:
    """FastHash#getLongHash for every int64 in ``keys``; returns int64."""
    k = np.ascontiguousarray(keys, dtype=np.int64).view(_U64).copy()

    def sar(x: np.ndarray, n: int) -> np.ndarray:  # Java's >> on a long: arithmetic shift
        return (x.view(np.int64) >> np.int64(n)).view(_U64)

    k = (~k) + (k << _U64(21))
    k = k ^ sar(k, 24)
    k = (k + (k << _U64(3))) + (k << _U64(8))
    k = k ^ sar(k, 14)
    k = (k + (k << _U64(2))) + (k << _U64(4))
    k = k ^ sar(k, 28)
    k = k + (k << _U64(31))
    signed: np.ndarray = k.view(np.int64)
    return signed


# ---------------------------------------------------------------------------------------------------------
# Byte strings of an Arrow binary / string array, grouped by length for vectorized hashing.


class _Bytes:
    """The values of an Arrow binary array as (start, length) into one padded byte buffer.

    Unaligned little-endian words at any byte position are read through strided views, so hashing a value
    costs one gather per 8 (or 4) bytes for all values of a length at once, never a per-value loop.
    """

    def __init__(self, arr: pa.Array) -> None:
        if arr.null_count:
            raise ValueError("hash inputs must not hold nulls")
        arr = arr.cast(pa.large_binary())
        n = len(arr)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
        data_buf = arr.buffers()[2]
        first, last = int(offsets[0]), int(offsets[-1])
        self.data = np.zeros(last - first + 8, dtype=np.uint8)
        if last > first:
            self.data[: last - first] = np.frombuffer(data_buf, dtype=np.uint8)[first:last]
        self.starts = offsets[:-1] - first
        self.lengths = np.diff(offsets)
        size = self.data.size
        self.u64 = np.ndarray(shape=(size - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        self.u32 = np.ndarray(shape=(size - 3,), dtype="<u4", buffer=self.data, strides=(1,))

    def groups(self) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """(row indexes, their start positions, their common length) per distinct length."""
        if self.lengths.size == 0:
            return []
        order = np.argsort(self.lengths, kind="stable")
        bounds = np.flatnonzero(np.diff(self.lengths[order])) + 1
        return [(rows, self.starts[rows], int(self.lengths[rows[0]])) for rows in np.split(order, bounds)]


# ---------------------------------------------------------------------------------------------------------
# XXH64 (seed 0), as net.openhft.hashing.LongHashFunction.xx() hashes a byte[].

_P1: Final = _U64(11400714785074694791)
_P2: Final = _U64(14029467366897019727)
_P3: Final = _U64(1609587929392839161)
_P4: Final = _U64(9650029242287828579)
_P5: Final = _U64(2870177450012600261)


def _rotl64(x: np.ndarray, r: int, tmp: np.ndarray) -> np.ndarray:
    """Rotate ``x`` left by ``r`` in place (``tmp``: scratch of the same shape)."""
    np.left_shift(x, _U64(r), out=tmp)
    np.right_shift(x, _U64(64 - r), out=x)
    x |= tmp
    return x


def _xxh_round(acc: np.ndarray, lane: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """XXH64 round, in place on ``acc``; ``lane`` is consumed as scratch."""
    lane *= _P2
    acc += lane
    _rotl64(acc, 31, tmp)
    acc *= _P1
    return acc


def _xxh64_group(src: _Bytes, starts: np.ndarray, length: int) -> np.ndarray:
    n = starts.size
    tmp = np.empty(n, dtype=_U64)
    pos = 0
    if length >= 32:
        v = [np.full(n, init, dtype=_U64) for init in (_P1 + _P2, _P2, _U64(0), _U64(0) - _P1)]  # seed 0
        while pos + 32 <= length:
            for lane in range(4):
                _xxh_round(v[lane], src.u64[starts + (pos + 8 * lane)], tmp)
            pos += 32
        h = np.zeros(n, dtype=_U64)
        for vi, r in zip(v, (1, 7, 12, 18), strict=True):
            h += _rotl64(vi.copy(), r, tmp)
        for vi in v:
            h ^= _xxh_round(np.zeros(n, dtype=_U64), vi, tmp)
            h *= _P1
            h += _P4
    else:
        h = np.full(n, _P5, dtype=_U64)
    h += _U64(length)
    while pos + 8 <= length:
        h ^= _xxh_round(np.zeros(n, dtype=_U64), src.u64[starts + pos], tmp)
        _rotl64(h, 27, tmp)
        h *= _P1
        h += _P4
        pos += 8
    if pos + 4 <= length:
        word = src.u32[starts + pos].astype(_U64)
        word *= _P1
        h ^= word
        _rotl64(h, 23, tmp)
        h *= _P2
        h += _P3
        pos += 4
    while pos < length:
        byte = src.data[starts + pos].astype(_U64)
        byte *= _P5
        h ^= byte
        _rotl64(h, 11, tmp)
        h *= _P1
        pos += 1
    h ^= h >> _U64(33)
    h *= _P2
    h ^= h >> _U64(29)
    h *= _P3
    h ^= h >> _U64(32)
    return h


def xxh64_binary(arr: pa.Array) -> np.ndarray:
    """XXH64 (seed 0) of every value of a non-null Arrow string / binary array, as int64 (Java's long)."""
    src = _Bytes(arr)
    out = np.empty(len(arr), dtype=_U64)
    with np.errstate(over="ignore"):
        for rows, starts, length in src.groups():
            out[rows] = _xxh64_group(src, starts, length)
    return out.view(np.int64)


# ---------------------------------------------------------------------------------------------------------
# Java hashCode of the boxed keys a bitmap index collects.

_U32 = np.uint32
_C1: Final = _U32(0xCC9E2D51)
_C2: Final = _U32(0x1B873593)
_MURMUR_SEED: Final = 42  # Paimon MurmurHashUtils.DEFAULT_SEED


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    return _rotl32(k * _C1, 15) * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    return _rotl32(h ^ k, 13) * _U32(5) + _U32(0xE6546B64)


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U32(16))
    h = h * _U32(0x85EBCA6B)
    h = h ^ (h >> _U32(13))
    h = h * _U32(0xC2B2AE35)
    mixed: np.ndarray = h ^ (h >> _U32(16))
    return mixed


def _murmur_group(src: _Bytes, starts: np.ndarray, length: int) -> np.ndarray:
    h = np.full(starts.size, _MURMUR_SEED, dtype=_U32)
    aligned = length - length % 4
    for pos in range(0, aligned, 4):
        h = _mix_h1(h, _mix_k1(src.u32[starts + pos]))  # MemorySegment#getInt: native (little-endian) order
    for pos in range(aligned, length):
        # The tail goes byte by byte, each byte sign-extended to an int.
        h = _mix_h1(h, _mix_k1(src.data[starts + pos].view(np.int8).astype(np.int32).view(_U32)))
    return _fmix32(h ^ _U32(length))


def binary_string_hashcodes(arr: pa.Array) -> np.ndarray:
    """``BinaryString.hashCode()`` (Paimon's murmur3 of the UTF-8 bytes) of every non-null value, as int32."""
    src = _Bytes(arr)
    out = np.empty(len(arr), dtype=_U32)
    with np.errstate(over="ignore"):
        for rows, starts, length in src.groups():
            out[rows] = _murmur_group(src, starts, length)
    return out.view(np.int32)


def java_string_hashcode(text: str) -> int:
    """``String.hashCode()`` (over UTF-16 code units), as a signed int."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


# ---------------------------------------------------------------------------------------------------------
# HashMap iteration order.

_TREEIFY_THRESHOLD: Final = 8


def hashmap_order(hashcodes: np.ndarray, *, head_insertion: bool) -> tuple[np.ndarray, bool]:
    """The order in which a ``java.util.HashMap`` iterates keys added in index order with these ``hashCode``s.

    Returns (permutation, exact). Keys are visited bucket by bucket (``(h ^ h >>> 16) & (capacity - 1)``, the
    capacity being the default 16 doubled until ``size <= 0.75 * capacity``). Within a bucket, ``put`` appends
    (insertion order) while ``computeIfAbsent`` makes the new key the bucket's head (reverse insertion
    order); resizing keeps each bucket's relative order. ``exact`` is False when a bucket holds 8 keys or
    more: Java then resizes early or turns the bucket into a tree, which can change the order (never the
    map's content).
    """
    h = np.ascontiguousarray(hashcodes, dtype=np.int32).view(np.uint32)
    n = int(h.size)
    capacity = 16
    while n > capacity * 3 // 4:
        capacity *= 2
    spread = h ^ (h >> np.uint32(16))
    bucket = (spread & np.uint32(capacity - 1)).astype(np.int64)
    inserted = np.arange(n, dtype=np.int64)
    order = np.lexsort((-inserted if head_insertion else inserted, bucket))
    exact = n == 0 or int(np.bincount(bucket).max()) < _TREEIFY_THRESHOLD
    return order, exact


# ---------------------------------------------------------------------------------------------------------
# DataOutput.writeUTF / DataInput.readUTF


def write_utf(text: str) -> bytes:
    """``DataOutputStream.writeUTF``: a big-endian u16 byte count, then modified UTF-8."""
    encoded = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(encoded) // 2}H", encoded)
    out = bytearray()
    for c in units:
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name of {len(out)} encoded bytes is longer than writeUTF allows (65535)")
    return struct.pack(">H", len(out)) + bytes(out)


def read_utf(buf: bytes | memoryview, pos: int) -> tuple[str, int]:
    """``DataInputStream.readUTF`` at ``pos``; returns the text and the position after it.

    Raises ValueError on truncated or malformed input.
    """
    if pos + 2 > len(buf):
        raise ValueError("truncated string length")
    (size,) = struct.unpack_from(">H", buf, pos)
    start, end = pos + 2, pos + 2 + size
    if end > len(buf):
        raise ValueError(f"string of {size} bytes runs past the end")
    raw = bytes(buf[start:end])
    units: list[int] = []
    i = 0
    while i < size:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b & 0xE0 == 0xC0 and i + 1 < size and raw[i + 1] & 0xC0 == 0x80:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif (
            b & 0xF0 == 0xE0 and i + 2 < size and raw[i + 1] & 0xC0 == 0x80 and raw[i + 2] & 0xC0 == 0x80
        ):
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError(f"malformed modified UTF-8 at byte {i}")
    text = struct.pack(f">{len(units)}H", *units).decode("utf-16-be", "surrogatepass")
    return text, end
