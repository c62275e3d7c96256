"""Keyed reads of Parquet files: a few rows of a few row groups, string columns kept as dictionaries.

A point lookup or a short key range needs a few rows of one or two row groups per file (~24k rows each in
primary-key files). Decoding a dictionary-encoded string column to plain strings copies every value of the group
(~1 ms for 24k rows of a 20-character column, as much as the rest of the group together), where kept as a
dictionary it is the indices alone (~0.15 ms). These reads keep chosen string columns as dictionaries; the caller
takes its rows first and turns the few left into plain strings (a cast). A column chunk that fell back to plain
encoding still reads correctly: pyarrow builds a dictionary for it.

``use_threads``: whether pyarrow's pool decodes the columns. For the few row groups of a point lookup, decoding
in place costs less CPU (point lookup 6.7-7.6 against 7.1-9.5 ms per call, interleaved, loaded machine): the
keys-first reads pass False. Key ranges read several files at once (one task per split) and keep the pool, which
held up better under load (median wall 20-34 against 27-48 ms, same CPU).

Positions are exact, as in parquet.py's ``read_pruned`` / ``read_selected`` (same row-group choice).

Paimon: format.parquet.ParquetReaderFactory (row-group filtering, dictionary pages decoded per row)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from laketide.exceptions import FileIOError
from laketide.expr import FieldStats
from laketide.format.base import check_columns, describe_source
from laketide.format.parquet import kept_row_groups
from laketide.format.parquet_runs import group_runs

__all__ = ["read_pruned_keyed", "read_selected_keyed"]

_READ_BUFFER_BYTES = 256 * 1024  # as parquet.py's reads: a buffered read, no pre-buffering of whole row groups
_DICTIONARY_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
StatsOf = Callable[[str], "FieldStats | None"]


def read_pruned_keyed(
    stream: BinaryIO,
    *,
    keep: Callable[[StatsOf, int], bool],
    columns: Sequence[str],
    batch_size: int,
    dictionary: Sequence[str] = (),
    use_threads: bool = True,
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """ParquetFormat.read_pruned: the row groups ``keep`` accepts by their statistics; the
    string / binary columns among ``dictionary`` read as dictionaries."""
    parquet_file, names = _open_columns(stream, columns, dictionary)
    kept, counts = kept_row_groups(parquet_file, keep)
    yield from _runs(parquet_file, kept, counts=counts, columns=names, batch_size=batch_size,
                     use_threads=use_threads)


def read_selected_keyed(
    stream: BinaryIO,
    *,
    rows: np.ndarray,
    columns: Sequence[str],
    dictionary: Sequence[str],
    batch_size: int,
    use_threads: bool = True,
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """ParquetFormat.read_selected, the string / binary columns among ``dictionary`` read
    as dictionaries: batches of the row groups holding a row at positions ``rows`` (ascending)."""
    parquet_file, names = _open_columns(stream, columns, dictionary)
    meta = parquet_file.metadata
    counts = np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)], dtype=np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    hits = np.searchsorted(rows, ends, side="left") - np.searchsorted(rows, starts, side="left")
    yield from _runs(parquet_file, [int(rg) for rg in np.flatnonzero(hits)], counts=counts, columns=names,
                     batch_size=batch_size, use_threads=use_threads)


def _open_columns(stream: BinaryIO, columns: Sequence[str],
                  dictionary: Sequence[str]) -> tuple[pq.ParquetFile, list[str]]:
    """The file opened with the string / binary columns among ``dictionary`` as dictionaries; checked ``columns``."""
    plain = _open(stream)
    file_schema = plain.schema_arrow
    names = check_columns(file_schema, columns, source=stream)
    wanted = [n for n in dictionary if n in file_schema.names
              and any(is_type(file_schema.field(n).type) for is_type in _DICTIONARY_TYPES)]
    # The footer is parsed once: the dictionary reader reuses its metadata.
    return (plain if not wanted else _open(stream, metadata=plain.metadata, dictionary=wanted)), names


def _open(stream: BinaryIO, *, metadata: pq.FileMetaData | None = None,
          dictionary: Sequence[str] | None = None) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(stream, buffer_size=_READ_BUFFER_BYTES, pre_buffer=False, metadata=metadata,
                              read_dictionary=dictionary)
    except pa.ArrowInvalid as e:
        raise FileIOError(f"not a readable Parquet file: {describe_source(stream)}: {e}") from e


def _runs(parquet_file: pq.ParquetFile, groups: Sequence[int], *, counts: np.ndarray, columns: list[str],
          batch_size: int, use_threads: bool) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The batches of row groups ``groups`` (ascending) with the position of their first row, one reader per run
    of consecutive groups (format/parquet_runs.py)."""
    starts = np.cumsum(counts) - counts
    for run in group_runs(groups):
        pos = int(starts[run[0]])
        for batch in parquet_file.iter_batches(batch_size=batch_size, columns=columns, row_groups=run,
                                               use_threads=use_threads):
            yield pos, batch
            pos += batch.num_rows
