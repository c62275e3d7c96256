"""``Table.write(..., schema_mode='merge')``: evolve the table so the data fits, then write it.

New columns of the data are added (nullable, at the end), missing nullable columns are filled with nulls, a
missing NOT NULL column is an error, and a column whose values do not fit its type is widened where
``alter`` allows it without an explicit cast (INT -> BIGINT, FLOAT -> DOUBLE, ...). All changes go in ONE new
schema, written before the data: data files name the schema they were written with, so it must exist first.
If the data commit then fails, that schema stays (Paimon has no way to withdraw a published schema that a
concurrent writer may already use); it only adds nullable columns or widens types, so every existing row reads
as before, with nulls in the new columns.

Delta: ``schema_mode='merge'`` (deltalake), Spark's ``mergeSchema``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import InvalidOptionError, SchemaError

if TYPE_CHECKING:
    from laketide.schema.changes import SchemaChange
    from laketide.table.table import Table

__all__ = ["SchemaMode", "check_schema_mode", "merge_schema", "schema_changes_for"]

SchemaMode = Literal["strict", "merge"]


def schema_changes_for(table: Table, rows: pa.Table) -> list[SchemaChange]:
    """The changes that make the table's schema accept ``rows`` (empty: it already does).

    SchemaError for a NOT NULL column the data lacks, or a column whose values neither fit nor may be widened.
    """
    from laketide.schema.cast_rules import supports_cast
    from laketide.schema.changes import AddColumn, UpdateColumnType
    from laketide.types import from_arrow_type

    target = table.arrow_schema
    missing_required = [f.name for f in target if f.name not in rows.column_names and not f.nullable]
    if missing_required:
        raise SchemaError(
            f"write to table {table.name} (schema_mode='merge'): the data lacks NOT NULL columns {missing_required}"
        )
    changes: list[SchemaChange] = []
    for name in rows.column_names:
        column = rows.column(name)
        if name not in target.names:
            changes.append(AddColumn(name=name, type=from_arrow_type(column.type)))
            continue
        current = target.field(name).type
        if column.type.equals(current) or _fits(column, current):
            continue
        old = table.schema.field(name).type
        new = from_arrow_type(column.type, nullable=old.nullable)
        if not supports_cast(old, new, allow_explicit=False):
            raise SchemaError(
                f"write to table {table.name} (schema_mode='merge'): column {name!r} has type {old} and the data's "
                f"{new} neither fits it nor widens it (alter allows no implicit cast {old} -> {new})"
            )
        changes.append(UpdateColumnType(name=name, new_type=new))
    return changes


def merge_schema(table: Table, rows: pa.Table) -> pa.Table:
    """Apply :func:`schema_changes_for` as one schema change (validated as ``alter`` validates) and return
    ``rows`` with the table's missing nullable columns filled with nulls."""
    from laketide.schema.changes import apply_changes
    from laketide.types import to_arrow_schema
    from laketide.write.conform import conform

    table.refresh()  # a concurrent writer may have added the same columns already
    changes = schema_changes_for(table, rows)
    target = to_arrow_schema(apply_changes(table.schema, changes).row_type) if changes else table.arrow_schema
    for f in target:
        if f.name not in rows.column_names:
            rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
    # The data must fit the evolved schema before it is published: a bad value changes nothing.
    rows = conform(rows, target, table_name=table.name)
    if changes:
        table.alter(*changes)
    return rows


def check_schema_mode(table: Table, schema_mode: str) -> None:
    if schema_mode not in ("strict", "merge"):
        raise InvalidOptionError(
            f"write to table {table.name}: schema_mode must be 'strict' or 'merge', not {schema_mode!r}"
        )


def _fits(column: pa.ChunkedArray, target: pa.DataType) -> bool:
    """Whether ``column`` converts to ``target`` without loss (what the writer's cast will accept)."""
    try:
        pc.cast(column, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False
    return True
