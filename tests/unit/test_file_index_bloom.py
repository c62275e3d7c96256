"""Bloom filter file index: Java's hashes, Java's sizing, and answers that never skip a present value."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from laketide.exceptions import FileIndexCorruptError, InvalidOptionError
from laketide.expr.predicate import Not, col
from laketide.index.file_index import (
    BLOOM_FILTER,
    BloomFilterReader,
    BloomFilterWriter,
    FileIndexContainer,
    ResultKind,
    bloom_supports,
    evaluate_file_index,
    write_container,
)
from laketide.index.file_index.bloom import bloom_filter_size, parse_bloom_options, value_hashes
from laketide.index.file_index.java import binary_string_hashcodes, wang_hash64, xxh64_binary
from laketide.types import (
    BigIntType,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    TimestampType,
    VarBinaryType,
    VarCharType,
    to_arrow_type,
)

# Computed by Java 17 (FastHash#getLongHash and BloomFilter64's constructor arithmetic).
JAVA_WANG = {
    0: 0,
    1: 6614235796240398542,
    -1: 6614246905173314819,
    123456789: -1864789099685094664,
    -(2**63): 4316648529147585864,
    2**63 - 1: -9102528624353286089,
    1069547520: -5964487987920989368,  # floatToIntBits(1.5f)
    -4611123068473966592: -2601598109836619412,  # doubleToLongBits(-2.25)
    -7: -9040340845809335386,
}
JAVA_SIZES = {
    (1, 0.1): (8, 6), (1, 0.01): (16, 11), (1, 1e-9): (48, 33), (7, 0.1): (40, 4), (7, 0.5): (16, 2),
    (7, 0.999): (8, 1), (100, 0.1): (480, 3), (100, 0.5): (152, 1), (200, 1e-9): (8632, 30),
    (1_000_000, 0.1): (4792536, 3), (1_000_000, 0.01): (9585064, 7), (1_000_000, 0.999): (2088, 1),
    (3, 0.999): (8, 2), (3, 1e-9): (136, 31),
}


def test_wang_hash_matches_java() -> None:
    keys = np.array(list(JAVA_WANG), dtype=np.int64)
    assert wang_hash64(keys).tolist() == list(JAVA_WANG.values())


@pytest.mark.parametrize(("items", "fpp"), list(JAVA_SIZES))
def test_sizing_matches_java(items: int, fpp: float) -> None:
    assert bloom_filter_size(items, fpp) == JAVA_SIZES[(items, fpp)]


def test_xxhash_vectors(compat_dir: Path) -> None:
    lines = (compat_dir / "vectors" / "xxhash.data").read_text().splitlines()
    pairs = [line.rsplit(",", 1) for line in lines if line]
    got = xxh64_binary(pa.array([s for s, _ in pairs])).view(np.uint64)
    assert [int(g) for g in got] == [int(h, 16) for _, h in pairs]
    assert pairs[-1][0] == ""  # the empty string is among them


def test_vectorized_hashes_match_per_value_hashing() -> None:
    rng = random.Random(5)
    values = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 150))) for _ in range(2000)]
    arr = pa.array(values, pa.binary()).slice(3)  # an offset into the buffers
    got = xxh64_binary(arr).view(np.uint64)
    assert [int(g) for g in got] == [xxhash.xxh64_intdigest(v) for v in values[3:]]
    assert binary_string_hashcodes(pa.array([], pa.binary())).size == 0
    with pytest.raises(ValueError):
        xxh64_binary(pa.array([b"a", None]))


def test_supported_types_follow_java() -> None:
    for t in (IntType(), BigIntType(), FloatType(), DoubleType(), VarCharType(10), VarBinaryType(5), BinaryType(3),
              DateType(), TimestampType(3), TimestampType(9)):
        assert bloom_supports(t), t
    for t in (BooleanType(), DecimalType(10, 2)):
        assert not bloom_supports(t), t
        with pytest.raises(InvalidOptionError):
            BloomFilterWriter(t)


def test_options() -> None:
    assert parse_bloom_options({}, column="c") == (1_000_000, 0.1)
    assert parse_bloom_options({"items": "200", "fpp": "0.01"}, column="c") == (200, 0.01)
    for bad in ({"items": "0"}, {"items": "x"}, {"fpp": "1"}, {"fpp": "0"}, {"fpp": "y"}):
        with pytest.raises(InvalidOptionError, match="file-index.bloom-filter.c."):
            parse_bloom_options(bad, column="c")


@pytest.mark.parametrize(
    ("dtype", "values", "absent"),
    [
        (IntType(), [1, -5, None, 2**31 - 1, 7], [3, 8, -(2**31)]),
        (VarCharType(100), ["a", "", "é€", None, "x" * 70], ["b", "é", "x" * 69]),
        (DoubleType(), [1.5, -2.25, float("nan"), None, 1e300], [2.5, -1.0]),
        (TimestampType(9), [dt.datetime(2025, 1, 1, 0, 0, 0, 1), None], [dt.datetime(2025, 1, 1)]),
        (DateType(), [dt.date(1970, 1, 1), dt.date(1900, 1, 1)], [dt.date(2000, 1, 1)]),
    ],
)
def test_never_skips_a_present_value(dtype, values, absent) -> None:  # noqa: ANN001
    w = BloomFilterWriter(dtype, items=100, fpp=0.001)
    arr = pa.array(values, to_arrow_type(dtype))
    w.write(arr.slice(0, 2))
    w.write(arr.slice(2))
    r = BloomFilterReader(w.serialize(), dtype)
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        assert r.evaluate(col("c") == v).kind is ResultKind.REMAIN, v
    for v in absent:
        assert r.evaluate(col("c") == v).kind is ResultKind.SKIP, v
    assert r.evaluate(col("c").isin(absent)).kind is ResultKind.SKIP
    assert r.evaluate(col("c").isin([*absent, values[0]])).kind is ResultKind.REMAIN
    # Only = / IN are answered; nothing else (and no negation) can skip.
    for p in (col("c") != absent[0], col("c").is_null(), col("c") > absent[0], col("c").notin(absent)):
        assert r.evaluate(p).kind is ResultKind.REMAIN
    container = FileIndexContainer(write_container({"c": {BLOOM_FILTER: w.serialize()}}), path="c.index")
    assert evaluate_file_index(container, Not(col("c") == absent[0]), fields={"c": dtype}).result.kind is (
        ResultKind.REMAIN
    )


def test_hashes_are_per_value_not_per_row() -> None:
    arr = pa.array([1, 1, 2, None])
    assert value_hashes(arr, IntType()).tolist() == wang_hash64(np.array([1, 1, 2])).tolist()


def test_corrupt_bloom_bytes() -> None:
    with pytest.raises(FileIndexCorruptError, match="x.index"):
        BloomFilterReader(b"\x00\x00\x00", IntType(), path="x.index")
    with pytest.raises(FileIndexCorruptError):
        BloomFilterReader(b"\x00\x00\x00\x00\xff", IntType(), path="x.index")  # zero hash functions
