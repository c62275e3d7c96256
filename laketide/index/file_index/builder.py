"""Build a data file's index container from its rows, batch by batch, as Java's DataFileIndexWriter does.

Paimon: org.apache.paimon.io.DataFileIndexWriter
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import pyarrow as pa

from laketide.exceptions import InvalidOptionError
from laketide.index.file_index import bitmap, bloom, bsi
from laketide.index.file_index.container import java_container_order, write_container
from laketide.index.file_index.spec import ColumnIndexSpec, FileIndexSpec
from laketide.types import DataType

__all__ = ["FileIndexBuilder", "build_file_index"]


class _IndexWriter(Protocol):
    def write(self, values: pa.Array | pa.ChunkedArray) -> None: ...

    def serialize(self) -> bytes: ...


def _writer(spec: ColumnIndexSpec, dt: DataType) -> _IndexWriter:
    if spec.index_type == bloom.BLOOM_FILTER:
        items, fpp = bloom.parse_bloom_options(spec.options, column=spec.column)
        return bloom.BloomFilterWriter(dt, items=items, fpp=fpp)
    if spec.index_type == bitmap.BITMAP:
        version, block_size = bitmap.parse_bitmap_options(spec.options, column=spec.column)
        return bitmap.BitmapIndexWriter(dt, version=version, index_block_size=block_size)
    if spec.index_type == bsi.BSI:
        return bsi.BsiIndexWriter(dt)
    raise InvalidOptionError(f"unknown file index type {spec.index_type!r}")


class FileIndexBuilder:
    """Collects the rows of one data file (``write`` per batch, in file order) and returns its container.

    ``fields`` maps the written columns to their types. A bloom filter takes its batches as they come; bitmap
    and BSI indexes keep their column's keys until :meth:`finish` (Java keeps them in memory too).
    """

    def __init__(self, spec: FileIndexSpec, *, fields: Mapping[str, DataType]) -> None:
        self._spec = spec
        self._writers: list[tuple[ColumnIndexSpec, _IndexWriter]] = []
        for s in spec.indexes:
            dt = fields.get(s.column)
            if dt is None:
                raise InvalidOptionError(f"file index column {s.column!r} is not among the written columns")
            self._writers.append((s, _writer(s, dt)))
        self.row_count = 0

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        for s, w in self._writers:
            w.write(batch.column(s.column))
        self.row_count += batch.num_rows

    def finish(self) -> bytes | None:
        """The container bytes, in Java's layout; None when the spec asks for no index."""
        if not self._writers:
            return None
        indexes: dict[str, dict[str, bytes | None]] = {}
        for s, w in self._writers:
            indexes.setdefault(s.column, {})[s.index_type] = w.serialize()
        return write_container(java_container_order(indexes))


def build_file_index(
    data: pa.Table | pa.RecordBatch, spec: FileIndexSpec, *, fields: Mapping[str, DataType]
) -> bytes | None:
    """The index container of a data file holding ``data`` (None when ``spec`` asks for no index)."""
    builder = FileIndexBuilder(spec, fields=fields)
    builder.write(data)
    return builder.finish()
