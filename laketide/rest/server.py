"""Paimon's REST catalog API (paimon-open-api, ``/v1/...``) served over any laketide catalog (ASGI, Starlette).

Covered: config, databases (list/create/get/drop), tables (list/create/get/drop/rename/alter), table commit (the
server publishes the client's snapshot atomically) and the latest snapshot. Every request needs
``Authorization: Bearer <token>`` when a token is set (401 otherwise, before anything runs). Names go through the
catalog's identifier checks, so a request cannot reach outside the warehouse. Tables' files are read and written
by the clients at the ``path`` the server returns (a shared file system or object store); no data tokens.

Paimon: rest.RESTCatalogServer (test server), paimon-open-api/rest-catalog-open-api.yaml
"""

from __future__ import annotations

import hmac
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from laketide.catalog.base import Catalog, Identifier, check_name, require_data_table
from laketide.catalog.view import View
from laketide.exceptions import (
    ColumnAlreadyExistsError,
    ColumnNotExistError,
    DatabaseAlreadyExistsError,
    LaketideError,
    NoSuchDatabaseError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ViewAlreadyExistsError,
)
from laketide.meta.snapshot import Snapshot
from laketide.schema.change_json import changes_from_json
from laketide.table.format_table import FormatTable
from laketide.table.object_table import ObjectTable
from laketide.table.table import Table
from laketide.types import RowType, field_from_json

__all__ = ["create_app"]

_SCHEMA_KEYS = ("fields", "partitionKeys", "primaryKeys", "options", "comment")


def _error(status: int, message: str, resource_type: str | None = None, name: str | None = None) -> JSONResponse:
    body = {"message": message, "code": status, "resourceType": resource_type, "resourceName": name}
    return JSONResponse(body, status_code=status)


def _to_response(e: Exception) -> JSONResponse:
    """Paimon's ErrorResponse with the HTTP status the REST clients map to their own exceptions."""
    if isinstance(e, NoSuchDatabaseError):
        return _error(404, str(e), "DATABASE")
    if isinstance(e, NoSuchTableError):
        return _error(404, str(e), "TABLE")
    if isinstance(e, NoSuchSnapshotError):
        return _error(404, str(e), "SNAPSHOT")
    if isinstance(e, NoSuchViewError):
        return _error(404, str(e), "VIEW")
    if isinstance(e, ViewAlreadyExistsError):
        return _error(409, str(e), "VIEW")
    if isinstance(e, DatabaseAlreadyExistsError):
        return _error(409, str(e), "DATABASE")
    if isinstance(e, TableAlreadyExistsError):
        return _error(409, str(e), "TABLE")
    if isinstance(e, ColumnAlreadyExistsError):  # as Java's server: Java's client raises ColumnAlreadyExistException
        return _error(409, str(e), "COLUMN", e.column)
    if isinstance(e, ColumnNotExistError):
        # Java's server answers 404 COLUMN, but pypaimon's alter_table reads every 404 as "table does not exist"
        # and, with ignore_if_not_exists, reports success for an alter that changed nothing. A 400 fails it in
        # every client; laketide's client still raises ColumnNotExistError naming the column.
        return _error(400, f"{type(e).__name__}: {e}", "COLUMN", e.column)
    if isinstance(e, UnsupportedFeatureError):
        return _error(501, str(e))
    if isinstance(e, (LaketideError, ValueError, KeyError, TypeError)):
        return _error(400, f"{type(e).__name__}: {e}")
    return _error(500, f"{type(e).__name__}: {e}")


def _identifier(body: Any) -> Identifier:
    if not isinstance(body, dict) or not isinstance(body.get("database"), str) or not isinstance(
        body.get("object"), str
    ):
        raise ValueError(f"an identifier is {{'database': str, 'object': str}}, got {body!r}")
    return Identifier(body["database"], body["object"])


def _table_id(table: Table) -> str:
    # laketide tables carry no UUID; the path (unique in the warehouse at any time) names one.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, table.path))


def _schema_json(table: Table | ObjectTable | FormatTable) -> dict[str, Any]:
    full = json.loads(table.schema.to_json())
    return {k: full[k] for k in _SCHEMA_KEYS if k in full}


