"""The Catalog interface: databases and tables by name.

Paimon: catalog.Catalog, catalog.Identifier
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from laketide.exceptions import CatalogError, InvalidIdentifierError, SystemTableError, UnsupportedFeatureError
from laketide.schema.changes import SchemaChange
from laketide.table.table import Table

if TYPE_CHECKING:
    from laketide.catalog.view import View
    from laketide.table.object_table import ObjectTable
    from laketide.table.system import SystemTable

__all__ = ["Catalog", "Identifier", "check_name", "require_data_table"]

SYSTEM_TABLE_SPLITTER = "$"
SYSTEM_BRANCH_PREFIX = "branch_"
# Paimon reserves it for catalog-wide system tables (Catalog.SYSTEM_DATABASE_NAME); nothing may be created there.
SYSTEM_DATABASE = "sys"

# Characters a name may not hold: path separators (a name is one directory), ':' (Hadoop's Path reads it as a
# URI scheme, so Java could not open the table), '.' (the separator of 'database.table') and '$' (the separator
# of system tables and branches; tables only, where it is split off instead).
_FORBIDDEN = frozenset('/\\:.')


def check_name(kind: str, name: object) -> str:
    """``name`` if it can be one directory of the warehouse, else InvalidIdentifierError saying why.

    The same rules hold for strings and for :class:`Identifier` objects: empty names, names with a path
    separator, '.', ':', control characters or surrounding whitespace are refused.
    """
    if not isinstance(name, str):
        raise InvalidIdentifierError(f"{kind} name must be a string, got {type(name).__name__} {name!r}")
    problem = None
    if not name:
        problem = "is empty"
    elif name != name.strip():
        problem = "has leading or trailing whitespace"
    elif any(unicodedata.category(c) == "Cc" for c in name):
        problem = "contains a control character"
    elif bad := sorted({c for c in name if c in _FORBIDDEN}):
        problem = f"contains {', '.join(repr(c) for c in bad)}"
    elif kind != "Table" and SYSTEM_TABLE_SPLITTER in name:
        problem = f"contains {SYSTEM_TABLE_SPLITTER!r}"
    if problem is not None:
        raise InvalidIdentifierError(
            f"{kind} name {name!r} {problem}; names are single directory names without '/', '\\', '.', ':', "
            f"'$', control characters or surrounding spaces"
        )
    return name


@dataclass(frozen=True, slots=True)
class Identifier:
    """``database.table``, optionally a branch (``table$branch_b``) and a system table (``table$snapshots``).

    Validated on construction, whether parsed from a string or built directly: ``Identifier("d", "t$files")``
    is the system table ``files`` of ``d.t``, as in Java (Paimon: catalog.Identifier).
    """

    database: str
    table: str
    system_table: str | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        check_name("Database", self.database)
        if isinstance(self.table, str) and SYSTEM_TABLE_SPLITTER in self.table:
            if self.system_table is not None or self.branch is not None:
                raise InvalidIdentifierError(
                    f"Table name {self.table!r} contains {SYSTEM_TABLE_SPLITTER!r}; "
                    f"give the system table or branch once"
                )
            table, branch, system = _split_object_name(self.table)
            object.__setattr__(self, "table", table)
            object.__setattr__(self, "branch", branch)
            object.__setattr__(self, "system_table", system)
        check_name("Table", self.table)
        if self.branch is not None:
            check_name("Branch", self.branch)
        if self.system_table is not None:
            check_name("System table", self.system_table)

    @classmethod
    def parse(cls, name: str | Identifier) -> Identifier:
        """``db.t``, ``db.t$snapshots``, ``db.t$branch_b`` or ``db.t$branch_b$files``."""
        if isinstance(name, Identifier):
            return name
        if not isinstance(name, str):
            raise InvalidIdentifierError(f"Table name must be a string or an Identifier, got {name!r}")
        parts = name.split(".")
        if len(parts) != 2 or not all(parts):
            raise InvalidIdentifierError(f"Table name {name!r} must be 'database.table'")
        return cls(parts[0], parts[1])

    @property
    def is_system_table(self) -> bool:
        return self.system_table is not None

    @property
    def is_branch(self) -> bool:
        return self.branch is not None

    @property
    def full_name(self) -> str:
        """``database.table`` without branch or system table: the data table's name."""
        return f"{self.database}.{self.table}"

    def __str__(self) -> str:
        out = self.full_name
        if self.branch is not None:
            out += f"{SYSTEM_TABLE_SPLITTER}{SYSTEM_BRANCH_PREFIX}{self.branch}"
        if self.system_table is not None:
            out += f"{SYSTEM_TABLE_SPLITTER}{self.system_table}"
        return out


