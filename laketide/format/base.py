"""The data-file codec interface shared by Parquet, ORC and Avro.

A :class:`FileFormat` turns Arrow data into the bytes of one data file and back. It knows nothing about
Paimon metadata: the caller owns file naming, rolling at ``target-file-size`` and statistics.

Paimon: org.apache.paimon.format.FileFormat, FormatWriter, FormatReaderFactory
"""

from __future__ import annotations

import io
from contextlib import contextmanager
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, BinaryIO, ClassVar

import numpy as np
import pyarrow as pa

from laketide.exceptions import FileIOError, InvalidOptionError, SchemaError
from laketide.expr import FieldStats

__all__ = [
    "ColumnBounds",
    "FileFormat",
    "FormatWriter",
    "file_format",
    "normalize_compression",
    "zstd_level",
]

FILE_FORMAT_KEY = "file.format"
FILE_COMPRESSION_KEY = "file.compression"
ZSTD_LEVEL_KEY = "file.compression.zstd-level"

_EMPTY: Mapping[str, str] = {}


def normalize_compression(name: str) -> str:
    """Lower-cases a compression name and folds Paimon's spellings of "no compression" into ``"none"``."""
    lowered = name.strip().lower()
    if lowered in ("none", "uncompressed", "null", ""):
        return "none"
    return lowered


def zstd_level(options: Mapping[str, str]) -> int:
    """The zstd level from ``file.compression.zstd-level`` (Paimon's default is 1)."""
    raw = options.get(ZSTD_LEVEL_KEY)
    if raw is None:
        return 1
    try:
        return int(raw)
    except ValueError as e:
        raise InvalidOptionError(f"{ZSTD_LEVEL_KEY} must be an integer, got {raw!r}") from e


@dataclass(frozen=True, slots=True)
class ColumnBounds:
    """Min, max (None when there is no non-null value) and null count of one column of a written file.

    ``complete`` is False when a part of the file holding non-null values has no bounds (Parquet leaves them
    out of a row group whose values exceed its statistics size limit): the caller computes them itself.
    """

    min: Any
    max: Any
    null_count: int
    complete: bool


class FormatWriter(ABC):
    """Streams record batches into one open data file.

    Subclasses set ``_stream`` (a CountingStream), ``_size`` (a SizeEstimator), ``_input_schema`` and
    ``_closed``, and implement ``write_batch`` and ``_finish``.
    """

    kind: ClassVar[str] = "data"
    _stream: Any
    _size: SizeEstimator
    _input_schema: pa.Schema
    _closed: bool

    @abstractmethod
    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Appends rows; their schema must equal the writer's schema."""

    @abstractmethod
    def _finish(self) -> None:
        """Writes what is still buffered and the file's footer."""

    def _check_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        if self._closed:
            raise ValueError(f"{self.kind} writer is closed")
        if not batch.schema.equals(self._input_schema, check_metadata=False):
            raise SchemaError(f"batch schema {batch.schema} does not match the file schema {self._input_schema}")

    def bounded_columns(self) -> frozenset[str]:
        """Top-level columns whose min / max / null count :meth:`column_bounds` gives after the file is closed,
        so the caller need not compute them: none unless the format keeps statistics of its own."""
        return frozenset()

    def column_bounds(self) -> dict[str, ColumnBounds]:
        """After :meth:`close`: the file's own statistics of each of :meth:`bounded_columns`."""
        return {}

    def bytes_written(self) -> int:
        """Estimated size of the file so far, buffered rows included, for rolling at target-file-size."""
        return self._size.estimate()

    def close(self) -> None:
        """Finishes the file (footer, last block). The caller still owns and closes the stream."""
        if self._closed:
            return
        self._finish()
        self._stream.close()
        self._size.mark_flushed()
        self._closed = True

    def __enter__(self) -> FormatWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()


