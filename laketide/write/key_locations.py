"""Where a batch of primary keys lives in a cross-partition table: a keyed read of the planned buckets.

A cross-partition assigner needs two things from the table: the (partition, bucket) of each incoming key the
table already holds, and how many live keys each bucket it may fill holds (``dynamic-bucket.target-row-num``).
Instead of reading every key of the table (Paimon's IndexBootstrap), ``locate`` reads the buckets with
``key IN (the incoming keys)``: files and row groups whose key statistics hold none of them are skipped, and rows
are filtered before the merge, so a delete in a newer file still hides a key. ``live_counts`` takes a bucket's
count from its file metadata when that is exact (one sorted run, no retraction, no deletion vector) and reads
the bucket's keys only otherwise.

The buckets are the ones a ``KeyBootstrap`` planned (one snapshot, the index TTL applied), in its order: a key
found in two buckets (two jobs wrote it at once) is placed in the first, as the bootstrap keeps the first.

Paimon: crosspartition.IndexBootstrap (the keys read), GlobalIndexAssigner (the lookup); table.query
.LocalTableQuery (keyed reads)
"""

from __future__ import annotations

import datetime as _dt
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.expr import Leaf, Op, and_
from laketide.scan.key_filter import KeyFilter
from laketide.scan.split import DataSplit, raw_convertible_bucket
from laketide.scan.stats_test import StatsTest
from laketide.write.cross_partition import KeyBootstrap, key_bytes

if TYPE_CHECKING:
    from laketide.scan.split_read import SplitRead

__all__ = ["KeyLocations", "exact_key_count", "key_set_filter"]


# Python kinds whose order is Arrow's sort order and that compare with each other without surprises (no NaN, no
# naive-vs-aware datetimes)
_ORDERED = (int, str, bytes, _dt.date, Decimal)


class _SortedKeys(StatsTest):
    """``k IN (values)`` per key column against row-group statistics by binary search over values sorted once
    (the values come as Arrow arrays: no Python predicate of 100k literals is built)."""

    def __init__(self, values: Mapping[str, list[Any]]) -> None:  # StatsTest's own state is not used
        self.values = values

    def may_match(self, stats: Mapping[str, Any], row_count: int) -> bool:
        for name, values in self.values.items():
            s = stats.get(name)
            if not values:
                return False
            kind = type(values[0])
            if kind not in _ORDERED or s is None or type(s.min) is not kind or type(s.max) is not kind:
                continue  # nothing to compare with exactly: the row group may match
            i = bisect_left(values, s.min)
            if i == len(values) or values[i] > s.max:
                return False
        return True


@dataclass(frozen=True)
class _KeySetFilter(KeyFilter):
    # integer key columns as sorted numpy arrays: membership by binary search, no hash set rebuilt per batch
    sorted_ints: tuple[tuple[str, np.ndarray], ...] = ()

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not self.sorted_ints:
            return super().apply(batch)
        mask = None
        for name, values in self.sorted_ints:
            col = batch.column(name).to_numpy(zero_copy_only=False)
            at = np.minimum(np.searchsorted(values, col), len(values) - 1)
            hit = values[at] == col
            mask = hit if mask is None else mask & hit
        return batch.filter(pa.array(mask))


def key_set_filter(keys: pa.Table) -> KeyFilter:
    """A read's key filter for the keys of ``keys`` (each key column IN its values: exact for one key column, a
    superset for a composite key), built from Arrow arrays."""
    value_sets = tuple((k, pc.unique(keys.column(k)).drop_null().sort()) for k in keys.column_names)
    ints = all(pa.types.is_integer(v.type) and len(v) for _, v in value_sets)
    return _KeySetFilter(predicate=and_(*(Leaf(Op.IS_NOT_NULL, k) for k in keys.column_names)),
                         expression=pc.scalar(True),
                         test=_SortedKeys({k: v.to_pylist() for k, v in value_sets}),
                         value_sets=value_sets,
                         sorted_ints=tuple((k, v.to_numpy()) for k, v in value_sets) if ints else ())


def exact_key_count(split: DataSplit) -> int | None:
    """The live keys of a bucket from its file metadata, when the metadata says it exactly: each key once (a
    single file, or one level above 0), no retraction, no deletion vector. None otherwise."""
    files = split.files
    if not files or any(f.delete_row_count != 0 for f in files):
        return None
    if split.deletion_files is not None and any(d is not None for d in split.deletion_files):
        return None
    if len(files) == 1 or raw_convertible_bucket(files):
        return sum(f.row_count for f in files)
    return None


@dataclass(frozen=True, slots=True)
class KeyLocations:
    """Keyed reads of the buckets ``plan`` holds (picklable: shipped to every Spark assigner task)."""

    plan: KeyBootstrap

    def _reader(self) -> SplitRead:
        from laketide.scan.split_read import SplitRead
        from laketide.schema.schema_manager import SchemaManager

        schema = self.plan.schema
        return SplitRead(file_io=self.plan.file_io, schema_manager=SchemaManager(self.plan.file_io,
                                                                                 self.plan.table_path),
                         read_schema=schema, columns=list(schema.primary_keys),
                         batch_size=schema.core_options.read_batch_size * 64)

    def _key_bytes(self, keys: pa.Table) -> pa.Array:
        schema = self.plan.schema
        pk = list(schema.primary_keys)
        return key_bytes(keys, pk, [schema.field(k).type for k in pk])

    def locate(self, keys: pa.Table) -> tuple[pa.Array, pa.Array]:
        """For each row of ``keys`` (the key columns in the table's types): the index of its partition in
        ``plan.partitions`` and its bucket, both int32 and null for a key no planned bucket holds."""
        n = keys.num_rows
        splits = self.plan.splits
        if n == 0 or not splits:
            return pa.nulls(n, pa.int32()), pa.nulls(n, pa.int32())
        reader = self._reader()
        reader.key_filter = key_set_filter(keys)  # rows of other keys never reach the merge
        part_ids = {part: i for i, part in enumerate(self.plan.partitions)}
        found: list[pa.Array] = []
        parts: list[np.ndarray] = []
        buckets: list[np.ndarray] = []
        for split in splits:
            for batch in reader.read(split):
                if batch.num_rows:
                    found.append(self._key_bytes(pa.Table.from_batches([batch])))
                    parts.append(np.full(batch.num_rows, part_ids[split.partition], np.int32))
                    buckets.append(np.full(batch.num_rows, split.bucket, np.int32))
        if not found:
            return pa.nulls(n, pa.int32()), pa.nulls(n, pa.int32())
        # index_in answers the first occurrence: the first planned bucket wins for a key found twice.
        at = pc.index_in(self._key_bytes(keys), value_set=pa.concat_arrays(found))
        return (pc.take(pa.array(np.concatenate(parts)), at), pc.take(pa.array(np.concatenate(buckets)), at))

    def live_counts(self, partitions: Collection[bytes],
                    owns: Callable[[int], bool]) -> Iterator[tuple[tuple[bytes, int], int]]:
        """``((partition, bucket), live keys)`` of the planned buckets in ``partitions`` whose bucket ``owns``
        accepts: from the metadata when exact, else by reading the bucket's keys."""
        reader = None
        for split in self.plan.splits:
            if split.partition not in partitions or not owns(split.bucket):
                continue
            count = exact_key_count(split)
            if count is None:
                reader = reader or self._reader()
                count = sum(b.num_rows for b in reader.read(split))
            yield (split.partition, split.bucket), count
