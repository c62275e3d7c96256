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

from laketide.exceptions import FileIOError, SchemaError, UnsupportedFeatureError
from laketide.expr import FieldStats, Predicate, referenced_fields, to_arrow_expression
from laketide.format import file_format
from laketide.fs import FileIO
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import DataFileMeta
from laketide.io.kv import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from laketide.mergetree.engines import merge_function_for
from laketide.mergetree.key_order import py_key
from laketide.mergetree.merge import MergeFunction, drop_retracts, partition_runs
from laketide.mergetree.sort_merge import RunSource, SortMergeSettings, merge_sorted_runs, reader_memory
from laketide.format.blob import is_blob_file
from laketide.format.parquet_keyed import read_pruned_keyed, read_selected_keyed
from laketide.scan.blob_read import blob_columns, read_blob_column
from laketide.scan.data_file_input import open_data_file
from laketide.scan.key_filter import KeyFilter
from laketide.scan.keys_first import KeysFirst
from laketide.scan.run_edges import Part, RunEdges, edge_part, file_part, run_edges
from laketide.scan.lookup_cache import FileLookupCache, cache_layout, entry_name
from laketide.scan.row_tracking import TRACKING_FIELDS, group_by_row_id, tracking_columns
from laketide.scan.split import DataSplit, DeletionFile
from laketide.schema.casts import cast_array
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    BigIntType,
    BlobType,
    DataType,
    IntType,
    SmallIntType,
    TinyIntType,
    VariantType,
    to_arrow_schema,
    without_field_ids,
)

__all__ = ["SplitRead"]

