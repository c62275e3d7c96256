"""Cross-partition upsert: a primary key that does not hold every partition key, so a key may change partition.

The writer keeps key -> (partition, bucket) for every live key, bootstrapped by reading the primary keys of the
latest snapshot (all levels, per bucket), and routes each batch with whole-array operations:

- deduplicate: a key ends where its last row says; if that is another partition than before, a delete goes to
  the old (partition, bucket) and the rows go to the new partition (into a bucket with room);
- partial-update / aggregation: rows of a known key are rewritten into the key's old partition and bucket;
- first-row: rows of a known key in another partition are dropped (the old row stays).

New keys fill buckets as Paimon's cross-partition BucketAssigner does (the lowest bucket under
``dynamic-bucket.target-row-num``, else a new id). No hash index files are written in this mode (Java's
KEY_DYNAMIC). ``cross-partition-upsert.index-ttl`` skips buckets whose files are all older than the TTL during
the bootstrap, and a long-lived writer forgets keys it has not written for that long: such keys are treated as
new (they may then exist twice, as in Java). The bootstrap reads every key of the table once per writer:
``bootstrap_stats`` reports what it cost.

Through Spark no task holds the table's keys: Spark joins the incoming rows with them and each assigner task
starts from the locations the join delivers (``with_counts`` / ``learn``; laketide.spark.cross_partition).

Paimon: crosspartition.GlobalIndexAssigner, IndexBootstrap, BucketAssigner, ExistingProcessor (Delete / UseOld /
SkipNew)
"""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.format.ascending_take import take_rows
from laketide.fs import FileIO
from laketide.io.kv import VALUE_KIND, RowKind
from laketide.meta.binary_row import serialize_binary_row, serialize_rows_arrow
from laketide.meta.stable_sort import stable_argsort
from laketide.options import MergeEngine
from laketide.scan.file_scan import PartitionCodec
from laketide.scan.split import DataSplit
from laketide.schema.table_schema import TableSchema
from laketide.types import BigIntType, DataType, IntType, SmallIntType, TinyIntType, to_arrow_type
from laketide.mergetree.merge import take_run
from laketide.write.bucketing import Group, GroupRows
from laketide.write.key_codes import (
    count_ids,
    encode_keys,
    gather,
    has_duplicate_ints,
    positions_in,
    present_ids,
)
from laketide.write.routed_pieces import position_pieces

__all__ = ["OLD_BUCKET", "OLD_PARTITION", "BootstrapStats", "CrossPartitionAssigner", "KeyBootstrap", "key_bytes"]

# Where a key lives now, joined to incoming rows by Spark (laketide.spark.cross_partition); null for new keys.
OLD_PARTITION = "__laketide_old_partition"  # int32: index into the partitions (BinaryRow bytes) the keys came from
OLD_BUCKET = "__laketide_old_bucket"


def key_bytes(rows: pa.Table, columns: Sequence[str], types: Sequence[DataType]) -> pa.Array:
    """Each row's primary key as one array with exact key identity: the BinaryRow bytes (large_binary), or the
    value itself as int64 for a single integer key (the same identity, hashed and compared much faster)."""
    if len(columns) == 1 and isinstance(types[0], (TinyIntType, SmallIntType, IntType, BigIntType)):
        return rows.column(columns[0]).combine_chunks().cast(pa.int64())
    buf = serialize_rows_arrow(rows, columns, types)
    return pa.Array.from_buffers(pa.large_binary(), len(buf), [None, pa.py_buffer(buf.offsets.astype(np.int64)),
                                                               pa.py_buffer(buf.data)])


@dataclass(frozen=True, slots=True)
class _Routed:
    """Rows routed by one ``route`` call: positions in its input and the (partition id, bucket) of each."""

    rows: np.ndarray
    pids: np.ndarray
    buckets: np.ndarray


@dataclass(frozen=True, slots=True, kw_only=True)
class BootstrapStats:
    keys: int
    duplicate_keys: int
    buckets_read: int
    buckets_skipped_by_ttl: int
    seconds: float
    index_bytes: int
    snapshot_id: int | None = None


