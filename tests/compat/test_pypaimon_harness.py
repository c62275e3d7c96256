"""The pypaimon harness on its own: pypaimon writes, pypaimon reads, through the subprocess driver.

These tests prove the harness (request protocol, Arrow IPC exchange across pyarrow 26 <-> 19, error
reporting) before interop tests rely on it, and pin which types and formats pypaimon 2.1.0 round-trips.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.compat.pypaimon_client import PyPaimon, PyPaimonError

UTC = dt.timezone.utc

# Every scalar Arrow type pypaimon 2.1.0 maps to a Paimon type and reads back as the same Arrow type.
SCALARS = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dec38", pa.decimal128(38, 10)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts_ms", pa.timestamp("ms")),
        ("ts_us", pa.timestamp("us")),
        ("ts_ns", pa.timestamp("ns")),
        ("ltz", pa.timestamp("us", tz="UTC")),
        ("t", pa.time32("ms")),
    ]
)
PAIMON_TYPES = {
    "id": "BIGINT NOT NULL",
    "b": "BOOLEAN",
    "i8": "TINYINT",
    "i16": "SMALLINT",
    "i32": "INT",
    "i64": "BIGINT",
    "f32": "FLOAT",
    "f64": "DOUBLE",
    "dec": "DECIMAL(10, 2)",
    "dec38": "DECIMAL(38, 10)",
    "s": "STRING",
    "bin": "BYTES",
    "d": "DATE",
    "ts_ms": "TIMESTAMP(3)",
    "ts_us": "TIMESTAMP(6)",
    "ts_ns": "TIMESTAMP(9)",
    # Java writes "TIMESTAMP(6) WITH LOCAL TIME ZONE"; its parser accepts both spellings.
    "ltz": "TIMESTAMP_LTZ(6)",
    # pypaimon declares every Arrow time as TIME(0) yet stores and returns milliseconds.
    "t": "TIME(0)",
}
SCALAR_ROWS = [
    {
        "id": 1, "b": True, "i8": -128, "i16": -32768, "i32": -(2**31), "i64": -(2**63),
        "f32": 1.5, "f64": -2.25, "dec": Decimal("-12345678.90"),
        "dec38": Decimal("1234567890123456789012345678.0123456789"), "s": "héllo ✓", "bin": b"\x00\xff",
        "d": dt.date(1, 1, 1), "ts_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
        "ts_us": dt.datetime(2024, 2, 29, 12, 0, 0, 123456), "ts_ns": dt.datetime(2024, 2, 29, 12, 0, 0, 123456),
        "ltz": dt.datetime(2000, 1, 1, tzinfo=UTC), "t": dt.time(23, 59, 59, 999000),
    },
    {
        # Timestamps stay inside int64 nanoseconds (1677..2262): see the ORC test below.
        "id": 2, "b": False, "i8": 127, "i16": 32767, "i32": 2**31 - 1, "i64": 2**63 - 1,
        "f32": float("inf"), "f64": 1e300, "dec": Decimal("99999999.99"), "dec38": Decimal("-0.0000000001"),
        "s": "", "bin": b"", "d": dt.date(9999, 12, 31), "ts_ms": dt.datetime(2262, 4, 11, 0, 0, 0, 1000),
        "ts_us": dt.datetime(1900, 1, 1), "ts_ns": dt.datetime(1970, 1, 1),
        "ltz": dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "t": dt.time(0),
    },
    {"id": 3},  # every nullable column null
]


def _scalars(schema: pa.Schema = SCALARS) -> pa.Table:
    return pa.Table.from_pylist(SCALAR_ROWS, schema=SCALARS).select(schema.names)


def _sorted(table: pa.Table, *keys: str) -> pa.Table:
    return table.sort_by([(key, "ascending") for key in keys or ("id",)])


def _bucket_ids(table_dir: Path) -> dict[str, set[int]]:
    """Ids found in each bucket directory's data files, read straight from disk."""
    return {
        bucket_dir.name: {i for path in bucket_dir.glob("*.parquet") for i in pq.read_table(path)["id"].to_pylist()}
        for bucket_dir in sorted(table_dir.glob("bucket-*"))
    }


@pytest.mark.parametrize(
    ("file_format", "drop"),
    [
        ("parquet", ()),
        ("orc", ()),
        # pypaimon's Avro writer rejects nanosecond timestamps ("Avro does not support ... unit ns").
        ("avro", ("ts_ns",)),
    ],
)
def test_unaware_bucket_table_round_trips_every_scalar_type(
    pypaimon: PyPaimon, tmp_path: Path, file_format: str, drop: tuple[str, ...]
) -> None:
    data = _scalars().drop_columns(list(drop))
    created = pypaimon.create_table(tmp_path, "db.scalars", data.schema, options={"file.format": file_format})
    assert {f["name"]: f["type"] for f in created["fields"]} == {
        name: PAIMON_TYPES[name] for name in data.schema.names
    }

    snapshot_id = pypaimon.write(tmp_path, "db.scalars", data)
    result = pypaimon.read(tmp_path, "db.scalars")

    assert snapshot_id == 1
    assert result.schema == data.schema
    assert _sorted(result).equals(data)