class _Api:
    def __init__(self, catalog: Catalog, warehouse: str) -> None:
        self.catalog = catalog
        self.warehouse = warehouse

    # -- config and databases --------------------------------------------------------------------------------
    def config(self, request: Request, body: Any) -> Any:
        return {"defaults": {}, "overrides": {}}

    def list_databases(self, request: Request, body: Any) -> Any:
        return {"databases": self.catalog.list_databases(), "nextPageToken": None}

    def create_database(self, request: Request, body: Any) -> Any:
        name = check_name("Database", body.get("name"))
        self.catalog.create_database(name, properties=body.get("options") or None)
        return {}

    def get_database(self, request: Request, body: Any) -> Any:
        name = check_name("Database", request.path_params["database"])
        try:
            props = self.catalog.database_properties(name)
        except UnsupportedFeatureError:
            if not self.catalog.database_exists(name):
                raise NoSuchDatabaseError(f"Database {name} does not exist") from None
            props = {}
        return {"id": name, "name": name, "location": props.get("location"), "options": props}

    def drop_database(self, request: Request, body: Any) -> Any:
        # REST clients check emptiness themselves before asking (Java's and pypaimon's RESTCatalog).
        self.catalog.drop_database(check_name("Database", request.path_params["database"]), cascade=True)
        return {}

    # -- tables ----------------------------------------------------------------------------------------------
    def _ident(self, request: Request) -> Identifier:
        return Identifier(request.path_params["database"], request.path_params["table"])

    def _table(self, ident: Identifier) -> Table:
        table = self.catalog.table(ident)
        if not isinstance(table, Table):
            raise NoSuchTableError(f"Table {ident} is not a data table")
        return table

    def _any_table(self, ident: Identifier) -> Table | ObjectTable | FormatTable:
        table = self.catalog.table(ident)
        if not isinstance(table, (Table, ObjectTable, FormatTable)):
            raise NoSuchTableError(f"Table {ident} is not a data or object table")
        return table

    def list_tables(self, request: Request, body: Any) -> Any:
        return {"tables": self.catalog.list_tables(check_name("Database", request.path_params["database"])),
                "nextPageToken": None}

    def create_table(self, request: Request, body: Any) -> Any:
        ident = _identifier(body.get("identifier"))
        schema = body.get("schema")
        if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
            raise ValueError("createTable needs a 'schema' with 'fields'")
        row_type = RowType(tuple(field_from_json(f) for f in schema["fields"]))
        self.catalog.create_table(
            ident, row_type, primary_key=schema.get("primaryKeys") or None,
            partition_keys=schema.get("partitionKeys") or None, options=schema.get("options") or None,
            comment=schema.get("comment"),
        )
        return {}

    def get_table(self, request: Request, body: Any) -> Any:
        table = self._any_table(self._ident(request))
        # An object or format table's path is the location of its files (clients read them from there).
        path = table.location if isinstance(table, (ObjectTable, FormatTable)) else table.path
        return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, path)), "name": table.name.split(".", 1)[1], "path": path,
                "isExternal": False, "schemaId": table.schema.id, "schema": _schema_json(table)}

    def drop_table(self, request: Request, body: Any) -> Any:
        self.catalog.drop_table(self._ident(request))
        return {}

    def alter_table(self, request: Request, body: Any) -> Any:
        # Paimon's AlterTableRequest; the served catalog validates and writes the new schema (200, empty body).
        ident = require_data_table(self._ident(request), "alter")
        table = self._any_table(ident)
        if not isinstance(table, Table):
            raise UnsupportedFeatureError(f"Table {ident} is an object or format table; laketide alters data tables")
        changes = changes_from_json(body.get("changes") if isinstance(body, dict) else None, table.schema,
                                    table_name=str(ident))
        self.catalog.alter_table(ident, *changes)
        return {}

    def rename_table(self, request: Request, body: Any) -> Any:
        self.catalog.rename_table(_identifier(body.get("source")), _identifier(body.get("destination")))
        return {}

    def commit_table(self, request: Request, body: Any) -> Any:
        table = self._table(self._ident(request))
        table_id = body.get("tableId")
        if table_id is not None and table_id != _table_id(table):
            raise ValueError(f"Commit for table id {table_id} but {table.name} is {_table_id(table)} (replaced?)")
        snapshot = Snapshot.from_json(json.dumps(body["snapshot"]), path=f"commit request for {table.name}")
        # Atomic create of snapshot-N (or the table's catalog lock): False when another writer took N first.
        return {"success": table.snapshot_manager.try_publish(snapshot)}

    def load_snapshot(self, request: Request, body: Any) -> Any:
        table = self._table(self._ident(request))
        snapshot = table.latest_snapshot()
        if snapshot is None:
            raise NoSuchSnapshotError(f"Table {table.name} has no snapshot yet")
        entries = table.file_scan().plan(snapshot)
        times = [e.file.creation_time_ms for e in entries if e.file.creation_time_ms is not None]
        return {"snapshot": {
            "snapshot": json.loads(snapshot.to_json()),
            "recordCount": snapshot.total_record_count,
            "fileSizeInBytes": sum(e.file.file_size for e in entries),
            "fileCount": len(entries),
            "lastFileCreationTime": max(times, default=snapshot.time_millis),
        }}

    # -- views -----------------------------------------------------------------------------------------------
    def _view_ident(self, request: Request) -> Identifier:
        return Identifier(request.path_params["database"], request.path_params["view"])

    def list_views(self, request: Request, body: Any) -> Any:
        return {"views": self.catalog.list_views(check_name("Database", request.path_params["database"])),
                "nextPageToken": None}

    def create_view(self, request: Request, body: Any) -> Any:
        ident = _identifier(body.get("identifier"))
        self.catalog.create_view(ident, View.from_json(body.get("schema") or {}, what=f"view {ident}"))
        return {}

    def get_view(self, request: Request, body: Any) -> Any:
        ident = self._view_ident(request)
        view = self.catalog.view(ident)
        return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"view:{ident}")), "name": ident.table,
                "schema": view.to_dict()}

    def drop_view(self, request: Request, body: Any) -> Any:
        self.catalog.drop_view(self._view_ident(request))
        return {}

    def rename_view(self, request: Request, body: Any) -> Any:
        self.catalog.rename_view(_identifier(body.get("source")), _identifier(body.get("destination")))
        return {}


