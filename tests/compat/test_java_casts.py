"""Tables Java Paimon wrote and then altered with type casts: laketide reads the rows Java reads."""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide import SetOption
from tests.conftest import paimon_cpp_tables

UTC = dt.timezone.utc


def _copy(tmp_path: Path, fmt: str, name: str) -> laketide.Table:
    shutil.copytree(paimon_cpp_tables() / fmt / f"{name}.db", tmp_path / fmt / f"{name}.db")
    return laketide.load_catalog(warehouse=str(tmp_path / fmt)).table(f"{name}.{name}")


def _ts(*args: int) -> dt.datetime:
    return dt.datetime(*args)  # type: ignore[arg-type]


# The README of append_table_alter_table_with_cast: "Recall with schema-1" (f4, key0, key1, f3, f1, f2, f0, f6);
# f4 (TIMESTAMP(9)) as Arrow prints it.
ALTERED_ROWS = [
    ("1970-01-05 00:00:00.000000000", 0, 1, 100, "2024-11-26 06:38:56.001000001", Decimal("0.020"), True, None),
    ("1969-11-18 00:00:00.000000000", 0, 1, 110, "2024-11-26 06:38:56.011000011", Decimal("11.120"), True, None),
    ("1971-03-21 00:00:00.000000000", 0, 1, 120, "2024-11-26 06:38:56.021000021", Decimal("22.220"), False, None),
    ("2024-11-26 06:38:56.054000054", 0, 1, 150, "2024-11-26 15:28:31", Decimal("55.002"), True, 56),
    ("2024-11-26 06:38:56.064000064", 0, 1, 160, "2024-11-26 15:28:41", Decimal("666.012"), False, 66),
    ("2024-11-26 06:38:56.074000074", 0, 1, 170, "2024-11-26 15:28:51", Decimal("-77.022"), True, 76),
    ("1957-11-01 00:00:00.000000000", 1, 1, 130, "2024-11-26 06:38:56.031000031", Decimal("333.320"), False, None),
    ("2091-09-07 00:00:00.000000000", 1, 1, 140, "2024-11-26 06:38:56.041000041", Decimal("444.420"), True, None),
    ("2024-11-26 06:38:56.084000084", 1, 1, 180, "2024-11-26 15:29:01", Decimal("8.032"), True, -86),
    ("2024-11-26 06:38:56.094000094", 1, 1, 190, "I'm strange", Decimal("-999.420"), False, 96),
]


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_append_table_altered_with_casts(tmp_path: Path, fmt: str) -> None:
    table = _copy(tmp_path, fmt, "append_table_alter_table_with_cast")
    got = table.read()
    assert got.schema.names == ["f4", "key0", "key1", "f3", "f1", "f2", "f0", "f6"]
    got = got.set_column(0, "f4", got.column("f4").cast(pa.string()))
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == sorted(ALTERED_ROWS)
    # snapshot 1 is read in schema 0: no cast at all
    first = table.read(snapshot_id=1, columns=["f0", "f3", "f4"]).to_pylist()
    assert sorted(r["f0"] for r in first) == ["100", "110", "120", "130", "140"]
    assert sorted(r["f3"] for r in first) == ["0", "1", "True", "Yes", "nO"]


