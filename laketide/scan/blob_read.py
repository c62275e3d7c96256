"""One BLOB column of a row-id range, assembled from the ``.blob`` files that hold it.

Blob files roll by size, so several cover one data file's range, each from its ``first_row_id``; a newer file
(higher max sequence number) rewriting some rows wins, and its placeholders fall back to the older file's value
of that row. A row no file holds is null.

Paimon: operation.DataEvolutionSplitRead (BlobFileBunch), BlobFallbackRecordReader
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from laketide.exceptions import FileIOError
from laketide.format.blob import BlobFile
from laketide.fs import FileIO
from laketide.meta.manifest import DataFileMeta
from laketide.schema.schema_manager import SchemaManager
from laketide.types import ArrayType, BlobType, DataField, DataType, MapType, MultisetType, RowType

__all__ = ["blob_columns", "read_blob_column"]


def _has_blob(dt: DataType) -> bool:
    if isinstance(dt, BlobType):
        return True
    return any(_has_blob(c) for c in _children(dt))


def _children(dt: DataType) -> list[DataType]:
    if isinstance(dt, (ArrayType, MultisetType)):
        return [dt.element]
    if isinstance(dt, MapType):
        return [dt.key, dt.value]
    if isinstance(dt, RowType):
        return [f.type for f in dt.fields]
    return []


def blob_columns(fields: Sequence[DataField]) -> list[str]:
    """Columns whose type is or holds BLOB."""
    return [f.name for f in fields if _has_blob(f.type)]


def read_blob_column(
    file_io: FileIO, schema_manager: SchemaManager, field: DataField, blobs: Sequence[tuple[DataFileMeta, str]],
    *, first_row_id: int, row_count: int,
) -> pa.Array:
    mine = []
    for meta, path in blobs:
        names = meta.write_cols or ()
        file_field = next((f for f in schema_manager.schema(meta.schema_id).fields if names and f.name == names[0]),
                          None)
        if file_field is not None and file_field.id == field.id:
            mine.append((meta, path))
    mine.sort(key=lambda mp: -mp[0].max_sequence_number)  # newest first: it wins where it has a value
    chosen = np.full(row_count, -1, dtype=np.int64)
    parts: list[pa.Array] = []
    taken = 0
    for meta, path in mine:
        try:
            blob = BlobFile(file_io.read_bytes(path), path)
        except OSError as e:
            raise FileIOError(f"Cannot read blob file {path}: {e}") from e
        if blob.row_count != meta.row_count:
            raise FileIOError(f"Blob file {path} holds {blob.row_count} rows, its metadata says {meta.row_count}")
        start = (meta.first_row_id or 0) - first_row_id
        rows = np.arange(start, start + blob.row_count)
        inside = (rows >= 0) & (rows < row_count)
        free = np.zeros(blob.row_count, dtype=bool)
        free[inside] = chosen[rows[inside]] < 0
        use = free & ~blob.placeholders
        if not use.any():
            continue
        values = blob.values().filter(pa.array(use))
        chosen[rows[use]] = np.arange(taken, taken + len(values))
        taken += len(values)
        parts.append(values)
    if not parts:
        return pa.nulls(row_count, pa.large_binary())
    merged = pa.concat_arrays(parts)
    return merged.take(pa.array(chosen, mask=chosen < 0))