_SYSTEM = (pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), pa.field(VALUE_KIND, pa.int8(), nullable=False))
# A file whose rows are all collected (to_arrow) is decoded in batches of this many rows: a Parquet row group in
# one go, its columns in parallel (as pq.read_table's scanner decodes), instead of 64k-row slices that each wait
# for their slowest column.
_COLLECT_BATCH_ROWS = 1 << 22
# Key types whose Parquet statistics place row groups at a merge section's edges (scan/run_edges.py).
_INTEGER_KEYS = (TinyIntType, SmallIntType, IntType, BigIntType)
StatsOf = Callable[[str], "FieldStats | None"]
GroupTest = Callable[["FieldStats | None"], bool]  # a row group's first-key statistics -> read it here?


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
        options = read_schema.core_options
        # Row tracking (append tables): _ROW_ID and _SEQUENCE_NUMBER may be read like columns.
        self.row_tracking = bool(options.row_tracking_enabled) and not read_schema.primary_keys
        self.data_evolution = self.row_tracking and bool(options.data_evolution_enabled)
        requested = set(columns or ())
        if self.row_tracking and requested & {f.name for f in TRACKING_FIELDS}:
            full = pa.schema(list(full) + list(TRACKING_FIELDS))
        self.output_names = list(columns) if columns is not None else full.names
        unknown = [c for c in self.output_names if c not in full.names]
        tracking_asked = [c for c in unknown if c in {f.name for f in TRACKING_FIELDS}]
        if tracking_asked:
            raise SchemaError(f"Columns {tracking_asked} exist only in tables with 'row-tracking.enabled' = 'true' "
                              f"(append tables); columns are {full.names}")
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
        self._check_blob_columns(read_schema)
        self.read_arrow_schema = pa.schema([full.field(n) for n in self.read_names])
        tracking = {f.name for f in TRACKING_FIELDS} if self.row_tracking else set()
        self.data_names = [n for n in self.read_names if n not in tracking]
        self.tracking_names = [n for n in self.read_names if n in tracking]
        self.output_schema = without_field_ids(pa.schema([full.field(n) for n in self.output_names]))
        self.filter = to_arrow_expression(predicate, schema=self.read_arrow_schema) if predicate is not None else None
        # The key part of the predicate runs before the merge (row groups by key statistics, then rows).
        self.key_filter = KeyFilter.of(predicate, key_names=list(read_schema.primary_keys),
                                       schema=self.read_arrow_schema) if self.merge is not None else None
        # A predicate only on key columns is settled before the merge: the merge keeps keys as they are.
        self.filter_after_merge = self.filter
        if self.key_filter is not None and predicate is not None \
                and referenced_fields(predicate) <= set(read_schema.primary_keys):
            self.filter_after_merge = None
        # Merge sections of a key-filtered read: winners from keys and sequence numbers first (scan/keys_first.py).
        self.keys_first = KeysFirst.of(self.merge, self.key_filter, file_io=file_io, schema_manager=schema_manager,
                                       read_schema=read_schema)
        self.batch_size = batch_size
        self.time_zone = read_schema.core_options.local_time_zone
        self._index_files: dict[str, bytes] = {}
        # Table.lookup's per-file cache (scan/lookup_cache.py): key-filtered files are searched there when set.
        self.lookup_cache: FileLookupCache | None = None
        self._cache_layout = cache_layout(read_schema.id, self.data_names)

    def _check_blob_columns(self, schema: TableSchema) -> None:
        # Plain BLOB columns of data-evolution append tables are read from their .blob files; anything else would
        # read as nulls, so it is refused.
        names = set(schema.field_names)  # a property that builds its list: once, not per column
        blobs = set(blob_columns([schema.field(n) for n in self.read_names if n in names]))
        if not blobs:
            return
        plain = {n for n in blobs if isinstance(schema.field(n).type, BlobType)}
        if not self.data_evolution or blobs - plain:
            raise UnsupportedFeatureError(
                f"Reading {sorted(blobs)}: laketide reads BLOB columns of data-evolution append tables only "
                f"(not of primary-key tables, nor ARRAY<BLOB> / MAP<..., BLOB>); leave them out of the columns read"
            )

    # -- splits ------------------------------------------------------------------------------------------------
    def read(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        selections = split.row_selections or (None,) * len(split.files)
        if self.data_evolution:
            yield from self._read_evolved(split)
            return
        if self.merge is None or split.raw_convertible:
            read = self._raw_file if self.merge is None else self._raw_kv_file
            vectors = split.deletion_files or (None,) * len(split.files)
            for meta, path, rows, dv in zip(split.files, split.file_paths(), selections, vectors):
                yield from read(meta, path, rows, dv)
            return
        paths = dict(zip((f.file_name for f in split.files), split.file_paths()))
        for section in partition_runs(split.files, self._key_range):
            yield from self._merge_section(section, paths)

    def _merge_section(self, section: list[list[DataFileMeta]], paths: dict[str, str]) -> Iterator[pa.RecordBatch]:
        """The merged rows of one section: its edges that overlap no other run passed through around the merge."""
        assert self.merge is not None
        if self.keys_first is not None and self.lookup_cache is None and len(section) > 1:
            found = self.keys_first.read(section, paths, self._rows_at)
            if found is not None:
                yield from self._finish(found)
                return
        edges = None
        if self.merge.single_row_is_result and self.lookup_cache is None:
            edges = run_edges(section, self._key_range)
        if edges is not None:
            yield from self._edge_rows(section, edges, Part.HEAD, paths)
        columns = len(self.read_names) + 2
        runs = []
        for i, run in enumerate(section):
            merged: list[tuple[DataFileMeta, GroupTest | None]] = []
            for meta in run:
                whole = Part.MERGE if edges is None else self._file_part(edges, i, meta)
                if whole is Part.MERGE:
                    merged.append((meta, None))
                elif whole is None:  # straddles an edge bound: its middle row groups
                    merged.append((meta, self._group_test(edges, i, Part.MERGE)))
            if merged:
                runs.append(RunSource(size=sum(m.file_size for m, _ in merged), read=self._run_reader(merged, paths),
                                      memory=reader_memory([m.file_size for m, _ in merged], columns=columns)))
        for rows in merge_sorted_runs(runs, self.merge, settings=self.sort):
            yield from self._finish(drop_retracts(rows))
        if edges is not None:
            yield from self._edge_rows(section, edges, Part.TAIL, paths)

    def _rows_at(self, meta: DataFileMeta, path: str, positions: np.ndarray) -> list[pa.RecordBatch]:
        """The rows of one file at ``positions`` (ascending), without system columns (for keys-first reads)."""
        selection = FrozenBitMap(positions.astype(np.uint32))
        return list(self._file_batches(meta, path, system=False, selection=selection, dictionary=True))

    def _file_part(self, edges: RunEdges, run: int, meta: DataFileMeta) -> Part | None:
        lo, hi = self._key_range(meta)
        return file_part(edges, run, lo, hi)

    def _group_test(self, edges: RunEdges | None, run: int, part: Part) -> GroupTest | None:
        """Which row groups of a file straddling an edge bound belong to ``part`` (by first-key statistics)."""
        if edges is None:
            return None
        if not isinstance(self.key_types[0], _INTEGER_KEYS):
            return lambda stats: part is Part.MERGE
        return lambda stats: edge_part(edges, run, stats) is part

    def _edge_rows(self, section: list[list[DataFileMeta]], edges: RunEdges, part: Part,
                   paths: dict[str, str]) -> Iterator[pa.RecordBatch]:
        """The rows of one edge, read without the system columns a file with no retraction does not need."""
        run = edges.head_run if part is Part.HEAD else edges.tail_run
        groups = self._group_test(edges, run, part)
        for meta in section[run]:
            whole = self._file_part(edges, run, meta)
            if whole is not part and whole is not None:
                continue
            retracts = meta.delete_row_count != 0  # None (unknown): assume some
            for batch in self._file_batches(meta, paths[meta.file_name], system=retracts,
                                            key_filter=self.key_filter, groups=None if whole is part else groups):
                table = pa.Table.from_batches([batch])
                yield from self._finish(drop_retracts(table) if retracts else table)

    def _read_evolved(self, split: DataSplit) -> Iterator[pa.RecordBatch]:
        """Data evolution: the files of one row-id range stitched into whole rows (see scan/row_tracking.py)."""
        for group in group_by_row_id(split.files, split.file_paths()):
            if len(group) == 1:
                meta, path = group[0]
                for batch in self._file_batches(meta, path, system=False):
                    yield from self._finish(pa.Table.from_batches([batch]))
                continue
            yield from self._finish(self._stitch(group))

    def _stitch(self, group: list[tuple[DataFileMeta, str]]) -> pa.Table:
        newest, _ = group[0]
        blobs = [(m, p) for m, p in group if is_blob_file(m.file_name)]
        group = [(m, p) for m, p in group if not is_blob_file(m.file_name)]
        owner: dict[str, int] = {}  # read column -> the newest file of the group that holds it
        for i, (meta, _) in enumerate(group):
            file_schema = self.schema_manager.schema(meta.schema_id)
            held = set(meta.write_cols) if meta.write_cols is not None else set(file_schema.field_names)
            ids = {f.id for f in file_schema.fields if f.name in held}
            for name in self.data_names:
                if name not in owner and self.read_schema.field(name).id in ids:
                    owner[name] = i
        columns: dict[str, pa.ChunkedArray | pa.Array] = {}
        for i, (meta, path) in enumerate(group):
            names = [n for n in self.data_names if owner.get(n) == i]
            if not names:
                continue
            part = pa.Table.from_batches(list(self._file_batches(meta, path, system=False, names=names)),
                                         schema=pa.schema([self.read_arrow_schema.field(n) for n in names]))
            if part.num_rows != newest.row_count:
                raise FileIOError(f"Data file {path} holds {part.num_rows} rows where its row-id range "
                                  f"says {newest.row_count}")
            columns.update({n: part.column(n) for n in names})
        n = newest.row_count
        for name in self.data_names:
            if isinstance(self.read_schema.field(name).type, BlobType):
                columns[name] = read_blob_column(self.file_io, self.schema_manager, self.read_schema.field(name),
                                                 blobs, first_row_id=newest.first_row_id or 0, row_count=n)
        if self.tracking_names:  # from the newest file, as Java takes every column from the first file holding it
            ids = pa.Table.from_batches(list(self._file_batches(newest, group[0][1], system=False, names=[],
                                                                tracking=self.tracking_names)))
            columns.update({name: ids.column(name) for name in self.tracking_names})
        arrays = [columns.get(name, pa.nulls(n, self.read_arrow_schema.field(name).type)) for name in self.read_names]
        if not arrays:
            return pa.table({"_": pa.nulls(n)}).select([])
        return pa.Table.from_arrays(arrays, schema=self.read_arrow_schema)

    def raw_file_readers(self, split: DataSplit) -> list[Callable[[], list[pa.RecordBatch]]] | None:
        """One reader per file of a split read without a merge (append tables, raw-convertible primary-key
        splits: a deletion-vector table's), so that several files can be decoded at once; their batches in order
        are what :meth:`read` yields. None for a split that merges."""
        if self.data_evolution or (self.merge is not None and not split.raw_convertible):
            return None
        selections = split.row_selections or (None,) * len(split.files)
        vectors = split.deletion_files or (None,) * len(split.files)
        # Their batches are all kept by the caller: decode whole row groups (same rows, fewer, larger batches).
        read = partial(self._raw_file if self.merge is None else self._raw_kv_file,
                       batch_size=max(self.batch_size, _COLLECT_BATCH_ROWS))
        return [partial(_drain, read, meta, path, rows, dv)
                for meta, path, rows, dv in zip(split.files, split.file_paths(), selections, vectors)]

    def _raw_file(self, meta: DataFileMeta, path: str, rows: FrozenBitMap | None,
                  deletion: DeletionFile | None, *, batch_size: int | None = None) -> Iterator[pa.RecordBatch]:
        for batch in self._file_batches(meta, path, system=False, selection=rows, deletion=deletion,
                                        batch_size=batch_size):
            yield from self._finish(pa.Table.from_batches([batch]))

    def _raw_kv_file(self, meta: DataFileMeta, path: str, rows: FrozenBitMap | None,
                     deletion: DeletionFile | None, *, batch_size: int | None = None) -> Iterator[pa.RecordBatch]:
        # A file with no retraction (the metadata counts them) needs no system column at all.
        retracts = meta.delete_row_count != 0
        for batch in self._file_batches(meta, path, system=retracts, deletion=deletion, selection=rows,
                                        key_filter=self.key_filter, batch_size=batch_size):
            table = pa.Table.from_batches([batch])
            yield from self._finish(drop_retracts(table) if retracts else table)

    def _run_reader(self, run: list[tuple[DataFileMeta, GroupTest | None]],
                    paths: dict[str, str]) -> Callable[[int], Iterator[pa.Table]]:
        def read(batch_rows: int) -> Iterator[pa.Table]:
            for meta, groups in run:
                for batch in self._file_batches(meta, paths[meta.file_name], system=True, batch_size=batch_rows,
                                                key_filter=self.key_filter, groups=groups):
                    yield pa.Table.from_batches([batch])

        return read

    def _key_range(self, meta: DataFileMeta) -> tuple[tuple[object, ...], tuple[object, ...]]:
        lo = py_key(deserialize_binary_row(meta.min_key, self.key_types))
        hi = py_key(deserialize_binary_row(meta.max_key, self.key_types))
        return lo, hi

    def _finish(self, table: pa.Table) -> Iterator[pa.RecordBatch]:
        if self.filter_after_merge is not None and table.num_rows:
            table = table.filter(self.filter_after_merge)
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
        batch_size: int | None = None, selection: FrozenBitMap | None = None, key_filter: KeyFilter | None = None,
        names: Sequence[str] | None = None, tracking: Sequence[str] | None = None, groups: GroupTest | None = None,
        dictionary: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        # ``dictionary``: a few selected rows wanted; string columns are read as dictionaries, the rows taken
        # first, then decoded (format/parquet_keyed.py)
        # ``groups``: only the row groups whose first-key-column statistics it accepts (scan/run_edges.py).
        if self.lookup_cache is not None and key_filter is not None and names is None and not self.tracking_names:
            cached = self._cached_file(meta, path, system=system, deletion=deletion, selection=selection,
                                       key_filter=key_filter)
            if cached is not None:
                yield from cached
                return
        # ``names``: a subset of the data columns (a data-evolution file holding some of them); default all.
        data_names = self.data_names if names is None else list(names)
        if tracking is None:
            tracking = self.tracking_names if names is None else []
        # A file Java rewrote (compaction) stores _ROW_ID / _SEQUENCE_NUMBER itself and lists them in write_cols:
        # its values win, nulls fall back to the computed ones (Java's FallbackMappingRow).
        physical = [n for n in tracking if meta.write_cols is not None and n in meta.write_cols]
        file_schema = self.schema_manager.schema(meta.schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        # read-schema name -> name and type in the file (None: column added after this file was written)
        source: list[str | None] = []
        casts: list[tuple[DataType, DataType] | None] = []
        for name in data_names:
            current = self.read_schema.field(name)
            f = by_id.get(current.id)
            if f is not None and isinstance(current.type, BlobType):
                f = None  # blob values live in .blob files, never in the data file (read by _stitch)
            source.append(f.name if f is not None else None)
            # VARIANT goes through the cast module too: it refuses a shredded layout instead of dropping fields
            changed = f is not None and (f.type.copy(nullable=True) != current.type.copy(nullable=True)
                                         or isinstance(current.type, VariantType))
            casts.append((f.type, current.type) if changed and f is not None else None)
        present = [s for s in source if s is not None] + physical
        if system:
            present += [SEQUENCE_NUMBER, VALUE_KIND]
        data_schema = pa.schema([self.read_arrow_schema.field(n) for n in data_names])
        target = pa.schema(list(data_schema) + (list(_SYSTEM) if system else []))
        full = pa.schema([self.read_arrow_schema.field(n) for n in (*data_names, *tracking)])
        deleted = self._deleted_mask(deletion, meta.row_count) if deletion is not None else None
        fmt = file_format(path.rsplit(".", 1)[-1])
        rows = None if selection is None else np.frombuffer(selection.to_array(), dtype=np.uint32).astype(np.int64)
        try:
            with open_data_file(self.file_io, path, format_name=fmt.name) as stream:
                size = batch_size or self.batch_size
                prefiltered = False  # the key filter ran on the raw batches already
                if rows is None and (key_filter is not None or groups is not None):
                    same_type = {name: src for name, src, cast in zip(self.read_names, source, casts)
                                 if src is not None and cast is None}
                    types = {name: self.read_schema.field(name).type for name in same_type}
                    keep = None if key_filter is None else key_filter.row_group_test(same_type, types)
                    if groups is not None and self.merge is not None:
                        keep = _with_group_test(keep, groups, same_type.get(self.merge.spec.key_names[0]))
                    assert keep is not None
                    if _keyed(fmt.name, key_filter, same_type, deleted, tracking):
                        assert key_filter is not None
                        # Few rows of a few row groups: strings as dictionaries, the key filter before any
                        # conversion (format/parquet_keyed.py).
                        plain = [src for src, cast in zip(source, casts, strict=True)
                                 if src is not None and cast is None]
                        batches = _filtered_first(key_filter, read_pruned_keyed(
                            stream, keep=keep, columns=present, dictionary=plain, batch_size=size))
                        prefiltered = True
                    else:
                        batches = fmt.read_pruned(stream, keep=keep, columns=present, batch_size=size)
                elif rows is None:
                    batches = _positioned(fmt.read(stream, columns=present, batch_size=size))
                elif dictionary and fmt.name == "parquet" and deleted is None and not tracking:
                    plain = [src for src, cast in zip(source, casts, strict=True) if src is not None and cast is None]
                    batches = _taken_first(rows, read_selected_keyed(
                        stream, rows=rows, columns=present, dictionary=plain, batch_size=size, use_threads=False))
                    rows = None  # taken
                else:
                    batches = fmt.read_selected(stream, rows=rows, columns=present, batch_size=size)
                for offset, batch in batches:
                    out = self._evolve(batch, source, target, system, casts=casts, path=path)
                    if tracking:
                        positions = np.arange(offset, offset + out.num_rows, dtype=np.int64)
                        computed = tracking_columns(meta, positions, tracking)
                        computed = [pc.coalesce(pc.cast(batch.column(n), pa.int64()), c) if n in physical else c
                                    for n, c in zip(tracking, computed)]
                        out = pa.RecordBatch.from_arrays(list(out.columns) + computed, schema=full)
                    keep = None if rows is None else _selected_mask(rows, offset, out.num_rows)
                    if deleted is not None:
                        alive = pc.invert(deleted.slice(offset, out.num_rows))
                        keep = alive if keep is None else pc.and_(alive, keep)
                    if keep is not None:
                        out = out.filter(keep)
                    if key_filter is not None and out.num_rows and not prefiltered:
                        out = key_filter.apply(out)
                    if out.num_rows:
                        yield out
        except FileIOError:
            raise
        except OSError as e:
            raise FileIOError(f"Cannot read data file {path}: {e}") from e

    def _cached_file(
        self, meta: DataFileMeta, path: str, *, system: bool, deletion: DeletionFile | None,
        selection: FrozenBitMap | None, key_filter: KeyFilter,
    ) -> list[pa.RecordBatch] | None:
        """The key-filtered rows of one file through the lookup cache, None when it does not search this file."""
        assert self.lookup_cache is not None
        bounds: dict[str, tuple[object, object]] = {}
        if self.merge is not None and self.key_types:
            lo, hi = self._key_range(meta)
            bounds[self.merge.spec.key_names[0]] = (lo[0], hi[0])
        rows = None if selection is None else np.frombuffer(selection.to_array(), dtype=np.uint32).astype(np.int64)
        return self.lookup_cache.read(
            entry_name=entry_name(meta, self._cache_layout), meta=meta, key_filter=key_filter,
            key_bounds=bounds, build=lambda: self._file_batches(meta, path, system=True),
            deleted_mask=None if deletion is None else (lambda: self._deleted_mask(deletion, meta.row_count)),
            selection=rows, data_names=self.data_names, system=system,
        )

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


def _with_group_test(keep: Callable[[StatsOf, int], bool] | None, groups: GroupTest,
                     key_column: str | None) -> Callable[[StatsOf, int], bool]:
    """``keep`` and ``groups``, the latter asked with the statistics of the file's first key column."""
    def test(stats_of: StatsOf, num_rows: int) -> bool:
        stats = None
        if key_column is not None and num_rows >= 0:
            stats = stats_of(KEY_PREFIX + key_column) or stats_of(key_column)
        return groups(stats) and (keep is None or keep(stats_of, num_rows))

    return test


def _drain(read: Callable[..., Iterator[pa.RecordBatch]], *args: object) -> list[pa.RecordBatch]:
    return list(read(*args))


def _positioned(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    pos = 0
    for batch in batches:
        yield pos, batch
        pos += batch.num_rows


def _keyed(format_name: str, key_filter: KeyFilter | None, same_type: dict[str, str],
           deleted: pa.Array | None, tracking: Sequence[str]) -> bool:
    """Whether a key-filtered read of a file can filter its raw batches (key columns stored as they are read)."""
    return (format_name == "parquet" and key_filter is not None and deleted is None and not tracking
            and all(same_type.get(name) == name for name in key_filter.fields))


def _filtered_first(key_filter: KeyFilter, batches: Iterator[tuple[int, pa.RecordBatch]]
                    ) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Only the rows of each batch the key filter keeps, before any column is converted (offsets no longer apply:
    callers that need positions do not come here)."""
    for offset, batch in batches:
        yield offset, key_filter.apply(batch)


def _taken_first(rows: np.ndarray, batches: Iterator[tuple[int, pa.RecordBatch]]
                 ) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Only the selected ``rows`` of each batch, before any column is converted (offsets no longer apply)."""
    for offset, batch in batches:
        yield offset, batch.filter(_selected_mask(rows, offset, batch.num_rows))


def _selected_mask(rows: np.ndarray, offset: int, n: int) -> pa.Array:
    """Which of the ``n`` rows starting at file position ``offset`` are among the selected ``rows``."""
    lo, hi = np.searchsorted(rows, [offset, offset + n])
    mask = np.zeros(n, dtype=bool)
    mask[rows[lo:hi] - offset] = True
    return pa.array(mask)