Handler = Callable[[Request, Any], Any]


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def call(request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else {}
            # Catalog calls block (files, SQL): run them off the event loop.
            from starlette.concurrency import run_in_threadpool

            result = await run_in_threadpool(handler, request, body)
        except Exception as e:  # noqa: BLE001 - every failure becomes Paimon's ErrorResponse
            return _to_response(e)
        return JSONResponse(result)

    return call


def create_app(catalog: Catalog, *, token: str | None, warehouse: str = "") -> Any:
    """The ASGI app; ``token`` None serves without authentication (say so explicitly)."""
    api = _Api(catalog, warehouse)
    db, tb = "/v1/databases/{database}", "/v1/databases/{database}/tables/{table}"
    routes = [
        Route("/v1/config", _endpoint(api.config), methods=["GET"]),
        Route("/v1/databases", _endpoint(api.list_databases), methods=["GET"]),
        Route("/v1/databases", _endpoint(api.create_database), methods=["POST"]),
        Route(db, _endpoint(api.get_database), methods=["GET"]),
        Route(db, _endpoint(api.drop_database), methods=["DELETE"]),
        Route(f"{db}/tables", _endpoint(api.list_tables), methods=["GET"]),
        Route(f"{db}/tables", _endpoint(api.create_table), methods=["POST"]),
        Route(tb, _endpoint(api.get_table), methods=["GET"]),
        Route(tb, _endpoint(api.drop_table), methods=["DELETE"]),
        Route(tb, _endpoint(api.alter_table), methods=["POST"]),
        Route(f"{tb}/commit", _endpoint(api.commit_table), methods=["POST"]),
        Route(f"{tb}/snapshot", _endpoint(api.load_snapshot), methods=["GET"]),
        Route("/v1/tables/rename", _endpoint(api.rename_table), methods=["POST"]),
        Route(f"{db}/views", _endpoint(api.list_views), methods=["GET"]),
        Route(f"{db}/views", _endpoint(api.create_view), methods=["POST"]),
        Route(f"{db}/views/{{view}}", _endpoint(api.get_view), methods=["GET"]),
        Route(f"{db}/views/{{view}}", _endpoint(api.drop_view), methods=["DELETE"]),
        Route("/v1/views/rename", _endpoint(api.rename_view), methods=["POST"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        return _error(status, f"{request.method} {request.url.path}: {getattr(exc, 'detail', exc)}")

    # Unknown paths and methods answer with Paimon's ErrorResponse too (a client parses every error body).
    app = Starlette(routes=routes, exception_handlers={404: http_error, 405: http_error})
    return app if token is None else BearerAuth(app, token)


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401 before any route runs."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await _error(401, "Not authorized: send 'Authorization: Bearer <token>'")(scope, receive, send)
                return
        await self.app(scope, receive, send)
