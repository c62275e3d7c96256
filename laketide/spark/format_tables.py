"""Format tables from Spark: Spark's own file sources read and write their directories, with the table's schema,
format, partition columns and Paimon's CSV defaults (no header, empty string = null).

Spark writes ``part-*`` files and a ``_SUCCESS`` marker; laketide's reader skips names starting with ``_``/``.``,
so both sides read what the other wrote. Overwriting a partition uses Spark's dynamic partition overwrite: only
the partitions present in the DataFrame are replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from laketide.exceptions import InvalidOptionError
from laketide.spark.types import spark_column
from laketide.table.format_table import FormatTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_format_table", "write_format_table"]


def _options(table: FormatTable) -> dict[str, str]:
    if table.format != "csv":
        return {}
    return {"header": str(table._header).lower(), "sep": table._delimiter, "nullValue": table._null,
            "emptyValue": table._null, "quote": '"', "escape": "\\"}


def _spark_schema(table: FormatTable) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(table.arrow_schema)


def read_format_table(spark: SparkSession, table: FormatTable) -> DataFrame:
    """The table's rows as a DataFrame (Spark prunes partition directories from filters on partition columns)."""
    reader = spark.read.format(table.format).schema(_spark_schema(table)).options(**_options(table))
    if table.format in ("csv", "json"):
        reader = reader.option("dateFormat", "yyyy-MM-dd")
    return reader.load(table.location).select(*(spark_column(n) for n in table.arrow_schema.names))


def write_format_table(df: DataFrame, table: FormatTable, *, mode: str = "append") -> None:
    """Append ``df``, or (``mode="overwrite"``) replace the partitions it holds, or the whole table unpartitioned."""
    if mode not in ("append", "overwrite"):
        raise InvalidOptionError(f"Format table {table.name}: mode {mode!r}; use 'append' or 'overwrite'")
    missing = [c for c in table.arrow_schema.names if c not in df.columns]
    if missing:
        raise InvalidOptionError(f"Format table {table.name}: the DataFrame lacks columns {missing}")
    columns = df.select(*(spark_column(n) for n in table.arrow_schema.names))
    out = columns.write.format(table.format).options(**_options(table)).mode(mode)
    if table.partition_keys:
        out = out.partitionBy(*table.partition_keys).option("partitionOverwriteMode", "dynamic")
    out.save(table.location)
