"""Building the first schema of a new table.

Paimon: schema.Schema (keys normalized, primary key columns NOT NULL); the rules Java enforces on top live in
laketide.write.validation (SchemaValidation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, SchemaError, UnsupportedFeatureError
from laketide.options import CoreOptions
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    DataField,
    RowType,
    VariantType,
    as_arrow_schema,
    iter_types,
    row_type_from_arrow_schema,
)

__all__ = ["new_table_schema"]


def new_table_schema(
    schema: pa.Schema | RowType | Any,
    *,
    table_name: str,
    primary_key: Sequence[str] | None = None,
    partition_keys: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    comment: str | None = None,
) -> TableSchema:
    """The schema-0 of a new table: keys checked against the columns, primary key columns NOT NULL.

    Whether laketide can write the table (options, engines, formats) is checked by
    ``laketide.write.validation.validate_table_schema``, which create and alter both run.
    """
    schema = as_arrow_schema(schema)  # pandas / polars frames and schemas, {name: type} mappings too
    row_type = schema if isinstance(schema, RowType) else row_type_from_arrow_schema(schema)
    opts = {str(k): _option_str(v) for k, v in (options or {}).items()}
    # As in Java, keys may come as options ('primary-key' = 'a,b', 'partition' = 'dt'); they do not stay options.
    pk = _keys_from(opts, "primary-key", list(primary_key or ()), "primary_key", table_name)
    parts = _keys_from(opts, "partition", list(partition_keys or ()), "partition_keys", table_name)
    try:
        core = CoreOptions(opts)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e
    names = row_type.field_names
    variants = [f.name for f in row_type.fields if any(isinstance(t, VariantType) for t in iter_types(f.type))]
    if variants:
        raise UnsupportedFeatureError(
            f"Table {table_name}: columns {variants} hold VARIANT values; laketide reads VARIANT columns of tables "
            "Java writes but does not write them yet"
        )
    for what, keys in (("primary key", pk), ("partition key", parts)):
        unknown = [k for k in keys if k not in names]
        if unknown:
            raise SchemaError(f"Table {table_name}: {what} columns {unknown} do not exist; columns are {names}")
        if len(set(keys)) != len(keys):
            raise SchemaError(f"Table {table_name}: {what} {keys} repeats a column")
    fields = list(row_type.fields)
    if pk:
        # Primary key columns are NOT NULL in Paimon.
        fields = [f.copy(type=f.type.copy(nullable=False)) if f.name in pk else f for f in fields]
        missing = [p for p in parts if p not in pk]
        if missing and opts.get("dynamic-bucket.cross-partition-upsert") is None and core.bucket > 0:
            raise SchemaError(
                f"Table {table_name}: the primary key {pk} must contain all partition keys {parts} "
                f"for a fixed-bucket table (cross-partition upsert needs bucket = -1)"
            )
    fields = _renumber(fields)
    return TableSchema(
        id=0,
        fields=tuple(fields),
        highest_field_id=max((f.id for f in fields), default=-1),
        partition_keys=tuple(parts),
        primary_keys=tuple(pk),
        options=opts,
        comment=comment,
    )


def _keys_from(opts: dict[str, str], key: str, given: list[str], argument: str, table_name: str) -> list[str]:
    raw = opts.pop(key, None)
    if raw is None:
        return given
    if given:
        raise InvalidOptionError(
            f"Table {table_name}: give the keys as {argument}= or as option {key!r}, not both (as in Paimon)"
        )
    return [k.strip() for k in raw.split(",") if k.strip()]


def _renumber(fields: list[DataField]) -> list[DataField]:
    ids = [f.id for f in fields]
    if len(set(ids)) == len(ids) and all(i >= 0 for i in ids):
        return fields
    return [f.copy(id=i) for i, f in enumerate(fields)]


def _option_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
