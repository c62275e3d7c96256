"""A data table loaded from a REST catalog: its schema changes go to the server, never straight to the files.

The server owns the table's metadata (its cache, its permission checks, its own metastore), so ``alter`` asks it
(Paimon: RESTCatalog#alterTable) and then reads the schema the server wrote. Everything else is a plain Table
reading and writing the files at the path the server gave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from laketide.schema.changes import SchemaChange
from laketide.table.table import Table

if TYPE_CHECKING:
    from laketide.catalog.base import Identifier
    from laketide.catalog.rest import RestCatalog
    from laketide.fs import FileIO
    from laketide.schema.table_schema import TableSchema

__all__ = ["RestTable"]


class RestTable(Table):
    def __init__(self, *, catalog: RestCatalog, ident: Identifier, path: str, file_io: FileIO,
                 schema: TableSchema | None = None) -> None:
        super().__init__(name=ident.full_name, path=path, file_io=file_io, schema=schema)
        self._catalog = catalog
        self._ident = ident

    def alter(self, *changes: SchemaChange) -> Table:
        """Apply schema changes through the REST catalog (one ``POST .../tables/{table}``); the server validates
        and writes the new schema, this table then reads it. A refused change raises the server's typed error and
        changes nothing."""
        self._catalog.send_alter(self._ident, changes)
        return self.refresh()

    def copy(self, options: Mapping[str, object]) -> Table:
        # A copy with dynamic options is the same table: its alters go to the server too.
        copied = super().copy(options)
        return RestTable(catalog=self._catalog, ident=self._ident, path=self.path, file_io=self.file_io,
                         schema=copied.schema)
