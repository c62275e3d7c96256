"""The filesystem catalog: the warehouse directory is the metastore.

Layout: ``<warehouse>/<db>.db/<table>/{schema,snapshot,manifest,...}``; a table exists when it has a schema.

Paimon: catalog.FileSystemCatalog
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide.catalog.base import SYSTEM_DATABASE, Catalog, Identifier, check_name, require_data_table
from laketide.exceptions import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    FileIOError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NotFoundError,
    NoSuchWarehouseError,
    SchemaAlreadyExistsError,
    SystemTableError,
    TableAlreadyExistsError,
    TableLocationNotEmptyError,
    UnsupportedFeatureError,
)
from laketide.catalog.drop_files import delete_table_files
from laketide.fs import FileIO, file_io_for
from laketide.schema.create import new_table_schema
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.catalog.system_tables import GlobalSystemTable, global_system_table
from laketide.meta.paths import MAIN_BRANCH, FileStorePathFactory
from laketide.table.system import SystemTable, system_table
from laketide.table.table import Table
from laketide.write.validation import validate_table_schema

__all__ = ["FileSystemCatalog", "check_no_leftovers", "create_table_files"]

DB_SUFFIX = ".db"


_SECRET = re.compile(r"secret|password|token|credential|access[_.-]?key|session", re.IGNORECASE)


class FileSystemCatalog(Catalog):
    """Databases are ``<warehouse>/<db>.db`` directories, tables their sub-directories with a schema.

    Read-only calls create nothing: the warehouse directory appears with the first database.
    """

    def __init__(self, warehouse: str, *, file_io: FileIO | None = None, **storage_options: Any) -> None:
        self.warehouse = warehouse.rstrip("/")
        self.file_io = file_io or file_io_for(self.warehouse, **storage_options)
        self._options = {"warehouse": self.warehouse, **{k: str(v) for k, v in storage_options.items()}}

    def options(self) -> dict[str, str]:
        """The options this catalog was opened with (``sys.catalog_options``); values of keys that look like
        credentials are masked."""
        return {k: "******" if _SECRET.search(k) else v for k, v in self._options.items()}

    def _warehouse_missing(self) -> bool:
        return not self.file_io.exists(self.warehouse)

    def _where(self) -> str:
        """The location phrase of "not found" messages; says so when the warehouse itself is missing."""
        if self._warehouse_missing():
            return f"in {self.warehouse} (the warehouse directory does not exist)"
        return f"in {self.warehouse}"

    # -- databases ---------------------------------------------------------------------------------------------
    def _db_path(self, name: str) -> str:
        return f"{self.warehouse}/{check_name('Database', name)}{DB_SUFFIX}"

    def database_exists(self, name: str) -> bool:
        return self.file_io.exists(self._db_path(name))

    def database_properties(self, name: str) -> dict[str, str]:
        if not self.database_exists(name):
            raise NoSuchDatabaseError(f"Database {name} does not exist {self._where()}")
        return {}  # create_database refuses properties: there are none to return

    def create_database(self, name: str, *, exist_ok: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        path = self._db_path(name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        if self.file_io.exists(path):
            if not self._is_directory(path):
                raise CatalogError(
                    f"Cannot create database {name}: {path} exists and is a file, not a database directory"
                )
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(f"Database {name} already exists in {self.warehouse}")
        if properties:
            # Paimon's filesystem catalog has nowhere to keep them either.
            raise UnsupportedFeatureError("The filesystem catalog does not store database properties")
        # Creates the warehouse too, on first use; a failure says why (FileIOError). False: a concurrent creator
        # got there between the check above and now.
        if not self.file_io.mkdir_if_absent(path) and not exist_ok:
            raise DatabaseAlreadyExistsError(f"Database {name} already exists in {self.warehouse}")

    def _is_directory(self, path: str) -> bool:
        parent, name = path.rstrip("/").rsplit("/", 1)
        return any(st.is_dir for st in self.file_io.list_status(parent) if st.path.rstrip("/").endswith("/" + name))

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        path = self._db_path(name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        if not self.file_io.exists(path):
            if ignore_missing:
                return
            raise NoSuchDatabaseError(f"Database {name} does not exist {self._where()}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(f"Database {name} is not empty: {tables}; use cascade=True")
        self.file_io.delete(path, recursive=True)

    def list_databases(self) -> list[str]:
        if self._warehouse_missing():
            raise NoSuchWarehouseError(
                f"Warehouse {self.warehouse} does not exist (create_database creates it; check the path)"
            )
        return sorted(
            st.path.rstrip("/").rsplit("/", 1)[-1][: -len(DB_SUFFIX)]
            for st in self.file_io.list_status(self.warehouse)
            if st.is_dir and st.path.rstrip("/").endswith(DB_SUFFIX)
        )

    # -- tables ------------------------------------------------------------------------------------------------
    def table_path(self, name: str | Identifier) -> str:
        """The directory of the data table ``name`` (a system table's or branch's name gives its data table's)."""
        ident = Identifier.parse(name)
        return f"{self._db_path(ident.database)}/{ident.table}"

    def table_exists(self, name: str | Identifier) -> bool:
        ident = Identifier.parse(name)
        path = self.table_path(ident)
        if ident.branch is not None and ident.branch != MAIN_BRANCH:
            # A branch exists when its own schema directory holds a schema.
            schema_dir = FileStorePathFactory(path, branch=ident.branch).schema_dir
            return bool(SchemaManager(self.file_io, path).list_ids()) and bool(
                SchemaManager(self.file_io, path, schema_dir=schema_dir).list_ids())
        return bool(SchemaManager(self.file_io, path).list_ids())

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise NoSuchDatabaseError(f"Database {database} does not exist {self._where()}")
        out = []
        for st in self.file_io.list_status(self._db_path(database)):
            if st.is_dir:
                name = st.path.rstrip("/").rsplit("/", 1)[-1]
                if SchemaManager(self.file_io, st.path.rstrip("/")).list_ids():
                    out.append(name)
        return sorted(out)

    def create_table(
        self,
        name: str | Identifier,
        schema: pa.Schema | Any,
        *,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        exist_ok: bool = False,
    ) -> Table:
        ident = require_data_table(Identifier.parse(name), "create")
        if not self.database_exists(ident.database):
            raise NoSuchDatabaseError(f"Database {ident.database} does not exist {self._where()}")
        if self.table_exists(ident):
            if exist_ok:
                return self._load(ident)
            raise TableAlreadyExistsError(f"Table {ident} already exists")
        table_schema = new_table_schema(
            schema, table_name=str(ident), primary_key=primary_key, partition_keys=partition_keys,
            options=options, comment=comment,
        )
        validate_table_schema(table_schema, table_name=str(ident))
        path = self.table_path(ident)
        manager = SchemaManager(self.file_io, path)
        had_directory = self.file_io.exists(path)
        try:
            self._check_no_leftovers(ident, path, manager)
            manager.create(table_schema)
        except SchemaAlreadyExistsError as e:
            # Another process created the table between our check and our write.
            if exist_ok:
                return self._load(ident)
            raise TableAlreadyExistsError(f"Table {ident} already exists") from e
        except FileIOError as e:
            # The storage failed, but schema-0 may have landed all the same (a lost acknowledgement): only a
            # definite answer decides. Otherwise the directories this call made go, and the storage error (naming
            # the file and its cause) is the report.
            landed = self._schema_landed(manager, table_schema, e)
            if landed == "ours":
                return Table(name=str(ident), path=path, file_io=self.file_io, schema=table_schema)
            if landed == "theirs":
                if exist_ok:
                    return self._load(ident)
                raise TableAlreadyExistsError(f"Table {ident} already exists (created concurrently)") from e
            if landed == "absent" and not had_directory:
                self._remove_if_empty(f"{path}/schema", path)
            raise
        return Table(name=str(ident), path=path, file_io=self.file_io, schema=table_schema)

    def _schema_landed(self, manager: SchemaManager, schema: TableSchema, error: FileIOError) -> str:
        """Whose schema-0 is there after a failed write: "ours", "theirs", "absent" or "unknown".

        "ours" means byte-identical to what this create wrote (a concurrent create of the very same schema in the
        same millisecond is indistinguishable, and the table is then exactly the one asked for).
        """
        schema_path = manager.schema_path(schema.id)
        try:
            there = self.file_io.read_bytes(schema_path)
        except NotFoundError:
            return "absent"
        except FileIOError as unsure:
            error.add_note(f"Whether {schema_path} was written is unknown: {unsure}")
            return "unknown"
        return "ours" if there == schema.to_json().encode() else "theirs"

    def _remove_if_empty(self, *directories: str) -> None:
        # Innermost first; a directory someone else has filled meanwhile stays (a concurrent create owns it).
        for directory in directories:
            try:
                if self.file_io.exists(directory) and not self.file_io.list_status(directory):
                    self.file_io.delete(directory)
            except FileIOError:
                return

    def _check_no_leftovers(self, ident: Identifier, path: str, manager: SchemaManager) -> None:
        check_no_leftovers(self.file_io, ident, path, manager)

    def table(self, name: str | Identifier) -> Table | SystemTable | GlobalSystemTable:
        ident = Identifier.parse(name)
        if ident.database == SYSTEM_DATABASE and ident.branch is None and ident.system_table is None:
            return global_system_table(self, ident.table)
        table = self._load(ident)
        if ident.branch is not None:
            table = table.branch_table(ident.branch)
        if ident.system_table:
            return system_table(table, ident.system_table)
        return table

    def _load(self, ident: Identifier) -> Table:
        path = self.table_path(ident)
        latest = SchemaManager(self.file_io, path).latest()
        if latest is None:
            raise NoSuchTableError(f"Table {ident.full_name} does not exist {self._where()}")
        return Table(name=ident.full_name, path=path, file_io=self.file_io, schema=latest)

    def drop_table(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        ident = require_data_table(Identifier.parse(name), "drop")
        if not self.table_exists(ident):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {ident} does not exist {self._where()}")
        delete_table_files(self.file_io, self.table_path(ident))

    def rename_table(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        src = require_data_table(Identifier.parse(old), "rename")
        dst = require_data_table(Identifier.parse(new), "rename to")
        if not self.table_exists(src):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {src} does not exist {self._where()}")
        if self.table_exists(dst):
            raise TableAlreadyExistsError(f"Table {dst} already exists")
        if not self.database_exists(dst.database):
            raise NoSuchDatabaseError(f"Database {dst.database} does not exist in {self.warehouse}")
        if not self.file_io.rename(self.table_path(src), self.table_path(dst)):
            raise CatalogError(f"Cannot rename table {src} to {dst}")


def check_no_leftovers(file_io: FileIO, ident: Identifier, path: str, manager: SchemaManager) -> None:
    # A schema-0 written here would adopt the snapshots and manifests of whatever table lived here before
    # (a drop that stopped half-way, a copied directory): the new table would not read. Refuse, naming them.
    for sub in ("snapshot", "manifest"):
        leftovers = file_io.list_status(f"{path}/{sub}")
        if leftovers:
            if manager.list_ids():  # not leftovers: a concurrent create has just written the table
                raise SchemaAlreadyExistsError(f"Table {ident} was created concurrently")
            raise TableLocationNotEmptyError(
                f"Cannot create table {ident}: {path}/{sub} holds {len(leftovers)} files but the table has no "
                f"schema (leftovers of another table?); remove {path} or choose another name"
            )


def create_table_files(
    file_io: FileIO,
    path: str,
    ident: Identifier,
    schema: pa.Schema | Any,
    *,
    primary_key: Sequence[str] | None = None,
    partition_keys: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """Validate and write schema-0 of a new table at ``path`` (the JDBC catalog keeps its tables' files so).

    SchemaAlreadyExistsError when another process wrote it first; TableLocationNotEmptyError for leftovers.
    """
    table_schema = new_table_schema(
        schema, table_name=str(ident), primary_key=primary_key, partition_keys=partition_keys,
        options=options, comment=comment,
    )
    validate_table_schema(table_schema, table_name=str(ident))
    manager = SchemaManager(file_io, path)
    check_no_leftovers(file_io, ident, path, manager)
    return manager.create(table_schema)
