"""Bit-sliced index: exact row sets for comparisons over integral, decimal, date and timestamp values."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.exceptions import FileIndexCorruptError, FileIndexValueError, InvalidOptionError
from laketide.expr.predicate import Leaf, Op, col
from laketide.index.file_index import BsiIndexReader, BsiIndexWriter, ResultKind, bsi_supports
from laketide.types import (
    BigIntType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    LocalZonedTimestampType,
    TimestampType,
    TimeType,
    VarCharType,
    to_arrow_type,
)

_PY_OPS = {
    Op.EQ: lambda a, b: a == b,
    Op.NE: lambda a, b: a != b,
    Op.LT: lambda a, b: a < b,
    Op.LE: lambda a, b: a <= b,
    Op.GT: lambda a, b: a > b,
    Op.GE: lambda a, b: a >= b,
}


def _reader(dtype: DataType, values: list[object]) -> BsiIndexReader:
    w = BsiIndexWriter(dtype)
    arr = pa.array(values, to_arrow_type(dtype))
    w.write(arr.slice(0, len(values) // 2))
    w.write(arr.slice(len(values) // 2))
    return BsiIndexReader(w.serialize(), dtype)


@settings(max_examples=150)
@given(
    values=st.lists(st.one_of(st.none(), st.integers(-(2**63) + 1, 2**63 - 1), st.integers(-40, 40)), max_size=60),
    literals=st.lists(st.one_of(st.integers(-(2**64), 2**64), st.integers(-45, 45)), min_size=1, max_size=8),
)
def test_comparisons_match_python(values: list[int | None], literals: list[int]) -> None:
    r = _reader(BigIntType(), values)
    for lit in literals:
        for op, f in _PY_OPS.items():
            result = r.evaluate(Leaf(op, "c", (lit,)))
            expected = {i for i, v in enumerate(values) if v is not None and f(v, lit)}
            assert result.exact and set(result.rows or ()) == expected, (op, lit)
    members = literals[:3]
    assert set(r.evaluate(col("c").isin(members)).rows or ()) == {i for i, v in enumerate(values) if v in members}
    assert set(r.evaluate(col("c").notin(members)).rows or ()) == {
        i for i, v in enumerate(values) if v is not None and v not in members
    }
    assert set(r.evaluate(col("c").is_null()).rows or ()) == {i for i, v in enumerate(values) if v is None}


def test_java_layout() -> None:
    # Java's min trackers start at 0: min is always written as 0, max as the largest magnitude.
    w = BsiIndexWriter(IntType())
    w.write(pa.array([5, None, -3, 5, 12], pa.int32()))
    data = w.serialize()
    version, rows, has_positive, pos_version, low, high = struct.unpack_from(">bi?bqq", data)
    assert (version, rows, has_positive, pos_version, low, high) == (1, 5, True, 1, 0, 12)
    only_positive = BsiIndexWriter(IntType())
    only_positive.write(pa.array([1, 2], pa.int32()))
    assert only_positive.serialize().endswith(b"\x00")  # no negative half


def test_types_and_literals() -> None:
    dec = _reader(DecimalType(10, 2), [Decimal("1.25"), Decimal("-3.50"), None, Decimal("7.00")])
    assert set(dec.evaluate(col("c") > Decimal("1.2")).rows or ()) == {0, 3}
    assert set(dec.evaluate(col("c") <= 1).rows or ()) == {1}
    assert dec.evaluate(col("c") == Decimal("1.255")).kind is ResultKind.SKIP  # no value at scale 2 equals it
    days = _reader(DateType(), [dt.date(1969, 12, 31), dt.date(2024, 2, 29), dt.date(1970, 1, 1)])
    assert set(days.evaluate(col("c") < dt.date(1970, 1, 1)).rows or ()) == {0}
    times = _reader(TimeType(), [dt.time(0, 0, 1), dt.time(23, 59, 59, 999000)])
    assert set(times.evaluate(col("c") >= dt.time(12)).rows or ()) == {1}
    ltz = _reader(
        LocalZonedTimestampType(6),
        [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)],
    )
    assert set(ltz.evaluate(col("c") < dt.datetime(2023, 6, 1, tzinfo=dt.timezone.utc)).rows or ()) == {1}
    ms = _reader(TimestampType(3), [dt.datetime(2024, 1, 1, 0, 0, 0, 1000), dt.datetime(2024, 1, 1)])
    # A microsecond literal between two millisecond keys: comparisons stay exact, equality finds nothing.
    lit = dt.datetime(2024, 1, 1, 0, 0, 0, 500)
    assert set(ms.evaluate(col("c") > lit).rows or ()) == {0}
    assert set(ms.evaluate(col("c") <= lit).rows or ()) == {1}
    assert ms.evaluate(col("c") == lit).kind is ResultKind.SKIP
    ints = _reader(IntType(), [1, 2, 3])
    assert set(ints.evaluate(col("c") < 2.5).rows or ()) == {0, 1}
    assert ints.evaluate(col("c") == "x").kind is ResultKind.REMAIN  # a literal the column cannot hold
    assert ints.evaluate(col("c").startswith("x")).kind is ResultKind.REMAIN


def test_unsupported_values_and_types() -> None:
    for dtype in (DoubleType(), VarCharType(3)):
        assert not bsi_supports(dtype)
        with pytest.raises(InvalidOptionError):
            BsiIndexWriter(dtype)
    w = BsiIndexWriter(BigIntType())
    w.write(pa.array([1, -(2**63)], pa.int64()))
    with pytest.raises(FileIndexValueError, match="-9223372036854775808"):
        w.serialize()
    wide = BsiIndexWriter(DecimalType(38, 0))
    with pytest.raises(FileIndexValueError, match="DECIMAL"):
        wide.write(pa.array([Decimal(2**70)], pa.decimal128(38, 0)))


def test_newer_version_is_ignored_and_corrupt_bytes_raise() -> None:
    w = BsiIndexWriter(IntType())
    w.write(pa.array([1, 2, 3], pa.int32()))
    data = bytearray(w.serialize())
    data[0] = 2
    assert BsiIndexReader(bytes(data), IntType()).evaluate(col("c") == 1).kind is ResultKind.REMAIN
    data[0] = 1
    with pytest.raises(FileIndexCorruptError, match="s.index"):
        BsiIndexReader(bytes(data[:-3]), IntType(), path="s.index").evaluate(col("c") == 1)
    data[6 + 1 : 6 + 9] = struct.pack(">q", 99)  # min > max
    with pytest.raises(FileIndexCorruptError, match="s.index"):
        BsiIndexReader(bytes(data), IntType(), path="s.index").evaluate(col("c") == 1)


def test_large_column_slices() -> None:
    rng = np.random.default_rng(9)
    values = rng.integers(-(10**12), 10**12, 100_000)
    r = _reader(BigIntType(), values.tolist())
    lo, hi = -(10**9), 5 * 10**9
    ge = set(r.evaluate(col("c") >= lo).rows or ())
    le = set(r.evaluate(col("c") <= hi).rows or ())
    assert ge & le == set(np.flatnonzero((values >= lo) & (values <= hi)).tolist())
