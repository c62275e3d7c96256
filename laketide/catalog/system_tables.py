"""Catalog-wide system tables of the ``sys`` database: ``sys.all_table_options`` and ``sys.catalog_options``, with
Paimon's columns.

Paimon: table.system.AllTableOptionsTable, CatalogOptionsTable
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from laketide.exceptions import NoSuchTableError
from laketide.expr import Predicate, bind, filter_table, parse_where

if TYPE_CHECKING:
    from laketide.catalog.base import Catalog

__all__ = ["GlobalSystemTable", "global_system_table"]

_ALL_TABLE_OPTIONS = pa.schema([("database_name", pa.string()), ("table_name", pa.string()), ("key", pa.string()),
                                ("value", pa.string())])
_CATALOG_OPTIONS = pa.schema([pa.field("key", pa.string(), nullable=False),
                              pa.field("value", pa.string(), nullable=False)])


class GlobalSystemTable:
    """A read-only table of catalog metadata (``sys.<name>``): ``read(columns, where)`` like a table's."""

    def __init__(self, catalog: Catalog, name: str, reader: Callable[[Catalog], pa.Table]) -> None:
        self.catalog = catalog
        self.name = f"sys.{name}"
        self._reader = reader

    def read(self, columns: Sequence[str] | None = None, where: str | Predicate | None = None) -> pa.Table:
        table = self._reader(self.catalog)
        if where is not None:
            types = {f.name: f.type for f in table.schema}
            table = filter_table(table, parse_where(where, types) if isinstance(where, str) else bind(where, types))
        return table.select(list(columns)) if columns is not None else table

    to_arrow = read


def _all_table_options(catalog: Catalog) -> pa.Table:
    from laketide.table.table import Table

    rows: list[dict[str, str]] = []
    for db in catalog.list_databases():
        for name in catalog.list_tables(db):
            t = catalog.table(f"{db}.{name}")
            assert isinstance(t, Table)
            rows.extend({"database_name": db, "table_name": name, "key": k, "value": v}
                        for k, v in sorted(t.schema.options.items()))
    return pa.Table.from_pylist(rows, schema=_ALL_TABLE_OPTIONS)


def _catalog_options(catalog: Catalog) -> pa.Table:
    items = sorted(catalog.options().items())
    return pa.Table.from_pylist([{"key": k, "value": v} for k, v in items], schema=_CATALOG_OPTIONS)


_GLOBAL: dict[str, Callable[[Catalog], pa.Table]] = {
    "all_table_options": _all_table_options,
    "catalog_options": _catalog_options,
}


def global_system_table(catalog: Catalog, name: str) -> GlobalSystemTable:
    reader = _GLOBAL.get(name.lower())
    if reader is None:
        raise NoSuchTableError(f"System table sys.{name} does not exist; available: {sorted(_GLOBAL)}")
    return GlobalSystemTable(catalog, name.lower(), reader)
