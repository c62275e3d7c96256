"""Parquet data files through pyarrow.parquet, shaped like the files Java Paimon writes.

What Java writes (ParquetSchemaConverter) and how pyarrow is told to match it:

- field ids on every column, nested ones included: pyarrow writes the ``PARQUET:field_id`` field metadata the
  types layer puts on each Arrow field; ``store_schema=False`` keeps pyarrow's own ``ARROW:schema`` blob out
  of the footer, as Java files have none.
- TINYINT / SMALLINT as INT32 with INT(8/16) annotations, DECIMAL as INT32 (precision <= 9), INT64 (<= 18) or
  a minimal FIXED_LEN_BYTE_ARRAY (``store_decimal_as_integer=True``), TIME as INT32 TIME(MILLIS,
  isAdjustedToUTC=true) (``write_time_adjusted_to_utc=True``; TIME columns are written as ``time32[ms]``,
  the precision Paimon keeps).
- TIMESTAMP(p <= 3) as INT64 TIMESTAMP(MILLIS), p <= 6 as TIMESTAMP(MICROS), isAdjustedToUTC=true only for
  TIMESTAMP_LTZ (tz-aware Arrow types), and p > 6 as INT96. Java's ParquetVectorUpdaterFactory reads INT64
  timestamps of any unit (recent versions even NANOS) and INT96 for every precision; older Java releases and
  Spark's native reader take nanosecond timestamps only as INT96. pyarrow decides INT96 per file, not per
  column, so a file with any nanosecond column stores all its timestamps as INT96 — still readable by Java.
- Dictionary encoding: Java tries it on every column; here only the columns whose first row group's rows show
  it paying get one (parquet_dictionary.py), unless the table sets ``parquet.enable.dictionary``.

Paimon: org.apache.paimon.format.parquet.ParquetFileFormat, ParquetSchemaConverter, RowDataParquetBuilder
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from laketide.exceptions import FileIOError, InvalidOptionError, SchemaError, UnsupportedFeatureError
from laketide.expr import FieldStats
from laketide.format.parquet_dictionary import dictionary_columns, explicit_dictionary
from laketide.format.parquet_runs import read_group_runs
from laketide.format.base import (
    FILE_COMPRESSION_KEY,
    ColumnBounds,
    CountingStream,
    FileFormat,
    FormatWriter,
    SizeEstimator,
    check_columns,
    describe_source,
    normalize_compression,
    opened_input,
    replace_schema_types,
    walk_types,
    zstd_level,
)

__all__ = ["ParquetFormat", "ParquetWriter"]

_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "gzip": "gzip", "brotli": "brotli", "none": "none"}
_UNSUPPORTED_CODECS = {"lzo"}
# Arrow bytes buffered before a row group is cut; ``parquet.block.size`` overrides it. Java's default is 128 MB
# of encoded bytes (ParquetWriter.DEFAULT_BLOCK_SIZE); Arrow bytes overcount that, so these groups are smaller.
# Each row group restarts the dictionary encoders (a new attempt and fallback per column), which made 32 MiB
# groups cost ~25% more encode CPU than pyarrow's own 1Mi-row default.
_DEFAULT_ROW_GROUP_BYTES = 128 * 1024 * 1024
_EMPTY: Mapping[str, str] = {}
_READ_BUFFER_BYTES = 256 * 1024
_MAGIC = b"PAR1"  # what pyarrow's writer writes when it opens a file
# Row groups of at least this many rows on average are read one batch each when a batch could hold several.
_WHOLE_GROUP_ROWS = 1 << 16


def _codec(compression: str, options: Mapping[str, str]) -> tuple[str, int | None]:
    # As in Java, a "parquet.compression" table option wins over file.compression.
    key = "parquet.compression" if "parquet.compression" in options else FILE_COMPRESSION_KEY
    name = normalize_compression(options.get("parquet.compression", compression))
    if name in _UNSUPPORTED_CODECS:
        raise UnsupportedFeatureError(f"{key}: pyarrow cannot write {name!r}-compressed Parquet")
    codec = _CODECS.get(name)
    if codec is None:
        raise InvalidOptionError(f"{key}: unknown Parquet compression {name!r}; expected one of {sorted(_CODECS)}")
    level: int | None = None
    if codec == "zstd":
        raw = options.get("parquet.compression.codec.zstd.level")
        try:
            level = int(raw) if raw is not None else zstd_level(options)
        except ValueError as e:
            raise InvalidOptionError(f"parquet.compression.codec.zstd.level must be an integer, got {raw!r}") from e
    return codec, level


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise InvalidOptionError(f"{key} must be an integer, got {raw!r}") from e


def _is_bytes_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t))


def _leaf_count(t: pa.DataType) -> int:
    """How many Parquet leaf columns an Arrow type is stored as."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


