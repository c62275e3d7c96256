"""The file-index columns laketide adds to ``db.t$files`` (Java's FilesTable columns: table/metadata_tables.py):

* ``file_index``: where the file's index container is: ``embedded`` (in the manifest entry), ``sidecar``
  (``<data file>.index`` beside it) or null (no index); ``corrupt`` when it cannot be parsed;
* ``file_index_path``: the sidecar's path;
* ``file_indexes``: ``column:type`` pairs the container holds, sorted (``grp:bitmap,name:bloom-filter``).

Paimon: table.system.FilesTable
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from laketide.exceptions import FileIndexCorruptError
from laketide.index.file_index import FileIndexContainer
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import FILE_INDEX_SUFFIX

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["file_index_columns"]


def file_index_columns(t: Table, e: ManifestEntry) -> tuple[str | None, str | None, str | None]:
    """(where the file's index is, the sidecar's path, its ``column:type`` pairs) — all None without an index."""
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
