"""Bitmap file index: per distinct value, the rows that hold it (``=``, ``!=``, ``IN``, ``NOT IN``, null tests).

Layout (all integers big-endian)::

    version: byte (1 or 2) | row count: int | non-null value count: int | has null: bool
    v1:  [null offset: int] | (value, offset: int) per value, in Java HashMap order | bitmaps
    v2:  [null offset: int, null bitmap length: int] | block count: int | (first value, block offset: int)
         per block | index blocks length: int | index blocks | bitmaps
         index block: entry count: int | (value, offset: int, length: int) per value, values sorted

A value: byte / short / int / long / float / double / boolean as ``DataOutput`` writes them, a string as
``int length + UTF-8``. Offsets are relative to the first bitmap; a value (or null) held by exactly one row
stores ``-1 - row`` instead of a bitmap (Java's single-value trick). Bitmaps are RoaringBitmap32 (portable
format), the null bitmap first when stored. A v2 index block holds as many entries as fit
``file-index.bitmap.<col>.index-block-size`` (default 16 kb) including its count; v2 is Java's default.

Dates and times are int keys, timestamps long keys (millis at precision <= 3, else micros).

Paimon: org.apache.paimon.fileindex.bitmap.BitmapFileIndex, BitmapFileIndexMeta, BitmapFileIndexMetaV2
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from laketide.exceptions import FileIndexCorruptError, FileIndexValueError, InvalidOptionError
from laketide.expr.predicate import Leaf, Op
from laketide.index.file_index.base import NO_KEY, equality_key
from laketide.index.file_index.java import binary_string_hashcodes, hashmap_order
from laketide.index.file_index.keys import (
    KeyKind,
    binary_values,
    column_array,
    float_bits,
    key_kind,
    key_literal,
    long_keys,
    lossy_keys,
    valid_mask,
)
from laketide.index.file_index.result import FileIndexResult
from laketide.index.roaring import (
    RoaringFormatError,
    deserialize_bitmap,
    serialize_roaring32,
    serialize_roaring32_many,
)
from laketide.options import parse_memory_size
from laketide.types import DataType

__all__ = [
    "BITMAP",
    "BitmapIndexReader",
    "BitmapIndexWriter",
    "bitmap_supports",
    "parse_bitmap_options",
]

BITMAP: Final = "bitmap"
VERSION_1: Final = 1
VERSION_2: Final = 2
DEFAULT_INDEX_BLOCK_SIZE: Final = 16 * 1024
OPTION_KEYS: Final = ("version", "index-block-size")

_SUPPORTED: Final = frozenset(
    {KeyKind.BYTE, KeyKind.SHORT, KeyKind.INT, KeyKind.LONG, KeyKind.FLOAT, KeyKind.DOUBLE, KeyKind.BOOLEAN,
     KeyKind.STRING}
)
# Big-endian numpy dtype of each fixed-width key as DataOutput writes it (floats go as their bits).
_FIXED: Final[dict[KeyKind, str]] = {
    KeyKind.BYTE: ">i1",
    KeyKind.SHORT: ">i2",
    KeyKind.INT: ">i4",
    KeyKind.LONG: ">i8",
    KeyKind.FLOAT: ">i4",
    KeyKind.DOUBLE: ">i8",
    KeyKind.BOOLEAN: ">i1",
}
_STRUCT: Final[dict[KeyKind, str]] = {
    KeyKind.BYTE: ">b",
    KeyKind.SHORT: ">h",
    KeyKind.INT: ">i",
    KeyKind.LONG: ">q",
    KeyKind.FLOAT: ">i",
    KeyKind.DOUBLE: ">q",
    KeyKind.BOOLEAN: ">b",
}


def bitmap_supports(dt: DataType) -> bool:
    """Java's BitmapTypeVisitor: numbers, strings, booleans, dates, times, timestamps; not decimal / binary."""
    return key_kind(dt) in _SUPPORTED


def parse_bitmap_options(options: Mapping[str, str], *, column: str) -> tuple[int, int]:
    """(version, index block size in bytes) of a column's bitmap index; InvalidOptionError when malformed."""
    prefix = f"file-index.{BITMAP}.{column}."
    raw_version = options.get("version", str(VERSION_2))
    try:
        version = int(raw_version)
    except ValueError as e:
        raise InvalidOptionError(f"{prefix}version must be 1 or 2, got {raw_version!r}") from e
    if version not in (VERSION_1, VERSION_2):
        raise InvalidOptionError(f"{prefix}version must be 1 or 2, got {version}")
    raw_size = options.get("index-block-size", "16kb")
    try:
        block_size = parse_memory_size(raw_size)
    except ValueError as e:
        raise InvalidOptionError(f"{prefix}index-block-size: {e}") from e
    if block_size < 1:
        raise InvalidOptionError(f"{prefix}index-block-size must be positive, got {raw_size!r}")
    return version, block_size


