"""ORC timestamps read as Java's ORC reader returns them.

Files are laid out the way ORC 1.9's Java writer lays them out (``encode_timestamp_file``: seconds rounded toward
zero relative to 2015-01-01 in the writer's zone, trailing-zero nanos, the zone in the stripe footer), plus a real
Java-written file (paimon-cpp's test data). The expected values are the wall-clock times written, except where
ORC itself cannot hold the value (see ``test_the_last_second_before_the_epoch``).
"""

from __future__ import annotations

import datetime as dt
import io

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from laketide.format import file_format
from tests.conftest import paimon_cpp_tables
from laketide.format.orc_timestamps import (
    JavaTimestamp,
    encode_timestamp_file,
    fix_stripe,
    has_local_timestamps,
    read_tail,
    reader_needs_fix,
)

EPOCH = dt.datetime(1970, 1, 1)


def _java(value: dt.datetime) -> JavaTimestamp:
    delta = value - EPOCH
    seconds = delta.days * 86400 + delta.seconds
    return JavaTimestamp(seconds, delta.microseconds * 1000)


def _read(data: bytes) -> list[object]:
    batches = list(file_format("orc").read(io.BytesIO(data)))
    return pa.Table.from_batches(batches).column(0).to_pylist()


VALUES = [
    dt.datetime(1970, 1, 1, 0, 0, 0, 1000),  # the case pyarrow reads as 00:00:01.001 at UTC+8
    dt.datetime(1970, 1, 1, 5, 29, 58, 999000),  # inside Kolkata's +05:30
    dt.datetime(1970, 1, 1, 7, 59, 58, 500000),
    dt.datetime(1969, 12, 31, 19, 0, 0, 1000),  # inside New York's offset on the other side
    dt.datetime(1969, 12, 31, 23, 59, 58, 500000),
    dt.datetime(2014, 12, 31, 23, 59, 59, 1000),  # before ORC's base, after the epoch
    dt.datetime(1910, 1, 1, 0, 0, 0, 123000),
    dt.datetime(2024, 11, 26, 6, 38, 56, 999999),
    dt.datetime(1970, 1, 1),
    None,
]


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "Asia/Kolkata", "America/New_York", "UTC"])
def test_java_written_wall_clock_times_read_back(zone: str) -> None:
    data = encode_timestamp_file([None if v is None else _java(v) for v in VALUES], writer_timezone=zone)
    assert _read(data) == VALUES


def test_nanoseconds_and_instants() -> None:
    values = [JavaTimestamp(0, 1), JavaTimestamp(0, 1_000_001), JavaTimestamp(-1, 999_999_999), None]
    data = encode_timestamp_file(values, writer_timezone="Asia/Shanghai")
    got = [None if v is None else v.value for v in pa.Table.from_batches(
        list(file_format("orc").read(io.BytesIO(data)))).column(0)]
    assert got == [1, 1_000_001, -1, None]
    # timestamp with local time zone columns are stored in UTC: never shifted
    instant = encode_timestamp_file([JavaTimestamp(0, 1_000_000), JavaTimestamp(-2, 500_000_000)],
                                    writer_timezone="Asia/Shanghai", instant=True)
    assert [v.value for v in pa.Table.from_batches(list(file_format("orc").read(io.BytesIO(instant)))).column(0)] == [
        1_000_000, -1_500_000_000]


def test_the_last_second_before_the_epoch() -> None:
    # ORC cannot hold an instant in (-1 s, 0) with a fraction: Java writes 0 s and reads it back one second later.
    # At UTC+8 that instant is 07:59:59.5 on the wall; Java's reader returns 08:00:00.5, and so does laketide.
    data = encode_timestamp_file([_java(dt.datetime(1970, 1, 1, 7, 59, 59, 500000))], writer_timezone="Asia/Shanghai")
    assert _read(data) == [dt.datetime(1970, 1, 1, 8, 0, 0, 500000)]


def test_pyarrow_alone_reads_java_files_one_second_late() -> None:
    data = encode_timestamp_file([_java(dt.datetime(1970, 1, 1, 0, 0, 0, 1000))], writer_timezone="Asia/Shanghai")
    raw = orc.ORCFile(pa.BufferReader(data)).read().column(0)[0].as_py()
    if reader_needs_fix():
        assert raw == dt.datetime(1970, 1, 1, 0, 0, 1, 1000)
    else:  # a pyarrow with ORC-2151 reads it right by itself
        assert raw == dt.datetime(1970, 1, 1, 0, 0, 0, 1000)


