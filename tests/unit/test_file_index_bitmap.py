"""Bitmap file index (v1 and v2): Java's bytes, exact row sets, lazy block reads, odd keys."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

from laketide.exceptions import FileIndexCorruptError, InvalidOptionError
from laketide.expr.predicate import col
from laketide.index.file_index import BitmapIndexReader, BitmapIndexWriter, ResultKind, bitmap_supports
from laketide.index.file_index.bitmap import parse_bitmap_options
from laketide.index.roaring import (
    serialize_roaring32,
    serialize_roaring32_many,
    serialized_size,
)
from laketide.types import (
    BinaryType,
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarCharType,
    to_arrow_type,
)


def _signed(values: list[int]) -> bytes:
    return bytes(v & 0xFF for v in values)


# Bytes Java's BitmapFileIndex writes, as published in the Paimon C++ port's bitmap index tests
# (TestCompatibleWithJava: "apple, null, apple, null, apple"; TestAllNull: four null ints).
JAVA_APPLE = {
    1: _signed([1, 0, 0, 0, 5, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 5, 97, 112, 112, 108, 101, 0, 0, 0, 20, 58, 48,
                0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 1, 0, 3, 0, 58, 48, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 16,
                0, 0, 0, 0, 0, 2, 0, 4, 0]),
    2: _signed([2, 0, 0, 0, 5, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 5, 97, 112, 112, 108,
                101, 0, 0, 0, 0, 0, 0, 0, 21, 0, 0, 0, 1, 0, 0, 0, 5, 97, 112, 112, 108, 101, 0, 0, 0, 20, 0, 0,
                0, 22, 58, 48, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 1, 0, 3, 0, 58, 48, 0, 0, 1, 0, 0, 0,
                0, 0, 2, 0, 16, 0, 0, 0, 0, 0, 2, 0, 4, 0]),
}
JAVA_ALL_NULL = {
    1: _signed([1, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 59, 48, 0, 0, 1, 0, 0, 3, 0, 1, 0, 0, 0, 3, 0]),
    2: _signed([2, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 59, 48, 0, 0, 1,
                0, 0, 3, 0, 1, 0, 0, 0, 3, 0]),
}


def _write(dtype: DataType, values: list[object], **kw: int) -> bytes:
    w = BitmapIndexWriter(dtype, **kw)
    w.write(pa.array(values, to_arrow_type(dtype)))
    return w.serialize()


@pytest.mark.parametrize("version", [1, 2])
def test_java_bytes(version: int) -> None:
    assert _write(VarCharType(10), ["apple", None, "apple", None, "apple"], version=version) == JAVA_APPLE[version]
    assert _write(IntType(), [None] * 4, version=version) == JAVA_ALL_NULL[version]
    r = BitmapIndexReader(JAVA_ALL_NULL[version], IntType())
    assert set(r.evaluate(col("c").is_null()).rows or ()) == {0, 1, 2, 3}
    assert r.evaluate(col("c").is_not_null()).kind is ResultKind.SKIP
    assert r.evaluate(col("c") == 0).kind is ResultKind.SKIP


def _oracle(values: list[object], p_op: str, lits: list[object]) -> set[int]:
    if p_op == "in":
        return {i for i, v in enumerate(values) if v is not None and v in lits}
    return {i for i, v in enumerate(values) if v is not None and v not in lits}


CASES: list[tuple[DataType, list[object]]] = [
    (IntType(), [3, 1, None, 3, 3, -7, 2**31 - 1, None, 1]),
    (TinyIntType(), [-128, 127, 0, 0, None]),
    (SmallIntType(), [300, -300, 300]),
    (VarCharType(50), ["b", "a", "", "é", "b", None, "a" * 40, ""]),
    (BooleanType(), [True, False, None, True, True]),
    (DoubleType(), [1.5, -2.0, 1.5, 3.25, None, -2.0]),
    (FloatType(), [0.5, 0.25, 0.5]),
    (TimestampType(3), [dt.datetime(2024, 1, 1, 0, 0, 0, 1000), dt.datetime(1960, 1, 1), None]),
]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("block_size", [20, 64, 16 * 1024])
@pytest.mark.parametrize(("dtype", "values"), CASES)
def test_row_sets_are_exact(dtype: DataType, values: list[object], version: int, block_size: int) -> None:
    r = BitmapIndexReader(_write(dtype, values, version=version, index_block_size=block_size), dtype)
    present = [v for v in dict.fromkeys(values) if v is not None]
    for lits in [[v] for v in present] + [present[:2], present[::-1]]:
        eq = r.evaluate(col("c").isin(lits))
        assert eq.kind in (ResultKind.ROWS, ResultKind.SKIP) and eq.exact
        assert set(eq.rows or ()) == _oracle(values, "in", lits)
        ne = r.evaluate(col("c").notin(lits))
        assert ne.exact and set(ne.rows or ()) == _oracle(values, "not in", lits)
    nulls = {i for i, v in enumerate(values) if v is None}
    assert set(r.evaluate(col("c").is_null()).rows or ()) == nulls
    assert set(r.evaluate(col("c").is_not_null()).rows or ()) == set(range(len(values))) - nulls
    assert r.row_count == len(values)
    # A value the file lacks, and comparisons a bitmap does not answer.
    assert r.evaluate(col("c") < present[0]).kind is ResultKind.REMAIN


def test_v2_reads_one_index_block_per_lookup() -> None:
    values = [f"v{i:05d}" for i in range(3000)] * 2
    data = _write(VarCharType(10), values, version=2, index_block_size=256)
    r = BitmapIndexReader(data, VarCharType(10))
    assert set(r.evaluate(col("c") == "v01234").rows or ()) == {1234, 4234}
    assert len(r._block_cache) == 1  # noqa: SLF001 - only the block holding the value was decoded
    assert len(r._block_keys) > 50  # noqa: SLF001
    assert r.evaluate(col("c") == "v99999").kind is ResultKind.SKIP
    assert r.evaluate(col("c") == "a").kind is ResultKind.SKIP  # sorts before every block


def test_single_row_values_need_no_bitmap() -> None:
    # Java stores a value (or null) held by one row as -1 - row instead of a bitmap.
    data = _write(IntType(), [10, 20, None, 20], version=1)
    assert len(data) == 1 + 4 + 4 + 1 + 4 + 2 * 8 + len(serialize_roaring32(np.array([1, 3], np.uint32)))
    r = BitmapIndexReader(data, IntType())
    assert set(r.evaluate(col("c") == 10).rows or ()) == {0}
    assert set(r.evaluate(col("c").is_null()).rows or ()) == {2}


def test_signed_zero_and_nan_are_distinct_keys_but_not_answered() -> None:
    values = [0.0, -0.0, float("nan"), 1.0]
    r = BitmapIndexReader(_write(DoubleType(), values), DoubleType())
    assert len(r.decode_all()) == 4
    for lit in (0.0, -0.0, float("nan")):
        assert r.evaluate(col("c") == lit).kind is ResultKind.REMAIN
    assert set(r.evaluate(col("c") != 1.0).rows or ()) == {0, 1, 2}


def test_nanosecond_timestamps_select_supersets() -> None:
    import pandas as pd

    base = pd.Timestamp("2025-01-01 00:00:00.000001")
    values = [base, base + pd.Timedelta(1, "ns"), base + pd.Timedelta(1, "us")]
    r = BitmapIndexReader(_write(TimestampType(9), values), TimestampType(9))
    eq = r.evaluate(col("c") == base.to_pydatetime())
    assert set(eq.rows or ()) == {0, 1} and not eq.exact  # both share the micros key
    assert r.evaluate(col("c") != base.to_pydatetime()).kind is ResultKind.REMAIN


def test_supported_types_and_options() -> None:
    assert not bitmap_supports(DecimalType(5, 2)) and not bitmap_supports(BinaryType(4))
    with pytest.raises(InvalidOptionError):
        BitmapIndexWriter(DecimalType(5, 2))
    assert parse_bitmap_options({}, column="c") == (2, 16 * 1024)
    assert parse_bitmap_options({"version": "1", "index-block-size": "1 kb"}, column="c") == (1, 1024)
    for bad in ({"version": "3"}, {"version": "x"}, {"index-block-size": "0"}, {"index-block-size": "big"}):
        with pytest.raises(InvalidOptionError, match="file-index.bitmap.c."):
            parse_bitmap_options(bad, column="c")


def test_entry_larger_than_a_block_gets_its_own_block() -> None:
    values = ["x" * 100, "a", "b", "x" * 100, "a"]
    r = BitmapIndexReader(_write(VarCharType(200), values, version=2, index_block_size=16), VarCharType(200))
    assert set(r.evaluate(col("c") == "x" * 100).rows or ()) == {0, 3}
    assert set(r.evaluate(col("c") == "a").rows or ()) == {1, 4}


def test_corrupt_bitmap_index() -> None:
    data = _write(IntType(), [1, 1, 2, 2], version=2)
    with pytest.raises(FileIndexCorruptError, match="b.index"):
        BitmapIndexReader(data[:12], IntType(), path="b.index").evaluate(col("c") == 1)
    broken = bytearray(data)
    broken[-8:] = b"\xff" * 8
    with pytest.raises(FileIndexCorruptError, match="b.index"):
        BitmapIndexReader(bytes(broken), IntType(), path="b.index").evaluate(col("c") == 2)


# ---------------------------------------------------------------------------------------------------------
# Roaring codec helpers


def test_batched_roaring_serialization_equals_one_by_one() -> None:
    rng = np.random.default_rng(3)
    groups = [
        np.array([], np.uint32),
        np.array([7], np.uint32),
        np.arange(100, 5000, dtype=np.uint32),  # one run
        np.unique(rng.integers(0, 70_000, 6000)).astype(np.uint32),  # a bitmap container
        np.array([65535, 65536, 65537], np.uint32),  # a run across containers
        np.unique(rng.integers(0, 2**31 - 1, 50)).astype(np.uint32),
        np.concatenate([np.arange(k, k + 5) for k in range(0, 300_000, 97)]).astype(np.uint32),
    ]
    bounds = np.concatenate([[0], np.cumsum([g.size for g in groups])])
    data, sizes = serialize_roaring32_many(np.concatenate(groups), bounds)
    expected = [serialize_roaring32(g) for g in groups]
    assert data == b"".join(expected) and sizes.tolist() == [len(e) for e in expected]
    at = 0
    for e, g in zip(expected, groups, strict=True):
        assert serialized_size(data, at) == len(e)
        assert BitMap.deserialize(data[at : at + len(e)]) == BitMap(g.tolist())
        at += len(e)


def test_mask_serialization_equals_value_serialization() -> None:
    from laketide.index.roaring import serialize_roaring32_mask

    rng = np.random.default_rng(11)
    masks = [np.zeros(0, bool), np.zeros(70_000, bool), rng.random(200_000) < 0.5, rng.random(140_000) < 0.01]
    runs = np.zeros(300_000, bool)
    runs[5:70_000] = True
    runs[131_000:131_003] = True
    masks.append(runs)
    for m in masks:
        assert serialize_roaring32_mask(m) == serialize_roaring32(np.flatnonzero(m).astype(np.uint32))
