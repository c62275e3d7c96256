"""Key-filtered reads of a merge section, keys first: the winners from keys and sequence numbers, then the values.

A read whose predicate pins primary keys (a point lookup, a short key range) finds its candidate rows in a few row
groups of each run of a section. With merge-engine = deduplicate (no ``sequence.field``, deletes not ignored) a
key's result is its version with the highest sequence number, or nothing when that version is a retraction. So
only the key columns and ``_SEQUENCE_NUMBER`` (and ``_VALUE_KIND`` of files that hold retractions) of the
candidate row groups are decoded first, the winners are picked among them, and the value columns are decoded
only from the row groups that hold a winner. An upserted key costs one row group of values instead of one per
run. Files are searched newest first, and for a finite key set (``=`` / ``IN`` on a one-column key) the search
stops once every key has a version newer than all files left: the benchmark's point lookup (an upserted key)
never opens the base file.

The rows and their order are the merge's: the winners come out sorted by key as Java orders keys. A section
whose key columns a file does not hold as they are read (a type changed since) is left to the merge, and so is
one with more than ``MAX_CANDIDATES`` candidate rows (a wide range: there the streaming merge, with its edges
read without sequence numbers, does less).

Paimon: mergetree.LookupLevels (the newest version of a key decides), compact.DeduplicateMergeFunction
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import FileIOError
from laketide.format import file_format
from laketide.format.parquet_keyed import read_pruned_keyed
from laketide.fs import FileIO
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeFunction, dedupe, drop_retracts
from laketide.scan.data_file_input import open_data_file
from laketide.scan.key_filter import KeyFilter
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_type

__all__ = ["MAX_CANDIDATES", "KeysFirst"]

# Candidate rows (after the key filter) above which a section goes back to the merge.
MAX_CANDIDATES = 65_536
_FILE = "_KEYS_FIRST_FILE"
_POSITION = "_KEYS_FIRST_POSITION"
_KEY_BATCH_ROWS = 1 << 20
# The rows of one data file at the given positions (ascending), in the read schema without system columns.
ReadRows = Callable[[DataFileMeta, str, np.ndarray], list[pa.RecordBatch]]


class _Abandon(Exception):
    """The section is left to the merge (see the module's doc)."""


@dataclass(frozen=True, slots=True)
class KeysFirst:
    """Keys-first reading of merge sections for one read (see the module's doc)."""

    file_io: FileIO
    schema_manager: SchemaManager
    read_schema: TableSchema
    key_filter: KeyFilter
    merge: MergeFunction

    @staticmethod
    def of(merge: MergeFunction | None, key_filter: KeyFilter | None, *, file_io: FileIO,
           schema_manager: SchemaManager, read_schema: TableSchema) -> KeysFirst | None:
        """Keys-first reading where it gives the merge's rows: a key filter, plain deduplicate."""
        if key_filter is None or type(merge) is not DeduplicateMergeFunction:
            return None
        if merge.ignore_delete or merge.spec.sequence_fields:
            return None
        return KeysFirst(file_io=file_io, schema_manager=schema_manager, read_schema=read_schema,
                         key_filter=key_filter, merge=merge)

    def read(self, section: Sequence[Sequence[DataFileMeta]], paths: dict[str, str],
             read_rows: ReadRows) -> pa.Table | None:
        """The merged rows of ``section`` (several runs), key-sorted; None: leave the section to the merge."""
        files = [meta for run in section for meta in run]
        try:
            candidates = self._candidates(files, paths)
        except _Abandon:
            return None
        if candidates.num_rows == 0:
            return pa.table({})  # no key matched: no rows
        winners = drop_retracts(dedupe(candidates, self.merge.spec))
        file_of = winners.column(_FILE).to_numpy()
        position = winners.column(_POSITION).to_numpy()
        # Each file's winners come back in file order; ``take`` puts them in the winners' (key) order.
        order = np.lexsort((position, file_of))
        parts: list[pa.RecordBatch] = []
        for f in np.unique(file_of):
            meta = files[int(f)]
            rows = np.sort(position[file_of == f])
            got = read_rows(meta, paths[meta.file_name], rows)
            if sum(b.num_rows for b in got) != len(rows):
                raise FileIOError(f"Data file {paths[meta.file_name]}: the rows at {len(rows)} positions read back "
                                  f"as {sum(b.num_rows for b in got)} rows")
            parts += got
        take = np.empty(len(order), dtype=np.int64)
        take[order] = np.arange(len(order), dtype=np.int64)
        if not parts:
            return pa.table({})  # no key matched, or only retracted ones
        return pa.Table.from_batches(parts).take(take)

    def _candidates(self, files: Sequence[DataFileMeta], paths: dict[str, str]) -> pa.Table:
        # Newest files first: once every key of a finite key set has a version newer than all the files left,
        # those files cannot change the result and are not opened (an upserted key: the base file is skipped).
        newest_first = sorted(range(len(files)), key=lambda i: files[i].max_sequence_number, reverse=True)
        wanted = self._wanted_keys()
        tables: list[pa.RecordBatch] = []
        total = 0
        for n, i in enumerate(newest_first):
            for batch in self._key_rows(files[i], paths[files[i].file_name], i):
                total += batch.num_rows
                if total > MAX_CANDIDATES:
                    raise _Abandon
                tables.append(batch)
            rest = newest_first[n + 1:]
            if wanted is not None and rest and tables:
                newer_than = max(files[j].max_sequence_number for j in rest)
                if _settled(pa.Table.from_batches(tables), wanted, newer_than):
                    break
        return pa.Table.from_batches(tables) if tables else pa.table({})

    def _wanted_keys(self) -> tuple[str, int] | None:
        """(key column, number of distinct keys) when the filter asks for a finite set of keys of a one-column key."""
        names = self.merge.spec.key_names
        sets = self.key_filter.value_sets
        if sets is None or len(names) != 1 or [name for name, _ in sets] != [names[0]]:
            return None
        return names[0], int(pc.count_distinct(sets[0][1]).as_py())

    def _key_rows(self, meta: DataFileMeta, path: str, file_index: int) -> Iterator[pa.RecordBatch]:
        """Key columns, sequence number, kind, file index and position of the rows of one file the filter keeps."""
        # The merge's key columns, and any other column the key filter names (a partition column of the key)
        key_names = list(self.merge.spec.key_names)
        key_names += sorted(self.key_filter.fields - set(key_names))
        file_schema = self.schema_manager.schema(meta.schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        source: dict[str, str] = {}
        types = {}
        for name in key_names:
            current = self.read_schema.field(name)
            f = by_id.get(current.id)
            if f is None or f.type.copy(nullable=True) != current.type.copy(nullable=True):
                raise _Abandon  # a key column not as it is read: the merge's reader handles it
            source[name] = f.name
            types[name] = current.type
        retracts = meta.delete_row_count != 0  # None (unknown): assume some
        columns = [source[n] for n in key_names] + [SEQUENCE_NUMBER] + ([VALUE_KIND] if retracts else [])
        keep = self.key_filter.row_group_test(source, types)
        arrow_types = [to_arrow_type(types[n]) for n in key_names] + [pa.int64(), pa.int8()]
        names = [*key_names, SEQUENCE_NUMBER, VALUE_KIND, _FILE, _POSITION]
        fmt = file_format(path.rsplit(".", 1)[-1])
        try:
            with open_data_file(self.file_io, path, format_name=fmt.name) as stream:
                if fmt.name == "parquet":  # a few row groups (format/parquet_keyed.py)
                    batches = read_pruned_keyed(stream, keep=keep, columns=columns, batch_size=_KEY_BATCH_ROWS,
                                                use_threads=False)
                else:
                    batches = fmt.read_pruned(stream, keep=keep, columns=columns, batch_size=_KEY_BATCH_ROWS)
                for offset, batch in batches:
                    n = batch.num_rows
                    arrays = [batch.column(c) for c in columns]
                    if not retracts:
                        arrays.append(pa.array(np.zeros(n, dtype=np.int8)))  # +I: nothing to retract
                    arrays = [a if a.type.equals(t) else pc.cast(a, t)
                              for a, t in zip(arrays, arrow_types, strict=True)]
                    arrays += [pa.array(np.full(n, file_index, dtype=np.int32)),
                               pa.array(np.arange(offset, offset + n, dtype=np.int64))]
                    rows = self.key_filter.apply(pa.RecordBatch.from_arrays(arrays, names=names))
                    if rows.num_rows:
                        yield rows
        except FileIOError:
            raise
        except OSError as e:
            raise FileIOError(f"Cannot read data file {path}: {e}") from e


def _settled(candidates: pa.Table, wanted: tuple[str, int], newer_than: int) -> bool:
    """Whether every wanted key has a candidate newer than sequence number ``newer_than`` (the candidates pass the
    key filter, so they hold wanted keys only)."""
    column, count = wanted
    newer = candidates.filter(pc.greater(candidates.column(SEQUENCE_NUMBER), newer_than))
    return int(pc.count_distinct(newer.column(column)).as_py()) >= count
