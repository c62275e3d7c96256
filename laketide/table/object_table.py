"""Object tables: a read-only table whose rows are the files under a directory (or object store prefix).

Every read lists the location again, so the table always shows the files present now (nothing to refresh by
hand). Columns as Paimon defines them: ``path`` (relative to the location), ``name``, ``length``, ``mtime``,
``atime`` (0 where the store keeps none, as Hadoop reports it) and ``owner``.

Paimon: table.object.ObjectTable, ObjectTableImpl
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from laketide.exceptions import ReadOnlyTableError, SchemaError
from laketide.fs import FileIO
from laketide.schema.table_schema import TableSchema
from laketide.types import MAX_LENGTH, BigIntType, DataField, RowType, VarCharType, to_arrow_schema

__all__ = ["OBJECT_TABLE_TYPE", "OBJECT_TABLE_FIELDS", "ObjectTable"]

OBJECT_TABLE_TYPE = "object-table"
_STRING = VarCharType(MAX_LENGTH, nullable=False)
OBJECT_TABLE_FIELDS: tuple[DataField, ...] = (
    DataField(0, "path", _STRING, "Relative path of object"),
    DataField(1, "name", _STRING, "Name of object"),
    DataField(2, "length", BigIntType(nullable=False), "Bytes length of object"),
    DataField(3, "mtime", BigIntType(nullable=False), "Modification time of object"),
    DataField(4, "atime", BigIntType(nullable=False), "Access time of object"),
    DataField(5, "owner", VarCharType(MAX_LENGTH), "Owner of object"),
)


class ObjectTable:
    def __init__(self, *, name: str, location: str, file_io: FileIO, schema: TableSchema) -> None:
        self.name = name
        self.location = location.rstrip("/")
        self.file_io = file_io
        self.schema = schema

    @property
    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(RowType(OBJECT_TABLE_FIELDS))

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """One row per file under the location, listed now (sorted by path)."""
        files = self._list()
        data = {
            "path": [p for p, _ in files],
            "name": [p.rsplit("/", 1)[-1] for p, _ in files],
            "length": [st.size for _, st in files],
            "mtime": [st.modification_time_ms for _, st in files],
            "atime": [st.access_time_ms or 0 for _, st in files],
            "owner": [st.owner for _, st in files],
        }
        table = pa.Table.from_pydict(data, schema=self.arrow_schema)
        if columns is not None:
            unknown = [c for c in columns if c not in table.column_names]
            if unknown:
                raise SchemaError(f"Object table {self.name} has no columns {unknown}; it has {table.column_names}")
            table = table.select(list(columns))
        return table

    def to_arrow(self, **kwargs: Any) -> pa.Table:
        return self.read(**kwargs)

    def _list(self) -> list[tuple[str, Any]]:
        out = []
        pending = [self.location]
        while pending:  # the listing is per directory: walk it (Java: listFilesIterative(location, recursive))
            for st in self.file_io.list_status(pending.pop()):
                path = st.path.rstrip("/")
                if st.is_dir:
                    pending.append(path)
                else:
                    out.append((path[len(self.location):].lstrip("/"), st))
        return sorted(out, key=lambda item: item[0])

    def write(self, *args: Any, **kwargs: Any) -> None:
        raise ReadOnlyTableError(f"Object table {self.name} is read-only: it lists the files under {self.location}")

    new_write = write
    commit = write