def test_real_java_file() -> None:
    table = "append_with_multiple_ts_precision_and_timezone"
    path = (paimon_cpp_tables() / "orc" / f"{table}.db" / table / "bucket-0"
            / "data-3f58c403-1672-49a3-93c0-d90cfff9bd8a-0.orc")
    with open(path, "rb") as f:
        assert read_tail(f).writer_timezones == ("Asia/Shanghai",)
    table = pa.Table.from_batches(list(file_format("orc").read(str(path))))
    assert table.column("ts_milli").to_pylist() == [
        dt.datetime(1970, 1, 1, 0, 0, 0, 1000), dt.datetime(1970, 1, 1, 0, 0, 0, 3000),
        dt.datetime(1970, 1, 1, 0, 0, 0, 5000),
    ]
    assert table.column("ts_sec").to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, s) for s in (1, 3, 5)]
    assert [v.value if v.is_valid else None for v in table.column("ts_nano")] == [1, 3, None]


@pytest.mark.parametrize("compression", ["uncompressed", "zstd", "zlib", "snappy", "lz4"])
def test_tail_of_every_compression(compression: str) -> None:
    rng = np.random.default_rng(7)  # random values: compressed stripes must still fill up
    ints = rng.integers(-(2**40), 2**40, 200_000)
    table = pa.table({"ts": pa.array(ints).cast(pa.timestamp("ms")), "x": ints})
    buf = io.BytesIO()
    orc.write_table(table, buf, compression=compression, stripe_size=64 * 1024)
    f = orc.ORCFile(pa.BufferReader(buf.getvalue()))
    assert f.nstripes > 1
    # pyarrow's writer names GMT; laketide's own files therefore read back exactly
    assert read_tail(io.BytesIO(buf.getvalue())).writer_timezones == ("GMT",) * f.nstripes


def test_laketide_orc_round_trip_keeps_every_timestamp() -> None:
    values = [v for v in VALUES] + [dt.datetime(1969, 12, 31, 23, 59, 59, 999000)]
    schema = pa.schema([
        ("ts", pa.timestamp("us")),
        ("nested", pa.struct([("t", pa.timestamp("ms"))])),
        ("many", pa.list_(pa.timestamp("ns"))),
    ])
    table = pa.table({
        "ts": values,
        "nested": [None if v is None else {"t": v.replace(microsecond=v.microsecond // 1000 * 1000)} for v in values],
        "many": [None if v is None else [v, v] for v in values],
    }, schema=schema)
    out = io.BytesIO()
    file_format("orc").write(out, table, compression="zstd", options={})
    got = pa.Table.from_batches(list(file_format("orc").read(io.BytesIO(out.getvalue()), schema=schema)))
    assert got.to_pylist() == table.to_pylist()


def test_fix_reaches_nested_timestamps() -> None:
    wrong = dt.datetime(1970, 1, 1, 0, 0, 1, 1000)  # what pyarrow makes of Java's 00:00:00.001 at UTC+8
    right = dt.datetime(1970, 1, 1, 0, 0, 0, 1000)
    ts = pa.timestamp("ns")
    batch = pa.RecordBatch.from_pydict({
        "s": pa.array([{"t": wrong}, None], pa.struct([("t", ts)])),
        "l": pa.array([[wrong, None], None], pa.list_(ts)),
        "m": pa.array([[("a", wrong)], None], pa.map_(pa.string(), ts)),
        "z": pa.array([wrong, None], pa.timestamp("ns", tz="UTC")),  # an instant: left alone
    })
    fixed = fix_stripe(batch, "Asia/Shanghai").to_pylist()
    assert fixed[0]["s"] == {"t": right} and fixed[0]["l"] == [right, None] and fixed[0]["m"] == [("a", right)]
    assert fixed[0]["z"] == wrong.replace(tzinfo=dt.timezone.utc)
    assert fixed[1] == {"s": None, "l": None, "m": None, "z": None}
    assert fix_stripe(batch, "GMT") is batch
    assert has_local_timestamps(pa.map_(pa.string(), pa.list_(ts))) and not has_local_timestamps(pa.int64())
