"""Bloom filter file index: can a file hold a value? (``=`` and ``IN`` only)

Bytes: ``int32 BE numHashFunctions`` then the bit set (bit ``i`` is bit ``i % 8`` of byte ``i / 8``). A value's
64-bit hash (see :mod:`laketide.index.file_index.java`) sets bits ``(h1 + i * h2)`` (int32 arithmetic, negated
with ``~`` when negative) modulo the bit count, for i = 1..numHashFunctions, where h1 / h2 are the low / high
32 bits of the hash.

Sizing, as Java's ``BloomFilter64(items, fpp)``: ``nb = (int) (-items * ln(fpp) / ln(2)^2)`` bits rounded up to
whole bytes (always adding at least one bit), ``k = max(1, round(bits / items * ln(2)))``. Options per column:
``file-index.bloom-filter.<col>.items`` (default 1,000,000 — about 585 KiB at the default fpp) and ``.fpp``
(default 0.1).

Paimon: org.apache.paimon.fileindex.bloomfilter.BloomFilterFileIndex, FastHash; utils.BloomFilter64
"""

from __future__ import annotations

import functools

import math
import struct
from collections.abc import Mapping
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import FileIndexCorruptError, InvalidOptionError
from laketide.expr.predicate import Leaf, Op
from laketide.index.file_index.base import NO_KEY, equality_key
from laketide.index.file_index.java import wang_hash64, xxh64_binary
from laketide.index.file_index.keys import (
    KeyKind,
    binary_values,
    column_array,
    float_bits,
    key_kind,
    key_literal,
    long_keys,
    lossy_keys,
)
from laketide.index.file_index.result import FileIndexResult
from laketide.types import DataType

__all__ = [
    "BLOOM_FILTER",
    "BloomFilterReader",
    "BloomFilterWriter",
    "bloom_filter_size",
    "bloom_supports",
]

BLOOM_FILTER: Final = "bloom-filter"
DEFAULT_ITEMS: Final = 1_000_000
DEFAULT_FPP: Final = 0.1
OPTION_KEYS: Final = ("items", "fpp")

_INT_MAX: Final = 2**31 - 1
_SUPPORTED: Final = frozenset(
    {KeyKind.BYTE, KeyKind.SHORT, KeyKind.INT, KeyKind.LONG, KeyKind.FLOAT, KeyKind.DOUBLE, KeyKind.STRING,
     KeyKind.BINARY}
)


def bloom_supports(dt: DataType) -> bool:
    """Java's FastHash: every type but BOOLEAN, DECIMAL and nested types."""
    return key_kind(dt) in _SUPPORTED


def _java_int(x: float) -> int:
    """Java's ``(int)`` of a double: truncation, saturating, NaN -> 0."""
    if math.isnan(x):
        return 0
    return max(-(2**31), min(_INT_MAX, int(x)))


def bloom_filter_size(items: int, fpp: float) -> tuple[int, int]:
    """(bit count, hash function count) of Java's ``BloomFilter64(items, fpp)``."""
    nb = _java_int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
    rem = nb - 8 * int(nb / 8)  # Java's % keeps the dividend's sign
    num_bits = nb + (8 - rem)
    k = math.floor(num_bits / items * math.log(2) + 0.5)  # Math.round
    return num_bits, max(1, _java_int(k))


def parse_bloom_options(options: Mapping[str, str], *, column: str) -> tuple[int, float]:
    """``items`` and ``fpp`` of a column's bloom filter; InvalidOptionError naming the option when malformed."""
    prefix = f"file-index.{BLOOM_FILTER}.{column}."
    try:
        items = int(options.get("items", DEFAULT_ITEMS))
    except ValueError as e:
        raise InvalidOptionError(f"{prefix}items must be a whole number, got {options['items']!r}") from e
    try:
        fpp = float(options.get("fpp", DEFAULT_FPP))
    except ValueError as e:
        raise InvalidOptionError(f"{prefix}fpp must be a number, got {options['fpp']!r}") from e
    if not 1 <= items <= _INT_MAX:
        raise InvalidOptionError(f"{prefix}items must be between 1 and {_INT_MAX}, got {items}")
    if not 0.0 < fpp < 1.0:
        raise InvalidOptionError(f"{prefix}fpp must be between 0 and 1 (both exclusive), got {fpp}")
    return items, fpp


def value_hashes(arr: pa.Array, dt: DataType) -> np.ndarray:
    """FastHash of every non-null value of ``arr`` (a column of type ``dt``), as int64."""
    arr = column_array(arr)
    if arr.null_count:
        arr = arr.drop_null()
    kind = key_kind(dt)
    if kind in (KeyKind.STRING, KeyKind.BINARY):
        return xxh64_binary(binary_values(arr))
    if kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
        return wang_hash64(float_bits(arr, kind).astype(np.int64))  # int bits sign-extend into the long
    return wang_hash64(long_keys(arr, dt))