@dataclass(frozen=True, slots=True)
class KeyBootstrap:
    """What a bootstrap reads: the latest snapshot's buckets owned by one assigner (``bucket % num_assigners ==
    assign_id``), without those whose files are all older than ``cross-partition-upsert.index-ttl``."""

    file_io: FileIO
    table_path: str
    schema: TableSchema
    splits: tuple[DataSplit, ...]
    skipped_by_ttl: int
    snapshot_id: int | None  # the snapshot whose keys these are (None: the table is empty)

    @property
    def partitions(self) -> tuple[bytes, ...]:
        """The distinct partitions of the splits, in split order."""
        return tuple(dict.fromkeys(s.partition for s in self.splits))

    @classmethod
    def plan(cls, *, file_io: FileIO, table_path: str, schema: TableSchema, num_assigners: int = 1,
             assign_id: int = 0, now_ms: int | None = None) -> KeyBootstrap:
        from laketide.meta.snapshot_manager import SnapshotManager
        from laketide.scan.file_scan import FileStoreScan
        from laketide.scan.split import generate_splits
        from laketide.schema.schema_manager import SchemaManager

        latest = SnapshotManager(file_io, table_path).latest_snapshot()
        if latest is None:
            return cls(file_io, table_path, schema, (), 0, None)
        options = schema.core_options
        scan = FileStoreScan(file_io=file_io, table_path=table_path, schema_manager=SchemaManager(file_io, table_path),
                             schema=schema)
        entries = [e for e in scan.plan(latest) if e.bucket % num_assigners == assign_id]
        skipped = 0
        ttl = options.cross_partition_upsert_index_ttl
        if ttl is not None:
            keep = _fresh_buckets(entries, ttl, now_ms=now_ms)
            skipped = len({(e.partition, e.bucket) for e in entries}) - len(keep)
            entries = [e for e in entries if (e.partition, e.bucket) in keep]
        assert scan.path_factory is not None
        splits = generate_splits(entries, snapshot_id=latest.id, paths=scan.path_factory, merge=True,
                                 target_size=1 << 62)  # one split per bucket
        return cls(file_io, table_path, schema, tuple(splits), skipped, latest.id)

    def read(self, split: DataSplit) -> Iterator[pa.Table]:
        """The live primary keys of one bucket (merged: a deleted key is not there)."""
        from laketide.scan.split_read import SplitRead
        from laketide.schema.schema_manager import SchemaManager

        options = self.schema.core_options
        reader = SplitRead(file_io=self.file_io, schema_manager=SchemaManager(self.file_io, self.table_path),
                           read_schema=self.schema, columns=list(self.schema.primary_keys), predicate=None,
                           batch_size=options.read_batch_size * 64)
        for batch in reader.read(split):
            if batch.num_rows:
                yield pa.Table.from_batches([batch])