# append_with_cast_timestamp, read with Java's cast rules (CastExecutors) in the session zone.
CAST_TS_UTC = [
    {"ts_sec": 1, "ts_milli": dt.date(1970, 1, 1), "ts_micro": "1970-01-01 00:00:00.000001",
     "ts_nano": 1, "ts_tz_sec": 2, "ts_tz_milli": dt.date(1970, 1, 1), "ts_tz_micro": "1970-01-01 00:00:00.000002",
     "ts_tz_nano": 2, "int_ts_sec": _ts(1970, 1, 1), "int_ts_tz_micro": dt.datetime(1970, 1, 1, tzinfo=UTC)},
    {"ts_sec": 3, "ts_milli": dt.date(1970, 1, 1), "ts_micro": None,
     "ts_nano": 3, "ts_tz_sec": 4, "ts_tz_milli": dt.date(1970, 1, 1), "ts_tz_micro": "1970-01-01 00:00:00.000004",
     "ts_tz_nano": 4, "int_ts_sec": _ts(1970, 1, 1, 0, 0, 1),
     "int_ts_tz_micro": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)},
    {"ts_sec": 5, "ts_milli": dt.date(1970, 1, 1), "ts_micro": None,
     "ts_nano": None, "ts_tz_sec": 6, "ts_tz_milli": None, "ts_tz_micro": "1970-01-01 00:00:00.000006",
     "ts_tz_nano": None, "int_ts_sec": _ts(1969, 12, 31, 23, 59, 59),
     "int_ts_tz_micro": dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)},
]
EIGHT_HOURS = 8 * 3600 * 10**9
# In Asia/Shanghai: TIMESTAMP -> LTZ places the wall clock in the zone (8 h earlier as an instant), LTZ -> STRING /
# TIMESTAMP show the zone's wall clock, INT -> LTZ keeps the zone's wall clock of the instant (Java's
# NumericPrimitiveToTimestamp), while TIMESTAMP / LTZ -> INT, TIMESTAMP -> DATE and INT -> TIMESTAMP use no zone.
CAST_TS_SHANGHAI = [
    {**CAST_TS_UTC[0], "ts_nano": 1 - EIGHT_HOURS, "ts_tz_micro": "1970-01-01 08:00:00.000002",
     "ts_tz_nano": 2 + EIGHT_HOURS, "int_ts_tz_micro": dt.datetime(1970, 1, 1, 8, tzinfo=UTC)},
    {**CAST_TS_UTC[1], "ts_nano": 3 - EIGHT_HOURS, "ts_tz_micro": "1970-01-01 08:00:00.000004",
     "ts_tz_nano": 4 + EIGHT_HOURS, "int_ts_tz_micro": dt.datetime(1970, 1, 1, 8, 0, 1, tzinfo=UTC)},
    {**CAST_TS_UTC[2], "ts_tz_micro": "1970-01-01 08:00:00.000006",
     "int_ts_tz_micro": dt.datetime(1970, 1, 1, 7, 59, 59, tzinfo=UTC)},
]


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
@pytest.mark.parametrize(("zone", "expected"), [(None, CAST_TS_UTC), ("Asia/Shanghai", CAST_TS_SHANGHAI)])
def test_timestamps_cast_in_the_session_zone(tmp_path: Path, fmt: str, zone: str | None, expected: list[dict]) -> None:
    table = _copy(tmp_path, fmt, "append_with_cast_timestamp")
    if zone is not None:
        table.alter(SetOption("local-time-zone", zone))
    got = table.read()
    rows = got.to_pylist()
    for column in ("ts_nano", "ts_tz_nano"):  # nanoseconds: compare the stored integers
        ints = got.column(column).cast("int64").to_pylist()
        for row, value in zip(rows, ints):
            row[column] = value
    assert sorted(rows, key=lambda r: r["ts_sec"]) == expected


def test_orc_timestamps_written_in_shanghai(tmp_path: Path) -> None:
    table = _copy(tmp_path, "orc", "append_with_multiple_ts_precision_and_timezone")
    got = table.read()
    assert got.column("ts_sec").to_pylist() == [_ts(1970, 1, 1, 0, 0, s) for s in (1, 3, 5)]
    assert got.column("ts_milli").to_pylist() == [_ts(1970, 1, 1, 0, 0, 0, ms * 1000) for ms in (1, 3, 5)]
    assert got.column("ts_micro").to_pylist() == [_ts(1970, 1, 1, 0, 0, 0, 1), None, None]
    assert got.column("ts_nano").cast("int64").to_pylist() == [1, 3, None]
    assert got.column("ts_tz_sec").to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, s, tzinfo=UTC) for s in (2, 4, 6)]
    assert got.column("ts_tz_milli").to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, 0, 2000, tzinfo=UTC),
                                                     dt.datetime(1970, 1, 1, 0, 0, 0, 4000, tzinfo=UTC), None]
    assert got.column("ts_tz_nano").cast("int64").to_pylist() == [2, 4, None]