@functools.lru_cache(maxsize=4096)
def _literal_hashes(key: object, kind: KeyKind | None) -> int:
    """The hash of one literal; cached: a scan asks every file's filter about the same literals."""
    if kind in (KeyKind.STRING, KeyKind.BINARY):
        assert isinstance(key, bytes)
        return int(xxh64_binary(pa.array([key], pa.binary()))[0])
    if kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
        assert isinstance(key, float)
        bits = float_bits(pa.array([key], pa.float32() if kind is KeyKind.FLOAT else pa.float64()), kind)
        return int(wang_hash64(bits.astype(np.int64))[0])
    assert isinstance(key, int)
    return int(wang_hash64(np.array([key], dtype=np.int64))[0])


def _positions(hashes: np.ndarray, num_hash_functions: int, num_bits: int) -> np.ndarray:
    """Bit positions of every hash, shape (len(hashes), num_hash_functions)."""
    h = np.ascontiguousarray(hashes, dtype=np.int64)
    h1 = h.astype(np.int32).astype(np.int64)  # (int) hash64: the low 32 bits
    h2 = (h.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
    i = np.arange(1, num_hash_functions + 1, dtype=np.int64)
    combined = (h1[:, None] + i[None, :] * h2[:, None]).astype(np.int32)  # int arithmetic wraps
    combined = np.where(combined < 0, ~combined, combined)
    return (combined % np.int32(num_bits)).astype(np.int64)


_SAMPLE: Final = 2048


class BloomFilterWriter:
    """Collects a column's values (in batches) into Java's ``BloomFilter64``; nulls are not added."""

    index_type: Final = BLOOM_FILTER

    def __init__(self, dt: DataType, *, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> None:
        if not bloom_supports(dt):
            raise InvalidOptionError(f"a bloom-filter index does not support type {dt}")
        self._dt = dt
        self._num_bits, self._k = bloom_filter_size(items, fpp)
        self._bits = np.zeros(self._num_bits, dtype=np.bool_)

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        arr = column_array(values)
        if len(arr) == 0 or arr.null_count == len(arr):
            return
        values = arr.drop_null() if arr.null_count else arr
        # Hash each distinct value once: a low-cardinality column costs one hash per value, not per row. A
        # sample tells: on a (nearly) unique column, unique() would cost as much as the hashing it saves.
        sample = values.slice(0, _SAMPLE)
        distinct = values
        if key_kind(self._dt) not in (KeyKind.FLOAT, KeyKind.DOUBLE) and 2 * len(pc.unique(sample)) <= len(sample):
            distinct = pc.unique(values)  # (floats: unique() may merge -0.0 / 0.0 or NaNs that hash differently)
        self._bits[_positions(value_hashes(distinct, self._dt), self._k, self._num_bits).ravel()] = True

    def serialize(self) -> bytes:
        return struct.pack(">i", self._k) + np.packbits(self._bits, bitorder="little").tobytes()


class BloomFilterReader:
    """Answers ``=`` / ``IN``: SKIP when no literal's bits are all set, else REMAIN."""

    index_type: Final = BLOOM_FILTER

    def __init__(self, data: bytes | memoryview, dt: DataType, *, path: str | None = None) -> None:
        if len(data) < 5:
            raise FileIndexCorruptError(
                f"bloom filter of {len(data)} bytes in file index {path} is too short", path=path
            )
        (k,) = struct.unpack_from(">I", data, 0)
        if not 1 <= k <= 4096:
            raise FileIndexCorruptError(
                f"bloom filter in file index {path} claims {k} hash functions", path=path
            )
        self._k = k
        self._bits = np.frombuffer(data, dtype=np.uint8, offset=4)
        self._num_bits = 8 * self._bits.size
        self._dt = dt
        self._kind = key_kind(dt)

    def might_contain_hash(self, h: int) -> bool:
        pos = _positions(np.array([h], dtype=np.int64), self._k, self._num_bits)[0]
        return bool(np.all((self._bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1))

    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        if leaf.op not in (Op.EQ, Op.IN) or not bloom_supports(self._dt):
            return FileIndexResult.remain()
        for value in leaf.literals:
            if value is None:
                continue  # `= NULL` / `IN (NULL)` is never true
            lit = key_literal(value, self._dt)
            if lit is None:
                return FileIndexResult.remain()
            key, _ = equality_key(lit, lossy=lossy_keys(self._dt))
            if key is NO_KEY:
                continue  # no value equals it
            if self.might_contain_hash(_literal_hashes(key, self._kind)):
                return FileIndexResult.remain()
        return FileIndexResult.skip()
