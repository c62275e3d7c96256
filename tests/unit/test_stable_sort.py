"""stable_argsort returns exactly numpy's stable argsort, whatever path it takes (radix passes, timsort, sorted)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.meta.stable_sort import stable_argsort

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _same(values: np.ndarray) -> None:
    got = stable_argsort(values)
    expected = np.argsort(values, kind="stable")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=150, deadline=None)
@given(
    dtype=st.sampled_from(INT_TYPES),
    n=st.sampled_from([0, 1, 2, 2047, 2048, 5000, 20000]),
    span_bits=st.sampled_from([0, 1, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64]),
    shape=st.sampled_from(["random", "sorted", "reversed", "runs", "ties"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_numpy_stable_argsort(dtype: type, n: int, span_bits: int, shape: str, seed: int) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    lo_min, hi_max = int(info.min), int(info.max)
    span = min((1 << span_bits) - 1, hi_max - lo_min)
    lo = pick.randint(lo_min, hi_max - span)  # the window anywhere: negative, around zero, at the top
    offsets = [pick.randint(0, span) for _ in range(n)]
    if shape == "ties":
        offsets = [offsets[i % 37] for i in rng.permutation(n)] if n else offsets
    values = np.array([lo + o for o in offsets], dtype=dtype)
    if shape == "sorted":
        values = np.sort(values)
    elif shape == "reversed":
        values = np.sort(values)[::-1].copy()
    elif shape == "runs":
        values = np.concatenate([np.sort(part) for part in np.array_split(values, 7)]) if n else values
    _same(values)


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_extremes_of_the_type(dtype: type) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    values = rng.choice(np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype), size=10_000)
    _same(values)


@pytest.mark.parametrize("span", [(1 << 16) - 1, 1 << 16, (1 << 32) - 1, 1 << 32])
def test_spans_around_digit_boundaries(span: int) -> None:
    rng = np.random.default_rng(span % 1000)
    values = rng.integers(-5, span - 5, size=30_000, endpoint=True, dtype=np.int64)
    values[0], values[1] = -5, span - 5  # the whole span is present
    _same(values)


def test_random_int32_hashes_and_int64_ids() -> None:
    rng = np.random.default_rng(3)
    _same(rng.integers(-(2**31), 2**31, 100_000).astype(np.int32))
    _same(rng.permutation(100_000).astype(np.int64) + 10**15)


def test_other_dtypes_and_shapes_fall_back() -> None:
    rng = np.random.default_rng(4)
    _same(rng.random(5000))
    _same(rng.integers(0, 2, 5000).astype(bool))
    _same(np.zeros(0, np.int64))
    matrix = rng.integers(0, 100, (50, 60))
    np.testing.assert_array_equal(stable_argsort(matrix), np.argsort(matrix, kind="stable"))


@pytest.mark.parametrize("span_bits", [45, 46, 47])
@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_packed_sort_at_its_width_limit(span_bits: int, dtype: type) -> None:
    """100k rows need 17 position bits: a span of 46 bits is the widest packed into one int64 with them (ties kept
    in arrival order), 47 takes the radix / timsort paths."""
    rng = np.random.default_rng(span_bits)
    base = 2**63 - 2**47 if dtype is np.uint64 else -(2**46)
    offsets = rng.integers(0, 2**span_bits, size=100_000, dtype=np.int64)
    offsets[:50] = offsets[50:100]  # ties
    offsets[0], offsets[1] = 0, 2**span_bits - 1
    values = (np.array(offsets, dtype=np.uint64) + np.uint64(base)) if dtype is np.uint64 else offsets + base
    _same(values.astype(dtype))