class FileFormat(ABC):
    """A data-file codec: ``parquet``, ``orc`` or ``avro``."""

    name: ClassVar[str]
    writer_class: ClassVar[Callable[..., FormatWriter]]
    # Whether open_writer also takes a pyarrow NativeFile (FileIO.open_native_output) for ``out``.
    takes_native_output: ClassVar[bool] = False

    @property
    def extension(self) -> str:
        """File name extension without the dot; Paimon uses the format identifier."""
        return self.name

    def write(
        self,
        out: BinaryIO,
        table: pa.Table,
        *,
        compression: str,
        options: Mapping[str, str] = _EMPTY,
    ) -> None:
        """Writes ``table`` as one whole file into the already-open binary stream ``out``."""
        writer = self.open_writer(out, table.schema, compression=compression, options=options)
        for batch in table.to_batches():
            writer.write_batch(batch)
        writer.close()

    def open_writer(
        self,
        out: BinaryIO,
        schema: pa.Schema,
        *,
        compression: str,
        options: Mapping[str, str] = _EMPTY,
    ) -> FormatWriter:
        """Starts a streaming writer for one file."""
        return self.writer_class(out, schema, compression=compression, options=options)

    @abstractmethod
    def read_schema(self, source: BinaryIO | str, *, filesystem: Any = None) -> pa.Schema:
        """The Arrow schema stored in the file (what :meth:`read` yields without ``schema``)."""

    def read(
        self,
        source: BinaryIO | str,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = 65536,
        filesystem: Any = None,
        schema: pa.Schema | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Streams the file as record batches of at most ``batch_size`` rows.

        ``columns`` projects top-level columns by name, in that order; a column absent from the file raises
        :class:`SchemaError` (callers ask :meth:`read_schema` first). ``schema``, when given, holds the
        Arrow types the caller expects for the projected columns: batches are cast to them, which undoes the
        formats' physical narrowing (Avro stores TINYINT as int, ORC timestamps come back in ns, ...).
        """
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        batches = self._read(source, columns=columns, batch_size=batch_size, filesystem=filesystem)
        if schema is None:
            yield from batches
            return
        for batch in batches:
            yield self._cast(batch, schema)

    def read_selected(
        self,
        source: BinaryIO | str,
        *,
        rows: np.ndarray,
        columns: Sequence[str] | None = None,
        batch_size: int = 65536,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Batches covering at least the rows at positions ``rows`` (sorted, 0-based), each with the position of
        its first row in the file. Formats that can skip parts of a file (Parquet row groups) read only the
        parts holding a selected row; by default the whole file is read (callers filter the rows)."""
        pos = 0
        for batch in self.read(source, columns=columns, batch_size=batch_size):
            yield pos, batch
            pos += batch.num_rows

    def read_pruned(
        self,
        source: BinaryIO | str,
        *,
        keep: Callable[[Callable[[str], FieldStats | None], int], bool],
        columns: Sequence[str] | None = None,
        batch_size: int = 65536,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Batches of the parts of the file ``keep`` accepts, each with the position of its first row.

        ``keep`` is asked once per part (a Parquet row group) with a function giving a column's statistics over
        that part (None when unknown) and the part's row count (-1: unknown); parts it refuses are not
        decoded. By default the file is one part whose statistics are unknown, read whole.
        """
        if not keep(lambda name: None, -1):
            return
        pos = 0
        for batch in self.read(source, columns=columns, batch_size=batch_size):
            yield pos, batch
            pos += batch.num_rows

    def _cast(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        """Casts a batch as read to the caller's types; formats with lossy physical types override it."""
        return cast_batch(batch, schema)

    @abstractmethod
    def _read(
        self,
        source: BinaryIO | str,
        *,
        columns: Sequence[str] | None,
        batch_size: int,
        filesystem: Any,
    ) -> Iterator[pa.RecordBatch]: ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def file_format(name: str) -> FileFormat:
    """The codec for a ``file.format`` value (case-insensitive)."""
    from laketide.format.avro import AvroFormat
    from laketide.format.orc import OrcFormat
    from laketide.format.parquet import ParquetFormat

    formats: dict[str, type[FileFormat]] = {
        "parquet": ParquetFormat,
        "orc": OrcFormat,
        "avro": AvroFormat,
    }
    cls = formats.get(name.strip().lower())
    if cls is None:
        raise InvalidOptionError(
            f"{FILE_FORMAT_KEY}: unknown file format {name!r}; expected one of {sorted(formats)}"
        )
    return cls()


# --- helpers shared by the codecs ------------------------------------------------------------------


def check_columns(file_schema: pa.Schema, columns: Sequence[str] | None, *, source: object) -> list[str]:
    """The projected column names, or :class:`SchemaError` naming those the file lacks."""
    if columns is None:
        return list(file_schema.names)
    present = set(file_schema.names)
    missing = [c for c in columns if c not in present]
    if missing:
        raise SchemaError(f"columns {missing} are not in data file {describe_source(source)}")
    return list(columns)


def cast_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Casts ``batch`` to the types ``schema`` gives its columns (matched by name)."""
    # Columns the caller's schema does not mention are passed through unchanged.
    target = pa.schema(
        [schema.field(name) if name in schema.names else batch.schema.field(name) for name in batch.schema.names]
    )
    if batch.schema.equals(target, check_metadata=False):
        return batch
    try:
        arrays = [
            col if col.type.equals(field.type) else col.cast(field.type)
            for col, field in zip(batch.columns, target, strict=True)
        ]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"cannot read data file columns as {target}: {e}") from e
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def replace_types(t: pa.DataType, fn: Callable[[pa.DataType], pa.DataType | None]) -> pa.DataType:
    """``t`` with every (nested) type for which ``fn`` returns a type replaced by it; names and nullability kept."""
    replaced = fn(t)
    if replaced is not None:
        return replaced

    def field(f: pa.Field) -> pa.Field:
        return f.with_type(replace_types(f.type, fn))

    if pa.types.is_struct(t):
        return pa.struct([field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(field(t.key_field), field(t.item_field))
    if pa.types.is_list(t):
        return pa.list_(field(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(field(t.value_field), t.list_size)
    return t


def replace_schema_types(schema: pa.Schema, fn: Callable[[pa.DataType], pa.DataType | None]) -> pa.Schema:
    """:func:`replace_types` applied to every column of ``schema``."""
    return pa.schema([f.with_type(replace_types(f.type, fn)) for f in schema], metadata=schema.metadata)


def walk_types(t: pa.DataType) -> Iterator[pa.DataType]:
    """``t`` and all types nested in it."""
    yield t
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from walk_types(t.field(i).type)
    elif pa.types.is_map(t):
        yield from walk_types(t.key_type)
        yield from walk_types(t.item_type)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from walk_types(t.value_type)


def describe_source(source: object) -> str:
    if isinstance(source, str):
        return source
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else repr(source)


def open_input(source: BinaryIO | str, filesystem: Any) -> BinaryIO:
    """A readable binary stream for a path (through ``filesystem`` when given) or the stream itself."""
    if not isinstance(source, str):
        return source
    try:
        if filesystem is None:
            return open(source, "rb")  # noqa: SIM115 - the caller's iterator closes it
        if hasattr(filesystem, "open_input_file"):  # pyarrow.fs.FileSystem
            return filesystem.open_input_file(source)  # type: ignore[no-any-return]
        return filesystem.open(source, "rb")  # type: ignore[no-any-return]  # fsspec
    except OSError as e:
        raise FileIOError(f"cannot open data file {source}: {e}") from e


@contextmanager
def opened_input(source: BinaryIO | str, filesystem: Any) -> Iterator[BinaryIO]:
    """:func:`open_input` as a context: a stream opened here is closed on exit, the caller's own is left open."""
    stream = open_input(source, filesystem)
    try:
        yield stream
    finally:
        if stream is not source:
            stream.close()


class CountingStream(io.RawIOBase):
    """Passes writes through to the caller's stream and counts them; closing it leaves that stream open."""

    def __init__(self, out: BinaryIO) -> None:
        super().__init__()
        self._out = out
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self._out.write(view)
        self.count += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self.count

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        if not self.closed:
            self.flush()
        super().close()


class SizeEstimator:
    """Estimates a file's final size from the bytes a codec has emitted and the Arrow bytes it still holds.

    Codecs buffer rows (row groups, stripes, blocks) before emitting compressed bytes; the buffered part is
    scaled by the compression ratio seen so far (1.0 until the first flush).
    """

    def __init__(self, stream: CountingStream, *, header_bytes: int = 0) -> None:
        """``header_bytes``: what the codec writes before any row without having written it yet."""
        self._stream = stream
        self._arrow_in = 0
        self._arrow_flushed = 0
        # Bytes a codec writes up front (magic, header) say nothing about the compression ratio.
        self._base = stream.count + header_bytes
        self._bytes_at_flush = self._base

    def add(self, arrow_bytes: int) -> None:
        self._arrow_in += arrow_bytes

    def mark_flushed(self) -> None:
        self._arrow_flushed = self._arrow_in
        self._bytes_at_flush = self._stream.count

    def observe(self) -> None:
        """Call after handing data to a codec that flushes on its own: growth of the stream means a flush."""
        if self._stream.count > self._bytes_at_flush:
            self.mark_flushed()

    def estimate(self) -> int:
        if self._stream.count < self._base:
            return self._base + self._arrow_in
        pending = self._arrow_in - self._arrow_flushed
        flushed_bytes = self._bytes_at_flush - self._base
        ratio = flushed_bytes / self._arrow_flushed if self._arrow_flushed and flushed_bytes else 1.0
        return self._stream.count + int(pending * ratio)
