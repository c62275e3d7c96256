from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.meta.binary_row import (
    EMPTY_ROW_BYTES,
    deserialize_binary_row,
    deserialize_row,
    fixed_part_size,
    hash_bytes_by_words,
    hash_rows,
    null_bits_size,
    serialize_binary_row,
    serialize_row,
    serialize_rows_arrow,
)
from laketide.types import (
    BYTES,
    STRING,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    VarCharType,
    to_arrow_type,
)

UTC = dt.UTC

# ------------------------------------------------------------------------------------------------
# bytes Java wrote
# ------------------------------------------------------------------------------------------------

PK_09 = ("tables", "pk_09.db", "pk_09")
KEY_TYPES = [STRING.copy(nullable=False), IntType(nullable=False)]  # trimmed primary key (f0, f2)
VALUE_TYPES = [STRING.copy(nullable=False), IntType(nullable=False), IntType(nullable=False), DoubleType()]


def _manifest_entries(compat_dir: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for path in sorted(compat_dir.joinpath(*PK_09, "manifest").glob("manifest-[0-9a-f]*")):
        with path.open("rb") as fh:
            entries.extend(r for r in fastavro.reader(fh) if isinstance(r, dict))
    assert entries
    return entries


def test_known_java_bytes() -> None:
    assert serialize_binary_row([10], [IntType(nullable=False)]) == bytes.fromhex(
        "00000001" + "00" * 8 + "0a" + "00" * 7)
    assert serialize_binary_row(["Alice", 1], KEY_TYPES).hex() == (
        "00000002" + "00" * 8 + "416c696365000085" + "0100000000000000")


def test_pk_09_manifest_rows_round_trip_byte_for_byte(compat_dir: Path) -> None:
    seen_long = False
    for entry in _manifest_entries(compat_dir):
        partition = entry["_PARTITION"]
        assert deserialize_binary_row(partition, [IntType(nullable=False)])[0] in (10, 20)
        assert serialize_binary_row(deserialize_binary_row(partition, [IntType()]), [IntType()]) == partition
        meta = entry["_FILE"]
        for blob, types in [
            (meta["_MIN_KEY"], KEY_TYPES),
            (meta["_MAX_KEY"], KEY_TYPES),
            (meta["_KEY_STATS"]["_MIN_VALUES"], KEY_TYPES),
            (meta["_VALUE_STATS"]["_MIN_VALUES"], VALUE_TYPES),
            (meta["_VALUE_STATS"]["_MAX_VALUES"], VALUE_TYPES),
        ]:
            values = deserialize_binary_row(blob, types)
            assert serialize_binary_row(values, types) == blob
            seen_long |= isinstance(values[0], str) and len(values[0]) > 7
    assert seen_long


def test_pk_09_known_values(compat_dir: Path) -> None:
    rows = {tuple(deserialize_binary_row(e["_FILE"]["_MIN_KEY"], KEY_TYPES)) for e in _manifest_entries(compat_dir)}
    assert ("Alice", 1) in rows and ("Lucy", 1) in rows
    stats = [deserialize_binary_row(e["_FILE"]["_VALUE_STATS"]["_MIN_VALUES"], VALUE_TYPES)
             for e in _manifest_entries(compat_dir)]
    assert ["Alice", 10, 1, 11.0] in stats


def _decimal_vectors(compat_dir: Path) -> list[tuple[str, bytes]]:
    data = (compat_dir / "vectors" / "decimal_bytes.data").read_bytes()
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from(">i", data, i)
        text = data[i + 4 : i + 4 + n].decode()
        i += 4 + n
        (m,) = struct.unpack_from(">i", data, i)
        out.append((text, data[i + 4 : i + 4 + m]))
        i += 4 + m
    return out


def test_non_compact_decimal_bytes_match_java(compat_dir: Path) -> None:
    vectors = _decimal_vectors(compat_dir)
    assert len(vectors) == 2000
    t = DecimalType(29, 29)
    values = [Decimal(f"{text}E-29") for text, _ in vectors]
    for value, (_, java) in zip(values, vectors, strict=True):
        row = serialize_row([value], [t])
        (slot,) = struct.unpack_from("<Q", row, 8)
        offset, size = slot >> 32, slot & 0xFFFFFFFF
        assert (offset, size) == (16, len(java))
        assert row[offset : offset + size] == java and row[offset + size :] == bytes(16 - size)
        assert deserialize_row(row, [t]) == [value]
    batch = pa.record_batch({"d": pa.array(values, pa.decimal128(29, 29))})
    assert serialize_rows_arrow(batch, ["d"], [t]).to_pylist() == [serialize_row([v], [t]) for v in values]


# ------------------------------------------------------------------------------------------------
# layout details
# ------------------------------------------------------------------------------------------------


def test_sizes_and_empty_row() -> None:
    assert [null_bits_size(n) for n in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    assert fixed_part_size(3) == 32
    assert serialize_row([], []) == EMPTY_ROW_BYTES == bytes(8)
    assert serialize_binary_row([], []) == bytes(12)


def test_null_bits_and_zeroed_slots() -> None:
    row = serialize_row([None, 5, None], [IntType(), TinyIntType(), STRING])
    assert row[0] == 0  # RowKind +I
    assert row[1] == 0b101  # bits 8 and 10
    assert row[8:16] == bytes(8) and row[16:24] == b"\x05" + bytes(7) and row[24:32] == bytes(8)
    assert serialize_row([-1], [SmallIntType()])[8:16] == b"\xff\xff" + bytes(6)


def test_null_non_compact_values_still_reserve_var_space() -> None:
    row = serialize_row([None, None, None], [DecimalType(20, 2), TimestampType(9), LocalZonedTimestampType(3)])
    assert len(row) == 8 + 24 + 16 + 8
    assert struct.unpack_from("<QQQ", row, 8) == (32 << 32, 48 << 32, 0)
    assert deserialize_row(row, [DecimalType(20, 2), TimestampType(9), LocalZonedTimestampType(3)]) == [None] * 3


def test_inline_and_out_of_line_strings() -> None:
    seven = serialize_row(["abcdefg"], [STRING])
    assert seven[8:16] == b"abcdefg\x87" and len(seven) == 16
    eight = serialize_row(["abcdefgh", b"\x00" * 9], [STRING, BYTES])
    assert struct.unpack_from("<QQ", eight, 8) == ((24 << 32) | 8, (32 << 32) | 9)
    assert eight[24:32] == b"abcdefgh" and eight[32:48] == bytes(16)
    assert serialize_row([""], [STRING])[8:16] == bytes(7) + b"\x80"
    assert serialize_row(["é"], [CharType(1)])[8:16] == "é".encode() + bytes(5) + b"\x82"


def test_timestamp_layouts() -> None:
    value = pd.Timestamp("1969-12-31 23:59:59.999999123")
    row = serialize_row([value], [TimestampType(9)])
    (slot,) = struct.unpack_from("<Q", row, 8)
    assert slot == (16 << 32) | 999_123  # nano of millisecond, floor semantics
    assert struct.unpack_from("<q", row, 16) == (-1,)
    back = deserialize_row(row, [TimestampType(9)])[0]
    assert isinstance(back, pd.Timestamp) and back == value
    compact = serialize_row([dt.datetime(1970, 1, 1, 0, 0, 1, 2000)], [TimestampType(3)])
    assert struct.unpack_from("<q", compact, 8) == (1002,)
    naive_ltz = serialize_row([dt.datetime(2024, 5, 6, 7, 8, 9)], [LocalZonedTimestampType(3)])
    plus_two = dt.timezone(dt.timedelta(hours=2))
    aware_ltz = serialize_row([dt.datetime(2024, 5, 6, 9, 8, 9, tzinfo=plus_two)], [LocalZonedTimestampType(3)])
    assert naive_ltz == aware_ltz
    assert deserialize_row(naive_ltz, [LocalZonedTimestampType(3)]) == [dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)]


def test_compact_decimal_and_rounding() -> None:
    row = serialize_row([Decimal("-1.25")], [DecimalType(5, 2)])
    assert struct.unpack_from("<q", row, 8) == (-125,)
    dec = [DecimalType(5, 2)]
    assert deserialize_row(serialize_row([Decimal("1.005")], dec), dec) == [Decimal("1.01")]
    assert str(deserialize_row(row, [DecimalType(5, 2)])[0]) == "-1.25"


def test_float_double_date_time() -> None:
    types: list[DataType] = [FloatType(), DoubleType(), DateType(), TimeType(3), BooleanType()]
    values = [1.5, -0.1, dt.date(1969, 12, 31), dt.time(23, 59, 59, 999000), True]
    row = serialize_row(values, types)
    assert row[8:12] == struct.pack("<f", 1.5) and row[16:24] == struct.pack("<d", -0.1)
    assert struct.unpack_from("<i", row, 24) == (-1,) and struct.unpack_from("<i", row, 32) == (86_399_999,)
    assert row[40] == 1
    assert deserialize_row(row, types) == values


@pytest.mark.parametrize(
    ("value", "t"),
    [
        ("x", IntType()),
        (128, TinyIntType()),
        (b"x", STRING),
        ("x", BYTES),
        (Decimal("1000"), DecimalType(3, 0)),
        ("nan?", DecimalType(3, 0)),
        (dt.datetime(2020, 1, 1), DateType()),
        (5, TimestampType(3)),
        (5, TimeType()),
    ],
)
def test_bad_values_raise_schema_error(value: object, t: DataType) -> None:
    with pytest.raises(SchemaError):
        serialize_row([value], [t])


def test_unsupported_and_mismatched_inputs() -> None:
    with pytest.raises(UnsupportedFeatureError):
        serialize_row([[1]], [ArrayType(IntType())])
    with pytest.raises(SchemaError):
        serialize_row([1, 2], [IntType()])
    with pytest.raises(SchemaError):
        deserialize_binary_row(serialize_binary_row([1], [IntType()]), [IntType(), IntType()])
    batch = pa.record_batch({"s": pa.array(["1"]), "i": pa.array([300], pa.int64())})
    with pytest.raises(SchemaError):
        hash_rows(batch, ["s"], [IntType()])
    with pytest.raises(SchemaError):
        hash_rows(batch, ["i"], [TinyIntType()])
    with pytest.raises(SchemaError):
        hash_rows(batch, ["i"], [STRING])


def test_hash_bytes_by_words_known_values() -> None:
    # Bucket placement in Java's pk_09 table (2 buckets): f2 = 1 -> bucket 0, f2 = 0 -> bucket 1.
    assert hash_bytes_by_words(serialize_row([1], [IntType()])) % 2 == 0
    assert abs(hash_bytes_by_words(serialize_row([0], [IntType()]))) % 2 == 1
    assert hash_bytes_by_words(b"") == hash_bytes_by_words(b"", seed=42)
    with pytest.raises(ValueError):
        hash_bytes_by_words(b"abc")


# ------------------------------------------------------------------------------------------------
# property tests
# ------------------------------------------------------------------------------------------------

_PD_NS = st.integers(min_value=-9_000_000_000_000_000_000, max_value=9_000_000_000_000_000_000)


def _datetimes(precision: int) -> st.SearchStrategy[Any]:
    if precision > 6:
        return st.one_of(
            _PD_NS.filter(lambda n: n % 1000 != 0).map(lambda n: pd.Timestamp(n, unit="ns")),
            st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2261, 12, 31)),
        )
    keep = {0: 1_000_000, 1: 1000, 2: 1000, 3: 1000}.get(precision, 1)
    return st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)).map(
        lambda d: d.replace(microsecond=d.microsecond // keep * keep)
    )


def _decimals(t: DecimalType) -> st.SearchStrategy[Decimal]:
    bound = 10**t.precision - 1
    return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{t.scale}"))


def _values(t: DataType) -> st.SearchStrategy[Any]:
    if isinstance(t, BooleanType):
        s: st.SearchStrategy[Any] = st.booleans()
    elif isinstance(t, (TinyIntType, SmallIntType, IntType, BigIntType)):
        bits = {TinyIntType: 8, SmallIntType: 16, IntType: 32, BigIntType: 64}[type(t)]
        s = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif isinstance(t, FloatType):
        s = st.floats(width=32, allow_nan=False)
    elif isinstance(t, DoubleType):
        s = st.floats(allow_nan=False)
    elif isinstance(t, DecimalType):
        s = _decimals(t)
    elif isinstance(t, (CharType, VarCharType)):
        s = st.one_of(st.text(max_size=7), st.text(max_size=40))
    elif isinstance(t, BinaryType) or t == BYTES:
        s = st.one_of(st.binary(max_size=7), st.binary(max_size=40))
    elif isinstance(t, DateType):
        s = st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31))
    elif isinstance(t, TimeType):
        s = st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    elif isinstance(t, TimestampType):
        s = _datetimes(t.precision)
    elif isinstance(t, LocalZonedTimestampType):
        s = _datetimes(t.precision).map(
            lambda d: d.tz_localize("UTC") if isinstance(d, pd.Timestamp) else d.replace(tzinfo=UTC))
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), s)


