"""The ``DataFileMeta`` of a foreign-written Parquet data file from its footer, reading only what the footer lacks.

Equal to ``describe_parquet_file`` (which reads every needed column back) for the same file: value and key stats
come from the footer's row-group statistics where they are exact (format/footer_stats.py) and from the read-back
column otherwise (floats, a row group without bounds, ...); the sequence range and the delete count from the
footer of ``_SEQUENCE_NUMBER`` / ``_VALUE_KIND`` when it answers; the min / max key is the first / last row's key
(key-value files are sorted by key) and the partition the first row's, read from the first / last row group's key
and partition columns only.

Paimon: format.parquet.ParquetSimpleStatsExtractor (stats of written Parquet files taken from the footer)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from laketide.exceptions import FileIOError
from laketide.format.footer_stats import FooterColumnStats, footer_column_stats
from laketide.format.stats import (
    ColumnStats,
    StatsMode,
    StatsModeKind,
    collect_stats,
    parse_stats_mode,
    stats_from_bounds,
)
from laketide.fs import FileIO
from laketide.io.file_meta import DescribedFile, describe_parquet_file, described_file, layout_columns
from laketide.io.file_writer import KeyLayout, StatsLayout, simple_stats
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, is_retract
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.manifest import EMPTY_ROW_BYTES, SimpleStats

__all__ = ["describe_parquet_footer"]


def describe_parquet_footer(
    file_io: FileIO,
    path: str,
    *,
    schema_id: int,
    stats_layout: StatsLayout,
    partition_keys: tuple[str, ...],
    key_layout: KeyLayout | None = None,
    first_sequence_number: int = 0,
) -> DescribedFile:
    """What ``describe_parquet_file`` gives for the same arguments, from the footer where it answers exactly."""
    with file_io.open_input(path) as f:
        try:
            pf = pq.ParquetFile(f)
            if pf.metadata.num_rows > 0:
                return _describe(pf, file_io, path, schema_id=schema_id, stats_layout=stats_layout,
                                 partition_keys=partition_keys, key_layout=key_layout,
                                 first_sequence_number=first_sequence_number)
        except (pa.ArrowException, KeyError) as e:  # not Parquet, truncated, or a layout column missing
            raise FileIOError(f"cannot describe data file {path}: {e}") from e
    # An empty file: nothing to save, its full description reads no rows.
    return describe_parquet_file(file_io, path, schema_id=schema_id, stats_layout=stats_layout,
                                 partition_keys=partition_keys, key_layout=key_layout,
                                 first_sequence_number=first_sequence_number)


def _describe(pf: pq.ParquetFile, file_io: FileIO, path: str, *, schema_id: int, stats_layout: StatsLayout,
              partition_keys: tuple[str, ...], key_layout: KeyLayout | None,
              first_sequence_number: int) -> DescribedFile:
    meta = pf.metadata
    rows = meta.num_rows
    footer = footer_column_stats(meta, pf.schema_arrow, layout_columns(stats_layout, key_layout))
    value_modes = [parse_stats_mode(m) for m in stats_layout.modes]
    key_modes = [parse_stats_mode(m) for m in key_layout.modes] if key_layout is not None else []
    # Columns whose stats the footer cannot give exactly under some mode they are collected with.
    to_read = {n for n, m in zip(stats_layout.names, value_modes, strict=True) if not _answers(footer[n], m)}
    if key_layout is not None:
        to_read |= {n for n, m in zip(key_layout.names, key_modes, strict=True) if not _answers(footer[n], m)}
        seq, kinds = footer[SEQUENCE_NUMBER], footer[VALUE_KIND]
        if not (seq.bounded and seq.null_count == 0):
            to_read.add(SEQUENCE_NUMBER)
        if not (kinds.bounded and kinds.null_count == 0 and kinds.min == kinds.max):
            to_read.add(VALUE_KIND)
    read = pf.read(columns=sorted(to_read)) if to_read else None

    def stats_of(names: tuple[str, ...], modes: list[StatsMode]) -> list[ColumnStats]:
        return [
            collect_stats(read.select([n]), [m])[0] if read is not None and n in to_read
            else _from_footer(footer[n], m)
            for n, m in zip(names, modes, strict=True)
        ]

    stats = stats_of(stats_layout.names, value_modes)
    cols, value_stats = stats_layout.value_stats(stats)
    edge_columns = dict.fromkeys([*(key_layout.names if key_layout else ()), *partition_keys])
    first_row, last_row = _edge_rows(pf, list(edge_columns))
    min_key = max_key = EMPTY_ROW_BYTES
    key_stats = SimpleStats.empty()
    deletes = 0
    if key_layout is not None:
        min_key = serialize_binary_row([first_row[k] for k in key_layout.names], key_layout.types)
        max_key = serialize_binary_row([last_row[k] for k in key_layout.names], key_layout.types)
        key_stats = simple_stats(stats_of(key_layout.names, key_modes), key_layout.types)
        if SEQUENCE_NUMBER in to_read:
            assert read is not None
            lo, hi = pc.min_max(read.column(SEQUENCE_NUMBER)).values()
            min_seq, max_seq = lo.as_py(), hi.as_py()
        else:
            min_seq, max_seq = footer[SEQUENCE_NUMBER].min, footer[SEQUENCE_NUMBER].max
        if VALUE_KIND in to_read:
            assert read is not None
            deletes = int(pc.sum(is_retract(read.column(VALUE_KIND))).as_py() or 0)
        else:  # every row has the same kind
            kind = pa.array([footer[VALUE_KIND].min], pa.int8())
            deletes = rows if is_retract(kind)[0].as_py() else 0
    else:
        min_seq, max_seq = first_sequence_number, first_sequence_number + rows - 1
    partition = tuple(first_row[k] for k in partition_keys)
    return described_file(file_io, path, schema_id=schema_id, rows=rows, value_stats_cols=cols,
                          value_stats=value_stats, min_key=min_key, max_key=max_key, key_stats=key_stats,
                          min_seq=min_seq, max_seq=max_seq, deletes=deletes, partition=partition)


def _answers(footer: FooterColumnStats, mode: StatsMode) -> bool:
    if mode.kind is StatsModeKind.NONE:
        return True
    if footer.null_count is None:
        return False
    return mode.kind is StatsModeKind.COUNTS or footer.bounded


def _from_footer(footer: FooterColumnStats, mode: StatsMode) -> ColumnStats:
    assert footer.null_count is not None or mode.kind is StatsModeKind.NONE
    return stats_from_bounds(footer.min, footer.max, footer.null_count or 0, mode)


def _edge_rows(pf: pq.ParquetFile, names: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values of columns ``names`` in the file's first and last row (only the row groups holding them)."""
    if not names:
        return {}, {}
    groups = [i for i in range(pf.metadata.num_row_groups) if pf.metadata.row_group(i).num_rows > 0]
    first = pf.read_row_group(groups[0], columns=names)
    last = first if groups[-1] == groups[0] else pf.read_row_group(groups[-1], columns=names)
    return ({n: first.column(n)[0].as_py() for n in names},
            {n: last.column(n)[last.num_rows - 1].as_py() for n in names})
