"""Bucket ids computed by Java's FixedBucketRowKeyExtractor (12345 buckets, every column is the bucket key)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from laketide.meta.binary_row import hash_bytes_by_words, serialize_row
from laketide.exceptions import InvalidOptionError
from laketide.meta.bucket import bucket_ids, bucket_of_hash, bucket_of_values
from laketide.types import (
    BYTES,
    STRING,
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    to_arrow_type,
)

NUM_BUCKETS = 12345


def _load(path: Path) -> list[list[Any]]:
    text = path.read_text().rstrip().rstrip(",")
    return json.loads(f"[{text}]")


def _scalar_types(decimals: list[DecimalType]) -> list[DataType]:
    return [
        BooleanType(),
        TinyIntType(),
        SmallIntType(),
        IntType(),
        BigIntType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimestampType(9),
        *decimals,
        STRING,
        BYTES,
    ]


def _column(values: list[Any], t: DataType) -> pa.Array:
    arrow_type = to_arrow_type(t)
    if isinstance(t, DecimalType):
        return pa.array([None if v is None else Decimal(v) for v in values], arrow_type)
    if t == BYTES:
        return pa.array([None if v is None else v.encode() for v in values], arrow_type)
    if isinstance(t, DateType):
        return pa.array(values, pa.int32()).cast(arrow_type)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)) and all(
        v is None or isinstance(v, int) for v in values
    ):
        return pa.array(values, pa.int64()).cast(arrow_type)
    if isinstance(t, (TimestampType, LocalZonedTimestampType)):
        # ISO strings: wall-clock values for TIMESTAMP, UTC instants for TIMESTAMP_LTZ.
        unit_type = pa.timestamp(arrow_type.unit)
        return pa.array(values, pa.string()).cast(unit_type).cast(arrow_type)
    return pa.array(values, arrow_type)


def _batch(rows: list[list[Any]], types: list[DataType]) -> tuple[pa.RecordBatch, np.ndarray]:
    columns = {f"c{i}": _column([r[i] for r in rows], t) for i, t in enumerate(types)}
    expected = np.array([r[-1] for r in rows], dtype=np.int32)
    return pa.record_batch(columns), expected


CASES = {
    "record_for_bucket_id.data": _scalar_types([DecimalType(30, 20)]),
    "record_with_null_for_bucket_id.data": _scalar_types([DecimalType(5, 2), DecimalType(30, 2)]),
    "record_with_timestamp_for_bucket_id.data": [
        TimestampType(0),
        TimestampType(3),
        TimestampType(6),
        TimestampType(9),
        LocalZonedTimestampType(0),
        LocalZonedTimestampType(3),
        LocalZonedTimestampType(6),
        LocalZonedTimestampType(9),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bucket_ids_match_java(compat_dir: Path, name: str) -> None:
    types = CASES[name]
    rows = _load(compat_dir / "vectors" / name)
    assert len(rows) == 5000 and all(len(r) == len(types) + 1 for r in rows)
    batch, expected = _batch(rows, types)

    got = bucket_ids(batch, batch.schema.names, types, NUM_BUCKETS)

    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, f"{mismatches.size} rows differ, first {mismatches[:5].tolist()}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_scalar_path_matches_java_on_first_rows(compat_dir: Path, name: str) -> None:
    types = CASES[name]
    batch, expected = _batch(_load(compat_dir / "vectors" / name)[:200], types)
    hashes = [hash_bytes_by_words(serialize_row(list(row.values()), types)) for row in batch.to_pylist()]
    assert bucket_of_hash(np.array(hashes), NUM_BUCKETS).tolist() == expected.tolist()


def test_pk_09_bucket_key_f2(compat_dir: Path) -> None:
    # pk_09 README: rows with f2 = 1 live in bucket-0, Tony (f2 = 0) in bucket-1, 2 buckets.
    batch = pa.record_batch({"f2": pa.array([1, 0], pa.int32())})
    assert bucket_ids(batch, ["f2"], [IntType(nullable=False)], 2).tolist() == [0, 1]
    assert (compat_dir / "tables" / "pk_09.db" / "pk_09" / "f1=10" / "bucket-1").is_dir()


def test_sliced_chunked_input_matches_whole(compat_dir: Path) -> None:
    types = CASES["record_with_null_for_bucket_id.data"]
    batch, expected = _batch(_load(compat_dir / "vectors" / "record_with_null_for_bucket_id.data")[:900], types)
    table = pa.Table.from_batches([batch.slice(0, 300), batch.slice(300, 250), batch.slice(550)])
    got = bucket_ids(table.slice(7), table.schema.names, types, NUM_BUCKETS)
    assert got.tolist() == expected[7:].tolist()


def test_empty_batch() -> None:
    batch = pa.record_batch({"a": pa.array([], pa.int32())})
    assert bucket_ids(batch, ["a"], [IntType()], 3).tolist() == []




def test_java_remainder_semantics() -> None:
    hashes = np.array([-7, 7, -2**31, 2**31 - 1, 0], dtype=np.int32)
    # Java: -7 % 3 == -1 (truncated), Math.abs -> 1; Python's -7 % 3 would give 2.
    assert bucket_of_hash(hashes, 3).tolist() == [1, 1, 2, 1, 0]
    with pytest.raises(InvalidOptionError):
        bucket_of_hash(hashes, 0)


def test_bucket_of_values_matches_vectorized() -> None:
    types: list[DataType] = [STRING, DecimalType(30, 2), TimestampType(9)]
    values = ["a rather long bucket key", Decimal("-12.34"), None]
    batch = pa.record_batch(
        {"s": pa.array([values[0]]), "d": pa.array([values[1]], pa.decimal128(30, 2)),
         "t": pa.array([None], pa.timestamp("ns"))}
    )
    assert bucket_ids(batch, ["s", "d", "t"], types, 7).tolist() == [bucket_of_values(values, types, num_buckets=7)]
