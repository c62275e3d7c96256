"""A client of Paimon's REST catalog API (``metastore="rest"``): a laketide server or any Paimon REST catalog.

Names, databases and tables go through the server; a table's files are read and written at the ``path`` the
server returns, through laketide's FileIO (the server and its clients share the store). Snapshots are published
by laketide's atomic create-if-absent on that store, as the filesystem catalog does.

Paimon: rest.RESTCatalog, rest.RESTApi (the HTTP calls), rest.ResourcePaths
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide import exceptions
from laketide.catalog.base import SYSTEM_DATABASE, Catalog, Identifier, check_name, require_data_table
from laketide.catalog.view import View
from laketide.exceptions import (
    CatalogError,
    ColumnAlreadyExistsError,
    ColumnNotExistError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidOptionError,
    LaketideError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchViewError,
    SchemaError,
    SystemTableError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ViewAlreadyExistsError,
)
from laketide.catalog.rest_table import RestTable
from laketide.fs import FileIO, file_io_for
from laketide.schema.change_json import change_to_json
from laketide.schema.changes import SchemaChange
from laketide.schema.create import new_table_schema
from laketide.table.system import SystemTable, system_table
from laketide.schema.table_schema import TableSchema
from laketide.table.format_table import FORMAT_TABLE_TYPE, FormatTable
from laketide.table.object_table import OBJECT_TABLE_TYPE, ObjectTable
from laketide.table.table import Table

__all__ = ["RestCatalog", "RestCatalogError"]

TIMEOUT_SECONDS = 120


class RestCatalogError(CatalogError):
    """The REST catalog answered with an error laketide has no closer type for (401, 403, 5xx); names the call."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