ALL_TYPES: list[DataType] = [
    BooleanType(), TinyIntType(), SmallIntType(), IntType(), BigIntType(), FloatType(), DoubleType(),
    DecimalType(5, 2), DecimalType(18, 0), DecimalType(19, 4), DecimalType(38, 10), DecimalType(38, 38),
    STRING, CharType(3), BYTES, BinaryType(4), DateType(), TimeType(3),
    TimestampType(0), TimestampType(3), TimestampType(6), TimestampType(9),
    LocalZonedTimestampType(0), LocalZonedTimestampType(3), LocalZonedTimestampType(6), LocalZonedTimestampType(9),
]


@st.composite
def _row(draw: st.DrawFn) -> tuple[list[DataType], list[Any]]:
    types = draw(st.lists(st.sampled_from(ALL_TYPES), min_size=0, max_size=8))
    return types, [draw(_values(t)) for t in types]


@given(_row())
def test_serialize_deserialize_round_trip(row: tuple[list[DataType], list[Any]]) -> None:
    types, values = row
    data = serialize_row(values, types)
    assert len(data) % 8 == 0
    back = deserialize_row(data, types)
    assert back == values
    for got, want in zip(back, values, strict=True):
        assert type(got) is type(want)
        if isinstance(want, dt.datetime):
            assert isinstance(got, dt.datetime) and (got.tzinfo is None) == (want.tzinfo is None)
    assert serialize_row(back, types) == data
    assert deserialize_binary_row(serialize_binary_row(values, types), types) == values


