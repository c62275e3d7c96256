"""Reading a split into Arrow batches, through schema evolution by field id, merging sorted runs when needed.

Each data file was written under some schema id; its columns are matched to the read schema by field id (so
renames and reordering just work), cast where a type was widened, and filled with nulls where a column was added
later. Primary-key splits that are not raw-convertible are merged by key and sequence number first; filters run
after the merge (filtering older versions first would resurrect them), then the projection.

Paimon: operation.RawFileSplitRead, operation.MergeFileSplitRead, schema.SchemaEvolutionUtil
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import FrozenBitMap

from laketide.exceptions import FileIOError, SchemaError
from laketide.expr import Predicate, referenced_fields, to_arrow_expression
from laketide.format import file_format
from laketide.fs import FileIO
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import DataFileMeta
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.mergetree.engines import merge_function_for
from laketide.mergetree.key_order import py_key
from laketide.mergetree.merge import MergeFunction, drop_retracts, partition_runs
from laketide.mergetree.sort_merge import RunSource, SortMergeSettings, merge_sorted_runs, reader_memory
from laketide.scan.split import DataSplit, DeletionFile
from laketide.schema.casts import cast_array
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import DataType, VariantType, to_arrow_schema, without_field_ids

__all__ = ["SplitRead"]

_SYSTEM = (pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), pa.field(VALUE_KIND, pa.int8(), nullable=False))


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
        self.merge: MergeFunction | None = None
        self.sort = SortMergeSettings.from_options(read_schema.core_options)
        needed = set(self.output_names) | (referenced_fields(predicate) if predicate is not None else set())
        self.key_types = []
        if read_schema.primary_keys:
            self.merge = merge_function_for(read_schema)
            keys = self.merge.spec.key_names
            self.key_types = [read_schema.field(k).type for k in keys]
            # Merge engines may combine any column (partial-update, aggregation): read them all.
            needed |= set(keys) | set(self.merge.spec.sequence_fields) | self.merge.input_columns(set(full.names))
        # Read in table column order so batches have a stable layout, then project to the requested order.
        self.read_names = [n for n in full.names if n in needed]
        self.read_arrow_schema = pa.schema([full.field(n) for n in self.read_names])
        self.output_schema = without_field_ids(pa.schema([full.field(n) for n in self.output_names]))
        self.filter = to_arrow_expression(predicate, schema=self.read_arrow_schema) if predicate is not None else None
        self.batch_size = batch_size
        self.time_zone = read_schema.core_options.local_time_zone
        self._index_files: dict[str, bytes] = {}

    # -- splits ------------------------------------------------------------------------------------------------
    def read(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        selections = split.row_selections or (None,) * len(split.files)
        if self.merge is None:
            for meta, path, rows in zip(split.files, split.file_paths(), selections):
                yield from self._raw_file(meta, path, rows)
            return
        paths = dict(zip((f.file_name for f in split.files), split.file_paths()))
        if split.raw_convertible:
            dvs = split.deletion_files or (None,) * len(split.files)
            for meta, dv, rows in zip(split.files, dvs, selections):
                for batch in self._file_batches(meta, paths[meta.file_name], system=True, deletion=dv,
                                                selection=rows):
                    yield from self._finish(drop_retracts(pa.Table.from_batches([batch])))
            return
        for section in partition_runs(split.files, self._key_range):
            columns = len(self.read_names) + 2
            runs = [RunSource(size=sum(f.file_size for f in run), read=self._run_reader(run, paths),
                              memory=reader_memory([f.file_size for f in run], columns=columns))
                    for run in section]
            for merged in merge_sorted_runs(runs, self.merge, settings=self.sort):
                yield from self._finish(drop_retracts(merged))

    def raw_file_readers(self, split: DataSplit) -> list[Callable[[], list[pa.RecordBatch]]] | None:
        """One reader per file of a split read without a merge (append tables), so that several files can be
        decoded at once; their batches in order are what :meth:`read` yields. None for a split that merges."""
        if self.merge is not None:
            return None
        selections = split.row_selections or (None,) * len(split.files)
        return [partial(_drain, self._raw_file, meta, path, rows)
                for meta, path, rows in zip(split.files, split.file_paths(), selections)]

    def _raw_file(self, meta: DataFileMeta, path: str, rows: FrozenBitMap | None) -> Iterator[pa.RecordBatch]:
        for batch in self._file_batches(meta, path, system=False, selection=rows):
            yield from self._finish(pa.Table.from_batches([batch]))

    def _run_reader(self, run: list[DataFileMeta], paths: dict[str, str]) -> Callable[[int], Iterator[pa.Table]]:
        def read(batch_rows: int) -> Iterator[pa.Table]:
            for meta in run:
                for batch in self.read_kv_file(meta, paths[meta.file_name], batch_size=batch_rows):
                    yield pa.Table.from_batches([batch])

        return read

    def _key_range(self, meta: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        lo = py_key(deserialize_binary_row(meta.min_key, self.key_types))
        hi = py_key(deserialize_binary_row(meta.max_key, self.key_types))
        return lo, hi

    def _finish(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        if self.filter is not None and table.num_rows:
            table = table.filter(self.filter)
        if table.num_rows:
            if not self.output_names:  # read(columns=[]): batches of no columns that still count their rows
                yield from table.select([]).to_batches()
                return
            out = pa.Table.from_arrays([table.column(n) for n in self.output_names], schema=self.output_schema)
            yield from out.to_batches()

    # -- files -------------------------------------------------------------------------------------------------
    def read_file(self, meta: DataFileMeta, path: str) -> Iterator[pa.RecordBatch]:
        """The rows of one data file in the read schema (no merge, no filter)."""
        return self._file_batches(meta, path, system=False)

    def read_kv_file(self, meta: DataFileMeta, path: str, *, batch_size: int | None = None) -> Iterator[pa.RecordBatch]:
        """Like :meth:`read_file`, plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` (primary-key files)."""
        return self._file_batches(meta, path, system=True, batch_size=batch_size)

    def _file_batches(
        self, meta: DataFileMeta, path: str, *, system: bool, deletion: DeletionFile | None = None,
        batch_size: int | None = None, selection: FrozenBitMap | None = None,
    ) -> Iterator[pa.RecordBatch]:
        file_schema = self.schema_manager.schema(meta.schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        # read-schema name -> name and type in the file (None: column added after this file was written)
        source: list[str | None] = []
        casts: list[tuple[DataType, DataType] | None] = []
        for name in self.read_names:
            current = self.read_schema.field(name)
            f = by_id.get(current.id)
            source.append(f.name if f is not None else None)
            # VARIANT goes through the cast module too: it refuses a shredded layout instead of dropping fields
            changed = f is not None and (f.type.copy(nullable=True) != current.type.copy(nullable=True)
                                         or isinstance(current.type, VariantType))
            casts.append((f.type, current.type) if changed and f is not None else None)
        present = [s for s in source if s is not None]
        if system:
            present += [SEQUENCE_NUMBER, VALUE_KIND]
        target = pa.schema(list(self.read_arrow_schema) + (list(_SYSTEM) if system else []))
        deleted = self._deleted_mask(deletion, meta.row_count) if deletion is not None else None
        fmt = file_format(path.rsplit(".", 1)[-1])
        rows = None if selection is None else np.frombuffer(selection.to_array(), dtype=np.uint32).astype(np.int64)
        try:
            with self.file_io.open_input(path) as stream:
                size = batch_size or self.batch_size
                if rows is None:
                    batches = _positioned(fmt.read(stream, columns=present, batch_size=size))
                else:
                    batches = fmt.read_selected(stream, rows=rows, columns=present, batch_size=size)
                for offset, batch in batches:
                    out = self._evolve(batch, source, target, system, casts=casts, path=path)
                    keep = None if rows is None else _selected_mask(rows, offset, out.num_rows)
                    if deleted is not None:
                        alive = pc.invert(deleted.slice(offset, out.num_rows))
                        keep = alive if keep is None else pc.and_(alive, keep)
                    if keep is not None:
                        out = out.filter(keep)
                    if out.num_rows:
                        yield out
        except FileIOError:
            raise
        except OSError as e:
            raise FileIOError(f"Cannot read data file {path}: {e}") from e

    def _deleted_mask(self, deletion: DeletionFile, num_rows: int) -> pa.Array:
        from laketide.index.deletion_vectors import read_dv

        data = self._index_files.get(deletion.path)
        if data is None:
            data = self._index_files[deletion.path] = self.file_io.read_bytes(deletion.path)
        dv = read_dv(data, deletion.offset, deletion.length, path=deletion.path)
        return pa.array(dv.is_deleted_mask(num_rows))

    def _evolve(
        self, batch: pa.RecordBatch, source: list[str | None], target: pa.Schema, system: bool,
        *, casts: list[tuple[DataType, DataType] | None], path: str,
    ) -> pa.RecordBatch:
        arrays = []
        n = batch.num_rows
        names = source + ([SEQUENCE_NUMBER, VALUE_KIND] if system else [])
        types = casts + [None, None] if system else casts
        for field, src, types_of in zip(target, names, types):
            if src is None:
                arrays.append(pa.nulls(n, type=field.type))
                continue
            arr = batch.column(src)
            if types_of is not None:
                # Paimon's cast rules (SchemaEvolutionUtil): the file's type -> the column's current type.
                arr = cast_array(arr, types_of[0], types_of[1], time_zone=self.time_zone,
                                 context=f"column {field.name!r} of data file {path}")
            elif not arr.type.equals(field.type):
                arr = pc.cast(arr, field.type)
            arrays.append(arr)
        if not arrays:  # no column read (a row count): keep the batch's length
            return batch.select([])
        return pa.RecordBatch.from_arrays(arrays, schema=target)


def _drain(read: Callable[..., Iterator[pa.RecordBatch]], *args: object) -> list[pa.RecordBatch]:
    return list(read(*args))


def _positioned(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    pos = 0
    for batch in batches:
        yield pos, batch
        pos += batch.num_rows


def _selected_mask(rows: np.ndarray, offset: int, n: int) -> pa.Array:
    """Which of the ``n`` rows starting at file position ``offset`` are among the selected ``rows``."""
    lo, hi = np.searchsorted(rows, [offset, offset + n])
    mask = np.zeros(n, dtype=bool)
    mask[rows[lo:hi] - offset] = True
    return pa.array(mask)