# ---------------------------------------------------------------------------------------------------------
# Keys: dictionary, Java hash codes, sort order, serialization.


class _Dictionary:
    """The distinct non-null keys of a column in first-occurrence order, and each row's key code (-1: null)."""

    def __init__(self, arr: pa.Array, dt: DataType, kind: KeyKind) -> None:
        valid = valid_mask(arr)
        if kind is KeyKind.STRING:
            keyed = binary_values(arr)
        elif kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
            # Java keys by Float.equals (the canonical bits): 0.0 and -0.0 differ, NaNs are one key.
            keyed = pa.array(float_bits(arr, kind), mask=~valid)
        elif kind is KeyKind.BOOLEAN:
            keyed = arr.cast(pa.int8())
        else:
            keyed = pa.array(long_keys(arr, dt), mask=~valid)
        encoded = keyed.dictionary_encode()  # codes in order of first occurrence
        codes = encoded.indices
        self.codes = np.asarray(
            (codes.fill_null(-1) if codes.null_count else codes).to_numpy(zero_copy_only=False), dtype=np.int64
        )
        self.values: pa.Array = encoded.dictionary
        self.kind = kind

    def __len__(self) -> int:
        return len(self.values)

    def fixed(self) -> np.ndarray:
        """The keys as int64 (floats as their bits), for fixed-width kinds."""
        return np.asarray(self.values.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)

    def hashcodes(self) -> np.ndarray:
        """Each key's Java ``hashCode()``."""
        kind = self.kind
        if kind is KeyKind.STRING:
            return binary_string_hashcodes(self.values)
        v = self.fixed()
        if kind is KeyKind.BOOLEAN:
            return np.where(v != 0, 1231, 1237).astype(np.int32)
        if kind in (KeyKind.LONG, KeyKind.DOUBLE):
            u = v.view(np.uint64)
            return (u ^ (u >> np.uint64(32))).astype(np.uint32).view(np.int32)
        return v.astype(np.int32)  # Byte / Short / Integer: the value; Float: floatToIntBits

    def sort_order(self) -> np.ndarray:
        """Indexes of the keys in Java's comparator order (Float.compare for floats, unsigned bytes for strings)."""
        if self.kind is KeyKind.STRING:
            return np.asarray(pc.sort_indices(self.values).to_numpy(), dtype=np.int64)
        return np.argsort(_total_order(self.fixed(), self.kind), kind="stable")


def _total_order(v: np.ndarray, kind: KeyKind) -> np.ndarray:
    """Integers that sort like Java's comparator of the keys (floats given as their bits)."""
    if kind is KeyKind.FLOAT:
        b = v.astype(np.int32)
        return np.where(b < 0, b ^ np.int32(0x7FFFFFFF), b).astype(np.int64)
    if kind is KeyKind.DOUBLE:
        return np.where(v < 0, v ^ np.int64(0x7FFFFFFFFFFFFFFF), v)
    return v


def _from_total_order(k: object, kind: KeyKind) -> int:
    """Inverse of :func:`_total_order` for one key."""
    assert isinstance(k, int)
    if k < 0:
        return k ^ (0x7FFFFFFF if kind is KeyKind.FLOAT else 0x7FFFFFFFFFFFFFFF)
    return k


