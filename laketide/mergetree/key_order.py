"""Ordering and equality of keys as Java's merge compares them, for Arrow columns and for decoded values.

Paimon merges sorted runs with a generated ``RecordComparator`` (KeyComparatorSupplier; the sequence comparator
is generated the same way), not with the BinaryRow bytes. It compares FLOAT and DOUBLE with
``Float.compare`` / ``Double.compare``: every NaN equals every other NaN and sorts above +Infinity, and -0.0 sorts
below 0.0 (two distinct keys). Arrow's and Python's own comparisons disagree on both (NaN != NaN, -0.0 == 0.0),
so floating columns are compared through an integer *rank* with exactly Java's order: the IEEE bits with NaN
made canonical (``doubleToLongBits``), negatives flipped so that signed integer order is numeric order.

Every other key type already compares in Arrow and in Python as Java compares it (strings and binaries as
unsigned bytes, numbers, dates, times, timestamps, decimals by value), so it is used as it is.

Bucket hashing, the dynamic-bucket and cross-partition key indexes keep working on the BinaryRow bytes (Java's
``doubleToRawLongBits``): -0.0 and 0.0 are two keys there too; NaNs with different payloads may hash apart, as
in Java.

Paimon: codegen.ComparatorCodeGenerator / GenerateUtils#generateCompare, utils.KeyComparatorSupplier
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["is_float_column", "order_column", "order_table", "py_key", "needs_rank"]

_DOUBLE_NAN = 0x7FF8000000000000  # Double.doubleToLongBits(NaN)
_FLOAT_NAN = 0x7FC00000  # Float.floatToIntBits(NaN)
_LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)
_LOW31 = np.int32(0x7FFFFFFF)


def is_float_column(t: pa.DataType) -> bool:
    floating: bool = pa.types.is_floating(t)
    return floating


def needs_rank(table: pa.Table | pa.RecordBatch, names: Sequence[str]) -> bool:
    """Whether any of ``names`` is a floating column (compared through its rank)."""
    return any(is_float_column(table.schema.field(n).type) for n in names)


def _rank_array(arr: pa.Array) -> pa.Array:
    if pa.types.is_float16(arr.type):
        arr = arr.cast(pa.float32())
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_float32(arr.type):
        values = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float32)
        bits32 = values.view(np.int32).copy()
        bits32[np.isnan(values)] = _FLOAT_NAN
        rank: np.ndarray = bits32 ^ ((bits32 >> np.int32(31)) & _LOW31)
    else:
        values64 = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits = values64.view(np.int64).copy()
        bits[np.isnan(values64)] = _DOUBLE_NAN
        rank = bits ^ ((bits >> np.int64(63)) & _LOW63)
    return pa.array(rank, mask=None if valid is None else ~valid)


def order_column(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``col`` itself, or for a floating column its rank (int32 / int64) in Java's Float/Double.compare order."""
    if not is_float_column(col.type):
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_rank_array(c) for c in col.chunks], type=pa.int32()
                                if pa.types.is_float32(col.type) or pa.types.is_float16(col.type) else pa.int64())
    return _rank_array(col)


def order_table(table: pa.Table, names: Sequence[str], *, extra: Sequence[str] = ()) -> tuple[pa.Table, list[str]]:
    """A table of ``names`` (floating ones replaced by their rank) plus ``extra`` columns, and its column names.

    The names are positional (``k0``, ``k1``, ...) so they never clash with the caller's columns.
    """
    cols = [order_column(table.column(n)) for n in names] + [table.column(n) for n in extra]
    out_names = [f"k{i}" for i in range(len(cols))]
    return pa.Table.from_arrays(cols, names=out_names), out_names


def _rank_double(v: float) -> int:
    if v != v:
        bits = _DOUBLE_NAN
    else:
        (bits,) = struct.unpack("<q", struct.pack("<d", v))
    return bits ^ ((bits >> 63) & 0x7FFFFFFFFFFFFFFF)


def py_key(values: Sequence[Any]) -> tuple[Any, ...]:
    """A decoded key (BinaryRow min / max key, ``Scalar.as_py()`` values) as a tuple that Python compares in Java's
    order: floats become their rank (float32 values rank like the doubles they widen to: same order)."""
    return tuple(_rank_double(v) if isinstance(v, float) else v for v in values)