def _split_object_name(name: str) -> tuple[str, str | None, str | None]:
    """(table, branch, system table) of Java's object name ``t``, ``t$sys``, ``t$branch_b``, ``t$branch_b$sys``."""
    parts = name.split(SYSTEM_TABLE_SPLITTER)
    if len(parts) == 2:
        if parts[1].startswith(SYSTEM_BRANCH_PREFIX):
            return parts[0], parts[1][len(SYSTEM_BRANCH_PREFIX):], None
        return parts[0], None, parts[1]
    if len(parts) == 3 and parts[1].startswith(SYSTEM_BRANCH_PREFIX):
        return parts[0], parts[1][len(SYSTEM_BRANCH_PREFIX):], parts[2]
    raise InvalidIdentifierError(
        f"Table name {name!r}: expected 'table', 'table$<system table>', 'table$branch_<branch>' or "
        f"'table$branch_<branch>$<system table>'"
    )


def require_data_table(ident: Identifier, verb: str) -> Identifier:
    """``ident`` if it names a data table, else SystemTableError: ``verb`` changes tables (Paimon:
    CatalogUtils.checkNotSystemTable / checkNotBranch)."""
    if ident.is_system_table:
        raise SystemTableError(
            f"Cannot {verb} {ident}: it is the system table {ident.system_table!r} of {ident.full_name}, which is "
            f"read-only; name the data table {ident.full_name} instead"
        )
    if ident.is_branch:
        raise SystemTableError(
            f"Cannot {verb} {ident}: it names branch {ident.branch!r} of {ident.full_name}; laketide changes only "
            f"the main branch (branches are not supported)"
        )
    if ident.database == SYSTEM_DATABASE:
        raise SystemTableError(f"Cannot {verb} {ident}: database {SYSTEM_DATABASE!r} is reserved for system tables")
    return ident


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

    def database_properties(self, name: str) -> dict[str, str]:
        """The properties ``create_database`` stored for ``name``; NoSuchDatabaseError if absent."""
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store database properties")

    @abstractmethod
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
    ) -> Table: ...

    @abstractmethod
    def table(self, name: str | Identifier) -> Table | SystemTable:
        """The table ``db.t``, or a system table ``db.t$snapshots``; NoSuchTableError if absent."""

    @abstractmethod
    def table_exists(self, name: str | Identifier) -> bool: ...

    @abstractmethod
    def list_tables(self, database: str) -> list[str]: ...

    @abstractmethod
    def drop_table(self, name: str | Identifier, *, ignore_missing: bool = False) -> None: ...

    @abstractmethod
    def rename_table(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None: ...

    def create_object_table(self, name: str | Identifier, location: str | None = None, *,
                            options: Mapping[str, str] | None = None, comment: str | None = None,
                            exist_ok: bool = False) -> ObjectTable:
        """A read-only table listing the files under ``location`` (default: the table's own directory).

        Paimon keeps object tables in its JDBC and REST catalogs, not in the filesystem catalog.
        """
        from laketide.table.object_table import OBJECT_TABLE_FIELDS, OBJECT_TABLE_TYPE
        from laketide.types import RowType, to_arrow_schema

        opts = {**{str(k): str(v) for k, v in (options or {}).items()}, "type": OBJECT_TABLE_TYPE}
        if location is not None:
            opts["path"] = location
        table = self.create_table(name, to_arrow_schema(RowType(OBJECT_TABLE_FIELDS)), options=opts,
                                  comment=comment, exist_ok=exist_ok)
        return table  # type: ignore[return-value]  # the catalogs that keep object tables return one

    # -- views (Paimon: catalog.Catalog#createView ...; the filesystem catalog has none, as in Java) ----------------
    def create_view(self, name: str | Identifier, view: View, *, exist_ok: bool = False) -> None:
        """Store ``view`` (its query per dialect and its schema) under ``name``."""
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store views (Paimon's does not either)")

    def view(self, name: str | Identifier) -> View:
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store views (Paimon's does not either)")

    def list_views(self, database: str) -> list[str]:
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store views (Paimon's does not either)")

    def drop_view(self, name: str | Identifier, *, ignore_missing: bool = False) -> None:
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store views (Paimon's does not either)")

    def rename_view(self, old: str | Identifier, new: str | Identifier, *, ignore_missing: bool = False) -> None:
        raise UnsupportedFeatureError(f"{type(self).__name__} does not store views (Paimon's does not either)")

    def alter_table(self, name: str | Identifier, *changes: SchemaChange) -> Table:
        """Apply schema changes to the data table ``name`` (never a system table or a branch)."""
        ident = require_data_table(Identifier.parse(name), "alter")
        table = self.table(ident)
        if not isinstance(table, Table):  # pragma: no cover - a data table name loads a Table
            raise CatalogError(f"{ident} is not a data table")
        return table.alter(*changes)