def _pack_entries(keys: _Dictionary, order: np.ndarray, fields: list[np.ndarray]) -> bytes:
    """Serialize ``(key, int32 field...)`` for the keys at ``order``: DataOutput layout, vectorized."""
    m = int(order.size)
    if m == 0:
        return b""
    if keys.kind is not KeyKind.STRING:
        dtype = np.dtype([("k", _FIXED[keys.kind])] + [(f"f{i}", ">i4") for i in range(len(fields))])
        rec = np.empty(m, dtype=dtype)
        rec["k"] = keys.fixed()[order]
        for i, f in enumerate(fields):
            rec[f"f{i}"] = f
        return rec.tobytes()
    taken = keys.values.take(pa.array(order, pa.int64())).cast(pa.large_binary())
    offsets = np.frombuffer(taken.buffers()[1], dtype=np.int64, count=m + 1, offset=8 * taken.offset)
    lengths = np.diff(offsets)
    data_buf = taken.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]] if data_buf else np.empty(0, np.uint8)
    entry = 4 + lengths + 4 * len(fields)
    start = np.zeros(m, dtype=np.int64)
    if m > 1:
        np.cumsum(entry[:-1], out=start[1:])
    out = np.zeros(int(entry.sum()), dtype=np.uint8)
    heads = np.empty((m, 1 + len(fields)), dtype=">i4")
    heads[:, 0] = lengths
    head_bytes = heads.view(np.uint8).reshape(m, -1)
    out[start[:, None] + np.arange(4)] = head_bytes[:, :4]
    if data.size:
        out[np.repeat(start + 4 - (offsets[:-1] - offsets[0]), lengths) + np.arange(data.size)] = data
    for i, f in enumerate(fields):
        heads[:, 1 + i] = f
    head_bytes = heads.view(np.uint8).reshape(m, -1)
    tail_at = start + 4 + lengths
    for i in range(len(fields)):
        out[tail_at[:, None] + 4 * i + np.arange(4)] = head_bytes[:, 4 + 4 * i : 8 + 4 * i]
    return out.tobytes()


def _starts(sizes: np.ndarray) -> np.ndarray:
    """Start of each of back-to-back byte blocks of ``sizes``."""
    out = np.zeros(sizes.size, dtype=np.int64)
    if sizes.size > 1:
        np.cumsum(sizes[:-1], out=out[1:])
    return out


def _key_sizes(keys: _Dictionary, order: np.ndarray) -> np.ndarray:
    if keys.kind is not KeyKind.STRING:
        return np.full(order.size, np.dtype(_FIXED[keys.kind]).itemsize, dtype=np.int64)
    lengths = pc.binary_length(keys.values.take(pa.array(order, pa.int64())))
    return 4 + np.asarray(lengths.to_numpy(zero_copy_only=False), dtype=np.int64)


# ---------------------------------------------------------------------------------------------------------
# Writer


