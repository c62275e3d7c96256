"""Batch reads through Spark: one Spark partition per laketide split, Arrow batches out.

The driver plans (snapshot -> manifests -> pruned splits); each executor task reads one split (merging sorted
runs of primary-key buckets) and hands Spark Arrow batches in exactly the Arrow layout Spark expects.

Paimon: paimon-spark PaimonScan / PaimonPartitionReader
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from laketide.exceptions import InvalidOptionError
from laketide.expr import Predicate
from laketide.scan.split import DataSplit
from laketide.schema.table_schema import TableSchema
from laketide.spark.options import AUDIT_LOG, ROWKIND, TableRef, int_option
from laketide.spark.types import conform_to_spark, spark_arrow_schema

__all__ = ["BatchReader", "ReadSpec", "read_spec", "SplitPartition"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadSpec:
    """What a batch read returns: table, snapshot choice, columns; resolved on the driver."""

    ref: TableRef
    columns: tuple[str, ...] | None
    snapshot_id: int | None
    tag: str | None
    timestamp_ms: int | None
    arrow_schema: pa.Schema  # the rows Spark sees (with `rowkind` first for the audit log)

    @property
    def audit_log(self) -> bool:
        return self.ref.system_table == AUDIT_LOG

    @property
    def system(self) -> bool:
        return self.ref.system_table is not None and not self.audit_log


def _columns(options: Mapping[str, str]) -> tuple[str, ...] | None:
    raw = options.get("columns")
    if not raw:
        return None
    return tuple(c.strip() for c in raw.split(",") if c.strip())


def read_spec(ref: TableRef, options: Mapping[str, str]) -> ReadSpec:
    columns = _columns(options)
    snapshot_id = int_option(options, "scan.snapshot-id")
    timestamp_ms = int_option(options, "scan.timestamp-millis")
    tag = options.get("scan.tag-name") or None
    if sum(x is not None for x in (snapshot_id, timestamp_ms, tag)) > 1:
        raise InvalidOptionError(
            "laketide: give at most one of scan.snapshot-id, scan.tag-name, scan.timestamp-millis"
        )
    if ref.system_table is not None and ref.system_table != AUDIT_LOG:
        from laketide.table.system import system_table

        data = system_table(ref.data_table(), ref.system_table).read(columns=list(columns) if columns else None)
        return ReadSpec(ref=ref, columns=columns, snapshot_id=None, tag=None, timestamp_ms=None,
                        arrow_schema=data.schema)
    table = ref.data_table()
    data_cols = [c for c in columns if c != ROWKIND] if columns is not None else None
    scan = table.scan(columns=data_cols, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    schema = scan.output_schema
    if ref.system_table == AUDIT_LOG:
        kind = pa.field(ROWKIND, pa.string(), nullable=False)
        schema = pa.schema([kind, *schema]) if columns is None or ROWKIND in columns else schema
    return ReadSpec(ref=ref, columns=columns, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms,
                    arrow_schema=schema)


class SplitPartition(InputPartition):
    """One Spark partition: one laketide split (or the whole of a small system table when ``split`` is None)."""

    def __init__(self, split: DataSplit | None, read_schema: TableSchema | None = None) -> None:
        super().__init__(split)
        self.split = split
        self.read_schema = read_schema  # the snapshot's schema (time travel may predate the latest one)


class BatchReader(DataSourceReader):
    def __init__(self, spec: ReadSpec, schema: StructType) -> None:
        self.spec = spec
        self.schema = schema
        self.predicate: Predicate | None = None

    def pushFilters(self, filters: Sequence[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        from laketide.spark.filters import split_filters

        if self.spec.system:
            yield from filters
            return
        types = {f.name: f.type for f in self.spec.ref.data_table().arrow_schema}
        self.predicate, rest = split_filters(filters, types)
        yield from rest

    def _scan(self) -> Any:
        s = self.spec
        return s.ref.data_table().scan(
            columns=self._data_columns(), where=self.predicate, snapshot_id=s.snapshot_id, tag=s.tag,
            timestamp_ms=s.timestamp_ms,
        )

    def _data_columns(self) -> list[str]:
        return [n for n in self.spec.arrow_schema.names if not (self.spec.audit_log and n == ROWKIND)]

    def partitions(self) -> list[SplitPartition]:
        if self.spec.system:
            return [SplitPartition(None)]
        scan = self._scan()
        return [SplitPartition(split, scan.schema) for split in scan.plan()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SplitPartition)
        spec = self.spec
        target = spark_arrow_schema(self.schema)
        if partition.split is None:
            from laketide.table.system import system_table

            data = system_table(spec.ref.data_table(), spec.ref.system_table or "").read(
                columns=list(spec.columns) if spec.columns else None)
            for batch in data.to_batches():
                yield conform_to_spark(batch, target)
            return
        reader = self._split_reader(partition.read_schema)
        for batch in reader.read(partition.split):
            if spec.audit_log and ROWKIND in spec.arrow_schema.names:
                kinds = pa.array(["+I"] * batch.num_rows, pa.string())
                batch = pa.RecordBatch.from_arrays([kinds, *batch.columns], names=[ROWKIND, *batch.schema.names])
            yield conform_to_spark(batch, target)

    def _split_reader(self, read_schema: TableSchema | None) -> Any:
        from laketide.scan.split_read import SplitRead

        table = self.spec.ref.data_table()
        return SplitRead(
            file_io=table.file_io, schema_manager=table.schema_manager,
            read_schema=read_schema or table.schema, columns=self._data_columns(),
            predicate=self.predicate, batch_size=table.options.read_batch_size * 64,
        )
