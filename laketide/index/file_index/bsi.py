"""Bit-sliced index (BSI): row bitmaps for ranges of integral, decimal, date, time and timestamp values.

Layout (integers big-endian)::

    version: byte (1) | row count: int
    has positive: bool | [positive BSI]      values >= 0
    has negative: bool | [negative BSI]      |values| of values < 0
    BSI: version: byte (1) | min: long | max: long | existence bitmap | slice count: int | slice bitmaps

Slice i holds the rows whose ``value - min`` has bit i set; there are ``bit_length(max - min)`` slices. Java's
writer always records min 0 (its min trackers start at 0), so this writer does too. Values are longs as
:mod:`laketide.index.file_index.keys` maps them (decimals unscaled, timestamps millis / micros); Java cannot
store Long.MIN_VALUE (its absolute value) and neither can this writer.

Queries follow O'Neil's bit-sliced comparison, after a min/max shortcut, with the sign split as Java does:
``x < -5`` is ``|x| > 5`` among the negatives, ``x >= 3`` is ``x >= 3`` among the positives, and so on.

Paimon: org.apache.paimon.fileindex.bsi.BitSliceIndexBitmapFileIndex, utils.BitSliceIndexRoaringBitmap
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from laketide.exceptions import FileIndexCorruptError, FileIndexValueError, InvalidOptionError
from laketide.expr.predicate import Leaf, Op
from laketide.index.file_index.base import range_step
from laketide.index.file_index.keys import (
    LONG_MIN,
    KeyKind,
    column_array,
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
    serialize_roaring32_mask,
    serialized_size,
)
from laketide.types import DataType

__all__ = ["BSI", "BsiIndexReader", "BsiIndexWriter", "bsi_supports"]

BSI: Final = "bsi"
VERSION_1: Final = 1
OPTION_KEYS: Final[tuple[str, ...]] = ()

_SUPPORTED: Final = frozenset({KeyKind.BYTE, KeyKind.SHORT, KeyKind.INT, KeyKind.LONG, KeyKind.DECIMAL})


def bsi_supports(dt: DataType) -> bool:
    """TINYINT..BIGINT, DECIMAL, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ (Java's BSI value mapper)."""
    return key_kind(dt) in _SUPPORTED


# ---------------------------------------------------------------------------------------------------------
# Writer


def _bsi_bytes(present: np.ndarray, values: np.ndarray) -> bytes:
    """One BSI (min 0) over the rows where ``present`` is set, holding the non-negative ``values`` there."""
    top = int(values[present].max()) if present.any() else 0
    n_slices = top.bit_length()
    u = np.where(present, values, 0).astype(np.uint64)
    slices = [
        serialize_roaring32_mask(((u >> np.uint64(i)) & np.uint64(1)).astype(np.bool_)) for i in range(n_slices)
    ]
    return (
        struct.pack(">bqq", VERSION_1, 0, top)
        + serialize_roaring32_mask(present)
        + struct.pack(">i", n_slices)
        + b"".join(slices)
    )


class BsiIndexWriter:
    """Builds a column's BSI index from its values (given in batches, in row order)."""

    index_type: Final = BSI

    def __init__(self, dt: DataType) -> None:
        if not bsi_supports(dt):
            raise InvalidOptionError(f"a bsi index does not support type {dt}")
        self._dt = dt
        self._keys: list[np.ndarray] = []
        self._valid: list[np.ndarray] = []

    def write(self, values: pa.Array | pa.ChunkedArray) -> None:
        arr = column_array(values)
        if len(arr):
            self._keys.append(long_keys(arr, self._dt))
            self._valid.append(valid_mask(arr))

    def serialize(self) -> bytes:
        keys = np.concatenate(self._keys) if self._keys else np.empty(0, np.int64)
        valid = np.concatenate(self._valid) if self._valid else np.empty(0, np.bool_)
        n = int(keys.size)
        if n > 2**31 - 1:
            raise FileIndexValueError(f"a bsi index holds at most {2**31 - 1} rows, got {n}")
        if bool(np.any(valid & (keys == LONG_MIN))):
            raise FileIndexValueError(f"a bsi index cannot hold {LONG_MIN} (a {self._dt} value), as in Java")
        positive = valid & (keys >= 0)
        negative = valid & (keys < 0)
        out = [struct.pack(">bi", VERSION_1, n)]
        for side, values in ((positive, keys), (negative, -np.where(negative, keys, 0))):
            out.append(struct.pack(">?", bool(side.any())))
            if side.any():
                out.append(_bsi_bytes(side, values))
        return b"".join(out)


# ---------------------------------------------------------------------------------------------------------
# Reader


class _Slices:
    """One half (positive or negative magnitudes) of a BSI, with O'Neil's comparisons on Python ints."""

    def __init__(self, low: int, high: int, ebm: BitMap, slices: list[BitMap]) -> None:
        self.low = low
        self.high = high
        self.ebm = ebm
        self.slices = slices

    @staticmethod
    def empty() -> _Slices:
        return _Slices(0, 0, BitMap(), [])

    def compare(self, op: Op, value: int) -> BitMap:
        """Rows whose value ``<op>`` ``value``; ``op`` is one of = < <= > >=."""
        low, high = self.low, self.high
        if not self.ebm:
            return BitMap()
        everything = self.ebm
        match op:
            case Op.EQ:
                if low == high == value:
                    return BitMap(everything)
                if value < low or value > high:
                    return BitMap()
            case Op.GE:
                if value <= low:
                    return BitMap(everything)
                if value > high:
                    return BitMap()
            case Op.GT:
                if value < low:
                    return BitMap(everything)
                if value >= high:
                    return BitMap()
            case Op.LE:
                if value >= high:
                    return BitMap(everything)
                if value < low:
                    return BitMap()
            case Op.LT:
                if value > high:
                    return BitMap(everything)
                if value <= low:
                    return BitMap()
        return self._oneil(op, value - low)

    def _oneil(self, op: Op, predicate: int) -> BitMap:
        gt = BitMap()
        lt = BitMap()
        eq = BitMap(self.ebm)
        for i in range(len(self.slices) - 1, -1, -1):
            s = self.slices[i]
            if (predicate >> i) & 1:
                lt |= eq - s
                eq &= s
            else:
                gt |= eq & s
                eq -= s
        match op:
            case Op.EQ:
                return eq
            case Op.GT:
                return gt
            case Op.LT:
                return lt
            case Op.LE:
                return lt | eq
            case _:
                return gt | eq


class BsiIndexReader:
    """Reads a BSI index lazily (on the first predicate) and answers comparisons with exact row sets."""

    index_type: Final = BSI

    def __init__(self, data: bytes | memoryview, dt: DataType, *, path: str | None = None) -> None:
        self._buf = memoryview(data)
        self._dt = dt
        self._path = path
        self._parsed = False
        self._positive: _Slices | None = None
        self._negative: _Slices | None = None
        self.row_count = 0
        self.version = self._buf[0] if len(self._buf) else 0

    @property
    def supported(self) -> bool:
        """False for format versions newer than 1 (written by a newer Java): the index is then ignored."""
        return self.version == VERSION_1 and bsi_supports(self._dt)

    def _corrupt(self, what: str) -> FileIndexCorruptError:
        return FileIndexCorruptError(f"Corrupt bsi index in file index {self._path}: {what}", path=self._path)

    def _bitmap(self, pos: int) -> tuple[BitMap, int]:
        size = serialized_size(self._buf, pos)
        return deserialize_bitmap(self._buf[pos : pos + size]), pos + size

    def _half(self, pos: int) -> tuple[_Slices | None, int]:
        (version,) = struct.unpack_from(">b", self._buf, pos)
        if version != VERSION_1:
            return None, pos
        low, high = struct.unpack_from(">qq", self._buf, pos + 1)
        if low < 0 or low > high:
            raise self._corrupt(f"min {low} / max {high}")
        ebm, pos = self._bitmap(pos + 17)
        (count,) = struct.unpack_from(">i", self._buf, pos)
        pos += 4
        if not 0 <= count <= 64:
            raise self._corrupt(f"{count} bit slices")
        slices = []
        for _ in range(count):
            s, pos = self._bitmap(pos)
            slices.append(s)
        return _Slices(low, high, ebm, slices), pos

    def _parse(self) -> bool:
        """Read the index; False when a half has an unknown version (the index is then ignored)."""
        if self._parsed:
            return self._positive is not None and self._negative is not None
        try:
            (self.row_count,) = struct.unpack_from(">i", self._buf, 1)
            if self.row_count < 0:
                raise self._corrupt(f"row count {self.row_count}")
            pos = 5
            halves: list[_Slices | None] = []
            for _ in range(2):
                (present,) = struct.unpack_from(">?", self._buf, pos)
                pos += 1
                half: _Slices | None = _Slices.empty()
                if present:
                    half, pos = self._half(pos)
                    if half is None:
                        break
                halves.append(half)
            while len(halves) < 2:
                halves.append(None)
        except (struct.error, RoaringFormatError) as e:
            raise self._corrupt(str(e)) from e
        self._positive, self._negative = halves
        self._parsed = True
        return self._positive is not None and self._negative is not None

    def non_null_rows(self) -> BitMap:
        assert self._positive is not None and self._negative is not None
        return self._positive.ebm | self._negative.ebm

    def compare(self, op: Op, value: int) -> BitMap:
        """Rows whose value ``<op>`` ``value`` (= < <= > >= !=) over the long domain."""
        pos, neg = self._positive, self._negative
        assert pos is not None and neg is not None
        if op is Op.NE:
            return self.non_null_rows() - self.compare(Op.EQ, value)
        if value < 0:
            magnitude = -value
            match op:
                case Op.EQ:
                    return neg.compare(Op.EQ, magnitude)
                case Op.LT:
                    return neg.compare(Op.GT, magnitude)
                case Op.LE:
                    return neg.compare(Op.GE, magnitude)
                case Op.GT:
                    return pos.ebm | neg.compare(Op.LT, magnitude)
                case _:
                    return pos.ebm | neg.compare(Op.LE, magnitude)
        match op:
            case Op.EQ:
                return pos.compare(Op.EQ, value)
            case Op.LT:
                return pos.compare(Op.LT, value) | neg.ebm
            case Op.LE:
                return pos.compare(Op.LE, value) | neg.ebm
            case Op.GT:
                return pos.compare(Op.GT, value)
            case _:
                return pos.compare(Op.GE, value)

    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        if not self.supported or not self._parse():
            return FileIndexResult.remain()
        op = leaf.op
        if op is Op.IS_NOT_NULL:
            return FileIndexResult.of_rows(self.non_null_rows(), exact=True)
        if op is Op.IS_NULL:
            everything = BitMap()
            everything.add_range(0, self.row_count)
            return FileIndexResult.of_rows(everything - self.non_null_rows(), exact=True)
        if op in (Op.IN, Op.NOT_IN):
            if op is Op.NOT_IN and any(v is None for v in leaf.literals):
                return FileIndexResult.skip()  # `NOT IN (.., NULL)` is never true
            parts = [self._leaf(Op.EQ, v) for v in leaf.literals if v is not None]
            if any(p is None for p in parts):
                return FileIndexResult.remain()
            exact = all(p[1] for p in parts if p is not None)
            matched = BitMap.union(*(p[0] for p in parts if p is not None)) if parts else BitMap()
            if op is Op.IN:
                return FileIndexResult.of_rows(matched, exact=exact)
            if not exact:
                return FileIndexResult.remain()
            return FileIndexResult.of_rows(self.non_null_rows() - matched, exact=True)
        if op not in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE):
            return FileIndexResult.remain()
        if leaf.literal is None:
            return FileIndexResult.skip()  # a comparison with NULL is never true
        found = self._leaf(op, leaf.literal)
        if found is None:
            return FileIndexResult.remain()
        return FileIndexResult.of_rows(found[0], exact=found[1])

    def _leaf(self, op: Op, value: object) -> tuple[BitMap, bool] | None:
        lit = key_literal(value, self._dt)
        if lit is None:
            return None
        step = range_step(op, lit, lossy=lossy_keys(self._dt))
        if step is None:
            return None
        if step.no_key:
            return (BitMap() if step.op is Op.EQ else self.non_null_rows()), True
        return self.compare(step.op, step.bound), step.exact
