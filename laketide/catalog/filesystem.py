"""The filesystem catalog: the warehouse directory is the metastore.

Layout: ``<warehouse>/<db>.db/<table>/{schema,snapshot,manifest,...}``; a table exists when it has a schema.

Paimon: catalog.FileSystemCatalog
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide.catalog.base import Catalog, Identifier
from laketide.exceptions import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    NoSuchDatabaseError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from laketide.fs import FileIO, file_io_for
from laketide.schema.create import new_table_schema
from laketide.schema.schema_manager import SchemaManager
from laketide.table.system import SystemTable, system_table
from laketide.table.table import Table

__all__ = ["FileSystemCatalog"]

DB_SUFFIX = ".db"


class FileSystemCatalog(Catalog):
    def __init__(self, warehouse: str, *, file_io: FileIO | None = None, **storage_options: Any) -> None:
        self.warehouse = warehouse.rstrip("/")
        self.file_io = file_io or file_io_for(self.warehouse, **storage_options)
        self.file_io.mkdirs(self.warehouse)

    # -- databases ---------------------------------------------------------------------------------------------
    def _db_path(self, name: str) -> str:
        if not name or "/" in name or name.startswith("."):
            raise CatalogError(f"Invalid database name {name!r}")
        return f"{self.warehouse}/{name}{DB_SUFFIX}"

    def database_exists(self, name: str) -> bool:
        return self.file_io.exists(self._db_path(name))

    def create_database(self, name: str, *, exist_ok: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        if self.database_exists(name):
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(f"Database {name} already exists in {self.warehouse}")
        if properties:
            # Paimon's filesystem catalog has nowhere to keep them either.
            raise UnsupportedFeatureError("The filesystem catalog does not store database properties")
        self.file_io.mkdirs(self._db_path(name))

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_missing:
                return
            raise NoSuchDatabaseError(f"Database {name} does not exist in {self.warehouse}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(f"Database {name} is not empty: {tables}; use cascade=True")
        self.file_io.delete(self._db_path(name), recursive=True)

    def list_databases(self) -> list[str]:
        return sorted(
            st.path.rstrip("/").rsplit("/", 1)[-1][: -len(DB_SUFFIX)]
            for st in self.file_io.list_status(self.warehouse)
            if st.is_dir and st.path.rstrip("/").endswith(DB_SUFFIX)
        )

    # -- tables ------------------------------------------------------------------------------------------------
    def table_path(self, name: str | Identifier) -> str:
        ident = Identifier.parse(name)
        return f"{self._db_path(ident.database)}/{ident.table}"

    def table_exists(self, name: str) -> bool:
        ident = Identifier.parse(name)
        return bool(SchemaManager(self.file_io, self.table_path(ident)).list_ids())

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise NoSuchDatabaseError(f"Database {database} does not exist in {self.warehouse}")
        out = []
        for st in self.file_io.list_status(self._db_path(database)):
            if st.is_dir:
                name = st.path.rstrip("/").rsplit("/", 1)[-1]
                if SchemaManager(self.file_io, st.path.rstrip("/")).list_ids():
                    out.append(name)
        return sorted(out)

    def create_table(
        self,
        name: str,
        schema: pa.Schema | Any,
        *,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        exist_ok: bool = False,
    ) -> Table:
        ident = Identifier.parse(name)
        if ident.system_table:
            raise CatalogError(f"Cannot create system table {name}")
        if not self.database_exists(ident.database):
            raise NoSuchDatabaseError(f"Database {ident.database} does not exist in {self.warehouse}")
        if self.table_exists(name):
            if exist_ok:
                return self._load(ident)
            raise TableAlreadyExistsError(f"Table {ident} already exists")
        table_schema = new_table_schema(
            schema, table_name=str(ident), primary_key=primary_key, partition_keys=partition_keys,
            options=options, comment=comment,
        )
        path = self.table_path(ident)
        manager = SchemaManager(self.file_io, path)
        try:
            manager.create(table_schema)
        except Exception as e:
            if exist_ok and self.table_exists(name):
                return self._load(ident)
            raise TableAlreadyExistsError(f"Table {ident} already exists") from e
        return Table(name=str(ident), path=path, file_io=self.file_io, schema=table_schema)

    def table(self, name: str) -> Table | SystemTable:
        ident = Identifier.parse(name)
        table = self._load(ident)
        if ident.system_table:
            return system_table(table, ident.system_table)
        return table

    def _load(self, ident: Identifier) -> Table:
        path = self.table_path(ident)
        latest = SchemaManager(self.file_io, path).latest()
        if latest is None:
            raise NoSuchTableError(f"Table {ident.database}.{ident.table} does not exist in {self.warehouse}")
        return Table(name=f"{ident.database}.{ident.table}", path=path, file_io=self.file_io, schema=latest)

    def drop_table(self, name: str, *, ignore_missing: bool = False) -> None:
        if not self.table_exists(name):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {name} does not exist in {self.warehouse}")
        self.file_io.delete(self.table_path(name), recursive=True)

    def rename_table(self, old: str, new: str, *, ignore_missing: bool = False) -> None:
        if not self.table_exists(old):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {old} does not exist in {self.warehouse}")
        if self.table_exists(new):
            raise TableAlreadyExistsError(f"Table {new} already exists")
        dst = Identifier.parse(new)
        if not self.database_exists(dst.database):
            raise NoSuchDatabaseError(f"Database {dst.database} does not exist in {self.warehouse}")
        if not self.file_io.rename(self.table_path(old), self.table_path(new)):
            raise CatalogError(f"Cannot rename table {old} to {new}")
