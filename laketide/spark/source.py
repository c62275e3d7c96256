"""The "laketide" Python data source: batch and streaming reads and writes of laketide tables.

    spark.read.format("laketide").option("warehouse", wh).load("db.t")          # also db.t$snapshots, db.t$audit_log
    df.write.format("laketide").option("warehouse", wh).mode("append").save("db.t")
    spark.readStream.format("laketide").option("warehouse", wh).load("db.t$audit_log")
    df.writeStream.format("laketide").option("warehouse", wh).option("checkpointLocation", cp).start("db.t")

Paimon: paimon-spark SparkSource / SparkTable
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from laketide.spark.options import TableRef, table_ref
from laketide.spark.reader import BatchReader, read_spec
from laketide.spark.types import spark_schema

__all__ = ["LaketideDataSource"]


class LaketideDataSource(DataSource):
    # Options every instance starts from (``laketide.spark.session(warehouse=...)`` sets the warehouse).
    default_options: ClassVar[dict[str, str]] = {}

    def __init__(self, options: Any) -> None:
        merged = {k.lower(): v for k, v in self.default_options.items()}
        merged.update({k.lower(): v for k, v in dict(options).items()})
        super().__init__(merged)
        self.options: dict[str, str] = merged

    @classmethod
    def name(cls) -> str:
        return "laketide"

    def _ref(self) -> TableRef:
        return table_ref(self.options)

    def schema(self) -> StructType:
        return spark_schema(read_spec(self._ref(), self.options).arrow_schema)

    def reader(self, schema: StructType) -> BatchReader:
        return BatchReader(read_spec(self._ref(), self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from laketide.spark.writer import BatchWriter

        return BatchWriter(self._ref(), self.options, overwrite=overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802 - Spark's name
        from laketide.spark.writer import StreamWriter

        return StreamWriter(self._ref(), self.options)

    def streamReader(self, schema: StructType) -> Any:  # noqa: N802
        from laketide.spark.stream import StreamReader

        return StreamReader(self._ref(), self.options, schema)