class RestCatalog(Catalog):
    def __init__(self, warehouse: str, *, uri: str | None = None, token: str | None = None, prefix: str = "",
                 file_io: FileIO | None = None, **storage_options: Any) -> None:
        if not isinstance(uri, str) or not uri.startswith(("http://", "https://")):
            raise InvalidOptionError(f"A REST catalog needs 'uri' = the server's http(s) address, got {uri!r}")
        self.uri: str = uri.rstrip("/")
        self.warehouse = warehouse
        self.token = token
        self._file_io = file_io
        self._storage_options = {k: v for k, v in storage_options.items() if k not in ("metastore", "token.provider")}
        config = self._call("GET", "/v1/config", query={"warehouse": warehouse})
        merged = {**(config.get("defaults") or {}), **(config.get("overrides") or {})}
        prefix = merged.get("prefix", prefix)
        self._base = f"/v1/{_quote(prefix)}" if prefix else "/v1"

    # -- HTTP ----------------------------------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None) -> Any:
        url = self.uri + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                text = response.read()
        except urllib.error.HTTPError as e:
            with e:
                raise self._error(method, path, e.code, e.read()) from None
        except urllib.error.URLError as e:
            raise RestCatalogError(f"REST catalog {self.uri} unreachable ({method} {path}): {e.reason}",
                                   status=0) from e
        return json.loads(text) if text else {}

    def _error(self, method: str, path: str, status: int, raw: bytes) -> LaketideError:
        try:
            error = json.loads(raw)
        except ValueError:
            error = {}
        message = str(error.get("message") or raw[:200].decode(errors="replace"))
        kind = error.get("resourceType")
        if kind == "COLUMN" and status in (404, 409):  # Paimon's server: an alter named a missing / taken column
            column = str(error.get("resourceName") or "")
            return (ColumnNotExistError if status == 404 else ColumnAlreadyExistsError)(message, column)
        if status == 404:
            missing = {"DATABASE": NoSuchDatabaseError, "VIEW": NoSuchViewError}.get(kind, NoSuchTableError)
            return missing(message)
        if status == 409:
            taken = {"DATABASE": DatabaseAlreadyExistsError, "VIEW": ViewAlreadyExistsError}.get(
                kind, TableAlreadyExistsError)
            return taken(message)
        if status == 501:
            return UnsupportedFeatureError(message)
        if status == 400:
            # A laketide server names its error type ("SchemaError: ..."): raise the same type here.
            name, _, rest = message.partition(": ")
            cls = getattr(exceptions, name, None)
            if isinstance(cls, type) and issubclass(cls, (ColumnNotExistError, ColumnAlreadyExistsError)) and rest:
                return cls(rest, str(error.get("resourceName") or ""))
            if isinstance(cls, type) and issubclass(cls, LaketideError) and rest:
                return cls(rest)
            return CatalogError(f"REST catalog refused {method} {path}: {message}")
        return RestCatalogError(f"REST catalog {method} {path}: HTTP {status}: {message}", status=status)

    def _db(self, name: str) -> str:
        return f"{self._base}/databases/{_quote(check_name('Database', name))}"

    def _tb(self, ident: Identifier) -> str:
        return f"{self._db(ident.database)}/tables/{_quote(ident.table)}"

    # -- databases -----------------------------------------------------------------------------------------------
    def database_exists(self, name: str) -> bool:
        try:
            self._call("GET", self._db(name))
        except NoSuchDatabaseError:
            return False
        return True

    def database_properties(self, name: str) -> dict[str, str]:
        return dict(self._call("GET", self._db(name)).get("options") or {})

    def create_database(self, name: str, *, exist_ok: bool = False,
                        properties: Mapping[str, str] | None = None) -> None:
        check_name("Database", name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        try:
            self._call("POST", f"{self._base}/databases",
                       {"name": name, "options": {str(k): str(v) for k, v in (properties or {}).items()}})
        except DatabaseAlreadyExistsError:
            if not exist_ok:
                raise

    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None:
        check_name("Database", name)
        if name == SYSTEM_DATABASE:
            raise SystemTableError(f"Database {name!r} is reserved for system tables (as in Paimon)")
        try:
            tables = self.list_tables(name)
            try:
                tables += self.list_views(name)
            except UnsupportedFeatureError:  # a server whose catalog keeps no views
                pass
            if tables and not cascade:
                raise DatabaseNotEmptyError(f"Database {name} is not empty: {tables}; use cascade=True")
            self._call("DELETE", self._db(name))
        except NoSuchDatabaseError:
            if not ignore_missing:
                raise

    def list_databases(self) -> list[str]:
        return sorted(self._paged(f"{self._base}/databases", "databases"))

    def _paged(self, path: str, key: str) -> list[str]:
        out: list[str] = []
        token: str | None = None
        while True:
            page = self._call("GET", path, query={"pageToken": token} if token else None)
            out.extend(page.get(key) or [])
            token = page.get("nextPageToken")
            if not token:
                return out

    # -- tables --------------------------------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        return sorted(self._paged(f"{self._db(database)}/tables", "tables"))

    def table_exists(self, name: str | Identifier) -> bool:
        ident = Identifier.parse(name)
        try:
            self._call("GET", self._tb(ident))
        except (NoSuchTableError, NoSuchDatabaseError):
            return False
        return True

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
        # Build (and check) schema-0 here so that a bad schema fails before the call, with laketide's error.
        ts = new_table_schema(schema, table_name=str(ident), primary_key=primary_key,
                              partition_keys=partition_keys, options=options, comment=comment)
        full = json.loads(ts.to_json())
        body = {"identifier": {"database": ident.database, "object": ident.table},
                "schema": {k: full[k] for k in ("fields", "partitionKeys", "primaryKeys", "options", "comment")
                           if k in full}}
        try:
            self._call("POST", f"{self._db(ident.database)}/tables", body)
        except TableAlreadyExistsError:
            if not exist_ok:
                raise
        return self._load(ident)

    def table(self, name: str | Identifier) -> Table | SystemTable:
        ident = Identifier.parse(name)
        if ident.is_branch:
            raise UnsupportedFeatureError(f"Table {ident}: branches are not supported; read {ident.full_name}")
        table = self._load(ident)
        if ident.system_table:
            if not isinstance(table, Table):
                raise NoSuchTableError(f"Object table {ident.full_name} has no system tables")
            return system_table(table, ident.system_table)
        return table

    def _load(self, ident: Identifier) -> Table:
        response = self._call("GET", self._tb(ident))
        path = response.get("path")
        if not isinstance(path, str) or not path:
            raise CatalogError(f"REST catalog {self.uri} gave no path for table {ident.full_name}")
        file_io = self._file_io or file_io_for(path, **self._storage_options)
        schema_json = response.get("schema") or {}
        kind = str((schema_json.get("options") or {}).get("type", "")).strip().lower()
        if kind in (OBJECT_TABLE_TYPE, FORMAT_TABLE_TYPE):
            # No Paimon metadata at the path: the schema is the server's answer.
            schema = TableSchema.from_json(json.dumps({
                "version": 3, "id": response.get("schemaId", 0),
                "highestFieldId": max((f["id"] for f in schema_json["fields"]), default=-1),
                "partitionKeys": [], "primaryKeys": [], "timeMillis": 0, **schema_json,
            }), path=f"REST table {ident.full_name}")
            cls = ObjectTable if kind == OBJECT_TABLE_TYPE else FormatTable
            return cls(name=ident.full_name, location=path, file_io=file_io,  # type: ignore[return-value]
                       schema=schema)
        return RestTable(catalog=self, ident=Identifier(ident.database, ident.table), path=path.rstrip("/"),
                         file_io=file_io)

    def alter_table(self, name: str | Identifier, *changes: SchemaChange) -> Table:
        """Apply schema changes through the server (Paimon: RESTCatalog#alterTable): it validates them and writes
        the new schema; the table is then loaded again."""
        ident = require_data_table(Identifier.parse(name), "alter")
        self.send_alter(ident, changes)
        return self._load(ident)

    def send_alter(self, ident: Identifier, changes: Sequence[SchemaChange]) -> None:
        """``POST .../tables/{table}`` with Paimon's AlterTableRequest; errors name the table."""
        body = {"changes": [change_to_json(c) for c in changes]}
        try:
            self._call("POST", self._tb(ident), body)
        except (NoSuchTableError, NoSuchDatabaseError):
            raise NoSuchTableError(f"Table {ident} does not exist in REST catalog {self.uri}") from None
        except (ColumnNotExistError, ColumnAlreadyExistsError) as e:
            if ident.full_name in str(e):
                raise
            raise type(e)(f"Cannot alter table {ident}: {e}", e.column) from None
        except (SchemaError, InvalidOptionError, UnsupportedFeatureError) as e:
            if ident.full_name in str(e):
                raise
            raise type(e)(f"Cannot alter table {ident}: {e}") from None

    def drop_table(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        ident = require_data_table(Identifier.parse(name), "drop")
        try:
            self._call("DELETE", self._tb(ident))
        except (NoSuchTableError, NoSuchDatabaseError):
            if not ignore_missing:
                raise NoSuchTableError(f"Table {ident} does not exist in REST catalog {self.uri}") from None

    def rename_table(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        src = require_data_table(Identifier.parse(old), "rename")
        dst = require_data_table(Identifier.parse(new), "rename to")
        if not self.table_exists(src):
            if ignore_missing:
                return
            raise NoSuchTableError(f"Table {src} does not exist in REST catalog {self.uri}")
        self._call("POST", f"{self._base}/tables/rename", {
            "source": {"database": src.database, "object": src.table},
            "destination": {"database": dst.database, "object": dst.table},
        })

    # -- views ---------------------------------------------------------------------------------------------------
    def _vw(self, ident: Identifier) -> str:
        return f"{self._db(ident.database)}/views/{_quote(ident.table)}"

    def create_view(self, name: str | Identifier, view: View, *, exist_ok: bool = False) -> None:
        ident = require_data_table(Identifier.parse(name), "create a view named")
        try:
            self._call("POST", f"{self._db(ident.database)}/views",
                       {"identifier": {"database": ident.database, "object": ident.table}, "schema": view.to_dict()})
        except ViewAlreadyExistsError:
            if not exist_ok:
                raise

    def view(self, name: str | Identifier) -> View:
        ident = Identifier.parse(name)
        return View.from_json(self._call("GET", self._vw(ident)).get("schema") or {}, what=f"view {ident}")

    def list_views(self, database: str) -> list[str]:
        return sorted(self._paged(f"{self._db(database)}/views", "views"))

    def drop_view(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        ident = Identifier.parse(name)
        try:
            self._call("DELETE", self._vw(ident))
        except (NoSuchViewError, NoSuchDatabaseError):
            if not ignore_missing:
                raise NoSuchViewError(f"View {ident} does not exist in REST catalog {self.uri}") from None

    def rename_view(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        src, dst = Identifier.parse(old), require_data_table(Identifier.parse(new), "rename a view to")
        try:
            self._call("POST", f"{self._base}/views/rename", {
                "source": {"database": src.database, "object": src.table},
                "destination": {"database": dst.database, "object": dst.table},
            })
        except NoSuchViewError:
            if not ignore_missing:
                raise
