"""The Catalog interface: databases and tables by name.

Paimon: catalog.Catalog, catalog.Identifier
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import CatalogError
from laketide.schema.changes import SchemaChange
from laketide.table.table import Table

if TYPE_CHECKING:
    from laketide.table.system import SystemTable

__all__ = ["Catalog", "Identifier"]

SYSTEM_TABLE_SPLITTER = "$"


@dataclass(frozen=True, slots=True)
class Identifier:
    database: str
    table: str
    system_table: str | None = None

    @classmethod
    def parse(cls, name: str | Identifier) -> Identifier:
        if isinstance(name, Identifier):
            return name
        parts = name.split(".")
        if len(parts) != 2 or not all(parts):
            raise CatalogError(f"Table name {name!r} must be 'database.table'")
        table, _, system = parts[1].partition(SYSTEM_TABLE_SPLITTER)
        return cls(parts[0], table, system or None)

    def __str__(self) -> str:
        base = f"{self.database}.{self.table}"
        return f"{base}${self.system_table}" if self.system_table else base


class Catalog(ABC):
    @abstractmethod
    def create_database(self, name: str, *, exist_ok: bool = False,
                        properties: Mapping[str, str] | None = None) -> None: ...

    @abstractmethod
    def drop_database(self, name: str, *, ignore_missing: bool = False, cascade: bool = False) -> None: ...

    @abstractmethod
    def list_databases(self) -> list[str]: ...

    @abstractmethod
    def database_exists(self, name: str) -> bool: ...

    @abstractmethod
    def create_table(
        self,
        name: str,
        schema: pa.Schema | Any,
        *,
        primary_key: Sequence[str] | None = None,
        partition_keys: Sequence[str] | None = None,
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        exist_ok: bool = False,
    ) -> Table: ...

    @abstractmethod
    def table(self, name: str) -> Table | SystemTable:
        """The table ``db.t``, or a system table ``db.t$snapshots``; NoSuchTableError if absent."""

    @abstractmethod
    def table_exists(self, name: str) -> bool: ...

    @abstractmethod
    def list_tables(self, database: str) -> list[str]: ...

    @abstractmethod
    def drop_table(self, name: str, *, ignore_missing: bool = False) -> None: ...

    @abstractmethod
    def rename_table(self, old: str, new: str, *, ignore_missing: bool = False) -> None: ...

    def alter_table(self, name: str, *changes: SchemaChange) -> Table:
        table = self.table(name)
        if not isinstance(table, Table):
            raise CatalogError(f"System table {name} cannot be altered")
        return table.alter(*changes)
