"""The metastore address of a JDBC catalog: Paimon's JDBC spellings and SQLAlchemy URLs.

Java and pypaimon configs write ``jdbc:sqlite:<path>`` and ``jdbc:postgresql://host:port/db?k=v`` with the
credentials in the ``jdbc.user`` / ``jdbc.password`` catalog options (Paimon: JdbcCatalog.extractJdbcConfiguration,
prefix ``jdbc.``); SQLAlchemy URLs (``sqlite:///…``, ``postgresql://…``) are taken as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from laketide.exceptions import InvalidOptionError, UnsupportedFeatureError

__all__ = ["JDBC_PREFIX", "metastore_url"]

JDBC_PREFIX = "jdbc."
_POSTGRES_DRIVER = "postgresql+psycopg"  # psycopg 3, the `jdbc` extra


def metastore_url(uri: str, options: Mapping[str, str]) -> URL:
    """The SQLAlchemy URL of ``uri``; ``jdbc.*`` options add connection properties (user, password, ...)."""
    if not isinstance(uri, str) or not uri:
        raise InvalidOptionError("A JDBC catalog needs the 'uri' option (e.g. 'jdbc:sqlite:/path/catalog.db')")
    props = {k[len(JDBC_PREFIX):]: str(v) for k, v in options.items() if k.startswith(JDBC_PREFIX)}
    if uri.startswith("jdbc:sqlite:"):
        path = uri[len("jdbc:sqlite:"):]
        if not path:
            raise InvalidOptionError(f"JDBC uri {uri!r} names no SQLite file")
        if path.startswith("file:"):
            return URL.create("sqlite", database=path, query={"uri": "true"})
        return URL.create("sqlite", database=path)
    if uri.startswith("jdbc:postgresql:"):
        return _postgres(uri, uri[len("jdbc:"):], props)
    if uri.startswith("jdbc:"):
        raise UnsupportedFeatureError(
            f"JDBC uri {uri!r}: laketide's JDBC catalog speaks SQLite and PostgreSQL (jdbc:sqlite:, jdbc:postgresql:)"
        )
    try:
        url = make_url(uri)
    except sa.exc.ArgumentError as e:
        raise InvalidOptionError(f"JDBC catalog uri {uri!r} is neither a jdbc: URI nor a SQLAlchemy URL: {e}") from e
    if url.get_backend_name() == "postgresql":
        if "+" not in url.drivername:  # the bare name means psycopg2 in older SQLAlchemy; ours is psycopg 3
            url = url.set(drivername=_POSTGRES_DRIVER)
        return _with_props(url, props)
    if url.get_backend_name() == "sqlite":
        return url
    raise UnsupportedFeatureError(
        f"JDBC catalog uri {uri!r}: laketide's JDBC catalog speaks SQLite and PostgreSQL"
    )


def _postgres(uri: str, rest: str, props: dict[str, str]) -> URL:
    parts = urlsplit(rest)  # postgresql://host:port/db?k=v
    try:
        port = parts.port
    except ValueError as e:
        raise InvalidOptionError(f"JDBC uri {uri!r}: bad port") from e
    query = dict(parse_qsl(parts.query))
    url = URL.create(
        _POSTGRES_DRIVER,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        host=parts.hostname or None,
        port=port,
        database=parts.path.lstrip("/") or None,
        query=query,
    )
    return _with_props(url, props)


def _with_props(url: URL, props: dict[str, str]) -> URL:
    query: dict[str, str] = {k: v if isinstance(v, str) else v[-1] for k, v in url.query.items()}
    query.update({k: v for k, v in props.items() if k not in ("user", "username", "password")})
    user = props.get("user", props.get("username", query.pop("user", None)))
    password = props.get("password", query.pop("password", None))
    return url.set(
        username=user if user is not None else url.username,
        password=password if password is not None else url.password,
        query=query,
    )
