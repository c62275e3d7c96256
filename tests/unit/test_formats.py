"""Round trips and Java-shaped output of the Parquet / ORC / Avro data-file codecs."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from laketide.exceptions import InvalidOptionError, InvalidTypeError, SchemaError
from laketide.format import AVRO_RECORD_NAME, arrow_schema_from_avro, avro_schema, file_format

FORMATS = ["parquet", "orc", "avro"]


def _field(name: str, t: pa.DataType, field_id: int, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _schema(*, with_nanos: bool) -> pa.Schema:
    fields = [
        _field("id", pa.int64(), 0, nullable=False),
        _field("b", pa.bool_(), 1),
        _field("i8", pa.int8(), 2),
        _field("i16", pa.int16(), 3),
        _field("i32", pa.int32(), 4),
        _field("f32", pa.float32(), 5),
        _field("f64", pa.float64(), 6),
        _field("s", pa.string(), 7),
        _field("bin", pa.binary(), 8),
        _field("dec_compact", pa.decimal128(10, 2), 9),
        _field("dec_wide", pa.decimal128(38, 10), 10),
        _field("day", pa.date32(), 11),
        _field("tod", pa.time32("ms"), 12),
        _field("ts3", pa.timestamp("ms"), 13),
        _field("ts6", pa.timestamp("us"), 14),
        _field("ltz3", pa.timestamp("ms", tz="UTC"), 15),
        _field("ltz6", pa.timestamp("us", tz="UTC"), 16),
        _field("arr", pa.list_(pa.field("element", pa.int32())), 17),
        _field("smap", pa.map_(pa.string(), pa.int64()), 18),
        _field("imap", pa.map_(pa.int32(), pa.string()), 19),
        _field("row", pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.string())]), 20),
        _field("rows", pa.list_(pa.field("element", pa.struct([pa.field("z", pa.float64())]))), 21),
    ]
    if with_nanos:
        fields.append(_field("ts9", pa.timestamp("ns"), 22))
    return pa.schema(fields)


def _table(*, with_nanos: bool = False) -> pa.Table:
    schema = _schema(with_nanos=with_nanos)
    rows = [
        {
            "id": 1,
            "b": True,
            "i8": -128,
            "i16": 32767,
            "i32": -(2**31),
            "f32": 1.5,
            "f64": -2.25,
            "s": "héllo \U0001f600",
            "bin": b"\x00\xff",
            "dec_compact": Decimal("12345678.91"),
            "dec_wide": Decimal("-1234567890123456789012345678.0123456789"),
            "day": dt.date(1969, 12, 31),
            "tod": dt.time(23, 59, 59, 999000),
            "ts3": dt.datetime(1969, 7, 20, 20, 17, 40, 123000),
            "ts6": dt.datetime(2024, 2, 29, 12, 0, 0, 123456),
            "ltz3": dt.datetime(2001, 1, 1, 0, 0, 0, 1000, tzinfo=dt.UTC),
            "ltz6": dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
            "arr": [1, None, 3],
            "smap": [("a", 1), ("b", None)],
            "imap": [(1, "one"), (-2, None)],
            "row": {"x": 7, "y": None},
            "rows": [{"z": 0.5}, None, {"z": None}],
            "ts9": 1_700_000_000_123_456_789,
        },
        dict.fromkeys(schema.names) | {"id": 2},
        {
            "id": 3,
            "b": False,
            "i8": 0,
            "i16": 0,
            "i32": 0,
            "f32": 0.0,
            "f64": 0.0,
            "s": "",
            "bin": b"",
            "dec_compact": Decimal("0.00"),
            "dec_wide": Decimal("0E-10"),
            "day": dt.date(2026, 11, 21),
            "tod": dt.time(0),
            "ts3": dt.datetime(1970, 1, 1),
            "ts6": dt.datetime(1970, 1, 1),
            "ltz3": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
            "ltz6": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
            "arr": [],
            "smap": [],
            "imap": [],
            "row": {"x": None, "y": "y"},
            "rows": [],
            "ts9": -1,
        },
    ]
    if not with_nanos:
        for row in rows:
            row.pop("ts9", None)
    return pa.Table.from_pylist(rows, schema=schema)


def _write(fmt: str, table: pa.Table, *, compression: str = "zstd", options: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    file_format(fmt).write(out, table, compression=compression, options=options or {})
    return out.getvalue()


def _read(fmt: str, data: bytes, schema: pa.Schema, **kwargs: object) -> pa.Table:
    batches = list(file_format(fmt).read(io.BytesIO(data), schema=schema, **kwargs))  # type: ignore[arg-type]
    return pa.Table.from_batches(batches, schema=pa.schema([schema.field(n) for n in batches[0].schema.names]))


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_type(fmt: str) -> None:
    table = _table()
    back = _read(fmt, _write(fmt, table), table.schema)
    assert back.to_pylist() == table.to_pylist()
    assert back.schema.equals(table.schema)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_round_trip_nanosecond_timestamps(fmt: str) -> None:
    table = _table(with_nanos=True)
    back = _read(fmt, _write(fmt, table), table.schema)
    assert back.column("ts9").equals(table.column("ts9"))
    assert back.to_pylist() == table.to_pylist()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("compression", ["zstd", "none", "uncompressed"])
def test_compressions_round_trip(fmt: str, compression: str) -> None:
    table = _table().select(["id", "s"])
    assert _read(fmt, _write(fmt, table, compression=compression), table.schema).equals(table)


@pytest.mark.parametrize(("fmt", "compression"), [("parquet", "snappy"), ("parquet", "gzip"), ("parquet", "lz4"),
                                                  ("orc", "snappy"), ("orc", "lz4"), ("orc", "zlib"),
                                                  ("avro", "deflate")])
def test_format_specific_compressions(fmt: str, compression: str) -> None:
    table = _table().select(["id", "s"])
    assert _read(fmt, _write(fmt, table, compression=compression), table.schema).equals(table)


@pytest.mark.parametrize("fmt", FORMATS)
def test_unknown_compression_names_the_option(fmt: str) -> None:
    with pytest.raises(InvalidOptionError, match="file.compression"):
        _write(fmt, _table().select(["id"]), compression="nope")


def test_unknown_format_names_the_option() -> None:
    with pytest.raises(InvalidOptionError, match="file.format"):
        file_format("csv")
    assert file_format("ORC").name == "orc"
    assert file_format("Avro").extension == "avro"


@pytest.mark.parametrize("fmt", FORMATS)
def test_projection_missing_columns_and_batching(fmt: str) -> None:
    table = pa.table({"a": pa.array(range(1000), pa.int64()), "b": [str(i) for i in range(1000)]})
    data = _write(fmt, table)
    codec = file_format(fmt)
    assert codec.read_schema(io.BytesIO(data)).names == ["a", "b"]
    batches = list(codec.read(io.BytesIO(data), columns=["b", "a"], batch_size=300))
    assert all(b.num_rows <= 300 for b in batches)
    got = pa.Table.from_batches(batches)
    assert got.column_names == ["b", "a"]
    assert got.column("a").to_pylist() == list(range(1000))
    with pytest.raises(SchemaError, match="missing"):
        list(codec.read(io.BytesIO(data), columns=["a", "missing"]))
    empty = list(codec.read(io.BytesIO(data), columns=[]))
    assert sum(b.num_rows for b in empty) == 1000


@pytest.mark.parametrize("fmt", FORMATS)
def test_streaming_writer_counts_bytes_and_leaves_stream_open(fmt: str, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.string())])
    path = tmp_path / f"data.{fmt}"
    estimates = []
    small_blocks = {"parquet.block.size": "100000", "orc.stripe.size": "65536"}
    with path.open("wb") as out:
        writer = file_format(fmt).open_writer(out, schema, compression="zstd", options=small_blocks)
        for start in range(0, 200_000, 50_000):
            keys = pa.array(range(start, start + 50_000), pa.int64())
            writer.write_batch(pa.record_batch([keys, pc_str(keys)], schema=schema))
            estimates.append(writer.bytes_written())
        writer.close()
        assert not out.closed
        final = writer.bytes_written()
    size = path.stat().st_size
    assert final == size
    # Buffered rows count at Arrow size until the codec's first flush shows the compression ratio.
    assert all(0 < e <= 2 * size for e in estimates)
    assert estimates[-1] >= size // 2
    for filesystem in (None, pafs.LocalFileSystem()):
        read = pa.Table.from_batches(list(file_format(fmt).read(str(path), filesystem=filesystem)))
        assert read.column("k").to_pylist() == list(range(200_000))


def pc_str(arr: pa.Array) -> pa.Array:
    return arr.cast(pa.string())


@pytest.mark.parametrize("fmt", FORMATS)
def test_writer_rejects_foreign_batch(fmt: str) -> None:
    writer = file_format(fmt).open_writer(io.BytesIO(), pa.schema([("a", pa.int64())]), compression="zstd")
    with pytest.raises(SchemaError):
        writer.write_batch(pa.record_batch({"b": [1]}))


# --- Parquet specifics -------------------------------------------------------------------------------


def test_parquet_has_field_ids_and_java_physical_types() -> None:
    data = _write("parquet", _table())
    pf = pq.ParquetFile(io.BytesIO(data))
    assert pf.metadata.metadata is None or b"ARROW:schema" not in pf.metadata.metadata
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in pf.schema_arrow}
    assert ids == {f.name: i for i, f in enumerate(_schema(with_nanos=False))}
    root = pf.metadata.schema.to_arrow_schema()
    assert root.field("row").type.field("x").name == "x"
    columns = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    assert columns["dec_compact"].physical_type == "INT64"
    assert columns["dec_wide"].physical_type == "FIXED_LEN_BYTE_ARRAY"
    assert columns["dec_wide"].length == 16
    assert columns["i8"].physical_type == "INT32"
    assert columns["tod"].physical_type == "INT32"
    assert "isAdjustedToUTC=true" in str(columns["tod"].logical_type)
    assert columns["ts3"].physical_type == "INT64"
    assert "milliseconds" in str(columns["ts3"].logical_type)
    assert "isAdjustedToUTC=false" in str(columns["ts3"].logical_type)
    assert "microseconds" in str(columns["ts6"].logical_type)
    assert "isAdjustedToUTC=true" in str(columns["ltz6"].logical_type)
    assert pf.metadata.row_group(0).column(0).compression == "ZSTD"


def test_parquet_nanoseconds_are_int96() -> None:
    pf = pq.ParquetFile(io.BytesIO(_write("parquet", _table(with_nanos=True))))
    columns = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    assert columns["ts9"].physical_type == "INT96"


def test_parquet_compression_option_overrides() -> None:
    data = _write("parquet", _table().select(["id"]), options={"parquet.compression": "snappy"})
    assert pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_parquet_wide_time_is_written_as_millis() -> None:
    table = pa.table({"t": pa.array([dt.time(1, 2, 3, 456789)], pa.time64("us"))})
    back = _read("parquet", _write("parquet", table), table.schema)
    assert back.column("t").to_pylist() == [dt.time(1, 2, 3, 456000)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_second_units_round_trip(fmt: str) -> None:
    table = pa.table(
        {
            "ts": pa.array([dt.datetime(1960, 1, 1, 1, 2, 3), None], pa.timestamp("s")),
            "tm": pa.array([dt.time(1, 2, 3), None], pa.time32("s")),
        }
    )
    assert _read(fmt, _write(fmt, table), table.schema).equals(table)


# --- ORC specifics -----------------------------------------------------------------------------------


def test_orc_stores_time_as_int_millis() -> None:
    table = _table().select(["tod"])
    data = _write("orc", table)
    assert file_format("orc").read_schema(io.BytesIO(data)).field("tod").type == pa.int32()
    raw = pa.Table.from_batches(list(file_format("orc").read(io.BytesIO(data))))
    assert raw.column("tod").to_pylist() == [86_399_999, None, 0]


# --- Avro specifics ----------------------------------------------------------------------------------


def _nested_schema() -> pa.Schema:
    inner = pa.struct([pa.field("y", pa.string())])
    return pa.schema(
        [
            pa.field("id", pa.int64(), False),
            pa.field("name", pa.string()),
            pa.field("r", pa.struct([pa.field("x", pa.int32(), False), pa.field("inner", inner)])),
            pa.field("arr", pa.list_(pa.field("element", pa.struct([pa.field("z", pa.int32())])))),
            pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("w", pa.int32())]))),
            pa.field("km", pa.map_(pa.int32(), pa.struct([pa.field("v", pa.string())]))),
            pa.field("d", pa.decimal128(20, 3), False),
            pa.field("t", pa.time32("ms")),
            pa.field("day", pa.date32()),
            pa.field("ts", pa.timestamp("us")),
            pa.field("ltz", pa.timestamp("ms", tz="UTC")),
        ]
    )


def test_avro_schema_has_java_names() -> None:
    ns = "org.apache.paimon.avro.generated."
    table = pa.Table.from_pylist(
        [{"id": 1, "d": Decimal("1.500"), "km": [(1, {"v": "a"})], "m": [("k", {"w": 2})]}], schema=_nested_schema()
    )
    reader = fastavro.reader(io.BytesIO(_write("avro", table)))
    assert reader.metadata["avro.codec"] == "zstandard"
    expected = {
        "type": "record",
        "name": ns + "record",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"], "default": None},
            {
                "name": "r",
                "default": None,
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": ns + "record_r",
                        "fields": [
                            {"name": "x", "type": "int"},
                            {
                                "name": "inner",
                                "default": None,
                                "type": [
                                    "null",
                                    {
                                        "type": "record",
                                        "name": ns + "record_r_inner",
                                        "fields": [{"name": "y", "type": ["null", "string"], "default": None}],
                                    },
                                ],
                            },
                        ],
                    },
                ],
            },
            {
                "name": "arr",
                "default": None,
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": [
                            "null",
                            {
                                "type": "record",
                                "name": ns + "record_arr",
                                "fields": [{"name": "z", "type": ["null", "int"], "default": None}],
                            },
                        ],
                    },
                ],
            },
            {
                "name": "m",
                "default": None,
                "type": [
                    "null",
                    {
                        "type": "map",
                        "values": [
                            "null",
                            {
                                "type": "record",
                                "name": ns + "record_m",
                                "fields": [{"name": "w", "type": ["null", "int"], "default": None}],
                            },
                        ],
                    },
                ],
            },
            {
                "name": "km",
                "default": None,
                "type": [
                    "null",
                    {
                        "type": "array",
                        "logicalType": "map",
                        "items": {
                            "type": "record",
                            "name": ns + "record_km",
                            "fields": [
                                {"name": "key", "type": "int"},
                                {
                                    "name": "value",
                                    "default": None,
                                    "type": [
                                        "null",
                                        {
                                            "type": "record",
                                            "name": ns + "record_km_value",
                                            "fields": [{"name": "v", "type": ["null", "string"], "default": None}],
                                        },
                                    ],
                                },
                            ],
                        },
                    },
                ],
            },
            {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3}},
            {"name": "t", "default": None, "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
            {"name": "day", "default": None, "type": ["null", {"type": "int", "logicalType": "date"}]},
            {"name": "ts", "default": None, "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
            {
                "name": "ltz",
                "default": None,
                "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}],
            },
        ],
    }
    assert reader.writer_schema == expected
    assert list(reader)[0]["km"] == [{"key": 1, "value": {"v": "a"}}]


def test_avro_schema_round_trips_through_arrow() -> None:
    schema = _nested_schema()
    back = arrow_schema_from_avro(fastavro.parse_schema(avro_schema(schema)))
    assert back.equals(schema)
    assert avro_schema(schema)["name"] == AVRO_RECORD_NAME


@pytest.mark.parametrize("t", [pa.timestamp("ns"), pa.time64("us"), pa.uint32()])
def test_avro_rejects_what_java_rejects(t: pa.DataType) -> None:
    with pytest.raises(InvalidTypeError):
        avro_schema(pa.schema([pa.field("c", t)]))


@pytest.mark.parametrize(
    ("compression", "options", "codec"),
    [("none", {}, "null"), ("deflate", {}, "deflate"), ("zstd", {"avro.codec": "deflate"}, "deflate"),
     ("zstd", {"file.compression.zstd-level": "9"}, "zstandard")],
)
def test_avro_codec(compression: str, options: dict[str, str], codec: str) -> None:
    data = _write("avro", _table().select(["id"]), compression=compression, options=options)
    assert fastavro.reader(io.BytesIO(data)).metadata["avro.codec"] == codec


def test_avro_bad_codec_option() -> None:
    with pytest.raises(InvalidOptionError, match="avro.codec"):
        _write("avro", _table().select(["id"]), options={"avro.codec": "lz77"})


def test_avro_reads_non_seekable_stream() -> None:
    table = _table()
    data = _write("avro", table)

    class OneWay(io.RawIOBase):
        def __init__(self) -> None:
            self._inner = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b: bytearray) -> int:  # type: ignore[override]
            chunk = self._inner.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    stream: Any = OneWay()
    batches = list(file_format("avro").read(stream, schema=table.schema, columns=["s", "imap"]))
    assert pa.Table.from_batches(batches).to_pylist() == table.select(["s", "imap"]).to_pylist()


# --- Java-written files ------------------------------------------------------------------------------

JAVA_PK_TABLE = Path(__file__).resolve().parents[3] / "shared" / "compat" / "tables" / "pk_09.db" / "pk_09"


@pytest.mark.skipif(not JAVA_PK_TABLE.exists(), reason="compat tables not present")
def test_reads_java_written_parquet() -> None:
    files = sorted((JAVA_PK_TABLE / "f1=10" / "bucket-0").glob("data-*.parquet"))
    codec = file_format("parquet")
    schema = codec.read_schema(str(files[0]))
    assert schema.names == ["_KEY_f0", "_KEY_f2", "_SEQUENCE_NUMBER", "_VALUE_KIND", "f0", "f1", "f2", "f3"]
    assert schema.field("_VALUE_KIND").type == pa.int8()
    rows = [r for f in files for b in codec.read(str(f), columns=["f3", "f0"]) for r in b.to_pylist()]
    assert {"f3": 11.1, "f0": "Alice"} in rows
