"""ORC data files through pyarrow.orc.

Java's OrcTypeUtil maps TIME to an ORC int (milliseconds of the day), TIMESTAMP to ``timestamp`` and
TIMESTAMP_LTZ to ``timestamp with local time zone``; pyarrow writes naive and tz-aware Arrow timestamps the
same way, and has no TIME type for ORC, so TIME columns are written as int32 milliseconds (read them back with
``schema=``). pyarrow's ORC writer cannot attach Java's ``paimon.id`` type attributes (field ids) nor set a zstd
level; Java readers fall back to names for such files.

Reading: ORC timestamps come back as nanoseconds. pyarrow's ORC reader (ORC C++ < 2.3.1) decodes zone-less
timestamps written in a zone other than UTC one second off when the zone conversion flips the sign of the
seconds (Java's ``1970-01-01 00:00:00.001`` written in Asia/Shanghai reads as ``00:00:01.001``); the read corrects
those values from each stripe's writer zone (laketide.format.orc_timestamps), so it returns what Java's reader
returns.

Paimon: org.apache.paimon.format.orc.OrcFileFormat, OrcTypeUtil, OrcWriterFactory
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.orc as orc

from laketide.exceptions import FileIOError, InvalidOptionError, SchemaError, UnsupportedFeatureError
from laketide.format.orc_timestamps import fix_stripe, has_local_timestamps, read_tail, reader_needs_fix
from laketide.format.base import (
    FILE_COMPRESSION_KEY,
    CountingStream,
    FileFormat,
    FormatWriter,
    SizeEstimator,
    cast_batch,
    check_columns,
    describe_source,
    normalize_compression,
    opened_input,
    replace_schema_types,
    walk_types,
)

__all__ = ["OrcFormat", "OrcWriter"]

_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "zlib": "zlib", "none": "uncompressed"}
_UNSUPPORTED_CODECS = {"lzo", "brotli"}
_DEFAULT_STRIPE_BYTES = 16 * 1024 * 1024
_EMPTY: Mapping[str, str] = {}
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def _codec(compression: str, options: Mapping[str, str]) -> str:
    # As in Java, an "orc.compress" table option wins over file.compression.
    key = "orc.compress" if "orc.compress" in options else FILE_COMPRESSION_KEY
    name = normalize_compression(options.get("orc.compress", compression))
    if name in _UNSUPPORTED_CODECS:
        raise UnsupportedFeatureError(f"{key}: pyarrow cannot write {name!r}-compressed ORC")
    codec = _CODECS.get(name)
    if codec is None:
        raise InvalidOptionError(f"{key}: unknown ORC compression {name!r}; expected one of {sorted(_CODECS)}")
    return codec


def _time_as_millis(t: pa.DataType) -> pa.DataType | None:
    return pa.time32("ms") if pa.types.is_time(t) else None


def _time_as_int(t: pa.DataType) -> pa.DataType | None:
    return pa.int32() if pa.types.is_time(t) else None


class OrcWriter(FormatWriter):
    """Streams batches into pyarrow's ORC writer, which cuts stripes itself."""

    kind = "ORC"

    def __init__(self, out: BinaryIO, schema: pa.Schema, *, compression: str, options: Mapping[str, str]) -> None:
        codec = _codec(compression, options)
        self._input_schema = schema
        has_time = any(pa.types.is_time(t) for f in schema for t in walk_types(f.type))
        self._millis_schema = replace_schema_types(schema, _time_as_millis) if has_time else None
        self._file_schema = replace_schema_types(schema, _time_as_int) if has_time else None
        # Smaller stripes than ORC's 64 MiB let bytes_written() learn the compression ratio early enough for
        # rolling at target-file-size; "orc.stripe.size" overrides.
        kwargs: dict[str, Any] = {"compression": codec, "stripe_size": _DEFAULT_STRIPE_BYTES}
        stripe = options.get("orc.stripe.size")
        if stripe is not None:
            try:
                kwargs["stripe_size"] = int(stripe)
            except ValueError as e:
                raise InvalidOptionError(f"orc.stripe.size must be an integer, got {stripe!r}") from e
        self._stream = CountingStream(out)
        self._writer = orc.ORCWriter(self._stream, **kwargs)
        # The "ORC" magic is written with the first stripe data, not when the writer opens.
        self._size = SizeEstimator(self._stream, header_bytes=len(b"ORC"))
        self._closed = False

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._check_batch(batch)
        if batch.num_rows == 0:
            return
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if self._millis_schema is not None and self._file_schema is not None:
            # TIME -> milliseconds of the day -> plain int32, as Java's OrcTypeUtil stores it.
            table = table.cast(self._millis_schema, safe=False).cast(self._file_schema)
        try:
            self._writer.write(table)
        except _ARROW_ERRORS as e:
            raise SchemaError(f"cannot write rows to ORC: {e}") from e
        self._size.add(table.nbytes)
        self._size.observe()

    def _finish(self) -> None:
        self._writer.close()


class OrcFormat(FileFormat):
    """ORC data files."""

    name = "orc"
    writer_class = OrcWriter

    def _cast(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        # TIME was stored as int32 milliseconds: reinterpret as time32[ms] before any other unit.
        if any(pa.types.is_time(t) for f in schema for t in walk_types(f.type)):
            batch = cast_batch(batch, replace_schema_types(schema, _time_as_millis))
        return cast_batch(batch, schema)

    def read_schema(self, source: BinaryIO | str, *, filesystem: Any = None) -> pa.Schema:
        with opened_input(source, filesystem) as stream:
            return self._open(stream, source).schema

    @staticmethod
    def _open(stream: BinaryIO, source: object) -> orc.ORCFile:
        try:
            return orc.ORCFile(stream)
        except (*_ARROW_ERRORS, OSError) as e:
            raise FileIOError(f"not a readable ORC file: {describe_source(source)}: {e}") from e

    @staticmethod
    def _writer_zones(
        stream: BinaryIO, orc_file: orc.ORCFile, names: Sequence[str], source: object
    ) -> tuple[str, ...] | None:
        """Each stripe's writer zone, when zone-less timestamps are read and pyarrow needs the correction."""
        if not any(has_local_timestamps(orc_file.schema.field(n).type) for n in names) or not reader_needs_fix():
            return None
        try:
            return read_tail(stream, what=describe_source(source)).writer_timezones
        except (ValueError, IndexError, OSError) as e:
            raise FileIOError(f"cannot read the stripe footers of ORC file {describe_source(source)}: {e}") from e

    def _read(
        self,
        source: BinaryIO | str,
        *,
        columns: Sequence[str] | None,
        batch_size: int,
        filesystem: Any,
    ) -> Iterator[pa.RecordBatch]:
        with opened_input(source, filesystem) as stream:
            orc_file = self._open(stream, source)
            names = check_columns(orc_file.schema, columns, source=source)
            zones = self._writer_zones(stream, orc_file, names, source)
            for i in range(orc_file.nstripes):
                # An empty projection still has to count rows, so read one column and drop it.
                stripe = orc_file.read_stripe(i, columns=names or orc_file.schema.names[:1])
                stripe = stripe.select(names)
                if zones is not None and i < len(zones):
                    stripe = fix_stripe(stripe, zones[i])
                for offset in range(0, stripe.num_rows, batch_size):
                    yield stripe.slice(offset, batch_size)
