"""Table schemas from the command line: ``"id BIGINT NOT NULL, v STRING"`` or a Parquet file's schema."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from laketide.exceptions import InvalidOptionError, InvalidTypeError
from laketide.types import RowType, parse_type

__all__ = ["schema_from_ddl", "schema_from_file"]


def schema_from_ddl(spec: str) -> RowType:
    """Columns as in SQL's CREATE TABLE: ``name TYPE [NOT NULL] [COMMENT '...']``, comma separated.

    The spec is read as the row type ``ROW<spec>``, so every Paimon type string works, nested ones too.
    """
    if not spec.strip():
        raise InvalidOptionError("create-table: the column spec is empty; e.g. \"id BIGINT NOT NULL, v STRING\"")
    try:
        row = parse_type(f"ROW<{spec}>")
    except InvalidTypeError as e:
        raise InvalidTypeError(f"create-table: cannot read the column spec {spec!r}: {e}") from None
    if not isinstance(row, RowType) or not row.fields:
        raise InvalidOptionError(f"create-table: the column spec {spec!r} names no columns")
    return row


def schema_from_file(path: str) -> pa.Schema:
    """The schema of a Parquet file (``--like``)."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise InvalidOptionError(f"create-table --like: file {path} does not exist")
    try:
        return pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise InvalidOptionError(f"create-table --like: {path} is not a readable Parquet file: {e}") from None
