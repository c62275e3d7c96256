"""Partial-column updates of a data-evolution table by row id (``Table.update_by_row_id``).

For each row-id range (a data file and the partial-column files over it) that the update touches, one new file is
written holding only the updated columns for the whole range: the range's current values of those columns with the
given rows replaced. It is listed with ``write_cols`` = those columns and the range's ``first_row_id``; its sequence
numbers are left 0 so the commit stamps the new snapshot's id, which makes it the newest file of the range for those
columns when a read stitches the range (scan/row_tracking.py). Row ids never change.

Paimon: pypaimon write.table_update_by_row_id (TableUpdateByRowId.update_columns), Java's data-evolution
MERGE INTO (DataEvolutionSplitRead reads what both write)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import (
    CastError,
    CommitConflictError,
    CommitStateUnknownError,
    SchemaError,
    UnsupportedFeatureError,
)
from laketide.format import file_format
from laketide.format.blob import is_blob_file
from laketide.io.file_writer import RollingFileWriter, StatsLayout
from laketide.meta.commit_message import CommitMessage
from laketide.scan.blob_read import blob_columns
from laketide.scan.row_tracking import ROW_ID, group_by_row_id
from laketide.scan.split import DataSplit
from laketide.types import to_arrow_schema

if TYPE_CHECKING:
    from laketide.table.read import TableScan
    from laketide.table.table import Table

__all__ = ["update_by_row_id", "write_update_by_row_id"]


@dataclass(frozen=True, slots=True)
class _Range:
    split: DataSplit  # the range's files only
    first_row_id: int
    row_count: int


def update_by_row_id(table: Table, data: Any, columns: list[str] | None = None) -> int | None:
    """Set ``columns`` (default: every column of ``data`` but ``_ROW_ID``) of the rows named by ``data``'s
    ``_ROW_ID``; one commit; the new snapshot id (None for empty ``data``)."""
    messages = write_update_by_row_id(table, data, columns)
    if not messages:
        return None
    try:
        return table.commit(messages)
    except CommitStateUnknownError:
        raise  # the snapshot may reference these files: only orphan cleanup may remove them
    except BaseException:
        table.abort(messages)
        raise


def write_update_by_row_id(table: Table, data: Any, columns: list[str] | None = None) -> list[CommitMessage]:
    """The files of ``update_by_row_id``, written but not committed (their commit messages)."""
    from laketide.write.conform import to_arrow

    _check_table(table)
    rows = to_arrow(data)
    cols = _check_columns(table, rows, columns)
    ids = _row_ids(table, rows)
    updates = _conformed(table, rows, cols)
    if rows.num_rows == 0:
        return []
    scan = table.scan(columns=[ROW_ID, *cols])
    ranges = _ranges(scan)
    owner = _owning_ranges(table, ranges, ids)
    messages: list[CommitMessage] = []
    try:
        order = np.argsort(owner, kind="stable")
        bounds = np.flatnonzero(np.diff(owner[order])) + 1
        for chosen in np.split(order, bounds):
            rng = ranges[int(owner[chosen[0]])]
            merged = _merged_range(scan, rng, ids[chosen] - rng.first_row_id, updates.take(pa.array(chosen)), cols)
            messages.append(_write_range(table, rng, merged))
        _check_unchanged(table, scan, ranges, {int(o) for o in owner})
        return messages
    except BaseException:
        table.abort(messages)
        raise


def _check_table(table: Table) -> None:
    opts = table.store.options
    if table.primary_keys:
        raise UnsupportedFeatureError(
            f"update_by_row_id on table {table.name}: a primary-key table has no row ids; use upsert / update")
    if not (opts.row_tracking_enabled and opts.data_evolution_enabled):
        raise UnsupportedFeatureError(
            f"update_by_row_id on table {table.name} needs 'row-tracking.enabled' and 'data-evolution.enabled' "
            f"= 'true'")


def _check_columns(table: Table, rows: pa.Table, columns: list[str] | None) -> list[str]:
    if ROW_ID not in rows.column_names:
        raise SchemaError(f"update_by_row_id on table {table.name}: the data has no {ROW_ID} column")
    given = [c for c in rows.column_names if c != ROW_ID] if columns is None else list(columns)
    if not given:
        raise SchemaError(f"update_by_row_id on table {table.name}: no column to update")
    if len(set(given)) != len(given):
        raise SchemaError(f"update_by_row_id on table {table.name}: columns {given} repeat a name")
    names = table.schema.field_names
    unknown = [c for c in given if c not in names]
    if unknown:
        raise SchemaError(f"update_by_row_id on table {table.name}: unknown columns {unknown}; columns are {names}")
    missing = [c for c in given if c not in rows.column_names]
    if missing:
        raise SchemaError(f"update_by_row_id on table {table.name}: the data lacks columns {missing}")
    fixed = [c for c in given if c in table.partition_keys]
    if fixed:
        raise SchemaError(f"update_by_row_id on table {table.name}: partition columns {fixed} cannot be updated "
                          f"(a row's partition is its file's)")
    blobs = [c for c in given if c in blob_columns(table.schema.fields)]
    if blobs:
        raise UnsupportedFeatureError(f"update_by_row_id on table {table.name}: BLOB columns {blobs} are not "
                                      f"written by laketide")
    return [c for c in names if c in given]  # table order: the file's column order


def _row_ids(table: Table, rows: pa.Table) -> np.ndarray:
    col = rows.column(ROW_ID)
    if not (pa.types.is_integer(col.type)):
        raise SchemaError(f"update_by_row_id on table {table.name}: {ROW_ID} must be an integer column, "
                          f"not {col.type}")
    if col.null_count:
        raise SchemaError(f"update_by_row_id on table {table.name}: {ROW_ID} has {col.null_count} nulls")
    ids = np.asarray(col.to_numpy(), dtype=np.int64)
    ordered = np.sort(ids)  # not np.unique: numpy 2.4's hash-based unique is ~15x slower than a sort on 2M ids
    if bool((ordered[1:] == ordered[:-1]).any()):
        raise SchemaError(f"update_by_row_id on table {table.name}: {ROW_ID} values repeat")
    return ids


def _conformed(table: Table, rows: pa.Table, cols: list[str]) -> pa.Table:
    target = to_arrow_schema(table.schema.row_type)
    arrays = []
    for name in cols:
        field = target.field(name)
        try:
            arr = pc.cast(rows.column(name), field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise CastError(f"update_by_row_id on table {table.name}: column {name} ({rows.column(name).type}) "
                            f"does not fit {field.type}: {e}") from e
        if not table.schema.field(name).type.nullable and arr.null_count:
            raise SchemaError(f"update_by_row_id on table {table.name}: column {name} is NOT NULL but the data "
                              f"has {arr.null_count} nulls")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema([target.field(n) for n in cols]))


def _ranges(scan: TableScan) -> list[_Range]:
    out = []
    for split in scan.plan():
        for group in group_by_row_id(split.files, split.file_paths()):
            data = [f for f, _ in group if not is_blob_file(f.file_name)]
            if not data or data[0].first_row_id is None:
                continue
            out.append(_Range(
                split=replace(split, files=tuple(f for f, _ in group), deletion_files=None, row_selections=None,
                              raw_convertible=False),
                first_row_id=data[0].first_row_id, row_count=data[0].row_count))
    return out


def _owning_ranges(table: Table, ranges: list[_Range], ids: np.ndarray) -> np.ndarray:
    """Per row id, the index into ``ranges`` of the range holding it; an id no range holds is an error."""
    starts = np.array([r.first_row_id for r in ranges], dtype=np.int64)
    ends = np.array([r.first_row_id + r.row_count for r in ranges], dtype=np.int64)
    order = np.argsort(starts)
    pos = np.searchsorted(starts[order], ids, side="right") - 1
    inside = pos >= 0
    inside[inside] &= ids[inside] < ends[order][pos[inside]]
    if not inside.all():
        bad = ids[~inside]
        raise SchemaError(f"update_by_row_id on table {table.name}: row ids {bad[:10].tolist()} "
                          f"({len(bad)} in all) belong to no row of the latest snapshot")
    return np.asarray(order[pos], dtype=np.int64)


def _merged_range(scan: TableScan, rng: _Range, positions: np.ndarray, values: pa.Table,
                  cols: list[str]) -> pa.Table:
    current = pa.Table.from_batches(list(scan.read_split(rng.split)), schema=scan.reader.output_schema)
    n = rng.row_count
    if current.num_rows != n:
        raise SchemaError(f"row-id range {rng.first_row_id}.. reads {current.num_rows} rows, its file says {n}")
    take = np.arange(n, dtype=np.int64)
    take[positions] = n + np.arange(len(positions), dtype=np.int64)
    indices = pa.array(take)
    arrays = [pa.concat_arrays([current.column(c).combine_chunks(), values.column(c).combine_chunks()]).take(indices)
              for c in cols]
    return pa.Table.from_arrays(arrays, schema=values.schema)


def _write_range(table: Table, rng: _Range, merged: pa.Table) -> CommitMessage:
    store = table.store
    opts = store.options
    cols = merged.column_names
    fields = [table.schema.field(c) for c in cols]
    split = rng.split
    writer = RollingFileWriter(
        file_io=store.file_io,
        paths=store.path_factory.new_file_names(),
        bucket_dir=split.bucket_path,
        file_format=file_format(opts.file_format),
        schema=merged.schema,
        schema_id=table.schema.id,
        stats_layout=StatsLayout(names=tuple(cols), types=tuple(f.type for f in fields),
                                 modes=tuple(opts.stats_mode(c) for c in cols)),
        target_file_size=2**62,  # one file per range: its row-id range is the range's
        compression=opts.file_compression,
        external_paths=store.path_factory.external_path_provider(split.partition, split.bucket),
    )
    try:
        writer.write(merged)
        files = writer.close()
    except BaseException:
        writer.abort()
        raise
    (meta,) = files
    meta = replace(meta, first_row_id=rng.first_row_id, write_cols=tuple(cols), min_sequence_number=0,
                   max_sequence_number=0)
    return CommitMessage(partition=split.partition, bucket=split.bucket, total_buckets=opts.bucket,
                         new_files=(meta,))


def _check_unchanged(table: Table, scan: TableScan, ranges: list[_Range], touched: set[int]) -> None:
    # A concurrent update of the same range would be hidden by ours (the newest file of a column wins): refuse.
    # (The window between this check and the commit stays open, as in pypaimon.)
    planned = scan.snapshot.id if scan.snapshot is not None else None
    latest = table.snapshot_manager.latest_snapshot_id()
    if latest == planned:
        return
    now = {r.first_row_id: {f.file_name for f in r.split.files} for r in _ranges(table.scan(columns=[ROW_ID]))}
    for i in touched:
        r = ranges[i]
        if now.get(r.first_row_id) != {f.file_name for f in r.split.files}:
            raise CommitConflictError(
                f"update_by_row_id on table {table.name}: rows {r.first_row_id}..{r.first_row_id + r.row_count - 1} "
                f"changed in a commit since snapshot {planned}; nothing was committed")

