"""Catalogs: where tables are found by name."""

from __future__ import annotations

from typing import Any

from laketide.catalog.base import Catalog, Identifier
from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import UnsupportedFeatureError

__all__ = ["Catalog", "FileSystemCatalog", "Identifier", "load_catalog"]


def load_catalog(warehouse: str, *, metastore: str = "filesystem", **options: Any) -> Catalog:
    """Open a catalog over ``warehouse``; ``metastore`` = "filesystem" (default) or "jdbc" (``uri=`` a
    ``jdbc:sqlite:<path>`` / ``jdbc:postgresql://…`` URI or a SQLAlchemy URL; needs the ``jdbc`` extra) or "rest"
    (``uri=`` a Paimon REST catalog server such as ``laketide serve``, ``token=`` its bearer token)."""
    if metastore == "filesystem":
        return FileSystemCatalog(warehouse, **options)
    if metastore == "jdbc":
        from laketide.catalog.jdbc import JdbcCatalog  # SQLAlchemy is an optional extra

        return JdbcCatalog(warehouse, **options)
    if metastore == "rest":
        from laketide.catalog.rest import RestCatalog

        return RestCatalog(warehouse, **options)
    raise UnsupportedFeatureError(
        f"metastore {metastore!r} is not available (supported: 'filesystem', 'jdbc', 'rest')"
    )
