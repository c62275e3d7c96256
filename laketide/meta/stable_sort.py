"""``stable_argsort``: exactly ``np.argsort(values, kind="stable")``, faster for integers over a narrow span.

numpy's stable sort is a radix sort for 8 / 16-bit integers and a timsort (a merge sort) for wider ones. When
each value's offset from the minimum and its position fit in one int64 together (offset in the high bits, row
number in the low ones), the packed values are distinct, so numpy's plain sort (its SIMD quicksort) orders them
exactly as a stable sort orders the values, and the low bits are the permutation: ~3.7x faster than timsort for
125k random int64 ids, 1.4-2.7x faster than the radix passes below (125k-1M int32 hashes and int64 ids). Wider,
an integer array whose span (max - min) fits in 32 bits sorts as an LSD radix sort in two stable passes over its
16-bit digits, each pass one of numpy's radix sorts: the same permutation (a stable sort by the low digit, then a
stable sort by the high digit keeps ties in arrival order), ~2.4x faster for random int32 hashes and ~4.5x for
int64 ids. Timsort stays for input that is already sorted or made of few sorted runs (it merges those in about
one pass) and for wider spans.
"""

from __future__ import annotations

import numpy as np

__all__ = ["stable_argsort"]

# Below this many values the passes' fixed costs are not worth it.
_RADIX_MIN = 2048
# Timsort merges r sorted runs in ~log2(r) passes: with few runs it beats the two radix passes.
_FEW_RUNS = 64


def _digit_passes(span: int) -> int:
    """16-bit digits needed for values in [0, span]."""
    return max(1, (span.bit_length() + 15) // 16)


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """The permutation ``np.argsort(values, kind="stable")`` returns (intp), for any 1-d array."""
    values = np.asarray(values)
    n = len(values)
    if values.ndim != 1 or n < _RADIX_MIN or values.dtype.kind not in "iu" or values.dtype.itemsize <= 2:
        return np.argsort(values, kind="stable")
    descents = int(np.count_nonzero(values[1:] < values[:-1]))
    if descents == 0:
        return np.arange(n, dtype=np.intp)
    if descents < _FEW_RUNS:
        return np.argsort(values, kind="stable")
    lo, hi = int(values.min()), int(values.max())
    position_bits = (n - 1).bit_length()
    if (hi - lo).bit_length() + position_bits <= 63:
        # v - lo in the value's own type wraps at most once (the span fits its width): its unsigned view is exact
        unsigned = np.dtype(f"u{values.dtype.itemsize}")
        packed = (values - values.dtype.type(lo)).astype(unsigned).astype(np.int64) << np.int64(position_bits)
        packed |= np.arange(n, dtype=np.int64)
        packed.sort()
        packed &= np.int64((1 << position_bits) - 1)
        permutation: np.ndarray = packed.astype(np.intp, copy=False)
        return permutation
    if _digit_passes(hi - lo) > 2:
        return np.argsort(values, kind="stable")
    # v - lo fits 32 bits (no overflow in the value's own type: the difference is below the span)
    rel = (values - values.dtype.type(lo)).astype(np.uint32)
    order = np.argsort(rel.astype(np.uint16), kind="stable")  # low digit (astype keeps the low 16 bits)
    if hi - lo < 1 << 16:
        return order
    high = (rel >> 16).astype(np.uint16)
    out: np.ndarray = order[np.argsort(high[order], kind="stable")]
    return out
