"""Avro data files through fastavro, with the record schema Java's AvroSchemaConverter derives.

Schema (from the Arrow types the types layer produces):

- top-level record ``org.apache.paimon.avro.generated.record``; a ROW field ``f`` of record ``R`` becomes a
  record named ``R_f``; array elements and string-keyed map values keep the enclosing name;
- nullable types as ``["null", T]`` with ``"default": null`` on the field;
- TINYINT / SMALLINT / INT as ``int``, BIGINT ``long``, DECIMAL ``bytes`` + ``decimal``, DATE ``int`` +
  ``date``, TIME(<= 3) ``int`` + ``time-millis``, TIMESTAMP(<= 3 / <= 6) ``long`` + ``timestamp-millis`` /
  ``-micros``, TIMESTAMP_LTZ the ``local-timestamp-*`` variants (Java's choice, kept as is);
  TIMESTAMP(> 6) and TIME(> 3) are rejected, as Java does;
- MAP with a string key as an Avro ``map``; any other key as an ``array`` (logical type ``map``) of records
  ``R`` with fields ``key`` (record name ``R_key`` if it is a row) and ``value`` (``R_value``).

fastavro is row based: each batch goes through ``to_pylist`` (timestamps, dates and times first cast to their
integer encodings, which fastavro writes as they are) and back through ``Table.from_pylist``.

Paimon: org.apache.paimon.format.avro.AvroFileFormat, AvroSchemaConverter
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import fastavro
import pyarrow as pa

from laketide.exceptions import (
    FileIOError,
    InvalidOptionError,
    InvalidTypeError,
    SchemaError,
    UnsupportedFeatureError,
)
from laketide.format.base import (
    FILE_COMPRESSION_KEY,
    CountingStream,
    FileFormat,
    FormatWriter,
    SizeEstimator,
    check_columns,
    describe_source,
    normalize_compression,
    opened_input,
    replace_schema_types,
    zstd_level,
)

__all__ = ["AVRO_RECORD_NAME", "AvroFormat", "AvroWriter", "arrow_schema_from_avro", "avro_schema"]

AVRO_RECORD_NAME = "org.apache.paimon.avro.generated.record"
AVRO_CODEC_KEY = "avro.codec"
# Java's DataFileWriter default sync interval (bytes per block).
_SYNC_INTERVAL = 64000
_AVRO_CODECS = {"null", "deflate", "snappy", "bzip2", "xz", "zstandard"}
_EMPTY: Mapping[str, str] = {}
# Arrow's type for TIMESTAMP_LTZ read from an Avro file; callers wanting another zone pass ``schema=``.
_LTZ_ZONE = "UTC"


# --- Arrow -> Avro schema ----------------------------------------------------------------------------


def avro_schema(schema: pa.Schema, *, record_name: str = AVRO_RECORD_NAME) -> dict[str, Any]:
    """The Avro record schema Java Paimon writes for a row of these Arrow fields."""
    return _record(list(schema), record_name)


def _record(fields: Sequence[pa.Field], name: str) -> dict[str, Any]:
    avro_fields = []
    for field in fields:
        avro_type = _avro_type(field.type, field.nullable, f"{name}_{field.name}")
        entry: dict[str, Any] = {"name": field.name, "type": avro_type}
        if field.nullable:
            entry["default"] = None
        avro_fields.append(entry)
    return {"type": "record", "name": name, "fields": avro_fields}


def _avro_type(t: pa.DataType, nullable: bool, row_name: str) -> Any:
    base = _avro_base_type(t, row_name)
    return ["null", base] if nullable else base


def _avro_base_type(t: pa.DataType, row_name: str) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_signed_integer(t):
        return "long" if t.bit_width == 64 else "int"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return "bytes"
    if pa.types.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise InvalidTypeError(f"Avro cannot store {t}: Paimon's Avro format supports timestamp precision <= 6")
        unit = "micros" if t.unit == "us" else "millis"
        prefix = "timestamp" if t.tz is None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_struct(t):
        return _record([t.field(i) for i in range(t.num_fields)], row_name)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        element = t.value_field
        return {"type": "array", "items": _avro_type(element.type, element.nullable, row_name)}
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        if _is_string(key.type):
            return {"type": "map", "values": _avro_type(item.type, item.nullable, row_name)}
        entry: dict[str, Any] = {
            "type": "record",
            "name": row_name,
            "fields": [
                {"name": "key", "type": _avro_type(key.type, key.nullable, f"{row_name}_key")},
                {"name": "value", "type": _avro_type(item.type, item.nullable, f"{row_name}_value")},
            ],
        }
        if item.nullable:
            entry["fields"][1]["default"] = None
        return {"type": "array", "items": entry, "logicalType": "map"}
    if pa.types.is_time64(t):
        raise InvalidTypeError(f"Avro cannot store {t}: Paimon's Avro format supports TIME precision <= 3")
    raise InvalidTypeError(f"Avro cannot store Arrow type {t}")


def _is_string(t: pa.DataType) -> bool:
    string: bool = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
    return string


# --- Avro -> Arrow schema ----------------------------------------------------------------------------


def arrow_schema_from_avro(avro: Mapping[str, Any]) -> pa.Schema:
    """The Arrow schema for rows of an Avro record schema (as Java's converter maps types back)."""
    named: dict[str, Any] = {}
    if avro.get("type") != "record":
        raise SchemaError(f"an Avro data file must hold records, found {avro.get('type')!r}")
    return pa.schema(_arrow_fields(avro, named))


def _arrow_fields(record: Mapping[str, Any], named: dict[str, Any]) -> list[pa.Field]:
    named[record["name"]] = record
    return [_arrow_field(f["name"], f["type"], named) for f in record["fields"]]


def _arrow_field(name: str, avro: Any, named: dict[str, Any]) -> pa.Field:
    nullable = False
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise UnsupportedFeatureError(f"Avro union {avro} of field {name!r} is not a nullable type")
        nullable = len(branches) < len(avro)
        avro = branches[0]
    return pa.field(name, _arrow_type(avro, named), nullable)


_PRIMITIVES = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}


