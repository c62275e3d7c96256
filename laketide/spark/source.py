"""The "laketide" Python data source: batch and streaming reads and writes of laketide tables.

    spark.read.format("laketide").option("warehouse", wh).load("db.t")          # also db.t$snapshots, db.t$audit_log
    df.write.format("laketide").option("warehouse", wh).mode("append").save("db.t")
    spark.readStream.format("laketide").option("warehouse", wh).load("db.t$audit_log")
    df.writeStream.format("laketide").option("warehouse", wh).option("checkpointLocation", cp).start("db.t")

Every entry point checks its options (laketide.spark.options.SUPPORTED_OPTIONS) and reports laketide errors with
their message first (laketide.spark.errors).

Paimon: paimon-spark SparkSource / SparkTable
"""

from __future__ import annotations

from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from laketide.spark.errors import surfaced
from laketide.spark.options import TableRef, check_options, refuse_time_travel, table_ref
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
        # table_ref makes the warehouse absolute here, on the driver: executors run in other directories.
        return table_ref(self.options)

    @surfaced
    def schema(self) -> StructType:
        # Batch and streaming loads both ask for the schema: check against what either takes; reader() and
        # streamReader() check their own set.
        ref = self._ref()
        ops = ("read", "stream read")
        bad = [op for op in ops if _refused(self.options, op)]
        if len(bad) == len(ops):
            check_options(self.options, "read", table=ref.full_name)
        return spark_schema(read_spec(ref, self.options).arrow_schema)

    @surfaced
    def reader(self, schema: StructType) -> BatchReader:
        ref = self._ref()
        check_options(self.options, "read", table=ref.full_name)
        return BatchReader(read_spec(ref, self.options), schema)

    @surfaced
    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from laketide.spark.writer import BatchWriter

        ref = self._ref()
        refuse_time_travel(self.options, ref)
        check_options(self.options, "write", table=ref.full_name)
        return BatchWriter(ref.writable(), self.options, overwrite=overwrite)

    @surfaced
    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:  # noqa: N802 - Spark's name
        from laketide.spark.writer import StreamWriter

        from laketide.exceptions import InvalidOptionError

        ref = self._ref()
        refuse_time_travel(self.options, ref)
        check_options(self.options, "stream write", table=ref.full_name)
        if overwrite:
            raise InvalidOptionError(
                f"laketide: streaming writes to table {ref.full_name} append; outputMode('complete') is not supported"
            )
        return StreamWriter(ref.writable(), self.options)

    @surfaced
    def streamReader(self, schema: StructType) -> Any:  # noqa: N802
        from laketide.spark.stream import StreamReader

        ref = self._ref()
        check_options(self.options, "stream read", table=ref.full_name)
        return StreamReader(ref, self.options, schema)


def _refused(options: dict[str, str], operation: Any) -> bool:
    from laketide.exceptions import InvalidOptionError

    try:
        check_options(options, operation)
    except InvalidOptionError:
        return True
    return False
