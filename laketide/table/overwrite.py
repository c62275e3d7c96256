"""What an overwriting ``Table.write`` replaces: all of the table, a static partition, the partitions a predicate
selects (Delta's replaceWhere, Paimon's static overwrite by partition predicate) or the partitions the data has
rows in (dynamic partition overwrite).

Paimon: FileStoreCommitImpl#overwrite (``dynamic-partition-overwrite``), Spark's ``partitionOverwriteMode``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, PredicateError, SchemaError
from laketide.expr import Leaf, Op, Predicate, and_, bind, or_
from laketide.expr.predicate import referenced_fields
from laketide.meta.commit_message import CommitMessage

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["OverwriteSpec", "PartitionOverwrite", "overwrite_spec", "written_partitions"]

PartitionOverwrite = Literal["static", "dynamic"]


@dataclass(frozen=True)
class OverwriteSpec:
    """``dynamic``: replace the partitions the commit writes to; else replace what ``where`` selects (all of the
    table when None)."""

    dynamic: bool = False
    where: Predicate | None = None


def overwrite_spec(
    table: Table,
    *,
    partition: Mapping[str, object] | None,
    where: str | Predicate | None,
    partition_overwrite: PartitionOverwrite | None,
) -> OverwriteSpec:
    """Check the overwrite arguments of ``Table.write`` and say what the commit replaces.

    ``partition_overwrite=None`` follows the table option ``dynamic-partition-overwrite`` when it is set, else
    static (the whole table, or ``partition`` / ``where``): laketide's ``mode='overwrite'`` has always replaced the
    whole table, as deltalake's and Spark's static default do, while Java's batch writers default to dynamic.
    """
    if partition_overwrite not in (None, "static", "dynamic"):
        raise InvalidOptionError(
            f"write to table {table.name}: partition_overwrite must be 'static' or 'dynamic', not "
            f"{partition_overwrite!r}"
        )
    if partition is not None and where is not None:
        raise InvalidOptionError(f"write to table {table.name}: give partition= or where=, not both")
    explicit_static = partition is not None or where is not None
    if partition_overwrite == "dynamic" and explicit_static:
        raise InvalidOptionError(
            f"write to table {table.name}: partition_overwrite='dynamic' replaces the partitions the data has rows "
            f"in; it cannot be combined with partition= or where="
        )
    dynamic = partition_overwrite == "dynamic"
    if partition_overwrite is None and not explicit_static:
        dynamic = bool(table.options.dynamic_partition_overwrite)
    if dynamic:
        # Java too: a table without partitions has one partition, so a dynamic overwrite replaces all of it.
        return OverwriteSpec(dynamic=bool(table.partition_keys))
    if where is not None:
        return OverwriteSpec(where=partition_predicate(table, where))
    return OverwriteSpec(where=table.partition_filter(partition))


def partition_predicate(table: Table, where: str | Predicate) -> Predicate:
    """``where`` bound to the table's types; PredicateError unless it names only partition columns (a predicate on
    other columns would replace part of a file, which an overwrite does not do: use ``delete`` + ``write``)."""
    from laketide.expr import parse_where

    types = {f.name: f.type for f in table.arrow_schema}
    if isinstance(where, str):
        if not where.strip():
            raise PredicateError(f"overwrite of table {table.name}: where= is empty; to replace every row omit it")
        predicate = parse_where(where, types)
    else:
        predicate = bind(where, types)
    others = sorted(referenced_fields(predicate) - set(table.partition_keys))
    if others:
        raise PredicateError(
            f"overwrite of table {table.name}: where= may only name partition columns "
            f"{list(table.partition_keys)}, but names {others}; to replace rows by other columns use "
            f"delete(where=...) and then write(...)"
        )
    return predicate


def check_rows_match(table: Table, rows: pa.Table, predicate: Predicate, *, where_text: str) -> None:
    """SchemaError when some of ``rows`` fall outside ``predicate`` (null counts as outside, as in SQL): an
    overwrite must not write rows that its own replacement would not cover."""
    if rows.num_rows == 0:
        return
    from laketide.expr import to_arrow_expression
    from laketide.write.conform import conform

    keys = sorted(referenced_fields(predicate))
    missing = [k for k in keys if k not in rows.column_names]
    if missing:
        raise SchemaError(f"overwrite of table {table.name}: the data lacks partition columns {missing}")
    fields = [table.arrow_schema.field(k) for k in keys]
    # Cast as the write will (and with its errors), so the check sees the values that will be stored.
    part = conform(rows.select(keys), pa.schema(fields), table_name=table.name)
    inside = part.filter(to_arrow_expression(predicate, schema=part.schema)).num_rows
    outside = rows.num_rows - inside
    if outside:
        raise SchemaError(
            f"overwrite of table {table.name} where {where_text}: {outside} of {rows.num_rows} rows do not match "
            f"the predicate; nothing was written"
        )


def written_partitions(table: Table, messages: Sequence[CommitMessage]) -> Predicate | None:
    """The partitions ``messages`` add files to, as an OR of partition equalities (None: none)."""
    from laketide.scan.file_scan import PartitionCodec

    keys = list(table.partition_keys)
    seen = {m.partition for m in messages if m.new_files}
    if not keys or not seen:
        return None
    codec = PartitionCodec(keys, [f.type for f in table.schema.partition_fields])
    alternatives = [
        and_(*[Leaf(Op.IS_NULL, k, ()) if v is None else Leaf(Op.EQ, k, (v,)) for k, v in zip(keys, codec.values(p))])
        for p in sorted(seen)
    ]
    types = {f.name: f.type for f in table.arrow_schema}
    return bind(or_(*alternatives), types)