@pytest.mark.xfail(
    strict=True, reason="pypaimon 2.1.0 + ORC wraps timestamps outside int64 nanoseconds (year 9999 -> 1816)"
)
def test_orc_timestamps_beyond_nanosecond_range(pypaimon: PyPaimon, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts_ms", pa.timestamp("ms"))])
    data = pa.Table.from_pylist([{"id": 1, "ts_ms": dt.datetime(9999, 12, 31, 23, 59, 59, 999000)}], schema=schema)
    pypaimon.create_table(tmp_path, "db.orc_ts", schema, options={"file.format": "orc"})
    pypaimon.write(tmp_path, "db.orc_ts", data)

    assert pypaimon.read(tmp_path, "db.orc_ts").equals(data)


def test_partitioned_append_table_time_travel_projection_and_overwrite(
    pypaimon: PyPaimon, tmp_path: Path
) -> None:
    schema = pa.schema([("dt", pa.string()), ("region", pa.int32()), *SCALARS])
    identifier = "db.partitioned"
    pypaimon.create_table(tmp_path, identifier, schema, partition_keys=["dt", "region"])

    def batch(dt_value: str, region: int, id_offset: int) -> pa.Table:
        rows = _scalars().to_pylist()
        for row in rows:
            row.update(dt=dt_value, region=region, id=row["id"] + id_offset)
        return pa.Table.from_pylist(rows, schema=schema)

    first = pa.concat_tables([batch("2024-01-01", 1, 0), batch("2024-01-01", 2, 10)])
    second = pa.concat_tables([batch("2024-01-02", 1, 20), batch("2024-01-01", 1, 30)])
    assert pypaimon.write(tmp_path, identifier, first) == 1
    assert pypaimon.write(tmp_path, identifier, second) == 2

    assert _sorted(pypaimon.read(tmp_path, identifier)).equals(_sorted(pa.concat_tables([first, second])))
    as_of_first = pypaimon.read(tmp_path, identifier, columns=["id", "region", "s"], snapshot_id=1)
    assert _sorted(as_of_first).equals(_sorted(first.select(["id", "region", "s"])))
    table_dir = tmp_path / "db.db" / "partitioned"
    assert {p.relative_to(table_dir).as_posix() for p in table_dir.glob("dt=*/region=*")} == {
        "dt=2024-01-01/region=1",
        "dt=2024-01-01/region=2",
        "dt=2024-01-02/region=1",
    }

    replacement = batch("2024-01-01", 1, 100)
    assert (
        pypaimon.write(tmp_path, identifier, replacement, mode="overwrite", partition={"dt": "2024-01-01", "region": 1})
        == 3
    )
    untouched = pa.concat_tables([batch("2024-01-01", 2, 10), batch("2024-01-02", 1, 20)])
    assert _sorted(pypaimon.read(tmp_path, identifier)).equals(_sorted(pa.concat_tables([untouched, replacement])))
    snapshot = pypaimon.latest_snapshot(tmp_path, identifier)
    assert snapshot is not None
    assert (snapshot["id"], snapshot["commitKind"], snapshot["totalRecordCount"]) == (3, "OVERWRITE", 9)


def test_fixed_bucket_append_table_spreads_rows_over_buckets(pypaimon: PyPaimon, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string())])
    data = pa.table({"id": pa.array(range(40), pa.int64()), "s": [f"row-{i}" for i in range(40)]}, schema=schema)
    created = pypaimon.create_table(tmp_path, "db.bucketed", schema, options={"bucket": "2", "bucket-key": "id"})
    assert created["options"] == {"bucket": "2", "bucket-key": "id"}

    assert pypaimon.write(tmp_path, "db.bucketed", data) == 1

    assert _sorted(pypaimon.read(tmp_path, "db.bucketed")).equals(data)
    buckets = _bucket_ids(tmp_path / "db.db" / "bucketed")
    assert set(buckets) == {"bucket-0", "bucket-1"}
    assert buckets["bucket-0"].isdisjoint(buckets["bucket-1"])
    assert buckets["bucket-0"] | buckets["bucket-1"] == set(range(40))


def test_alter_table_evolves_schema_for_old_files(pypaimon: PyPaimon, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("gone", pa.int32())])
    old = pa.table({"id": [1, 2], "s": ["a", "b"], "gone": [7, 8]}, schema=schema)
    pypaimon.create_table(tmp_path, "db.evolving", schema)
    pypaimon.write(tmp_path, "db.evolving", old)

    altered = pypaimon.alter(
        tmp_path,
        "db.evolving",
        set_options={"snapshot.num-retained.max": "5"},
        add_columns=pa.schema([("extra", pa.float64())]),
        rename_columns={"s": "label"},
        drop_columns=["gone"],
    )

    assert altered["schema_id"] == 1
    assert [(f["id"], f["name"], f["type"]) for f in altered["fields"]] == [
        (0, "id", "BIGINT NOT NULL"),
        (1, "label", "STRING"),
        (3, "extra", "DOUBLE"),
    ]
    expected = pa.table(
        {"id": [1, 2], "label": ["a", "b"], "extra": pa.nulls(2, pa.float64())},
        schema=pa.schema([schema.field("id"), ("label", pa.string()), ("extra", pa.float64())]),
    )
    assert _sorted(pypaimon.read(tmp_path, "db.evolving")).equals(expected)


def test_failures_carry_pypaimon_traceback(pypaimon: PyPaimon, tmp_path: Path) -> None:
    with pytest.raises(PyPaimonError) as caught:
        pypaimon.read(tmp_path, "db.missing")

    assert caught.value.error_type == "TableNotExistException"
    assert "Traceback (most recent call last)" in caught.value.traceback
    assert "db.missing" in str(caught.value)
    assert not caught.value.unsupported
