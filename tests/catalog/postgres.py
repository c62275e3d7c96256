"""A real PostgreSQL server for the JDBC catalog tests: pgserver's bundled binaries, started once per session
on a Unix socket in a temporary directory and stopped at the end. Each test gets its own fresh database."""

from __future__ import annotations

import itertools
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import sqlalchemy as sa


@dataclass
class PostgresServer:
    server: Any
    socket_dir: str
    user: str = "postgres"
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def admin_url(self, database: str = "postgres") -> sa.URL:
        return sa.URL.create("postgresql+psycopg", username=self.user, database=database,
                             query={"host": self.socket_dir})

    def fresh_database(self) -> str:
        name = f"metastore_{next(self._names)}"
        engine = sa.create_engine(self.admin_url(), isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            # DDL takes no bound parameters; the name is ours (metastore_<n>), quoted by the dialect.
            conn.exec_driver_sql(f"CREATE DATABASE {conn.dialect.identifier_preparer.quote(name)}")
        engine.dispose()
        return name

    def fresh_database_uri(self) -> str:
        """A new database, as the JDBC URI Java and pypaimon configs write (``jdbc:postgresql://…``)."""
        return f"jdbc:postgresql://localhost/{self.fresh_database()}?host={self.socket_dir}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    data_dir = tempfile.mkdtemp(prefix="laketide-pg-")
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); pgserver only keeps a lock file there.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver

        server = pgserver.get_server(data_dir, cleanup_mode="delete")
    uri = sa.make_url(server.get_uri())  # postgresql://postgres:@/postgres?host=<socket dir>
    socket_dir = uri.query["host"]
    try:
        yield PostgresServer(server, str(socket_dir), user=uri.username or "postgres")
    finally:
        server.cleanup()
