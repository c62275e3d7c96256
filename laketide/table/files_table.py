"""``db.t$files``: the live data files of the latest snapshot, one row each, with the file index each carries.

Java's FilesTable columns that laketide has (partition, bucket, file_path, file_format, schema_id, level,
record_count, file_size_in_bytes, sequence numbers, creation_time, deleteRowCount, file_source), plus:

* ``file_index``: where the file's index container is: ``embedded`` (in the manifest entry), ``sidecar``
  (``<data file>.index`` beside it) or null (no index); ``corrupt`` when it cannot be parsed;
* ``file_index_path``: the sidecar's path;
* ``file_indexes``: ``column:type`` pairs the container holds, sorted (``grp:bitmap,name:bloom-filter``).

Paimon: table.system.FilesTable
"""

from __future__ import annotations

import datetime as _dt
import struct
from typing import TYPE_CHECKING

import pyarrow as pa

from laketide.exceptions import FileIndexCorruptError
from laketide.index.file_index import FileIndexContainer
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import FILE_INDEX_SUFFIX

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["files_table"]

SCHEMA = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()), ("file_format", pa.string()),
    ("schema_id", pa.int64()), ("level", pa.int32()), ("record_count", pa.int64()),
    ("file_size_in_bytes", pa.int64()), ("min_sequence_number", pa.int64()), ("max_sequence_number", pa.int64()),
    ("creation_time", pa.timestamp("ms")), ("deleteRowCount", pa.int64()), ("file_source", pa.string()),
    ("file_index", pa.string()), ("file_index_path", pa.string()), ("file_indexes", pa.string()),
])


def _index_columns(t: Table, e: ManifestEntry) -> tuple[str | None, str | None, str | None]:
    f = e.file
    sidecars = [x for x in f.extra_files if x.endswith(FILE_INDEX_SUFFIX)]
    paths = t.store.path_factory
    try:
        if f.embedded_index is not None:
            container = FileIndexContainer(f.embedded_index, path=f.file_name)
            where, path = "embedded", None
        elif sidecars:
            path = paths.extra_file_path(e.partition, e.bucket, f, sidecars[0])
            # The head is at the start of the container: a few kB are enough for any realistic head.
            with t.file_io.open_input(path) as stream:
                size = t.file_io.file_size(path)

                def read(offset: int, length: int) -> bytes:
                    stream.seek(offset)
                    return stream.read(length)

                container = FileIndexContainer(read, path=path, size=size)
            where = "sidecar"
        else:
            return None, None, None
    except (FileIndexCorruptError, OSError, struct.error, ValueError):
        return "corrupt", path if not f.embedded_index else None, None
    pairs = sorted(f"{x.column}:{x.index_type}" for x in container.entries)
    return where, path, ",".join(pairs)


def files_table(t: Table) -> pa.Table:
    snapshot = t.latest_snapshot()
    rows = []
    if snapshot is not None:
        scan = t.file_scan()
        codec = scan.partition_codec
        for e in scan.plan(snapshot):
            f = e.file
            where, index_path, indexes = _index_columns(t, e)
            values = codec.values(e.partition)
            rows.append({
                "partition": "{" + ", ".join("null" if v is None else str(v) for v in values) + "}",
                "bucket": e.bucket,
                "file_path": t.store.path_factory.data_file_paths(e.partition, e.bucket, f)[0],
                "file_format": f.file_name.rsplit(".", 1)[-1],
                "schema_id": f.schema_id,
                "level": f.level,
                "record_count": f.row_count,
                "file_size_in_bytes": f.file_size,
                "min_sequence_number": f.min_sequence_number,
                "max_sequence_number": f.max_sequence_number,
                "creation_time": None if f.creation_time_ms is None
                else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=f.creation_time_ms),
                "deleteRowCount": f.delete_row_count,
                "file_source": None if f.file_source is None else f.file_source.name,
                "file_index": where,
                "file_index_path": index_path,
                "file_indexes": indexes,
            })
    return pa.Table.from_pylist(rows, schema=SCHEMA)