def _has_nanos(schema: pa.Schema) -> bool:
    return any(pa.types.is_timestamp(t) and t.unit == "ns" for field in schema for t in walk_types(field.type))


@functools.lru_cache(maxsize=64)
def _checked_schema(schema: pa.Schema, settings: tuple[tuple[str, Any], ...]) -> None:
    pq.ParquetWriter(pa.BufferOutputStream(), schema, **dict(settings)).close()


def _check_schema(schema: pa.Schema, settings: Mapping[str, Any]) -> None:
    """SchemaError now for a schema (or settings) pyarrow cannot write, as opening its writer would raise;
    cached: one empty in-memory file per schema and settings."""
    try:
        _checked_schema(schema, tuple(sorted(settings.items())))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"cannot write Parquet with schema {schema}: {e}") from e


def _time_as_millis(t: pa.DataType) -> pa.DataType | None:
    # Paimon keeps TIME as milliseconds of the day and Java reads it only as INT32 TIME(MILLIS).
    return pa.time32("ms") if pa.types.is_time(t) else None


class ParquetWriter(FormatWriter):
    """Buffers batches and cuts a row group every ``parquet.block.size`` Arrow bytes."""

    kind = "Parquet"

    def __init__(self, out: BinaryIO, schema: pa.Schema, *, compression: str, options: Mapping[str, str]) -> None:
        codec, level = _codec(compression, options)
        self._input_schema = schema
        file_schema = replace_schema_types(schema, _time_as_millis)
        self._file_schema = schema if file_schema.equals(schema) else file_schema
        self._row_group_bytes = _int_option(options, "parquet.block.size") or _DEFAULT_ROW_GROUP_BYTES
        self._dictionary = explicit_dictionary(options)
        self._settings: dict[str, Any] = dict(
            compression=codec,
            compression_level=level,
            data_page_size=_int_option(options, "parquet.page.size"),
            use_deprecated_int96_timestamps=_has_nanos(schema),
            store_schema=False,
            store_decimal_as_integer=True,
            write_time_adjusted_to_utc=True,
        )
        # A native sink (FileIO.open_native_output) gets the bytes straight from Arrow's C++ writer; the counting
        # stream then only holds the count, taken from the sink's position after each call that writes.
        self._stream = CountingStream(out)
        self._sink: Any = out if isinstance(out, pa.NativeFile) else self._stream
        # Without an explicit parquet.enable.dictionary the encodings are chosen from the first row group's rows,
        # so the pyarrow writer is opened at the first flush; the schema is checked now either way.
        self._writer: pq.ParquetWriter | None = None
        if self._dictionary is None:
            _check_schema(self._file_schema, self._settings)
        else:
            self._open(self._dictionary)
        self._size = SizeEstimator(self._stream, header_bytes=0 if self._writer is not None else len(_MAGIC))
        self._buffer: list[pa.RecordBatch] = []
        self._buffered_bytes = 0
        self._closed = False

    def _open(self, use_dictionary: bool | list[str]) -> pq.ParquetWriter:
        try:
            self._writer = pq.ParquetWriter(
                self._sink, self._file_schema, use_dictionary=use_dictionary, **self._settings
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(f"cannot write Parquet with schema {self._input_schema}: {e}") from e
        self._count_native()
        return self._writer

    def _count_native(self) -> None:
        if self._sink is not self._stream:
            self._stream.count = self._sink.tell()

    def write_batch(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._check_batch(batch)
        batches = batch.to_batches() if isinstance(batch, pa.Table) else [batch]
        for b in batches:
            if b.num_rows == 0:
                continue
            self._buffer.append(b)
            self._buffered_bytes += b.nbytes
            self._size.add(b.nbytes)
        if self._buffered_bytes >= self._row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        table = pa.Table.from_batches(self._buffer, schema=self._input_schema)
        if self._file_schema is not self._input_schema:
            table = table.cast(self._file_schema, safe=False)
        # A batch far bigger than parquet.block.size is cut into row groups of about that many bytes.
        rows = max(table.num_rows, 1)
        if self._buffered_bytes > self._row_group_bytes:
            rows = max(1, rows * self._row_group_bytes // self._buffered_bytes)
        self._buffer = []
        self._buffered_bytes = 0
        writer = self._writer
        try:
            if writer is None:
                writer = self._open(dictionary_columns(table, group_rows=rows))
            writer.write_table(table, row_group_size=rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(f"cannot write rows to Parquet: {e}") from e
        self._count_native()
        self._size.mark_flushed()

    def _finish(self) -> None:
        self._flush()
        # A file that got no rows: nothing to judge, so Java's default (a dictionary for every column).
        writer = self._writer if self._writer is not None else self._open(True)
        writer.close()
        self._count_native()

    def bounded_columns(self) -> frozenset[str]:
        # The encoder computes min / max of every column anyway; string and binary ones are where a second
        # pass costs (comparing variable-length values), so only they are taken from the footer.
        return frozenset(f.name for f in self._file_schema if _is_bytes_like(f.type))

    def column_bounds(self) -> dict[str, ColumnBounds]:
        if not self._closed:
            raise ValueError("Parquet column bounds are known once the file is closed")
        # Parquet column chunks are leaves: find each wanted column by its leaf position (a name like "s.x" may
        # be a top-level column or field x of struct s).
        leaves: dict[str, int] = {}
        position = 0
        for f in self._file_schema:
            if _is_bytes_like(f.type):
                leaves[f.name] = position
            position += _leaf_count(f.type)
        assert self._writer is not None
        meta = self._writer.writer.metadata
        found: dict[str, list[Any]] = {}  # name -> [min, max, null count, complete]
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            for name, leaf in leaves.items():
                acc = found.setdefault(name, [None, None, 0, True])
                st = group.column(leaf).statistics
                if st is None or not st.has_null_count:
                    acc[3] = False
                    continue
                acc[2] += st.null_count
                if st.has_min_max:
                    acc[0] = st.min if acc[0] is None or st.min < acc[0] else acc[0]
                    acc[1] = st.max if acc[1] is None or st.max > acc[1] else acc[1]
                elif st.null_count < group.num_rows:
                    acc[3] = False  # values too long for the statistics: left out of this row group
        return {name: ColumnBounds(*acc) for name, acc in found.items()}


def kept_row_groups(parquet_file: pq.ParquetFile, keep: Callable[[Callable[[str], FieldStats | None], int], bool]
                    ) -> tuple[list[int], np.ndarray]:
    """The row groups ``keep`` accepts by their column statistics, and every group's row count."""
    meta = parquet_file.metadata
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    groups = [meta.row_group(rg) for rg in range(meta.num_row_groups)]
    kept = [rg for rg, group in enumerate(groups)
            if keep(functools.partial(_column_stats_by_name, group, index), group.num_rows)]
    return kept, np.array([group.num_rows for group in groups], dtype=np.int64)


def _column_stats_by_name(group: pq.RowGroupMetaData, index: Mapping[str, int], name: str) -> FieldStats | None:
    return _column_stats(group, index.get(name))


def _column_stats(group: pq.RowGroupMetaData, column: int | None) -> FieldStats | None:
    """A top-level column's min / max / null count in one row group, None when the file does not say."""
    if column is None:
        return None
    stats = group.column(column).statistics
    if stats is None or not stats.has_min_max:
        return None
    try:
        lo, hi = stats.min, stats.max
    except (pa.ArrowException, ValueError):  # a logical type pyarrow cannot convert: unknown, never prunes
        return None
    return FieldStats(min=lo, max=hi, null_count=stats.null_count if stats.has_null_count else None)


class ParquetFormat(FileFormat):
    """Parquet data files (Paimon's default ``file.format``)."""

    name = "parquet"
    writer_class = ParquetWriter
    takes_native_output = True

    def read_schema(self, source: BinaryIO | str, *, filesystem: Any = None) -> pa.Schema:
        with opened_input(source, filesystem) as stream:
            return self._open(stream, source).schema_arrow

    @staticmethod
    def _open(stream: BinaryIO, source: object) -> pq.ParquetFile:
        try:
            # A buffered read without pre-buffering: column chunks stream through a small buffer instead of
            # being read whole up front (pyarrow's default), which would keep a row group - 128 MB in Java's
            # files - compressed in memory for every open file of a merge. File systems that fetch remote
            # bytes (fsspec) read ahead in blocks of their own.
            return pq.ParquetFile(stream, buffer_size=_READ_BUFFER_BYTES, pre_buffer=False)
        except pa.ArrowInvalid as e:
            raise FileIOError(f"not a readable Parquet file: {describe_source(source)}: {e}") from e

    def read_selected(
        self,
        source: BinaryIO | str,
        *,
        rows: np.ndarray,
        columns: Sequence[str] | None = None,
        batch_size: int = 65536,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Only the row groups holding a selected row are decoded (file-index row selection)."""
        with opened_input(source, None) as stream:
            parquet_file = self._open(stream, source)
            names = check_columns(parquet_file.schema_arrow, columns, source=source)
            meta = parquet_file.metadata
            counts = np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], dtype=np.int64)
            ends = np.cumsum(counts)
            starts = ends - counts
            hits = np.searchsorted(rows, ends, side="left") - np.searchsorted(rows, starts, side="left")
            yield from read_group_runs(parquet_file, [int(rg) for rg in np.flatnonzero(hits)], counts=counts,
                                       columns=names, batch_size=batch_size,
                                       whole_groups=_whole_groups(counts, batch_size))

    def read_pruned(
        self,
        source: BinaryIO | str,
        *,
        keep: Callable[[Callable[[str], FieldStats | None], int], bool],
        columns: Sequence[str] | None = None,
        batch_size: int = 65536,
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Only the row groups ``keep`` accepts by their column statistics are decoded."""
        with opened_input(source, None) as stream:
            parquet_file = self._open(stream, source)
            names = check_columns(parquet_file.schema_arrow, columns, source=source)
            kept, counts = kept_row_groups(parquet_file, keep)
            yield from read_group_runs(parquet_file, kept, counts=counts, columns=names, batch_size=batch_size,
                                       whole_groups=_whole_groups(counts, batch_size))

    def _read(
        self,
        source: BinaryIO | str,
        *,
        columns: Sequence[str] | None,
        batch_size: int,
        filesystem: Any,
    ) -> Iterator[pa.RecordBatch]:
        with opened_input(source, filesystem) as stream:
            parquet_file = self._open(stream, source)
            names = check_columns(parquet_file.schema_arrow, columns, source=source)
            meta = parquet_file.metadata
            counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            if _whole_groups(counts, batch_size):
                # Batches that could hold several large row groups (a collecting read) hold one each: a batch
                # spanning row groups is assembled in fresh buffers of its whole size (more page faults, more CPU
                # at 8M rows), where a row group's columns are decoded whole in one go. Small row groups are
                # still joined into batches (fewer batches to handle).
                for rg in range(len(counts)):
                    yield from parquet_file.iter_batches(batch_size=batch_size, columns=names, row_groups=[rg])
                return
            yield from parquet_file.iter_batches(batch_size=batch_size, columns=names)


def _whole_groups(counts: Sequence[int] | np.ndarray, batch_size: int) -> bool:
    """Whether a file's row groups are large enough to be read one batch each (several would fit in a batch)."""
    n = len(counts)
    return n > 1 and int(max(counts)) <= batch_size and int(sum(counts)) >= _WHOLE_GROUP_ROWS * n
