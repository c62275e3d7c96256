"""The ``DataFileMeta`` of a data file some other writer encoded (e.g. Spark's own Parquet writer).

The file is read back with pyarrow and described with the same functions ``RollingFileWriter`` uses while it
writes (value stats under the table's stats modes, min / max key, key stats, sequence range, delete count), so
the metadata equals what laketide's own writer records for the same rows.

Paimon: io.KeyValueDataFileWriter#result, io.RowDataFileWriter#result
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.parquet as pq

from laketide.format.stats import collect_stats
from laketide.fs import FileIO
from laketide.io.file_writer import KeyLayout, StatsLayout, _KeyTracker, _local_now_ms, simple_stats
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.manifest import EMPTY_ROW_BYTES, DataFileMeta, FileSource, SimpleStats

__all__ = ["DescribedFile", "describe_parquet_file", "described_file", "layout_columns"]


@dataclass(frozen=True, slots=True)
class DescribedFile:
    """A foreign-written data file: its metadata (named after ``path``) and the partition values of its rows."""

    path: str
    meta: DataFileMeta
    partition_values: tuple[object, ...]


def describe_parquet_file(
    file_io: FileIO,
    path: str,
    *,
    schema_id: int,
    stats_layout: StatsLayout,
    partition_keys: tuple[str, ...],
    key_layout: KeyLayout | None = None,
    first_sequence_number: int = 0,
) -> DescribedFile:
    """Describe one Parquet data file whose rows all belong to one partition (level 0, file source APPEND).

    Key-value files carry their sequence numbers; an append file's rows are numbered from
    ``first_sequence_number`` in file order."""
    with file_io.open_input(path) as f:
        rows = pq.read_table(f, columns=layout_columns(stats_layout, key_layout))
    values = rows.select(list(stats_layout.names))
    stats = collect_stats(values, stats_layout.modes)
    cols, value_stats = stats_layout.value_stats(stats)
    min_key = max_key = EMPTY_ROW_BYTES
    key_stats = SimpleStats.empty()
    deletes = 0
    if key_layout is not None:
        tracker = _KeyTracker()
        for batch in rows.combine_chunks().to_batches():
            if batch.num_rows:
                tracker.add(batch, key_layout)
        min_key = serialize_binary_row(list(tracker.min_key or ()), key_layout.types)
        max_key = serialize_binary_row(list(tracker.max_key or ()), key_layout.types)
        key_stats = simple_stats(tracker.stats or [], key_layout.types)
        min_seq, max_seq, deletes = tracker.min_seq or 0, tracker.max_seq or 0, tracker.deletes
    else:
        min_seq, max_seq = first_sequence_number, first_sequence_number + rows.num_rows - 1
    partition = tuple(rows.column(k)[0].as_py() for k in partition_keys) if rows.num_rows else ()
    return described_file(file_io, path, schema_id=schema_id, rows=rows.num_rows, value_stats_cols=cols,
                          value_stats=value_stats, min_key=min_key, max_key=max_key, key_stats=key_stats,
                          min_seq=min_seq, max_seq=max_seq, deletes=deletes, partition=partition)


def described_file(file_io: FileIO, path: str, *, schema_id: int, rows: int,
                   value_stats_cols: tuple[str, ...] | None, value_stats: SimpleStats, min_key: bytes,
                   max_key: bytes, key_stats: SimpleStats, min_seq: int, max_seq: int, deletes: int,
                   partition: tuple[object, ...]) -> DescribedFile:
    """A foreign-written file as laketide records it: named after ``path``, level 0, file source APPEND."""
    meta = DataFileMeta(
        file_name=path.rsplit("/", 1)[-1],
        file_size=file_io.file_size(path),
        row_count=rows,
        min_key=min_key,
        max_key=max_key,
        key_stats=key_stats,
        value_stats=value_stats,
        min_sequence_number=min_seq,
        max_sequence_number=max_seq,
        schema_id=schema_id,
        level=0,
        creation_time_ms=_local_now_ms(),
        delete_row_count=deletes,
        file_source=FileSource.APPEND,
        value_stats_cols=value_stats_cols,
    )
    return DescribedFile(path=path, meta=meta, partition_values=partition)


def layout_columns(stats_layout: StatsLayout, key_layout: KeyLayout | None) -> list[str]:
    """The columns a description needs: the stats columns, and a key-value file's sequence numbers and kinds."""
    from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND

    out = list(stats_layout.names)
    if key_layout is not None:
        out += [SEQUENCE_NUMBER, VALUE_KIND]
    return out

