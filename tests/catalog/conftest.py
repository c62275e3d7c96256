"""One ``catalog`` fixture, parametrized over every backend: each contract test runs on all of them.

A backend is described by the ``load_catalog`` keyword arguments that open it (``Backend.spec``), so that
another process (tests/catalog/workers.py) can open the very same catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import laketide
from laketide.catalog import Catalog
from tests.catalog.rest_server import serving
from tests.catalog.postgres import PostgresServer, postgres_server  # noqa: F401 - a session fixture


@dataclass
class Backend:
    kind: str
    spec: dict[str, Any]
    # Whether create_database keeps properties (the filesystem catalog has nowhere to keep them, as in Paimon).
    stores_properties: bool = True
    # Whether the catalog keeps views (Paimon's filesystem catalog does not).
    stores_views: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def open(self) -> Catalog:
        return laketide.load_catalog(**self.spec)


BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], Backend]] = {}


def backend(kind: str) -> Callable[[Callable[..., Backend]], Callable[..., Backend]]:
    def register(make: Callable[..., Backend]) -> Callable[..., Backend]:
        BACKENDS[kind] = make
        return make

    return register


@backend("filesystem")
def _filesystem(tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    return Backend("filesystem", {"warehouse": str(tmp_path / "warehouse")}, stores_properties=False,
                   stores_views=False)


@backend("sqlite")
def _sqlite(tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    # Paimon's own spelling of the URI, as a Java or pypaimon config writes it.
    return Backend("sqlite", {"warehouse": str(tmp_path / "warehouse"), "metastore": "jdbc",
                              "uri": f"jdbc:sqlite:{tmp_path / 'catalog.sqlite'}"})


@backend("postgresql")
def _postgresql(tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    server: PostgresServer = request.getfixturevalue("postgres_server")
    # Paimon's spelling, credentials in jdbc.* options; the server listens on a Unix socket (libpq's host=).
    return Backend("postgresql", {"warehouse": str(tmp_path / "warehouse"), "metastore": "jdbc",
                                  "uri": server.fresh_database_uri(), "jdbc.user": server.user})


TOKEN = "s3cr3t-token"


@backend("rest")
def _rest(tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    # The server's own catalog is a JDBC one on SQLite (database properties included).
    served = laketide.load_catalog(str(tmp_path / "warehouse"), metastore="jdbc",
                                   uri=f"jdbc:sqlite:{tmp_path / 'server-catalog.sqlite'}")
    uri = request.getfixturevalue("_servers").enter_context(serving(served, token=TOKEN))
    return Backend("rest", {"warehouse": "wh", "metastore": "rest", "uri": uri, "token": TOKEN})


@pytest.fixture()
def _servers() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.fixture(params=list(BACKENDS))
def backend_under_test(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield BACKENDS[request.param](tmp_path, request)


@pytest.fixture()
def catalog(backend_under_test: Backend) -> Catalog:
    """An empty catalog (no database yet) of the backend under test."""
    return backend_under_test.open()
