"""Reading a split into Arrow batches, through schema evolution by field id.

Each data file was written under some schema id; its columns are matched to the read schema by field id (so
renames and reordering just work), cast where a type was widened, and filled with nulls where a column was added
later. Filters run after that mapping, on the read schema's names.

Paimon: operation.RawFileSplitRead, schema.SchemaEvolutionUtil, utils.BulkFormatMapping
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import FileIOError, SchemaError
from laketide.expr import Predicate, referenced_fields, to_arrow_expression
from laketide.format import file_format
from laketide.fs import FileIO
from laketide.meta.manifest import DataFileMeta
from laketide.scan.split import DataSplit
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema

__all__ = ["SplitRead"]


class SplitRead:
    def __init__(
        self,
        *,
        file_io: FileIO,
        schema_manager: SchemaManager,
        read_schema: TableSchema,
        columns: Sequence[str] | None = None,
        predicate: Predicate | None = None,
        batch_size: int = 65536,
    ) -> None:
        self.file_io = file_io
        self.schema_manager = schema_manager
        self.read_schema = read_schema
        full = to_arrow_schema(read_schema.row_type)
        self.output_names = list(columns) if columns is not None else full.names
        unknown = [c for c in self.output_names if c not in full.names]
        if unknown:
            raise SchemaError(f"Unknown columns {unknown}; columns are {full.names}")
        needed = set(self.output_names) | (referenced_fields(predicate) if predicate is not None else set())
        # Read in table column order so batches have a stable layout, then project to the requested order.
        self.read_names = [n for n in full.names if n in needed]
        self.read_arrow_schema = pa.schema([full.field(n) for n in self.read_names])
        self.output_schema = pa.schema([full.field(n) for n in self.output_names])
        self.filter = to_arrow_expression(predicate) if predicate is not None else None
        self.batch_size = batch_size

    def read(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        for meta, path in zip(split.files, split.file_paths()):
            yield from self.read_file(meta, path)

    def read_file(self, meta: DataFileMeta, path: str) -> Iterator[pa.RecordBatch]:
        file_schema = self.schema_manager.schema(meta.schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        # read-schema name -> name in the file (None: column added after this file was written)
        source: list[str | None] = []
        for name in self.read_names:
            f = by_id.get(self.read_schema.field(name).id)
            source.append(f.name if f is not None else None)
        present = [s for s in source if s is not None]
        fmt = file_format(path.rsplit(".", 1)[-1])
        try:
            with self.file_io.open_input(path) as stream:
                for batch in fmt.read(stream, columns=present, batch_size=self.batch_size):
                    out = self._evolve(batch, source)
                    if self.filter is not None:
                        out = out.filter(self.filter)
                    if out.num_rows:
                        yield _project(out, self.output_names, self.output_schema)
        except FileIOError:
            raise
        except OSError as e:
            raise FileIOError(f"Cannot read data file {path}: {e}") from e

    def _evolve(self, batch: pa.RecordBatch, source: list[str | None]) -> pa.RecordBatch:
        arrays = []
        n = batch.num_rows
        for target, src in zip(self.read_arrow_schema, source):
            if src is None:
                arrays.append(pa.nulls(n, type=target.type))
                continue
            arr = batch.column(src)
            if not arr.type.equals(target.type):
                arr = pc.cast(arr, target.type)
            arrays.append(arr)
        return pa.RecordBatch.from_arrays(arrays, schema=self.read_arrow_schema)


def _project(batch: pa.RecordBatch, names: list[str], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([batch.column(n) for n in names], schema=schema)
