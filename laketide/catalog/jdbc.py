"""The JDBC catalog: a SQL database (SQLite, PostgreSQL) records databases and tables; files stay in the warehouse.

The metastore is Paimon's own (jdbc_tables.py), so Java Paimon's and pypaimon's JDBC catalogs share it. Every
statement is SQLAlchemy Core with bound parameters: names and options are stored verbatim, never executed.
Tables live at ``<warehouse>/<db>.db/<table>`` as in the filesystem catalog.

Paimon: jdbc.JdbcCatalog, jdbc.JdbcUtils
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import sqlalchemy as sa

from laketide.catalog.base import SYSTEM_DATABASE, Catalog, Identifier, check_name, require_data_table
from laketide.catalog.filesystem import DB_SUFFIX, create_table_files
from laketide.catalog.jdbc_lock import JdbcLock
from laketide.catalog.jdbc_tables import (
    DATABASE_PROPERTIES,
    LOCK_METADATA,
    METADATA,
    NAME_LENGTH,
    TABLE_PROPERTIES,
    TABLES,
    VALUE_LENGTH,
    VIEWS,
)
from laketide.catalog.jdbc_url import JDBC_PREFIX, metastore_url
from laketide.catalog.view import View
from laketide.exceptions import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidIdentifierError,
    InvalidOptionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchViewError,
    SchemaAlreadyExistsError,
    SystemTableError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from laketide.catalog.drop_files import delete_table_files
from laketide.fs import FileIO, file_io_for
from laketide.options import parse_duration
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.table.system import SystemTable, system_table
from laketide.schema.create import new_table_schema
from laketide.table.format_table import FORMAT_TABLE_TYPE, FormatTable, check_format_table_schema
from laketide.table.object_table import OBJECT_TABLE_FIELDS, OBJECT_TABLE_TYPE, ObjectTable
from laketide.table.table import Table

__all__ = ["JdbcCatalog"]

# Paimon: JdbcCatalogOptions / CatalogOptions, with Java's defaults.
CATALOG_KEY = "catalog-key"
LOCK_ENABLED = "lock.enabled"
LOCK_ACQUIRE_TIMEOUT = "lock-acquire-timeout"
LOCK_CHECK_MAX_SLEEP = "lock-check-max-sleep"
SYNC_ALL_PROPERTIES = "sync-all-properties"
_CATALOG_OPTIONS = {CATALOG_KEY, LOCK_ENABLED, LOCK_ACQUIRE_TIMEOUT, LOCK_CHECK_MAX_SLEEP, SYNC_ALL_PROPERTIES,
                    "lock-key-max-length", "uri", "metastore", "warehouse"}
DATABASE_EXISTS_PROPERTY = "exists"  # JdbcCatalog.DATABASE_EXISTS_PROPERTY: a database without tables is this row
DB_LOCATION_PROP = "location"


def _flag(options: Mapping[str, Any], key: str, default: bool) -> bool:
    value = options.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(f"Catalog option {key!r} must be true or false, got {value!r}")
    return text == "true"


def _duration_ms(options: Mapping[str, Any], key: str, default: str) -> int:
    value = str(options.get(key, default))
    try:
        return parse_duration(value)
    except ValueError as e:
        raise InvalidOptionError(f"Catalog option {key!r}: {e}") from e


class JdbcCatalog(Catalog):
    def __init__(self, warehouse: str, *, uri: str | None = None, file_io: FileIO | None = None,
                 **options: Any) -> None:
        self.warehouse = warehouse.rstrip("/")
        storage_options = {k: v for k, v in options.items()
                           if k not in _CATALOG_OPTIONS and not k.startswith(JDBC_PREFIX)}
        self.file_io = file_io or file_io_for(self.warehouse, **storage_options)
        self.catalog_key = str(options.get(CATALOG_KEY, "jdbc"))
        self.lock_enabled = _flag(options, LOCK_ENABLED, False)
        self.sync_all_properties = _flag(options, SYNC_ALL_PROPERTIES, True)
        self.acquire_timeout_ms = _duration_ms(options, LOCK_ACQUIRE_TIMEOUT, "8 min")
        self.check_max_sleep_ms = _duration_ms(options, LOCK_CHECK_MAX_SLEEP, "8 s")
        url = metastore_url(uri or "", options)
        connect_args = {"timeout": 60} if url.get_backend_name() == "sqlite" else {}
        # No pool: a catalog (and the tables it opened) is never closed explicitly, and a pooled connection
        # dropped by the garbage collector is a leak; a connection per call is cheap next to file I/O.
        self.engine = sa.create_engine(url, connect_args=connect_args, poolclass=sa.pool.NullPool)
        self._create_metastore_tables()

    def _create_metastore_tables(self) -> None:
        metadatas = [METADATA, LOCK_METADATA] if self.lock_enabled else [METADATA]
        for metadata in metadatas:
            try:
                metadata.create_all(self.engine, checkfirst=True)
            except sa.exc.DBAPIError:
                # Another process created them between our check and our CREATE: they are there now.
                metadata.create_all(self.engine, checkfirst=True)

    def close(self) -> None:
        self.engine.dispose()

    # -- helpers -----------------------------------------------------------------------------------------------
    def _key(self, table: sa.Table) -> sa.ColumnElement[bool]:
        return table.c.catalog_key == self.catalog_key

    def _fetch(self, stmt: sa.Executable) -> list[sa.Row[Any]]:
        with self.engine.connect() as conn:
            return list(conn.execute(stmt))

    @staticmethod
    def _check_stored(kind: str, items: Iterable[tuple[str, str | None]]) -> None:
        # Java's columns are VARCHAR(255) / VARCHAR(1000); refuse before anything is written, naming the item.
        for key, value in items:
            if len(key) > NAME_LENGTH:
                raise InvalidOptionError(f"{kind} key {key[:40]!r}... is longer than {NAME_LENGTH} characters")
            if value is not None and len(value) > VALUE_LENGTH:
                raise InvalidOptionError(f"{kind} {key!r}: value longer than {VALUE_LENGTH} characters")

    @staticmethod
    def _check_name_length(ident: Identifier) -> None:
        for part in (ident.database, ident.table):
            if len(part) > NAME_LENGTH:
                raise InvalidIdentifierError(f"Name {part[:40]!r}... is longer than {NAME_LENGTH} characters")

    # -- databases ---------------------------------------------------------------------------------------------
    def _db_path(self, name: str) -> str:
        return f"{self.warehouse}/{check_name('Database', name)}{DB_SUFFIX}"

    def database_exists(self, name: str) -> bool:
        check_name("Database", name)
        for table in (TABLES, DATABASE_PROPERTIES, VIEWS):
            stmt = sa.select(table.c.database_name).where(self._key(table), table.c.database_name == name).limit(1)
            if self._fetch(stmt):
                return True
        return False

    def _require_database(self, name: str) -> None:
        if not self.database_exists(name):
            raise NoSuchDatabaseError(f"Database {name} does not exist in JDBC catalog {self.catalog_key!r}")

    def create_database(self, name: str, *, exist_ok: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        path = self._db_path(name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        if len(name) > NAME_LENGTH:
            raise InvalidIdentifierError(f"Database name {name[:40]!r}... is longer than {NAME_LENGTH} characters")
        if self.database_exists(name):
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(f"Database {name} already exists in JDBC catalog {self.catalog_key!r}")
        props = {DATABASE_EXISTS_PROPERTY: "true", **{str(k): str(v) for k, v in (properties or {}).items()}}
        props.setdefault(DB_LOCATION_PROP, path)
        self._check_stored("Database property", props.items())
        rows = [{"catalog_key": self.catalog_key, "database_name": name, "property_key": k, "property_value": v}
                for k, v in props.items()]
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(DATABASE_PROPERTIES), rows)
        except sa.exc.IntegrityError as e:  # a concurrent create took the 'exists' row first
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(
                f"Database {name} already exists in JDBC catalog {self.catalog_key!r}") from e

    def database_properties(self, name: str) -> dict[str, str]:
        self._require_database(name)
        t = DATABASE_PROPERTIES
        rows = self._fetch(sa.select(t.c.property_key, t.c.property_value)
                           .where(self._key(t), t.c.database_name == name))
        props = {r.property_key: r.property_value for r in rows if r.property_key != DATABASE_EXISTS_PROPERTY}
        props.setdefault(DB_LOCATION_PROP, self._db_path(name))
        return props

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        path = self._db_path(name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        if not self.database_exists(name):
            if ignore_missing:
                return
            raise NoSuchDatabaseError(f"Database {name} does not exist in JDBC catalog {self.catalog_key!r}")
        tables = self.list_tables(name)
        views = self._names(VIEWS, VIEWS.c.view_name, name)
        if (tables or views) and not cascade:
            raise DatabaseNotEmptyError(f"Database {name} is not empty: {tables + views}; use cascade=True")
        with self.engine.begin() as conn:
            for table in (TABLES, DATABASE_PROPERTIES, TABLE_PROPERTIES, VIEWS):
                conn.execute(sa.delete(table).where(self._key(table), table.c.database_name == name))
        for t in tables:
            self.file_io.delete(f"{path}/{t}", recursive=True)
        if self.file_io.exists(path) and not self.file_io.list_status(path):
            self.file_io.delete(path, recursive=True)

    def list_databases(self) -> list[str]:
        names: set[str] = set()
        for table in (TABLES, DATABASE_PROPERTIES, VIEWS):
            names.update(r[0] for r in self._fetch(sa.select(table.c.database_name).distinct()
                                                   .where(self._key(table))))
        return sorted(names)

    # -- tables ------------------------------------------------------------------------------------------------
    def _names(self, table: sa.Table, column: sa.Column[str], database: str) -> list[str]:
        return sorted(r[0] for r in self._fetch(sa.select(column).where(self._key(table),
                                                                        table.c.database_name == database)))

    def table_path(self, name: str | Identifier) -> str:
        ident = Identifier.parse(name)
        return f"{self._db_path(ident.database)}/{ident.table}"

    def table_exists(self, name: str | Identifier) -> bool:
        ident = Identifier.parse(name)
        t = TABLES
        stmt = sa.select(t.c.table_name).where(
            self._key(t), t.c.database_name == ident.database, t.c.table_name == ident.table).limit(1)
        return bool(self._fetch(stmt))

    def _view_exists(self, ident: Identifier) -> bool:
        v = VIEWS
        stmt = sa.select(v.c.view_name).where(
            self._key(v), v.c.database_name == ident.database, v.c.view_name == ident.table).limit(1)
        return bool(self._fetch(stmt))

    def list_tables(self, database: str) -> list[str]:
        self._require_database(database)
        return self._names(TABLES, TABLES.c.table_name, database)

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
        self._check_name_length(ident)
        self._require_database(ident.database)
        if self.table_exists(ident) or self._view_exists(ident):
            if exist_ok and self.table_exists(ident):
                return self._load(ident)
            raise TableAlreadyExistsError(f"Table {ident} already exists")
        if self.sync_all_properties and options:
            self._check_stored("Table option", ((str(k), str(v)) for k, v in options.items()))
        path = self.table_path(ident)
        try:
            kind = str((options or {}).get("type", "")).strip().lower()
            if kind == OBJECT_TABLE_TYPE:
                table_schema = self._object_table_schema(ident, path, options or {}, comment)
            elif kind == FORMAT_TABLE_TYPE:
                table_schema = self._format_table_schema(ident, path, schema, partition_keys, options or {},
                                                         comment, primary_key)
            else:
                table_schema = create_table_files(
                    self.file_io, path, ident, schema, primary_key=primary_key, partition_keys=partition_keys,
                    options=options, comment=comment,
                )
        except SchemaAlreadyExistsError as e:  # another process wrote this table's schema first
            if exist_ok:
                return self._open(ident, path, SchemaManager(self.file_io, path).latest())
            raise TableAlreadyExistsError(
                f"Table {ident} already exists (its schema is at {path}, written by another process)") from e
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(TABLES).values(
                    catalog_key=self.catalog_key, database_name=ident.database, table_name=ident.table))
                if self.sync_all_properties:
                    self._insert_table_properties(conn, ident, table_schema)
        except sa.exc.IntegrityError as e:
            # The metastore row was taken although the schema was ours: undo our files, as Java does.
            self.file_io.delete(path, recursive=True)
            raise TableAlreadyExistsError(f"Table {ident} already exists") from e
        return self._open(ident, path, table_schema)

    def _insert_table_properties(self, conn: sa.Connection, ident: Identifier, schema: TableSchema) -> None:
        # Java's collectTableProperties: the options plus primary-key and partition (sync-all-properties).
        props = dict(schema.options)
        if schema.primary_keys:
            props["primary-key"] = ",".join(schema.primary_keys)
        if schema.partition_keys:
            props["partition"] = ",".join(schema.partition_keys)
        if props:
            conn.execute(sa.insert(TABLE_PROPERTIES), [
                {"catalog_key": self.catalog_key, "database_name": ident.database, "table_name": ident.table,
                 "property_key": k, "property_value": v} for k, v in props.items()
            ])

    def commit_lock(self, ident: Identifier) -> JdbcLock | None:
        """The lock every commit to ``ident`` takes when ``lock.enabled`` (Java: JdbcCatalog.runWithLock)."""
        if not self.lock_enabled:
            return None
        return JdbcLock(self.engine, f"{self.catalog_key}.{ident.database}.{ident.table}",
                        acquire_timeout_ms=self.acquire_timeout_ms, check_max_sleep_ms=self.check_max_sleep_ms)

    def _object_table_schema(self, ident: Identifier, path: str, options: Mapping[str, Any],
                             comment: str | None) -> TableSchema:
        """Schema-0 of an object table: Paimon's fixed columns, whatever columns were given (Java:
        JdbcCatalog#createObjectTable, AbstractCatalog#buildObjectTableSchema); ``path`` defaults to the table's
        own directory."""
        opts = {str(k): str(v) for k, v in options.items()}
        opts.setdefault("path", path)
        schema = TableSchema(id=0, fields=OBJECT_TABLE_FIELDS, highest_field_id=len(OBJECT_TABLE_FIELDS) - 1,
                             options=opts, comment=comment)
        return SchemaManager(self.file_io, path).create(schema)

    def _format_table_schema(self, ident: Identifier, path: str, schema: Any, partition_keys: Sequence[str] | None,
                             options: Mapping[str, Any], comment: str | None,
                             primary_key: Sequence[str] | None) -> TableSchema:
        """Schema-0 of a format table, kept in the table's directory; its files live at ``path`` (default
        ``<table>/data``). Java's JDBC catalog has no format tables (its Hive and REST catalogs do): this is
        laketide's, so that a REST server over a JDBC catalog can serve them."""
        opts = {str(k): str(v) for k, v in options.items()}
        opts.setdefault("path", f"{path}/data")
        table_schema = new_table_schema(schema, table_name=str(ident), primary_key=primary_key,
                                        partition_keys=partition_keys, options=opts, comment=comment)
        check_format_table_schema(table_schema, str(ident))
        return SchemaManager(self.file_io, path).create(table_schema)

    def _open(self, ident: Identifier, path: str, schema: TableSchema | None) -> Table:
        kind = schema.options.get("type", "").strip().lower() if schema is not None else ""
        if schema is not None and kind == OBJECT_TABLE_TYPE:
            return ObjectTable(name=ident.full_name, location=schema.options.get("path", path),  # type: ignore[return-value]
                               file_io=self.file_io, schema=schema)
        if schema is not None and kind == FORMAT_TABLE_TYPE:
            return FormatTable(name=ident.full_name, location=schema.options.get("path", f"{path}/data"),  # type: ignore[return-value]
                               file_io=self.file_io, schema=schema)
        return Table(name=ident.full_name, path=path, file_io=self.file_io, schema=schema,
                     commit_lock=self.commit_lock(ident))

    def table(self, name: str | Identifier) -> Table | SystemTable:
        ident = Identifier.parse(name)
        table = self._load(ident)
        if ident.branch is not None:
            if not isinstance(table, Table):
                raise NoSuchTableError(f"{ident.full_name} is an object or format table: it has no branches")
            table = table.branch_table(ident.branch)  # the branch's files, under the same catalog lock
        if ident.system_table:
            if not isinstance(table, Table):
                raise NoSuchTableError(f"{ident.full_name} is an object or format table: it has no system tables")
            return system_table(table, ident.system_table)
        return table

    def _load(self, ident: Identifier) -> Table:
        if not self.table_exists(ident):
            raise NoSuchTableError(f"Table {ident.full_name} does not exist in JDBC catalog {self.catalog_key!r}")
        path = self.table_path(ident)
        latest = SchemaManager(self.file_io, path).latest()
        if latest is None:
            raise NoSuchTableError(
                f"Table {ident.full_name} is registered in JDBC catalog {self.catalog_key!r} but has no schema at "
                f"{path} (its files were removed outside the catalog)"
            )
        return self._open(ident, path, latest)

    def drop_table(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        ident = require_data_table(Identifier.parse(name), "drop")
        with self.engine.begin() as conn:
            deleted = conn.execute(sa.delete(TABLES).where(
                self._key(TABLES), TABLES.c.database_name == ident.database, TABLES.c.table_name == ident.table,
            )).rowcount
            conn.execute(sa.delete(TABLE_PROPERTIES).where(
                self._key(TABLE_PROPERTIES), TABLE_PROPERTIES.c.database_name == ident.database,
                TABLE_PROPERTIES.c.table_name == ident.table,
            ))
        if not deleted:
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {ident} does not exist in JDBC catalog {self.catalog_key!r}")
        delete_table_files(self.file_io, self.table_path(ident))

    def rename_table(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        src = require_data_table(Identifier.parse(old), "rename")
        dst = require_data_table(Identifier.parse(new), "rename to")
        self._check_name_length(dst)
        if not self.table_exists(src):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {src} does not exist in JDBC catalog {self.catalog_key!r}")
        if self.table_exists(dst) or self._view_exists(dst):
            raise TableAlreadyExistsError(f"Table {dst} already exists")
        self._require_database(dst.database)
        try:
            self._move_rows(src, dst)
        except sa.exc.IntegrityError as e:  # a concurrent create or rename took the name
            raise TableAlreadyExistsError(f"Table {dst} already exists") from e
        src_path, dst_path = self.table_path(src), self.table_path(dst)
        if SchemaManager(self.file_io, src_path).list_ids():
            try:
                moved = self.file_io.rename(src_path, dst_path)
            except Exception:
                self._move_rows(dst, src)
                raise
            if not moved:
                self._move_rows(dst, src)
                raise CatalogError(f"Cannot rename table {src} to {dst}: moving {src_path} to {dst_path} failed")

    def alter_table(self, name: str | Identifier, *changes: Any) -> Table:
        table = super().alter_table(name, *changes)
        if self.sync_all_properties:  # Java re-syncs paimon_table_properties after every schema change
            ident = Identifier.parse(name)
            tp = TABLE_PROPERTIES
            with self.engine.begin() as conn:
                conn.execute(sa.delete(tp).where(
                    self._key(tp), tp.c.database_name == ident.database, tp.c.table_name == ident.table))
                self._insert_table_properties(conn, ident, table.schema)
        return table

    # -- views: paimon_views, one row per view holding its ViewSchema JSON (Java: JdbcCatalog view methods) ----
    def _view_where(self, ident: Identifier) -> sa.ColumnElement[bool]:
        return sa.and_(self._key(VIEWS), VIEWS.c.database_name == ident.database, VIEWS.c.view_name == ident.table)

    def create_view(self, name: str | Identifier, view: View, *, exist_ok: bool = False) -> None:
        ident = require_data_table(Identifier.parse(name), "create a view named")
        self._check_name_length(ident)
        self._require_database(ident.database)
        if self.table_exists(ident):
            raise ViewAlreadyExistsError(f"Cannot create view {ident}: a table has that name")
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.insert(VIEWS).values(catalog_key=self.catalog_key, database_name=ident.database,
                                                     view_name=ident.table, view_schema=view.to_json()))
        except sa.exc.IntegrityError as e:
            if exist_ok:
                return
            raise ViewAlreadyExistsError(f"View {ident} already exists") from e

    def view(self, name: str | Identifier) -> View:
        ident = Identifier.parse(name)
        rows = self._fetch(sa.select(VIEWS.c.view_schema).where(self._view_where(ident)))
        if not rows:
            raise NoSuchViewError(f"View {ident} does not exist in JDBC catalog {self.catalog_key!r}")
        return View.from_json(rows[0][0], what=f"view {ident}")

    def list_views(self, database: str) -> list[str]:
        self._require_database(database)
        return self._names(VIEWS, VIEWS.c.view_name, database)

    def drop_view(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        ident = Identifier.parse(name)
        with self.engine.begin() as conn:
            deleted = conn.execute(sa.delete(VIEWS).where(self._view_where(ident))).rowcount
        if not deleted and not ignore_missing:
            raise NoSuchViewError(f"View {ident} does not exist in JDBC catalog {self.catalog_key!r}")

    def rename_view(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        src, dst = Identifier.parse(old), require_data_table(Identifier.parse(new), "rename a view to")
        self._check_name_length(dst)
        if not self._view_exists(src):
            if ignore_missing:
                return
            raise NoSuchViewError(f"View {src} does not exist in JDBC catalog {self.catalog_key!r}")
        self._require_database(dst.database)
        if self.table_exists(dst):
            raise ViewAlreadyExistsError(f"Cannot rename view {src} to {dst}: a table has that name")
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.update(VIEWS).where(self._view_where(src))
                             .values(database_name=dst.database, view_name=dst.table))
        except sa.exc.IntegrityError as e:
            raise ViewAlreadyExistsError(f"View {dst} already exists") from e

    def _move_rows(self, src: Identifier, dst: Identifier) -> None:
        with self.engine.begin() as conn:
            for table in (TABLES, TABLE_PROPERTIES):
                conn.execute(sa.update(table).where(
                    self._key(table), table.c.database_name == src.database, table.c.table_name == src.table,
                ).values(database_name=dst.database, table_name=dst.table))