class BitmapIndexWriter:
    """Builds a column's bitmap index from its values (given in batches, in row order)."""

    index_type: Final = BITMAP

    def __init__(
        self, dt: DataType, *, version: int = VERSION_2, index_block_size: int = DEFAULT_INDEX_BLOCK_SIZE
    ) -> None:
        if not bitmap_supports(dt):
            raise InvalidOptionError(f"a bitmap index does not support type {dt}")
        if version not in (VERSION_1, VERSION_2):
            raise InvalidOptionError(f"bitmap index version must be 1 or 2, got {version}")
        self._dt = dt
        self._kind = key_kind(dt)
        self._version = version
        self._block_size = index_block_size
        self._chunks: list[pa.Array] = []
        self.java_order_exact = True
        """False when a Java HashMap bucket held 8+ keys: Java's entry order may then differ (same content)."""

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        arr = column_array(values)
        if len(arr):
            self._chunks.append(arr)

    def serialize(self) -> bytes:
        arr = pa.concat_arrays(self._chunks) if len(self._chunks) > 1 else (
            self._chunks[0] if self._chunks else pa.array([], pa.null())
        )
        row_count = len(arr)
        if row_count > 2**31 - 1:
            raise FileIndexValueError(f"a bitmap index holds at most {2**31 - 1} rows, got {row_count}")
        assert self._kind is not None
        if row_count == 0:
            head = struct.pack(">ii?", 0, 0, False)
            if self._version == VERSION_2:
                head += struct.pack(">ii", 0, 0)  # no index blocks, and their total length 0
            return bytes([self._version]) + head
        return self._build(row_count, _Dictionary(arr, self._dt, self._kind))

    def _build(self, row_count: int, keys: _Dictionary) -> bytes:
        codes = keys.codes
        m = len(keys)
        valid_rows = np.flatnonzero(codes >= 0)
        null_rows = np.flatnonzero(codes < 0)
        rows_by_key = valid_rows[np.argsort(codes[valid_rows], kind="stable")]
        counts = np.bincount(codes[valid_rows], minlength=m).astype(np.int64)
        bounds = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])

        # Entries go in the order Java's HashMap<key, bitmap> (filled by computeIfAbsent) iterates them.
        perm, self.java_order_exact = hashmap_order(keys.hashcodes(), head_insertion=True)
        single = counts[perm] == 1
        stored = perm[~single]
        # Serialize the multi-row bitmaps in HashMap order, back to back.
        stored_counts = counts[stored]
        stored_bounds = np.zeros(stored.size + 1, dtype=np.int64)
        np.cumsum(stored_counts, out=stored_bounds[1:])
        take = np.repeat(bounds[stored] - stored_bounds[:-1], stored_counts) + np.arange(stored_bounds[-1])
        body, stored_sizes = serialize_roaring32_many(rows_by_key[take].astype(np.uint32), stored_bounds)

        null_bytes = serialize_roaring32(null_rows.astype(np.uint32))
        null_stored = null_rows.size > 1
        base = len(null_bytes) if null_stored else 0
        offsets = np.empty(m, dtype=np.int64)
        lengths = np.full(m, -1, dtype=np.int64)
        offsets[perm[single]] = -1 - rows_by_key[bounds[perm[single]]]
        offsets[stored] = base + _starts(stored_sizes)
        lengths[stored] = stored_sizes
        null_info = None
        if null_rows.size:
            null_offset = -1 - int(null_rows[0]) if null_rows.size == 1 else 0
            null_info = (null_offset, len(null_bytes))
        meta = self._meta(row_count, keys, perm, offsets, lengths, null_info)
        return bytes([self._version]) + meta + (null_bytes if null_stored else b"") + body

    def _meta(
        self,
        row_count: int,
        keys: _Dictionary,
        perm: np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        null_info: tuple[int, int] | None,
    ) -> bytes:
        m = len(keys)
        head = struct.pack(">ii?", row_count, m, null_info is not None)
        if self._version == VERSION_1:
            if null_info is not None:
                head += struct.pack(">i", null_info[0])
            return head + _pack_entries(keys, perm, [offsets[perm]])
        if null_info is not None:
            head += struct.pack(">ii", *null_info)
        order = keys.sort_order()
        entry_bytes = 8 + _key_sizes(keys, order)
        starts = self._blocks(entry_bytes)
        block_sizes = np.diff(np.append(starts, m))
        block_bytes = 4 + np.add.reduceat(entry_bytes, starts) if m else np.empty(0, np.int64)
        block_offsets = np.zeros(starts.size, dtype=np.int64)
        if starts.size > 1:
            np.cumsum(block_bytes[:-1], out=block_offsets[1:])
        parts = [head, struct.pack(">i", starts.size)]
        parts.append(_pack_entries(keys, order[starts], [block_offsets]))
        parts.append(struct.pack(">i", int(block_bytes.sum())))
        for b, s in enumerate(starts):
            sel = order[s : s + block_sizes[b]]
            parts.append(struct.pack(">i", sel.size))
            parts.append(_pack_entries(keys, sel, [offsets[sel], lengths[sel]]))
        return b"".join(parts)

    def _blocks(self, entry_bytes: np.ndarray) -> np.ndarray:
        """Start index of each index block: Java fills a block while its bytes (count included) fit the limit.

        An entry too large for any block (a long string under a small ``index-block-size``) makes Java fail;
        here it gets a block of its own, which every reader (Java's too) reads like any other block.
        """
        m = int(entry_bytes.size)
        starts: list[int] = []
        cum = np.concatenate(([0], np.cumsum(entry_bytes)))
        i = 0
        while i < m:
            starts.append(i)
            # The last j with cum[j] - cum[i] + 4 <= limit ends this block.
            j = int(np.searchsorted(cum, cum[i] + self._block_size - 4, side="right")) - 1
            i = max(j, i + 1)
        return np.asarray(starts, dtype=np.int64)


# ---------------------------------------------------------------------------------------------------------
# Reader


