"""laketide: Apache Paimon's streaming-lakehouse table format in Python."""

from __future__ import annotations

from laketide.catalog import Catalog, FileSystemCatalog, Identifier, load_catalog
from laketide.exceptions import (
    CommitConflictError,
    CommitError,
    CorruptMetadataError,
    LaketideError,
    MergeSourceError,
    NoSuchDatabaseError,
    NoSuchSnapshotError,
    NoSuchTableError,
    SchemaError,
)
from laketide.expr import col
from laketide.schema.changes import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnType,
    UpdateComment,
)
from laketide.table import Table
from laketide.table.dml import ChangeResult

__version__ = "0.1.0"

__all__ = [
    "AddColumn",
    "Catalog",
    "ChangeResult",
    "CommitConflictError",
    "CommitError",
    "CorruptMetadataError",
    "DropColumn",
    "FileSystemCatalog",
    "Identifier",
    "LaketideError",
    "MergeSourceError",
    "Move",
    "NoSuchDatabaseError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "RemoveOption",
    "RenameColumn",
    "SchemaError",
    "SetOption",
    "Table",
    "UpdateColumnType",
    "UpdateComment",
    "col",
    "load_catalog",
]
