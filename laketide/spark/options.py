"""Data source options: which catalog and table a Spark read or write addresses, and how.

Options are case-insensitive (Spark lowercases them). Catalog options are ``warehouse``, ``metastore`` and any
``catalog.<key>``; the table comes from ``load("db.t")`` / ``save("db.t")`` or the ``table`` option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laketide.exceptions import InvalidOptionError, UnsupportedFeatureError

if TYPE_CHECKING:
    from laketide.catalog import Catalog
    from laketide.table.table import Table

__all__ = ["TableRef", "table_ref", "int_option", "bool_option", "AUDIT_LOG", "ROWKIND"]

AUDIT_LOG = "audit_log"  # the change view of a table: its rows with a leading `rowkind` column
ROWKIND = "rowkind"


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRef:
    """Enough to open a table anywhere (driver or executor): picklable, no open handles."""

    warehouse: str
    metastore: str
    catalog_options: tuple[tuple[str, str], ...]
    database: str
    table: str
    system_table: str | None = None

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    def catalog(self) -> Catalog:
        from laketide.catalog import load_catalog

        return load_catalog(self.warehouse, metastore=self.metastore, **dict(self.catalog_options))

    def data_table(self) -> Table:
        from laketide.table.table import Table

        t = self.catalog().table(self.name)
        assert isinstance(t, Table)
        return t


def table_ref(options: Mapping[str, str]) -> TableRef:
    from laketide.catalog import Identifier

    name = options.get("path") or options.get("table")
    if not name:
        raise InvalidOptionError("laketide: name the table, e.g. load('db.t') / save('db.t') or option('table', ...)")
    warehouse = options.get("warehouse")
    if not warehouse:
        raise InvalidOptionError(
            f"laketide: option 'warehouse' is required for table {name} (or pass warehouse= to laketide.spark.session)"
        )
    ident = Identifier.parse(name)
    if ident.is_branch:
        raise UnsupportedFeatureError(f"laketide: table {ident}: branches are not supported; use {ident.full_name}")
    extra = tuple(sorted((k[len("catalog."):], v) for k, v in options.items() if k.lower().startswith("catalog.")))
    return TableRef(
        warehouse=warehouse, metastore=options.get("metastore") or "filesystem", catalog_options=extra,
        database=ident.database, table=ident.table,
        system_table=ident.system_table.lower() if ident.system_table else None,
    )


def int_option(options: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        raw = options.get(name)
        if raw is not None and str(raw).strip() != "":
            try:
                return int(raw)
            except ValueError as e:
                raise InvalidOptionError(f"laketide: option {name!r} must be an integer, got {raw!r}") from e
    return None


def bool_option(options: Mapping[str, str], name: str, *, default: bool = False) -> bool:
    raw = options.get(name)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"laketide: option {name!r} must be true or false, got {raw!r}")
    return value == "true"
