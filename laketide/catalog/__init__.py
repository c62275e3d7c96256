"""Catalogs: where tables are found by name."""

from __future__ import annotations

from typing import Any

from laketide.catalog.base import Catalog, Identifier
from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import UnsupportedFeatureError

__all__ = ["Catalog", "FileSystemCatalog", "Identifier", "load_catalog"]


def load_catalog(warehouse: str, *, metastore: str = "filesystem", **options: Any) -> Catalog:
    """Open a catalog over ``warehouse``; ``metastore`` = "filesystem" (default)."""
    if metastore == "filesystem":
        return FileSystemCatalog(warehouse, **options)
    raise UnsupportedFeatureError(f"metastore {metastore!r} is not available (supported: 'filesystem')")