def _arrow_type(avro: Any, named: dict[str, Any]) -> pa.DataType:
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        if avro in named:
            return _arrow_type(named[avro], named)
        raise SchemaError(f"unknown Avro type {avro!r}")
    kind = avro["type"]
    logical = avro.get("logicalType")
    if kind == "record":
        return pa.struct(_arrow_fields(avro, named))
    if kind == "array":
        items = avro["items"]
        if logical == "map":
            record = named[items] if isinstance(items, str) else items
            if isinstance(record, Mapping) and record.get("type") == "record":
                named[record["name"]] = record
            key, value = (_arrow_field(f["name"], f["type"], named) for f in record["fields"])
            return pa.map_(key.with_nullable(False), value)
        return pa.list_(_arrow_field("element", items, named))
    if kind == "map":
        return pa.map_(pa.field("key", pa.string(), False), _arrow_field("value", avro["values"], named))
    if kind == "enum":
        named[avro["name"]] = avro
        return pa.string()
    if kind == "fixed":
        named[avro["name"]] = avro
        if logical == "decimal":
            return _decimal(avro)
        return pa.binary(avro["size"])
    if logical == "decimal":
        return _decimal(avro)
    temporal = {
        "date": pa.date32(),
        "time-millis": pa.time32("ms"),
        "time-micros": pa.time64("us"),
        "timestamp-millis": pa.timestamp("ms"),
        "timestamp-micros": pa.timestamp("us"),
        "local-timestamp-millis": pa.timestamp("ms", tz=_LTZ_ZONE),
        "local-timestamp-micros": pa.timestamp("us", tz=_LTZ_ZONE),
    }
    if logical in temporal:
        return temporal[logical]
    return _arrow_type(kind, named)


