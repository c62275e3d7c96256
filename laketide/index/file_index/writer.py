"""A table's file-index spec, and the index of one data file as it is written: embedded or a sidecar file.

The rolling data-file writer feeds every batch of a data file to a :class:`DataFileIndexWriter` and, when the
file closes, asks where its index went: embedded in the manifest entry (``_EMBEDDED_FILE_INDEX``) when the
container is at most ``file-index.in-manifest-threshold`` bytes, else ``<data file>.index`` beside the data
file, named in its ``_EXTRA_FILES``.

Which columns: any column of the table, for append and primary-key tables alike (Java's KeyValue writers
index ``kv.value()``, the full row). Readers use a primary-key table's indexes only with deletion vectors
(see :func:`file_index_usable`): without them a file's rows may be superseded by rows in other files, so
skipping a file by a value predicate could resurrect an older version.

Paimon: io.DataFileIndexWriter, io.KeyValueDataFileWriter, io.RowDataFileWriter, KeyValueFileStore#newScan
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from laketide.fs import FileIO
from laketide.index.file_index.builder import FileIndexBuilder
from laketide.index.file_index.spec import FileIndexSpec, parse_file_index_options
from laketide.meta.paths import FileStorePathFactory
from laketide.options import CoreOptions
from laketide.schema.table_schema import TableSchema
from laketide.types import DataType

__all__ = ["DataFileIndexWriter", "PlacedIndex", "file_index_spec", "file_index_usable"]

_T = TypeVar("_T")


def file_index_spec(schema: TableSchema, *, table_name: str) -> FileIndexSpec:
    """The indexes every data file written with ``schema`` gets; a typed error naming the table and option."""
    fields = {f.name: f.type for f in schema.fields}
    try:
        return parse_file_index_options(schema.core_options.file_index_options(), fields=fields)
    except UnsupportedOptionError as e:
        raise UnsupportedOptionError(f"Table {table_name}: {e}") from e
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e


def file_index_usable(options: CoreOptions, *, has_primary_key: bool) -> bool:
    """Whether reads may use file indexes (Java: fileIndexReadEnabled, and deletion vectors on PK tables)."""
    if not options.file_index_read_enabled:
        return False
    return not has_primary_key or options.deletion_vectors_enabled


@dataclass(frozen=True, slots=True)
class PlacedIndex:
    """Where a data file's index went: embedded bytes, or a sidecar (its name in ``extra_files`` and path)."""

    embedded: bytes | None = None
    extra_files: tuple[str, ...] = ()
    sidecar_path: str | None = None


_NONE = PlacedIndex()


class DataFileIndexWriter:
    """Builds one data file's index from its batches and places it when the file closes.

    The work runs on one background thread, in batch order, while the caller encodes the data file: hashing,
    sorting and serializing (numpy, pyroaring) overlap with the format writer's encoding (which releases the GIL
    too), so indexes add little to a write's wall time. At most a few batches wait for the thread.
    """

    _MAX_PENDING = 2

    def __init__(self, spec: FileIndexSpec, *, fields: Mapping[str, DataType]) -> None:
        self._spec = spec
        self._builder = FileIndexBuilder(spec, fields=fields)
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._result: Future[bytes | None] | None = None

    def _submit(self, fn: Callable[..., _T], *args: object) -> Future[_T]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="laketide-file-index")
        return self._pool.submit(fn, *args)

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        self._pending.append(self._submit(self._builder.write, batch))
        while len(self._pending) > self._MAX_PENDING:
            self._pending.popleft().result()  # bounded: a slow index never holds many batches in memory

    def start_finish(self) -> None:
        """Start serializing (call before closing the data file, so both run at once)."""
        if self._result is None:
            self._result = self._submit(self._builder.finish)

    def abort(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def finish(self, file_io: FileIO, data_file_path: str, data_file_name: str) -> PlacedIndex:
        """Serialize the index; embed it when small enough, else write the sidecar beside the data file."""
        self.start_finish()
        assert self._result is not None
        try:
            for f in self._pending:
                f.result()
            container = self._result.result()
        finally:
            self.abort()
        if container is None:
            return _NONE
        if self._spec.embed(len(container)):
            return PlacedIndex(embedded=container)
        name = FileStorePathFactory.file_index_name(data_file_name)
        path = FileStorePathFactory.extra_file_path_beside(data_file_path, name)
        file_io.write_bytes(path, container, overwrite=False)
        return PlacedIndex(extra_files=(name,), sidecar_path=path)