@st.composite
def _batch(draw: st.DrawFn) -> tuple[list[DataType], pa.RecordBatch]:
    types = draw(st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=6))
    n = draw(st.integers(1, 25))
    skip = draw(st.integers(0, 3))
    columns = {}
    for i, t in enumerate(types):
        values = draw(st.lists(_values(t), min_size=n + skip, max_size=n + skip))
        columns[f"c{i}"] = pa.array(values, to_arrow_type(t)).slice(skip)
    return types, pa.record_batch(columns)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_batch())
def test_vectorized_equals_scalar(case: tuple[list[DataType], pa.RecordBatch]) -> None:
    types, batch = case
    names = batch.schema.names
    expected_rows = [serialize_row([r[c] for c in names], types) for r in batch.to_pylist()]
    assert serialize_rows_arrow(batch, names, types).to_pylist() == expected_rows
    expected_hashes = np.array([hash_bytes_by_words(b) for b in expected_rows], dtype=np.int32)
    got = hash_rows(batch, names, types)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected_hashes)
    table = pa.Table.from_batches([batch.slice(0, 1), batch.slice(1)])
    np.testing.assert_array_equal(hash_rows(table, names, types), expected_hashes)


def test_vectorized_long_strings_of_mixed_lengths() -> None:
    values = ["", "a" * 7, "b" * 8, "c" * 1000, None, "d" * 17, "é" * 300]
    batch = pa.record_batch({"s": pa.array(values, pa.large_string()), "i": pa.array(range(7), pa.int32())})
    expected = [hash_bytes_by_words(serialize_row([v, i], [STRING, IntType()])) for i, v in enumerate(values)]
    assert hash_rows(batch, ["s", "i"], [STRING, IntType()]).tolist() == expected
    view = pa.record_batch({"s": pa.array(values, pa.string_view())})
    assert hash_rows(view, ["s"], [STRING]).tolist() == [
        hash_bytes_by_words(serialize_row([v], [STRING])) for v in values]


