"""Arrow <-> Spark schemas at the data source boundary.

Spark checks the Arrow batches a Python source yields against the exact Arrow layout of the declared schema
(microsecond timestamps, UTC for local-zone timestamps, non-null flags), so batches are cast on the way out.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import StructType

__all__ = ["spark_schema", "conform_to_spark", "spark_arrow_schema", "spark_name"]


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema: zone-less timestamps become TIMESTAMP_NTZ."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def spark_name(column: str) -> str:
    """``column`` quoted for ``F.col``: a dot or backtick in a name is part of the name, not a field access."""
    return "`" + column.replace("`", "``") + "`"


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def conform_to_spark(batch: pa.RecordBatch, schema: StructType | pa.Schema) -> pa.RecordBatch:
    target = schema if isinstance(schema, pa.Schema) else spark_arrow_schema(schema)
    if batch.schema.equals(target):
        return batch
    arrays = []
    for field in target:
        arr = batch.column(field.name)
        arrays.append(arr if arr.type.equals(field.type) else arr.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)
