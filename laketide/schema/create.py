"""Building and validating the first schema of a new table.

Paimon: schema.Schema, schema.SchemaValidation (the rules Java enforces, so Java can open what we create)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, SchemaError
from laketide.options import CoreOptions
from laketide.schema.table_schema import TableSchema
from laketide.types import ArrayType, DataField, MapType, MultisetType, RowType, row_type_from_arrow_schema

__all__ = ["new_table_schema"]


def new_table_schema(
    schema: pa.Schema | RowType,
    *,
    table_name: str,
    primary_key: Sequence[str] | None = None,
    partition_keys: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    comment: str | None = None,
) -> TableSchema:
    row_type = schema if isinstance(schema, RowType) else row_type_from_arrow_schema(schema)
    pk = list(primary_key or ())
    parts = list(partition_keys or ())
    opts = {str(k): _option_str(v) for k, v in (options or {}).items()}
    names = row_type.field_names
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
        if missing and opts.get("dynamic-bucket.cross-partition-upsert") is None and int(opts.get("bucket", -1)) > 0:
            raise SchemaError(
                f"Table {table_name}: the primary key {pk} must contain all partition keys {parts} "
                f"for a fixed-bucket table (cross-partition upsert needs bucket = -1)"
            )
    try:
        core = CoreOptions(opts)
        core.validate()
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e
    fields = _renumber(fields)
    ts = TableSchema(
        id=0,
        fields=tuple(fields),
        highest_field_id=max((f.id for f in fields), default=-1),
        partition_keys=tuple(parts),
        primary_keys=tuple(pk),
        options=opts,
        comment=comment,
    )
    _validate_bucket(ts, core, table_name)
    _validate_merge_engine(ts, table_name)
    return ts


def _validate_merge_engine(schema: TableSchema, table_name: str) -> None:
    """Sequence groups, aggregate functions and their column types, first-row rules (Java's SchemaValidation)."""
    # The rules live with the merge engines (one parser for creation and merging); imported here, lazily, because
    # schema/ sits below mergetree/ in the layers.
    from laketide.mergetree.engines import check_engine_options

    try:
        check_engine_options(schema)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e


def _renumber(fields: list[DataField]) -> list[DataField]:
    ids = [f.id for f in fields]
    if len(set(ids)) == len(ids) and all(i >= 0 for i in ids):
        return fields
    return [f.copy(id=i) for i, f in enumerate(fields)]


def _option_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _validate_bucket(schema: TableSchema, options: CoreOptions, table_name: str) -> None:
    bucket = options.bucket
    raw_key = schema.options.get("bucket-key")
    if bucket == -1:
        if raw_key is not None:
            raise InvalidOptionError(
                f"Table {table_name}: cannot define 'bucket-key' with bucket = -1; remove it or set a bucket number"
            )
        return
    if bucket < 1:
        raise InvalidOptionError(f"Table {table_name}: 'bucket' must be -1 or greater than 0, got {bucket}")
    if not schema.primary_keys and not raw_key:
        raise InvalidOptionError(
            f"Table {table_name}: define a 'bucket-key' for a bucketed append table (bucket = {bucket})"
        )
    keys = schema.bucket_keys()
    names = schema.field_names
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise InvalidOptionError(f"Table {table_name}: bucket-key columns {unknown} do not exist")
    in_partition = [k for k in keys if k in schema.partition_keys]
    if in_partition:
        raise InvalidOptionError(f"Table {table_name}: bucket-key {in_partition} must not be partition keys")
    if schema.primary_keys and not set(keys) <= set(schema.primary_keys):
        raise InvalidOptionError(
            f"Table {table_name}: bucket-key {keys} must be a subset of the primary key {list(schema.primary_keys)}"
        )
    nested = [k for k in keys if isinstance(schema.field(k).type, (ArrayType, MapType, MultisetType, RowType))]
    if nested:
        raise InvalidOptionError(f"Table {table_name}: nested columns {nested} cannot be bucket keys")