def _murmur_words_reference(data: bytes, seed: int = 42) -> int:
    """The word loop of Java's MurmurHashUtils.hashBytesByWords in plain Python (laketide's former code)."""
    m32 = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m32

    h = seed
    for (word,) in struct.iter_unpack("<I", data):
        k = rotl((word * 0xCC9E2D51) & m32, 15)
        h ^= (k * 0x1B873593) & m32
        h = (rotl(h, 13) * 5 + 0xE6546B64) & m32
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def test_long_keys_hash_like_the_word_loop() -> None:
    # Random keys of every length class (inline, short, around the numpy / C cut, long), in one batch and alone.
    rng = np.random.default_rng(11)
    lengths = [0, 1, 7, 8, 9, 100, 115, 116, 117, 120, 121, 200, 4999, 5000, *rng.integers(0, 5001, 200).tolist()]
    values = [rng.bytes(int(n)) for n in lengths]
    batch = pa.record_batch({"b": pa.array(values, pa.binary()), "i": pa.array(range(len(values)), pa.int32())})
    for names, types in ((["b"], [BYTES]), (["b", "i"], [BYTES, IntType()]), (["i", "b"], [IntType(), BYTES])):
        rows = serialize_rows_arrow(batch, names, types).to_pylist()
        expected = [_murmur_words_reference(r) for r in rows]
        assert hash_rows(batch, names, types).tolist() == expected
        assert [hash_bytes_by_words(r) for r in rows] == expected
    # Rows of one length (no var part): a wide row of many fixed columns takes the long-row path too.
    wide = pa.record_batch({f"c{i}": pa.array(rng.integers(-9, 9, 50), pa.int64()) for i in range(40)})
    wide_types: list[DataType] = [BigIntType()] * 40
    rows = serialize_rows_arrow(wide, wide.schema.names, wide_types).to_pylist()
    assert hash_rows(wide, wide.schema.names, wide_types).tolist() == [_murmur_words_reference(r) for r in rows]