@dataclass(slots=True)
class CrossPartitionAssigner:
    """key -> (partition, bucket) of one writer (or one assigner of ``num_assigners``)."""

    schema: TableSchema
    target_row_num: int
    num_assigners: int = 1
    assign_id: int = 0
    keys: pa.Array = field(init=False)  # every known key (key_bytes), aligned with part_of / bucket_of
    part_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # -1: deleted
    bucket_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    partitions: list[bytes] = field(default_factory=list)  # partition id -> BinaryRow bytes
    part_values: list[tuple[object, ...]] = field(default_factory=list)
    counts: dict[int, dict[int, int]] = field(default_factory=dict)  # partition id -> bucket -> keys
    bootstrap_stats: BootstrapStats | None = None
    # cross-partition-upsert.index-ttl: a key not written for this long is forgotten (then treated as new), as
    # Paimon's TTL on its RocksDB index does in a long-running writer.
    index_ttl_ms: int | None = None
    clock_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    touched_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per key, with a TTL only
    _part_ids: dict[bytes, int] = field(default_factory=dict)
    _part_columns: list[pa.Array] = field(default_factory=list)  # per partition key: value of each partition id

    def __post_init__(self) -> None:
        pk = list(self.schema.primary_keys)
        empty = pa.table({k: pa.array([], to_arrow_type(self.schema.field(k).type)) for k in pk})
        self.keys = key_bytes(empty, pk, [self.schema.field(k).type for k in pk])

    # -- setup ---------------------------------------------------------------------------------------------------
    @property
    def engine(self) -> MergeEngine:
        return self.schema.core_options.merge_engine

    def _part_types(self) -> list[DataType]:
        return [f.type for f in self.schema.partition_fields]

    def partition_id(self, values: tuple[object, ...]) -> int:
        part = serialize_binary_row(list(values), self._part_types())
        pid = self._part_ids.get(part)
        if pid is None:
            pid = self._part_ids[part] = len(self.partitions)
            self.partitions.append(part)
            self.part_values.append(values)
            self._part_columns = [
                pa.array([v[i] for v in self.part_values], to_arrow_type(t))
                for i, t in enumerate(self._part_types())
            ]
        return pid

    @classmethod
    def bootstrap(cls, *, file_io: FileIO, table_path: str, schema: TableSchema, num_assigners: int = 1,
                  assign_id: int = 0, now_ms: int | None = None) -> CrossPartitionAssigner:
        """Read every live key of the latest snapshot with its partition and bucket (Paimon: IndexBootstrap)."""
        started = time.perf_counter()
        out = cls.with_counts(schema=schema, counts={}, num_assigners=num_assigners, assign_id=assign_id)
        plan = KeyBootstrap.plan(file_io=file_io, table_path=table_path, schema=schema, num_assigners=num_assigners,
                                 assign_id=assign_id, now_ms=now_ms)
        pk = list(schema.primary_keys)
        types = [schema.field(k).type for k in pk]
        key_chunks: list[pa.Array] = []
        parts: list[np.ndarray] = []
        buckets: list[np.ndarray] = []
        read_counts: dict[tuple[int, int], int] = {}
        workers = min(len(plan.splits), os.cpu_count() or 1)
        with (ThreadPoolExecutor(workers, thread_name_prefix="laketide-bootstrap") if workers > 1
              else nullcontext()) as pool:
            # buckets read side by side (decoding releases the GIL), their keys taken in split order
            read = pool.map if pool is not None else map
            tables = list(read(lambda split: list(plan.read(split)), plan.splits))
        for split, split_keys in zip(plan.splits, tables, strict=True):
            pid = out.partition_id(tuple(split.partition_values))
            for keys in split_keys:
                key_chunks.append(key_bytes(keys, pk, types))
                parts.append(np.full(keys.num_rows, pid, np.int32))
                buckets.append(np.full(keys.num_rows, split.bucket, np.int32))
                read_counts[(pid, split.bucket)] = read_counts.get((pid, split.bucket), 0) + keys.num_rows
        dups = 0
        if key_chunks:
            keys = pa.concat_arrays(key_chunks)
            part_of, bucket_of = np.concatenate(parts), np.concatenate(buckets)
        if key_chunks and not _has_duplicates(keys):  # the usual case: the counts are what each bucket read
            out.keys, out.part_of, out.bucket_of = keys, part_of, bucket_of
            for (pid, bucket), c in read_counts.items():
                out.counts.setdefault(pid, {})[bucket] = c
        elif key_chunks:
            # A key in two places means two jobs wrote the table: keep the first, report the rest.
            encoded = pc.dictionary_encode(keys)
            _, first = np.unique(encoded.indices.to_numpy(), return_index=True)
            dups = len(keys) - len(first)
            out.keys = keys.take(pa.array(first)) if dups else keys
            out.part_of = part_of[first] if dups else part_of
            out.bucket_of = bucket_of[first] if dups else bucket_of
            for pid, bucket, c in _bucket_counts(out.part_of, out.bucket_of):
                out.counts.setdefault(pid, {})[bucket] = c
        out.bootstrap_stats = BootstrapStats(
            keys=len(out.keys), duplicate_keys=dups, buckets_read=len(plan.splits),
            buckets_skipped_by_ttl=plan.skipped_by_ttl, seconds=time.perf_counter() - started,
            index_bytes=out.keys.nbytes + out.part_of.nbytes + out.bucket_of.nbytes, snapshot_id=plan.snapshot_id,
        )
        return out

    @classmethod
    def with_counts(cls, *, schema: TableSchema, counts: Mapping[tuple[bytes, int], int], num_assigners: int,
                    assign_id: int) -> CrossPartitionAssigner:
        """An assigner that knows only how many keys each (partition, bucket) holds: the keys' locations come
        with the rows (``learn``), as Spark's join with the table's keys delivers them."""
        options = schema.core_options
        out = cls(schema=schema, target_row_num=options.dynamic_bucket_target_row_num,
                  num_assigners=num_assigners, assign_id=assign_id,
                  index_ttl_ms=options.cross_partition_upsert_index_ttl)
        out.add_counts(counts.items())
        return out

    def add_counts(self, counts: Iterable[tuple[tuple[bytes, int], int]]) -> None:
        """Set the live keys of more (partition, bucket)s (a Spark assigner loads them as partitions come up)."""
        codec = PartitionCodec(list(self.schema.partition_keys), self._part_types())
        for (part, bucket), n in counts:
            self.counts.setdefault(self.partition_id(tuple(codec.values(part))), {})[bucket] = n

    def owns_bucket(self, bucket: int) -> bool:
        """Whether this assigner gives new keys ``bucket`` (each assigner fills buckets of its own)."""
        return bucket % self.num_assigners == self.assign_id

    def partitions_in(self, rows: pa.Table) -> set[bytes]:
        """The partitions (BinaryRow bytes) the rows name."""
        keys = list(self.schema.partition_keys)
        distinct = rows.select(keys).group_by(keys, use_threads=False).aggregate([])
        return {self.partitions[self.partition_id(tuple(r[k] for k in keys))] for r in distinct.to_pylist()}

    def learn(self, rows: pa.Table, partitions: Sequence[bytes]) -> pa.Table:
        """Take the key locations rows carry (``OLD_PARTITION``, an index into ``partitions``, and
        ``OLD_BUCKET``; null for a key the table does not hold) for keys this assigner has not met yet; return the
        rows without those columns."""
        parts = rows.column(OLD_PARTITION).combine_chunks()
        located = np.asarray(pc.is_valid(parts).to_numpy(zero_copy_only=False), dtype=bool)
        if located.any():
            pk = list(self.schema.primary_keys)
            idx = pa.array(np.flatnonzero(located))
            kb = key_bytes(rows.take(idx), pk, [self.schema.field(k).type for k in pk])
            encoded = pc.dictionary_encode(kb)
            first = np.unique(encoded.indices.to_numpy(), return_index=True)[1]
            fresh_keys = encoded.dictionary
            unseen = ~np.asarray(pc.is_in(fresh_keys, value_set=self.keys).to_numpy(zero_copy_only=False), bool)
            if unseen.any():
                rows_of = np.flatnonzero(located)[first[unseen]]
                part_index = np.asarray(parts.take(pa.array(rows_of)).to_numpy(), dtype=np.int64)
                used, inverse = np.unique(part_index, return_inverse=True)
                codec = PartitionCodec(list(self.schema.partition_keys), self._part_types())
                pid_of = np.array([self.partition_id(tuple(codec.values(partitions[i]))) for i in used.tolist()],
                                  dtype=np.int32)
                bucket_col = rows.column(OLD_BUCKET).combine_chunks().take(pa.array(rows_of))
                self.keys = pa.concat_arrays([self.keys, fresh_keys.filter(pa.array(unseen))])
                self.part_of = np.concatenate([self.part_of, pid_of[inverse.reshape(-1)]])
                self.bucket_of = np.concatenate([self.bucket_of, np.asarray(bucket_col.to_numpy(), np.int32)])
        return rows.drop_columns([OLD_PARTITION, OLD_BUCKET])

    # -- assignment ----------------------------------------------------------------------------------------------
    def _new_buckets(self, pids: np.ndarray) -> np.ndarray:
        """Buckets for new keys (their partition ids, in arrival order) (Paimon: crosspartition.BucketAssigner)."""
        counts = count_ids(pids, len(self.partitions))
        fills = {pid: self._fill(pid, int(counts[pid])) for pid in np.flatnonzero(counts).tolist()}
        if all(len(buckets) == 1 for buckets, _ in fills.values()):  # the usual case: one bucket per partition
            lut = np.zeros(len(counts), dtype=np.int32)
            for pid, (buckets, _) in fills.items():
                lut[pid] = buckets[0]
            return gather(lut, pids)
        # A key's bucket follows from its rank among its partition's new keys: fill them in (partition, arrival)
        # order, then put each back in its place.
        order = stable_argsort(pids.astype(np.uint16) if len(counts) <= 1 << 16 else pids)
        out = np.empty(len(pids), dtype=np.int32)
        out[order] = np.concatenate([np.repeat(np.array(b, np.int32), n) for b, n in fills.values()])
        return out

    def _fill(self, pid: int, m: int) -> tuple[list[int], list[int]]:
        """The buckets ``m`` new keys of partition ``pid`` go to, in arrival order, as (buckets, keys in each):
        the lowest of this assigner's buckets with room first, then new ones."""
        stats = self.counts.setdefault(pid, {})
        buckets: list[int] = []
        takes: list[int] = []
        filled = 0
        for bucket in sorted(stats):
            if filled == m:
                break
            if bucket % self.num_assigners != self.assign_id or stats[bucket] >= self.target_row_num:
                continue
            take = min(self.target_row_num - stats[bucket], m - filled)
            buckets.append(bucket)
            takes.append(take)
            stats[bucket] += take
            filled += take
        candidate = 0
        while filled < m:
            while candidate in stats or candidate % self.num_assigners != self.assign_id:
                candidate += 1
            take = min(self.target_row_num, m - filled)
            buckets.append(candidate)
            takes.append(take)
            stats[candidate] = take
            filled += take
        return buckets, takes

    @property
    def plans_groups(self) -> bool:
        """Whether ``plan`` can hand over the groups uncopied: not when rows are rewritten into their key's
        partition (partial-update / aggregation)."""
        return self.engine not in (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATE)

    def plan(self, table: pa.Table) -> list[GroupRows]:
        """``route``'s groups, not copied yet (a moved key's deletes are copied here: they are rewritten), for a
        one-shot write that copies each group on a flush worker. Only when ``plans_groups``."""
        assert self.plans_groups
        routed = self._route(table)
        if routed is None:
            return []
        kept, deletes, _ = routed
        out: list[GroupRows] = []
        n = table.num_rows
        for values, bucket, pid, kept_at, deleted_at in self._group_positions(kept, deletes):
            if not len(deleted_at):
                out.append(GroupRows(values, bucket, table, indices=kept_at))
                continue
            # one group per bucket (a second group of the same bucket would flush it twice): the deletes follow
            # the kept rows as rows n.. of the input with them appended (no copy of the input)
            gone = self._as_deletes(take_rows(table, deleted_at), pid)
            source = pa.concat_tables([table, gone.select(table.column_names)])
            at = np.concatenate([kept_at, np.arange(n, n + len(deleted_at), dtype=np.int64)])
            out.append(GroupRows(values, bucket, source, indices=at))
        return out

    def route(self, table: pa.Table, *, max_rows: int | None = None) -> Iterator[Group]:
        """Route rows (with their ``_VALUE_KIND``) to (partition, bucket) groups, updating the key index; a group
        comes in pieces of at most ``max_rows`` rows (None: its rows in one go, then its deletes).

        Columns other than the table's (``__laketide_*``) ride along; a moved key's delete carries those of the
        key's last row.
        """
        routed = self._route(table)
        if routed is not None:
            kept, deletes, row_part = routed
            yield from self._groups(table, kept, deletes, row_part=row_part, max_rows=max_rows)

    def _route(self, table: pa.Table) -> tuple[_Routed, _Routed, np.ndarray | None] | None:
        """Decide every row's (partition, bucket) and update the key index: the kept rows, the deletes of moved
        keys, and (partial-update / aggregation) each row's own partition id. None: no rows."""
        n = table.num_rows
        if n == 0:
            return None
        now = self.clock_ms()
        self._expire(now)
        schema = self.schema
        pk = list(schema.primary_keys)
        kb = key_bytes(table, pk, [schema.field(k).type for k in pk])
        encoded = encode_keys(kb)  # distinct keys in arrival order, each row's key id, each key's first row
        codes, uniq_keys, first = encoded.codes, encoded.keys, encoded.first
        u = len(uniq_keys)

        def per_row(per_key: np.ndarray) -> np.ndarray:  # a key's value on each of its rows
            return per_key if encoded.distinct else per_key[codes]
        row_part = self._row_partitions(table)
        kinds = np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        # last row of each key
        if encoded.distinct:
            last = codes
        else:
            last = np.full(u, -1, dtype=np.int64)
            np.maximum.at(last, codes, np.arange(n))
        pos, old_part, old_bucket = self._where_now(uniq_keys)
        known = old_part >= 0  # (a deleted key stays in the index as a tombstone: in it, not known)
        engine = self.engine
        if engine is MergeEngine.DEDUPLICATE:
            target = row_part if encoded.distinct else row_part[last]
            ends_deleted = retract if encoded.distinct else retract[last]
        else:
            target = np.where(known, old_part, row_part if encoded.distinct else row_part[first])
            ends_deleted = np.zeros(u, dtype=bool)
        moved = known & (old_part != target)
        stays = known & ~moved
        # rows kept; keys that keep their bucket, and keys that need a new one
        if engine is MergeEngine.DEDUPLICATE:
            live = ~ends_deleted | stays  # a key deleted in place keeps its rows (the delete among them)
            keep = per_row(live) if target is row_part else (row_part == per_row(target)) & per_row(live)
            old_kept, needs_new = stays, ~stays & ~ends_deleted
            leaving = known & (moved | ends_deleted)  # moved or deleted keys leave their old bucket
            self._leave_buckets(old_part[leaving], old_bucket[leaving])
        else:  # a key stays in its partition: first-row drops the rows for others, the rest rewrite them
            keep = row_part == per_row(target) if engine is MergeEngine.FIRST_ROW else np.ones(n, dtype=bool)
            old_kept, needs_new = known, ~known
        key_bucket = self._key_buckets(target, needs_new, old_kept, old_bucket)
        # rows: the kept ones where routing put them (partial-update / aggregation rewrite the partition where it
        # differs from the key's), then a delete in the old place of each moved key; copied piece by piece
        every_row = encoded.distinct and bool(keep.all())  # (the rows as they came: no gathers)
        kept_idx = codes if every_row else np.flatnonzero(keep)
        row_codes = kept_idx if encoded.distinct else codes[kept_idx]
        gone = np.flatnonzero(moved) if engine is MergeEngine.DEDUPLICATE else np.zeros(0, np.int64)
        self._update_index(uniq_keys, pos, known, target, key_bucket,
                           ends_deleted & (engine is MergeEngine.DEDUPLICATE))
        self._stamp(now, pos[pos >= 0] if self.index_ttl_ms else None)
        kept = (_Routed(kept_idx, target, key_bucket) if every_row
                else _Routed(kept_idx, target[row_codes], key_bucket[row_codes]))
        return (kept, _Routed(last[gone], old_part[gone], old_bucket[gone]),
                row_part if engine in (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATE) else None)

    def _where_now(self, uniq_keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each key's position in the index (-1: not there) and its partition id and bucket now (-1, -1)."""
        u = len(uniq_keys)
        pos = positions_in(uniq_keys, self.keys)
        in_index = pos >= 0
        if not in_index.any():  # as in a first write: read-only -1s, no arrays to fill
            none = np.broadcast_to(np.int32(-1), (u,))
            return pos, none, none
        old_part = np.full(u, -1, np.int32)
        old_bucket = np.full(u, -1, np.int32)
        old_part[in_index] = self.part_of[pos[in_index]]
        old_bucket[in_index] = self.bucket_of[pos[in_index]]
        return pos, old_part, old_bucket

    def _leave_buckets(self, parts: np.ndarray, buckets: np.ndarray) -> None:
        """Keys leave these (partition id, bucket)s: lower their counts, one update per bucket, not per key."""
        for pid, bucket, n_left in _bucket_counts(parts, buckets):
            stats = self.counts.get(pid)
            if stats is not None and bucket in stats:
                stats[bucket] = max(stats[bucket] - n_left, 0)

    def _key_buckets(self, target: np.ndarray, needs_new: np.ndarray, old_kept: np.ndarray,
                     old_bucket: np.ndarray) -> np.ndarray:
        """Each key's bucket: its old one where ``old_kept``, a new one in ``target`` where ``needs_new``, else -1
        (a key deleted that is not kept anywhere)."""
        if needs_new.all():
            new_bucket = self._new_buckets(target)
        else:
            new_bucket = np.full(len(target), -1, np.int32)
            if needs_new.any():
                new_bucket[needs_new] = self._new_buckets(target[needs_new])
        return np.where(old_kept, old_bucket, new_bucket) if old_kept.any() else new_bucket

    def _row_partitions(self, table: pa.Table) -> np.ndarray:
        """The partition id of every row."""
        keys = list(self.schema.partition_keys)
        code = np.zeros(table.num_rows, dtype=np.int64) if len(keys) != 1 else None
        radix = 1
        dictionaries = []
        radices = []
        for name in keys:
            enc = pc.dictionary_encode(table.column(name), null_encoding="encode").combine_chunks()
            idx = enc.indices.to_numpy(zero_copy_only=False)
            dictionaries.append(enc.dictionary)
            radices.append(radix)
            if code is None:  # one partition column: its dictionary indices are the codes (no int64 copy)
                code = idx
            else:
                code += idx.astype(np.int64) * radix
            radix *= max(len(enc.dictionary), 1)
        assert code is not None
        inverse: np.ndarray | None = None
        if radix > max(1 << 20, len(code)):  # many partitions: sort the codes
            uniq, inverse = np.unique(code, return_inverse=True)
        else:  # the usual few partitions: a table over the codes, no sort of every row's code
            uniq = present_ids(code, radix)
        gid = np.empty(len(uniq), dtype=np.int32)
        for j, c in enumerate(uniq.tolist()):  # ascending codes, as before: partition ids in the same order
            values = tuple(d[(c // r) % len(d)].as_py() for d, r in zip(dictionaries, radices))
            gid[j] = self.partition_id(values)
        if inverse is not None:
            return gather(gid, inverse.reshape(-1))
        by_code = np.zeros(radix, dtype=np.int32)
        by_code[uniq] = gid
        return gather(by_code, code)

    def _set_partitions(self, rows: pa.Table, pids: np.ndarray, *, changed: np.ndarray) -> pa.Table:
        if not changed.any():
            return rows
        ids = pa.array(pids.astype(np.int32))
        for name, values in zip(self.schema.partition_keys, self._part_columns):
            col = rows.schema.get_field_index(name)
            rows = rows.set_column(col, rows.schema.field(col), pc.take(values, ids).cast(rows.schema.field(col).type))
        return rows

    def _stamp(self, now: int, positions: np.ndarray | None = None) -> None:
        """Mark keys as written ``now`` (keys added since the last stamp included)."""
        if not self.index_ttl_ms:
            return
        grown = len(self.keys) - len(self.touched_ms)
        if grown:
            self.touched_ms = np.concatenate([self.touched_ms, np.full(grown, now, np.int64)])
        if positions is not None:
            self.touched_ms[positions] = now

    def _expire(self, now: int) -> None:
        """Forget the keys not written within the index TTL."""
        if not self.index_ttl_ms:
            return
        self._stamp(now)
        fresh = self.touched_ms >= now - self.index_ttl_ms
        if not fresh.all():
            self.keys = self.keys.filter(pa.array(fresh))
            self.part_of, self.bucket_of = self.part_of[fresh], self.bucket_of[fresh]
            self.touched_ms = self.touched_ms[fresh]

    def _update_index(self, uniq_keys: pa.Array, pos: np.ndarray, known: np.ndarray, target: np.ndarray,
                      bucket: np.ndarray, deleted: np.ndarray) -> None:
        located = bucket >= 0
        upd = known & located & ~deleted
        self.part_of[pos[upd]] = target[upd]
        self.bucket_of[pos[upd]] = bucket[upd]
        gone = known & deleted
        self.part_of[pos[gone]] = -1
        add = ~known & located & ~deleted
        if add.all() and not (pos >= 0).any():  # every key is new (a first write): no gathers, no copies
            self._append_keys(uniq_keys, target, bucket)
        elif add.any():
            idx = np.flatnonzero(add)
            # a key that was deleted before is re-added in place of its tombstone
            revived = (pos >= 0) & add
            self.part_of[pos[revived]] = target[revived]
            self.bucket_of[pos[revived]] = bucket[revived]
            fresh = idx[pos[idx] < 0]
            if len(fresh):
                self._append_keys(uniq_keys.take(pa.array(fresh)), target[fresh], bucket[fresh])

    def _append_keys(self, keys: pa.Array, part_of: np.ndarray, bucket_of: np.ndarray) -> None:
        """Add new keys (the arrays are the assigner's from now on: a first write's index is its routing's)."""
        if len(self.keys) == 0:
            self.keys = keys
            self.part_of, self.bucket_of = part_of.astype(np.int32, copy=False), bucket_of.astype(np.int32, copy=False)
            return
        self.keys = pa.concat_arrays([self.keys, keys])
        self.part_of = np.concatenate([self.part_of, part_of.astype(np.int32)])
        self.bucket_of = np.concatenate([self.bucket_of, bucket_of.astype(np.int32)])

    def _groups(self, table: pa.Table, kept: _Routed, deletes: _Routed, *, row_part: np.ndarray | None,
                max_rows: int | None) -> Iterator[Group]:
        """Bucket groups in (partition, bucket) order: each group's kept rows in arrival order, then its deletes;
        rows are taken from ``table`` at most ``max_rows`` at a time (None: a group's kept rows in one go).
        ``row_part`` (partial-update / aggregation): each row's own partition, rewritten where it differs."""
        for values, bucket, pid, kept_at, deleted_at in self._group_positions(kept, deletes):
            for at in position_pieces(kept_at, max_rows):
                rows = take_run(table, at)
                if row_part is not None:
                    rows = self._set_partitions(rows, np.full(len(at), pid, np.int32), changed=row_part[at] != pid)
                yield Group(values, bucket, rows)
            for at in position_pieces(deleted_at, max_rows):
                yield Group(values, bucket, self._as_deletes(take_rows(table, at), pid))

    def _group_positions(self, kept: _Routed, deletes: _Routed) -> Iterator[tuple[tuple[object, ...], int, int,
                                                                                   np.ndarray, np.ndarray]]:
        """(partition values, bucket, partition id, kept rows, deleted rows) of each group in (partition, bucket)
        order, row positions ascending."""
        n_kept = len(kept.rows)
        pids, buckets = kept.pids, kept.buckets
        if len(deletes.rows):
            pids, buckets = np.concatenate([pids, deletes.pids]), np.concatenate([buckets, deletes.buckets])
        if len(pids) == 0:
            return
        every_row = bool(n_kept) and int(kept.rows[-1]) == n_kept - 1  # ascending positions from 0: all rows
        per_pid = int(buckets.max()) + 1
        # (partition id, bucket) as one ascending code; few groups fit 16 bits (numpy's radix sort, 2 bytes a row)
        if (int(pids.max()) + 1) * per_pid <= 1 << 16:
            code = pids.astype(np.uint16) * np.uint16(per_pid) + buckets.astype(np.uint16)
        else:
            code = pids.astype(np.int64) * per_pid + buckets
        for group, sel in _positions_by_code(code):
            pid, bucket = divmod(group, per_pid)
            split = int(np.searchsorted(sel, n_kept))
            kept_at = sel[:split] if every_row else kept.rows[sel[:split]]
            yield self.part_values[pid], bucket, pid, kept_at, deletes.rows[sel[split:] - n_kept]

    def _as_deletes(self, rows: pa.Table, pid: int) -> pa.Table:
        """``rows`` as deletes in partition ``pid`` (a moved key's delete in its old place)."""
        rows = self._set_partitions(rows, np.full(rows.num_rows, pid, np.int32), changed=np.ones(rows.num_rows, bool))
        kind_col = rows.schema.get_field_index(VALUE_KIND)
        return rows.set_column(kind_col, rows.schema.field(kind_col),
                               pa.array(np.full(rows.num_rows, int(RowKind.DELETE), np.int8)))

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.part_of.nbytes + self.bucket_of.nbytes)


def _bucket_counts(parts: np.ndarray, buckets: np.ndarray) -> Iterator[tuple[int, int, int]]:
    """(partition id, bucket, keys) for each (partition id, bucket) pair of the keys, ascending."""
    codes = parts.astype(np.int64) * (1 << 16) + buckets
    uniq, counts = np.unique(codes, return_counts=True)
    for code, c in zip(uniq.tolist(), counts.tolist()):
        yield code >> 16, code & 0xFFFF, c


# Up to this many groups, each group's rows are found by a pass over the codes instead of a sort of them all.
_FEW_GROUPS = 32


def _positions_by_code(code: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Each distinct code, ascending, with the positions holding it, ascending."""
    if code.dtype == np.uint16:
        present = present_ids(code, 1 << 16)
        if len(present) <= _FEW_GROUPS:  # one pass per group: no order of every row (an 8M-entry int64 array)
            for group in present.tolist():
                yield group, np.flatnonzero(code == group)
            return
    # stable: a group's positions stay ascending
    order = stable_argsort(code)
    sorted_code = code[order]
    bounds = (np.flatnonzero(sorted_code[1:] != sorted_code[:-1]) + 1).tolist()
    for s, e in zip([0, *bounds], [*bounds, len(order)]):
        yield int(sorted_code[s]), order[s:e]


def _has_duplicates(keys: pa.Array) -> bool:
    """Whether a key occurs twice (integer keys: a sort and a neighbour compare, no hash table of every key)."""
    if len(keys) < 2:
        return False
    if pa.types.is_integer(keys.type):
        dense = has_duplicate_ints(keys.to_numpy())
        if dense is not None:
            return dense
        values = np.sort(keys.to_numpy())
        return bool((values[1:] == values[:-1]).any())
    return int(pc.count_distinct(keys).as_py()) < len(keys)


def _fresh_buckets(entries: Sequence[object], ttl_ms: int, *, now_ms: int | None) -> set[tuple[bytes, int]]:
    """Buckets with at least one file younger than the TTL (creation times are local wall-clock millis)."""
    if now_ms is None:
        offset = _dt.datetime.now().astimezone().utcoffset() or _dt.timedelta(0)
        now_ms = int(time.time() * 1000 + offset.total_seconds() * 1000)
    out: set[tuple[bytes, int]] = set()
    for e in entries:
        created = e.file.creation_time_ms  # type: ignore[attr-defined]
        if created is None or now_ms <= created + ttl_ms:
            out.add((e.partition, e.bucket))  # type: ignore[attr-defined]
    return out
