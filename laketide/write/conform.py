"""Turning user input (Arrow, pandas, polars) into an Arrow table of exactly the table's schema.

Bad input raises SchemaError naming the table and the offending columns, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError

__all__ = ["to_arrow", "conform"]


def to_arrow(data: Any) -> pa.Table:
    """Any Arrow-compatible input as a pyarrow Table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if module == "polars":
        return data.to_arrow()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    if isinstance(data, dict):
        return pa.table(data)
    if isinstance(data, list):
        return pa.Table.from_pylist(data)
    raise SchemaError(f"Cannot write data of type {type(data).__name__}; pass Arrow, pandas or polars data")


def conform(
    table: pa.Table,
    schema: pa.Schema,
    *,
    table_name: str,
    fill_missing: bool = False,
    required: Sequence[str] | None = None,
) -> pa.Table:
    """Reorder and cast ``table`` to ``schema``; missing, extra or incompatible columns are errors.

    With ``fill_missing`` (deletes by key), only the ``required`` columns must be present; nullable others are
    filled with nulls.
    """
    names = table.column_names
    wanted = schema.names
    if fill_missing:
        absent = [f for f in schema if f.name not in names and f.name not in (required or ())]
        for f in absent:
            if not f.nullable:
                break
        else:
            for f in absent:
                table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
            names = table.column_names
    missing = [n for n in wanted if n not in names]
    extra = [n for n in names if n not in wanted]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaError(
            f"Data does not match the schema of table {table_name}: {'; '.join(parts)}. "
            f"Table columns: {wanted}"
        )
    columns = []
    for f in schema:
        col = table.column(f.name)
        if not col.type.equals(f.type):
            if not _castable(col.type, f.type):
                raise SchemaError(
                    f"Column {f.name!r} of table {table_name} has type {f.type}; got incompatible type {col.type}"
                )
            mismatch = _struct_mismatch(col.type, f.type, f.name)
            if mismatch is not None:
                raise SchemaError(f"Column {f.name!r} of table {table_name}: {mismatch}")
            try:
                col = pc.cast(col, f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaError(
                    f"Column {f.name!r} of table {table_name} has type {f.type}; "
                    f"got {col.type} which does not convert safely: {e}"
                ) from e
        if not f.nullable and col.null_count:
            raise SchemaError(f"Column {f.name!r} of table {table_name} is NOT NULL but the data has nulls")
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def _struct_mismatch(src: pa.DataType, dst: pa.DataType, where: str) -> str | None:
    """Why a nested value cannot be stored as ``dst``: its struct field names differ somewhere.

    Arrow casts structs by field name, filling absent fields with nulls and dropping unknown ones: a struct
    whose names differ from the table's would be stored as nulls without a word. Fields may come in another
    order (they are matched by name, as Arrow does); missing or extra names are refused.
    """
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        src_names = [src.field(i).name for i in range(src.num_fields)]
        dst_names = [dst.field(i).name for i in range(dst.num_fields)]
        missing = [n for n in dst_names if n not in src_names]
        extra = [n for n in src_names if n not in dst_names]
        if missing or extra:
            parts = ([f"missing fields {missing}"] if missing else []) + ([f"unknown fields {extra}"] if extra else [])
            return f"struct {where} has fields {src_names}, the table has {dst_names}: {'; '.join(parts)}"
        for name in dst_names:
            problem = _struct_mismatch(src.field(name).type, dst.field(name).type, f"{where}.{name}")
            if problem is not None:
                return problem
        return None
    if _is_list(src) and _is_list(dst):
        return _struct_mismatch(src.value_type, dst.value_type, f"{where}[]")
    if pa.types.is_map(src) and pa.types.is_map(dst):
        return (_struct_mismatch(src.key_type, dst.key_type, f"{where}.key")
                or _struct_mismatch(src.item_type, dst.item_type, f"{where}.value"))
    return None


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def _family(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_time(t):
        return "time"
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    return str(t).split("<", 1)[0]


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Same family only: writing "12" into an INT column is a mistake, not a conversion."""
    if pa.types.is_null(src):
        return True
    if pa.types.is_floating(src) and (pa.types.is_integer(dst) or pa.types.is_decimal(dst)):
        return False
    return _family(src) == _family(dst)
