"""Arrow <-> Spark schemas at the data source boundary.

Spark checks the Arrow batches a Python source yields against the exact Arrow layout of the declared schema
(microsecond timestamps, UTC for local-zone timestamps, non-null flags), so batches are cast on the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["spark_schema", "conform_to_spark", "map_in_arrow", "spark_arrow_schema", "spark_column", "spark_name"]


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema: zone-less timestamps become TIMESTAMP_NTZ."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def spark_name(column: str) -> str:
    """``column`` quoted for ``F.col``: a dot or backtick in a name is part of the name, not a field access."""
    return "`" + column.replace("`", "``") + "`"


def spark_column(name: str) -> Column:
    """The column named ``name`` (a dot or backtick in it is part of the name, not a field access)."""
    from pyspark.sql import functions as F  # noqa: N812

    return F.col(spark_name(name))


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


def map_in_arrow(df: DataFrame, func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 schema: StructType) -> DataFrame:
    """``df.mapInArrow(func, schema)``, also for columns whose names hold a dot: PySpark's mapInArrow resolves each
    input column by its unquoted name (a dot reads as a field access), so such a frame's columns are renamed on the
    way in and ``func`` gets its batches under their own names again."""
    names = list(df.columns)
    if not any("." in n for n in names):
        return df.mapInArrow(func, schema)

    def renamed(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return func(b.rename_columns(names) for b in batches)

    return df.toDF(*[f"__laketide_c{i}" for i in range(len(names))]).mapInArrow(renamed, schema)