def _decimal(avro: Mapping[str, Any]) -> pa.DataType:
    precision, scale = int(avro["precision"]), int(avro.get("scale", 0))
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


# --- Arrow <-> Python rows ---------------------------------------------------------------------------


def _normalized(t: pa.DataType) -> pa.DataType | None:
    """Units Avro stores: seconds widen to milliseconds; date64 narrows to days."""
    if pa.types.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", tz=t.tz)
    if pa.types.is_time32(t) and t.unit == "s":
        return pa.time32("ms")
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_string_view(t):
        return pa.string()
    return None


def _physical(t: pa.DataType) -> pa.DataType | None:
    """The integer encoding Avro writes for a temporal type (already normalized)."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    return None


_Convert = Callable[[Any], Any]


def _converter(t: pa.DataType, *, to_avro: bool) -> _Convert | None:
    """Per-value fix-up between pyarrow's Python values and fastavro's, or None when nothing changes.

    pyarrow renders a map as a list of (key, value) tuples; fastavro wants a dict for an Avro map and
    ``{"key", "value"}`` records for an array map.
    """
    if pa.types.is_struct(t):
        subs = [(t.field(i).name, _converter(t.field(i).type, to_avro=to_avro)) for i in range(t.num_fields)]
        active = [(n, c) for n, c in subs if c is not None]
        if not active:
            return None

        def struct(value: Any) -> Any:
            if value is None:
                return None
            out = dict(value)
            for name, convert in active:
                out[name] = convert(out[name])
            return out

        return struct
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        element = _converter(t.value_type, to_avro=to_avro)
        if element is None:
            return None
        return lambda value: None if value is None else [element(v) for v in value]
    if pa.types.is_map(t):
        key = _converter(t.key_type, to_avro=to_avro) or _identity
        item = _converter(t.item_type, to_avro=to_avro) or _identity
        if to_avro and _is_string(t.key_type):
            return lambda value: None if value is None else {k: item(v) for k, v in value}
        if to_avro:
            return lambda value: None if value is None else [{"key": key(k), "value": item(v)} for k, v in value]
        if _is_string(t.key_type):
            return lambda value: None if value is None else [(k, item(v)) for k, v in value.items()]
        return lambda value: None if value is None else [(key(e["key"]), item(e["value"])) for e in value]
    return None


def _identity(value: Any) -> Any:
    return value


def _codec(compression: str, options: Mapping[str, str]) -> tuple[str, int | None]:
    if AVRO_CODEC_KEY in options:
        codec = options[AVRO_CODEC_KEY].strip().lower()
        if codec not in _AVRO_CODECS:
            raise InvalidOptionError(
                f"{AVRO_CODEC_KEY}: unknown Avro codec {codec!r}; expected one of {sorted(_AVRO_CODECS)}"
            )
        return codec, None
    name = normalize_compression(compression)
    if name in ("zstd", "zstandard"):
        return "zstandard", zstd_level(options)
    if name == "none":
        return "null", None
    if name in _AVRO_CODECS:
        return name, None
    raise InvalidOptionError(
        f"{FILE_COMPRESSION_KEY}: Avro cannot use compression {compression!r}; "
        "expected zstd, snappy, deflate, bzip2, xz or none"
    )


class AvroWriter(FormatWriter):
    """Writes batches row by row through fastavro, one Avro block per ~64 KB as Java does."""

    kind = "Avro"

    def __init__(self, out: BinaryIO, schema: pa.Schema, *, compression: str, options: Mapping[str, str]) -> None:
        codec, level = _codec(compression, options)
        self._input_schema = schema
        self._normalized = replace_schema_types(schema, _normalized)
        self._physical = replace_schema_types(self._normalized, _physical)
        self._converters = [(f.name, _converter(f.type, to_avro=True)) for f in schema]
        self._converters = [(n, c) for n, c in self._converters if c is not None]
        parsed = fastavro.parse_schema(avro_schema(schema))
        self._stream = CountingStream(out)
        try:
            self._writer = fastavro.write.Writer(
                self._stream, parsed, codec=codec, sync_interval=_SYNC_INTERVAL, compression_level=level
            )
        except ValueError as e:
            # fastavro raises ValueError when the codec's library (cramjam for snappy) is not installed.
            raise UnsupportedFeatureError(f"Avro codec {codec!r} is not available: {e}") from e
        self._size = SizeEstimator(self._stream)
        self._closed = False

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._check_batch(batch)
        if batch.num_rows == 0:
            return
        try:
            physical = batch.cast(self._normalized).cast(self._physical)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"cannot encode rows for Avro: {e}") from e
        rows = physical.to_pylist()
        for name, convert in self._converters:
            for row in rows:
                row[name] = convert(row[name])  # type: ignore[misc]
        write = self._writer.write
        try:
            for row in rows:
                write(row)
        except (ValueError, TypeError) as e:
            raise SchemaError(f"cannot write rows to Avro: {e}") from e
        self._size.add(batch.nbytes)
        self._size.observe()

    def _finish(self) -> None:
        self._writer.flush()


class AvroFormat(FileFormat):
    """Avro data files."""

    name = "avro"
    writer_class = AvroWriter

    def read_schema(self, source: BinaryIO | str, *, filesystem: Any = None) -> pa.Schema:
        with opened_input(source, filesystem) as stream:
            return arrow_schema_from_avro(self._writer_schema(stream, source))

    @staticmethod
    def _writer_schema(stream: BinaryIO, source: object) -> dict[str, Any]:
        try:
            return fastavro.reader(stream).writer_schema  # type: ignore[return-value]
        except (ValueError, EOFError, OSError) as e:
            raise FileIOError(f"not a readable Avro file: {describe_source(source)}: {e}") from e

    def _read(
        self,
        source: BinaryIO | str,
        *,
        columns: Sequence[str] | None,
        batch_size: int,
        filesystem: Any,
    ) -> Iterator[pa.RecordBatch]:
        with opened_input(source, filesystem) as opened:
            stream = opened
            if not (hasattr(stream, "seekable") and stream.seekable()):
                stream = io.BytesIO(stream.read())
            start = stream.tell()
            writer_schema = self._writer_schema(stream, source)
            file_schema = arrow_schema_from_avro(writer_schema)
            names = check_columns(file_schema, columns, source=source)
            logical = pa.schema([file_schema.field(n) for n in names])
            by_name = {f["name"]: f for f in writer_schema["fields"]}
            # Only the projected fields are decoded (Avro schema resolution skips the others).
            reader_schema = {**writer_schema, "fields": [by_name[n] for n in names]}
            converters = [(f.name, _converter(f.type, to_avro=False)) for f in logical]
            active = [(n, c) for n, c in converters if c is not None]
            stream.seek(start)
            rows: list[dict[str, Any]] = []
            for record in fastavro.reader(stream, reader_schema=reader_schema):
                rows.append(record)  # type: ignore[arg-type]
                if len(rows) >= batch_size:
                    yield _to_batch(rows, logical, active)
                    rows = []
            if rows:
                yield _to_batch(rows, logical, active)


def _to_batch(
    rows: list[dict[str, Any]],
    logical: pa.Schema,
    converters: Sequence[tuple[str, _Convert]],
) -> pa.RecordBatch:
    for name, convert in converters:
        for row in rows:
            row[name] = convert(row[name])
    if not logical.names:
        return _empty_batch(len(rows))
    # fastavro hands out date / time / datetime objects (aware for timestamp-*, naive for local-timestamp-*);
    # pyarrow stores both as the same UTC-based integers.
    table = pa.Table.from_pylist(rows, schema=logical)
    return table.combine_chunks().to_batches()[0]


def _empty_batch(num_rows: int) -> pa.RecordBatch:
    """A batch with no columns that still counts ``num_rows`` rows (a projection of no columns)."""
    return pa.RecordBatch.from_arrays([pa.nulls(num_rows)], names=["_"]).select([])