def test_one_megabyte_key() -> None:
    value = np.random.default_rng(5).bytes(1 << 20)
    batch = pa.record_batch({"s": pa.array([value, b"short"], pa.large_binary())})
    rows = serialize_rows_arrow(batch, ["s"], [BYTES]).to_pylist()
    expected = [_murmur_words_reference(r) for r in rows]  # ~3 s: the word loop this replaced
    assert hash_rows(batch, ["s"], [BYTES]).tolist() == expected
    alone = pa.record_batch({"s": pa.array([value], pa.binary())})
    assert hash_rows(alone, ["s"], [BYTES]).tolist() == expected[:1]
    assert hash_bytes_by_words(rows[0]) == expected[0]


def test_vectorized_accepts_other_arrow_units() -> None:
    # A TIMESTAMP(9) key held in microseconds, a TIME column in seconds, a DATE in date64.
    batch = pa.record_batch(
        {
            "ts": pa.array([dt.datetime(2001, 2, 3, 4, 5, 6, 789123), None], pa.timestamp("us")),
            "t": pa.array([3723, None], pa.time32("s")),
            "d": pa.array([dt.date(2020, 2, 29), None], pa.date64()),
        }
    )
    types: list[DataType] = [TimestampType(9), TimeType(0), DateType()]
    expected = [
        hash_bytes_by_words(
            serialize_row([dt.datetime(2001, 2, 3, 4, 5, 6, 789123), dt.time(1, 2, 3), dt.date(2020, 2, 29)], types)),
        hash_bytes_by_words(serialize_row([None, None, None], types)),
    ]
    assert hash_rows(batch, ["ts", "t", "d"], types).tolist() == expected


def test_empty_batches() -> None:
    types: list[DataType] = [STRING, DecimalType(30, 2)]
    batch = pa.record_batch({"s": pa.array([], pa.string()), "d": pa.array([], pa.decimal128(30, 2))})
    rows = serialize_rows_arrow(batch, ["s", "d"], types)
    assert len(rows) == 0 and rows.to_pylist() == []
    assert hash_rows(batch, ["s", "d"], types).tolist() == []


def test_row_buffers_layout() -> None:
    batch = pa.record_batch({"s": pa.array(["short", "a longer string", None])})
    rows = serialize_rows_arrow(batch, ["s"], [STRING])
    assert rows.offsets.tolist() == [0, 16, 48, 64]
    assert rows[1] == serialize_row(["a longer string"], [STRING])


def test_dictionary_encoded_keys() -> None:
    values = ["a", "a much longer value", None, "a"]
    batch = pa.record_batch({"s": pa.array(values).dictionary_encode()})
    assert hash_rows(batch, ["s"], [STRING]).tolist() == [
        hash_bytes_by_words(serialize_row([v], [STRING])) for v in values]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_batch())
def test_rows_without_nulls_hash_from_their_slots(case: tuple[list[DataType], pa.RecordBatch]) -> None:
    # Null-free rows of fixed-slot fields take the slot path (no row bytes laid out): same hashes as the bytes.
    types, batch = case
    names = batch.schema.names
    keep = np.ones(batch.num_rows, dtype=bool)
    for column in batch.columns:
        keep &= np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    batch = batch.filter(pa.array(keep))
    if batch.num_rows == 0:
        return
    expected = [hash_bytes_by_words(serialize_row([r[c] for c in names], types)) for r in batch.to_pylist()]
    assert hash_rows(batch, names, types).tolist() == expected