class BitmapIndexReader:
    """Reads a bitmap index lazily: the head on first use, an index block or a bitmap when a value needs it."""

    index_type: Final = BITMAP

    def __init__(self, data: bytes | memoryview, dt: DataType, *, path: str | None = None) -> None:
        self._buf = memoryview(data)
        self._dt = dt
        self._kind = key_kind(dt)
        self._path = path
        self._parsed = False
        self._cache: dict[object, BitMap] = {}
        self.version = self._buf[0] if len(self._buf) else 0

    @property
    def supported(self) -> bool:
        """False for format versions newer than 2 (written by a newer Java): the index is then ignored."""
        return self.version in (VERSION_1, VERSION_2) and self._kind in _SUPPORTED

    def _corrupt(self, what: str) -> FileIndexCorruptError:
        return FileIndexCorruptError(f"Corrupt bitmap index in file index {self._path}: {what}", path=self._path)

    # -- head ---------------------------------------------------------------------------------------------

    def _read_key(self, pos: int) -> tuple[object, int]:
        kind = self._kind
        if kind is KeyKind.STRING:
            (n,) = struct.unpack_from(">i", self._buf, pos)
            if n < 0 or pos + 4 + n > len(self._buf):
                raise self._corrupt(f"string key of {n} bytes at {pos}")
            return bytes(self._buf[pos + 4 : pos + 4 + n]), pos + 4 + n
        assert kind is not None
        fmt = _STRUCT[kind]
        (v,) = struct.unpack_from(fmt, self._buf, pos)
        return int(v), pos + struct.calcsize(fmt)

    def _parse(self) -> None:
        if self._parsed:
            return
        try:
            buf = self._buf
            pos = 1
            self.row_count, self.value_count, has_null = struct.unpack_from(">ii?", buf, pos)
            pos += 9
            if self.row_count < 0 or self.value_count < 0:
                raise self._corrupt(f"row count {self.row_count}, value count {self.value_count}")
            self._null: tuple[int, int] | None = None
            if self.version == VERSION_1:
                if has_null:
                    (null_offset,) = struct.unpack_from(">i", buf, pos)
                    pos += 4
                    self._null = (null_offset, -1)
                self._v1_entries: dict[object, int] = {}
                for _ in range(self.value_count):
                    key, pos = self._read_key(pos)
                    (off,) = struct.unpack_from(">i", buf, pos)
                    pos += 4
                    self._v1_entries[key] = off
                self._body = pos
                stored = sorted(o for o in self._v1_entries.values() if o >= 0)
                if self._null is not None and self._null[0] >= 0:
                    stored = sorted([*stored, self._null[0]])
                self._v1_next: dict[int, int | None] = dict(
                    zip(stored, [*stored[1:], None][: len(stored)], strict=True))
            else:
                if has_null:
                    self._null = struct.unpack_from(">ii", buf, pos)
                    pos += 8
                (n_blocks,) = struct.unpack_from(">i", buf, pos)
                pos += 4
                if n_blocks < 0 or n_blocks > len(buf):
                    raise self._corrupt(f"{n_blocks} index blocks")
                block_keys: list[Any] = []
                self._block_offsets: list[int] = []
                for _ in range(n_blocks):
                    key, pos = self._read_key(pos)
                    (off,) = struct.unpack_from(">i", buf, pos)
                    pos += 4
                    block_keys.append(self._sort_key(key))
                    self._block_offsets.append(off)
                self._block_keys = block_keys
                (blocks_len,) = struct.unpack_from(">i", buf, pos)
                pos += 4
                self._blocks_start = pos
                self._body = pos + blocks_len
                if blocks_len < 0 or self._body > len(buf):
                    raise self._corrupt(f"index blocks of {blocks_len} bytes run past the end")
                self._block_cache: dict[int, tuple[list[Any], list[tuple[int, int]]]] = {}
        except struct.error as e:
            raise self._corrupt(f"truncated head ({e})") from e
        self._parsed = True

    def _sort_key(self, key: object) -> Any:
        if self._kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
            assert isinstance(key, int)
            return int(_total_order(np.array([key], dtype=np.int64), self._kind)[0])
        return key

    def _block(self, b: int) -> tuple[list[Any], list[tuple[int, int]]]:
        cached = self._block_cache.get(b)
        if cached is not None:
            return cached
        pos = self._blocks_start + self._block_offsets[b]
        try:
            (count,) = struct.unpack_from(">i", self._buf, pos)
            pos += 4
            if count < 0 or count > len(self._buf):
                raise self._corrupt(f"index block {b} claims {count} entries")
            keys: list[Any] = []
            entries: list[tuple[int, int]] = []
            for _ in range(count):
                key, pos = self._read_key(pos)
                off, length = struct.unpack_from(">ii", self._buf, pos)
                pos += 8
                keys.append(self._sort_key(key))
                entries.append((off, length))
        except struct.error as e:
            raise self._corrupt(f"truncated index block {b} ({e})") from e
        self._block_cache[b] = (keys, entries)
        return keys, entries

    def _find(self, key: object) -> tuple[int, int] | None:
        """(offset, length) of ``key``'s entry (length -1: unknown), None when no row holds it."""
        if self.version == VERSION_1:
            off = self._v1_entries.get(key)
            return None if off is None else (off, -1)
        target = self._sort_key(key)
        b = bisect.bisect_right(self._block_keys, target) - 1
        if b < 0:
            return None
        keys, entries = self._block(b)
        i = bisect.bisect_left(keys, target)
        if i < len(keys) and keys[i] == target:
            return entries[i]
        return None

    def _load(self, offset: int, length: int) -> BitMap:
        if offset < 0:
            return BitMap([-1 - offset])
        start = self._body + offset
        if self.version == VERSION_1:
            nxt = self._v1_next.get(offset)
            length = -1 if nxt is None else nxt - offset
        end = len(self._buf) if length < 0 else start + length
        if start >= len(self._buf) or end > len(self._buf):
            raise self._corrupt(f"bitmap at {offset} (+{length}) lies past the end")
        try:
            return deserialize_bitmap(self._buf[start:end])
        except RoaringFormatError as e:
            raise self._corrupt(f"bitmap at offset {offset}: {e}") from e

    def rows_of(self, key: object) -> BitMap:
        """Rows holding ``key`` (a key as :func:`key_literal` gives it; floats as their Java bits)."""
        if key is NO_KEY:
            return BitMap()
        self._parse()
        cached = self._cache.get(key)
        if cached is None:
            found = self._find(key)
            cached = BitMap() if found is None else self._load(*found)
            self._cache[key] = cached
        return cached

    def decode_all(self) -> dict[object, BitMap]:
        """Every value's rows (values as keys: ints, bytes, float bits); None maps to the null rows if any.

        Reads the whole index: for checks and tools, not for query evaluation.
        """
        self._parse()
        out: dict[object, BitMap] = {}
        if self.version == VERSION_1:
            items = [(k, (o, -1)) for k, o in self._v1_entries.items()]
        else:
            items = []
            for b in range(len(self._block_keys)):
                keys, entries = self._block(b)
                items.extend(zip(keys, entries, strict=True))
        for key, (off, length) in items:
            if self._kind in (KeyKind.FLOAT, KeyKind.DOUBLE) and self.version == VERSION_2:
                key = int(_from_total_order(key, self._kind))
            out[key] = self._load(off, length)
        if self._null is not None:
            out[None] = self.null_rows()
        return out

    def null_rows(self) -> BitMap:
        self._parse()
        if self._null is None:
            return BitMap()
        return self._load(*self._null)

    def non_null_rows(self) -> BitMap:
        self._parse()
        everything = BitMap()
        everything.add_range(0, self.row_count)
        return everything - self.null_rows()

    # -- predicates ---------------------------------------------------------------------------------------

    def _key_of(self, value: object) -> tuple[object, bool] | None:
        """The key of an ``=`` literal and whether its rows are exactly the matches (None: cannot tell)."""
        lit = key_literal(value, self._dt)
        if lit is None:
            return None
        key, exact = equality_key(lit, lossy=lossy_keys(self._dt))
        if key is NO_KEY:
            return key, exact
        if self._kind in (KeyKind.FLOAT, KeyKind.DOUBLE):
            assert isinstance(key, float)
            arr = pa.array([key], pa.float32() if self._kind is KeyKind.FLOAT else pa.float64())
            return int(float_bits(arr, self._kind)[0]), exact
        return key, exact

    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        if not self.supported:
            return FileIndexResult.remain()
        op = leaf.op
        if op is Op.IS_NULL:
            return FileIndexResult.of_rows(self.null_rows(), exact=True)
        if op is Op.IS_NOT_NULL:
            return FileIndexResult.of_rows(self.non_null_rows(), exact=True)
        if op not in (Op.EQ, Op.IN, Op.NE, Op.NOT_IN):
            return FileIndexResult.remain()
        if any(v is None for v in leaf.literals):
            if op in (Op.NE, Op.NOT_IN):
                return FileIndexResult.skip()  # `!= NULL`, `NOT IN (.., NULL)`: never true
        found = [self._key_of(v) for v in leaf.literals if v is not None]
        keys = [f for f in found if f is not None]
        if len(keys) != len(found):
            return FileIndexResult.remain()
        exact = all(e for _, e in keys)
        matched = BitMap.union(*(self.rows_of(k) for k, _ in keys)) if keys else BitMap()
        if op in (Op.EQ, Op.IN):
            return FileIndexResult.of_rows(matched, exact=exact)
        if not exact:
            return FileIndexResult.remain()  # some matched rows may not equal the literal: cannot negate
        return FileIndexResult.of_rows(self.non_null_rows() - matched, exact=True)

