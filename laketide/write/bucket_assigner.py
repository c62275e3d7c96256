"""Dynamic bucket mode (``bucket = -1`` on a primary-key table): which bucket each key goes to, and its hash index.

The hash of a key is ``BinaryRow.hashCode()`` of its trimmed primary key. Keys are sharded over assigners by
``BucketAssigner.computeAssigner(partition hash, key hash)``; each assigner owns the bucket ids ``b`` with
``b % assigners == id`` and keeps a ``PartitionIndex`` per partition it touched, loaded lazily from the hash index
files of the snapshot the writer started from and dropped at ``prepare_commit`` when the partition was not
touched since the previous one (it reloads from the index files, which by then hold everything it assigned).

Each bucket written gets a new hash index file at ``prepare_commit``: the hashes of its previous file plus the
new ones (Paimon's DynamicBucketIndexMaintainer). The commit message names the previous file as deleted, which
is how the committer detects a second job writing the same buckets (see ``write.index_manifest``).

Only one job may write a dynamic-bucket table at a time: two jobs assign new keys independently and could put
one key in two buckets. A commit whose hash index files were derived from files that are no longer current
fails with ``CommitConflictError``, changing nothing.

Paimon: index.HashBucketAssigner, index.SimpleHashBucketAssigner, index.DynamicBucketIndexMaintainer,
flink.sink.HashBucketAssignerOperator (channel and assigner counts)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from laketide.fs import FileIO
from laketide.index.hash_index import (
    HASH_INDEX,
    Assigned,
    PartitionIndex,
    compute_assigner,
    read_hash_index,
    write_hash_index,
)
from laketide.index.parallel_sort import Later, distinct_sorted
from laketide.meta.binary_row import (
    hash_bytes_by_words,
    hash_rows,
    serialize_binary_row,
)
from laketide.meta.manifest import IndexFileMeta
from laketide.meta.paths import FileStorePathFactory, TablePaths
from laketide.options import CoreOptions
from laketide.schema.table_schema import TableSchema
from laketide.write.bucketing import GroupRows, split_by_partition_and_bucket
from laketide.write.key_codes import present_ids
from laketide.write.routed_pieces import bucket_runs, group_at, partition_runs

__all__ = [
    "ASSIGNED_BUCKET_COLUMN",
    "AssignerLayout",
    "DynamicBucketIndex",
    "HashBucketAssigner",
    "assign_buckets",
    "assigner_layout",
    "dynamic_bucket_mode",
    "partition_hash",
]

# The column routing carries the buckets TableWrite.write(buckets=...) was given (internal: never user data).
ASSIGNED_BUCKET_COLUMN = "__laketide_bucket"


def dynamic_bucket_mode(schema: TableSchema) -> str | None:
    """``"hash"`` (HASH_DYNAMIC), ``"cross-partition"`` (KEY_DYNAMIC) or None (not a dynamic-bucket PK table)."""
    if not schema.primary_keys or schema.core_options.bucket != -1:
        return None
    if schema.partition_keys and not set(schema.partition_keys) <= set(schema.primary_keys):
        return "cross-partition"
    return "hash"


@dataclass(frozen=True, slots=True)
class AssignerLayout:
    """How keys spread over assigners: ``num_channels`` tasks, ``num_assigners`` bucket owners."""

    num_channels: int
    num_assigners: int


def assigner_layout(options: CoreOptions, *, parallelism: int | None = None) -> AssignerLayout:
    """Channels = ``dynamic-bucket.assigner-parallelism`` (else ``parallelism``, else initial-buckets, else 1);
    assigners = min(initial-buckets, channels) when initial-buckets is set (as Flink's assigner operator)."""
    initial = options.dynamic_bucket_initial_buckets
    channels = options.dynamic_bucket_assigner_parallelism or parallelism or initial or 1
    channels = max(channels, 1)
    assigners = min(initial, channels) if initial else channels
    return AssignerLayout(num_channels=channels, num_assigners=assigners)


def max_buckets(options: CoreOptions) -> int:
    return options.dynamic_bucket_max_buckets


def partition_hash(partition: bytes) -> int:
    """``BinaryRow.hashCode()`` of a partition given as manifest bytes (4-byte arity prefix + row)."""
    return hash_bytes_by_words(partition[4:])


@dataclass(slots=True)
class DynamicBucketIndex:
    """The hash index files a writer builds on: the base snapshot's HASH entries, then the files it prepared.

    Also the index maintainer of every bucket the writer touched: new hashes wait here until ``prepare_commit``
    writes each bucket's file (previous hashes + new ones).
    """

    file_io: FileIO
    table_path: str
    files: dict[tuple[bytes, int], IndexFileMeta]  # (partition, bucket) -> its current HASH index file
    # Where index files live (``index-file-in-data-file-dir`` puts them in the bucket directory); None: index/.
    path_factory: FileStorePathFactory | None = None
    paths: TablePaths = field(init=False)
    # (partition, bucket) -> the hashes notified since the last prepare_commit, each array flagged True when it
    # is already sorted and distinct and holds only hashes the bucket did not have (``notify_new``)
    # (or, flagged True too, the distinct hashes of a batch still being sorted: ``notify_later``)
    _new: dict[tuple[bytes, int], list[tuple[np.ndarray | Later[np.ndarray], bool]]] = field(default_factory=dict)
    _by_partition: dict[bytes, list[int]] = field(init=False)
    generation: int = 0  # bumped by abort(): assigners built on this index drop what they remembered

    def __post_init__(self) -> None:
        self.paths = TablePaths(self.table_path)
        self._by_partition = {}
        for part, bucket in self.files:
            self._by_partition.setdefault(part, []).append(bucket)

    @classmethod
    def latest(cls, *, file_io: FileIO, table_path: str, schema: TableSchema) -> DynamicBucketIndex:
        """The HASH entries of the table's latest snapshot."""
        from laketide.meta.snapshot_manager import SnapshotManager
        from laketide.scan.file_scan import FileStoreScan
        from laketide.schema.schema_manager import SchemaManager

        latest = SnapshotManager(file_io, table_path).latest_snapshot()
        files: dict[tuple[bytes, int], IndexFileMeta] = {}
        if latest is not None:
            scan = FileStoreScan(file_io=file_io, table_path=table_path,
                                 schema_manager=SchemaManager(file_io, table_path), schema=schema)
            for e in scan.index_entries(latest):
                if e.index_file.index_type == HASH_INDEX:
                    files[(e.partition, e.bucket)] = e.index_file
        path_factory = FileStorePathFactory.from_options(
            table_path, partition_keys=schema.partition_keys,
            partition_types=[f.type for f in schema.partition_fields], options=schema.core_options)
        return cls(file_io=file_io, table_path=table_path, files=files, path_factory=path_factory)

    def path(self, key: tuple[bytes, int], meta: IndexFileMeta) -> str:
        if self.path_factory is not None:
            return self.path_factory.bucket_index_file_path(key[0], key[1], meta.file_name, meta.external_path)
        return meta.external_path or f"{self.paths.index_dir}/{meta.file_name}"

    def _new_file_dir(self, key: tuple[bytes, int]) -> str:
        if self.path_factory is not None:
            return self.path_factory.bucket_index_dir(key[0], key[1])
        return self.paths.index_dir

    def partition_files(self, partition: bytes) -> list[tuple[int, np.ndarray]]:
        """(bucket, hashes) of every current hash index file of ``partition``."""
        return [(b, read_hash_index(self.file_io, self.path((partition, b), self.files[(partition, b)])))
                for b in sorted(self._by_partition.get(partition, ()))]

    def notify(self, partition: bytes, bucket: int, hashes: np.ndarray) -> None:
        """Key hashes written to a bucket (Paimon: DynamicBucketIndexMaintainer.notifyNewRecord)."""
        self._new.setdefault((partition, bucket), []).append((np.asarray(hashes, dtype=np.int32), False))

    def notify_new(self, partition: bytes, hashes: np.ndarray, buckets: np.ndarray,
                   by_bucket: Sequence[tuple[int, np.ndarray]] | None = None) -> None:
        """Hashes the assigner met for the first time (sorted, distinct; ``buckets`` aligned): only these change
        the index files, and they need no sort at ``prepare_commit``. ``by_bucket``: the same hashes already
        split by bucket (each part sorted), taken as they are."""
        if len(hashes) == 0:
            return
        if by_bucket is not None:
            for bucket, part in by_bucket:
                self._new.setdefault((partition, bucket), []).append((part, True))
            return
        for bucket, idx in _runs_by_bucket(buckets):
            part = hashes if idx is None else hashes[idx]
            self._new.setdefault((partition, bucket), []).append((part, True))

    def notify_later(self, partition: bytes, bucket: int, hashes: Later[np.ndarray]) -> None:
        """A batch's hashes new to ``bucket``, still being sorted (``notify_new`` once ``prepare_commit`` has
        them)."""
        self._new.setdefault((partition, bucket), []).append((hashes, True))

    def notify_assigned(self, partition: bytes, got: Assigned) -> None:
        """What an assigner met for the first time (``PartitionIndex.assign_new``), in whichever form it has it:
        split by bucket, still being sorted, or with each hash's bucket (only then asked for: it may not be
        worked out yet)."""
        for bucket, later in got.later:
            self.notify_later(partition, bucket, later)
        if got.by_bucket is not None:
            self.notify_new(partition, got.new_hashes, _NO_BUCKETS, got.by_bucket)
        elif len(got.new_hashes):
            self.notify_new(partition, got.new_hashes, got.new_buckets)

    def prepare_commit(self) -> dict[tuple[bytes, int], tuple[IndexFileMeta, IndexFileMeta | None]]:
        """Write a new index file for every bucket that gained hashes: (new file, the file it replaces). Large
        files are written on all cores; if one fails, the others written now are deleted and nothing changes."""
        keys = list(self._new)
        names = [self.paths.new_index_file_name() for _ in keys]
        large = sum(len(p) if isinstance(p, np.ndarray) else _PARALLEL_FILE_HASHES
                    for parts in self._new.values() for p, _ in parts)
        workers = min(len(keys), os.cpu_count() or 1)
        if workers > 1 and large >= _PARALLEL_FILE_HASHES:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="laketide-index-file") as pool:
                futures = [pool.submit(self._bucket_file, key, name) for key, name in zip(keys, names)]
            errors = [f.exception() for f in futures]
            results = [None if e is not None else f.result() for f, e in zip(futures, errors)]
        else:
            results, errors = [], []
            for key, name in zip(keys, names):
                try:
                    results.append(self._bucket_file(key, name))
                    errors.append(None)
                except BaseException as e:  # noqa: BLE001 - raised below, after the cleanup
                    results.append(None)
                    errors.append(e)
                    break
        failed = next((e for e in errors if e is not None), None)
        if failed is not None:
            for key, name in zip(keys, names):  # the failed one too: its write may have taken effect
                self.file_io.delete_quietly(f"{self._new_file_dir(key)}/{name}")
            raise failed
        out: dict[tuple[bytes, int], tuple[IndexFileMeta, IndexFileMeta | None]] = {}
        for key, got in zip(keys, results):
            if got is None:
                continue  # no new key in this bucket: the previous file stays (Java's `modified` flag)
            out[key] = got
            if key not in self.files:
                self._by_partition.setdefault(key[0], []).append(key[1])
            self.files[key] = got[0]
        self._new.clear()
        return out

    def _bucket_file(self, key: tuple[bytes, int], name: str) -> tuple[IndexFileMeta, IndexFileMeta | None] | None:
        """The new index file of one bucket (previous hashes + new ones), written as ``name``; None when the bucket
        gained no hash its file lacks."""
        previous = self.files.get(key)
        new = _distinct_sorted(self._new[key])
        if previous is None:
            merged = new
        else:
            old = read_hash_index(self.file_io, self.path(key, previous))
            if len(old) > 1 and not bool((old[1:] > old[:-1]).all()):
                old = distinct_sorted(old)  # not written by laketide: Java's files are in hash-set order
            pos = np.minimum(np.searchsorted(old, new), max(len(old) - 1, 0))
            fresh = new[old[pos] != new] if len(old) else new
            if len(fresh) == 0:
                return None
            merged = np.insert(old, np.searchsorted(old, fresh), fresh)
        return write_hash_index(self.file_io, self._new_file_dir(key), name, merged), previous

    def abort(self) -> None:
        self._new.clear()
        self.generation += 1


_NO_BUCKETS = np.zeros(0, np.int16)
# Index files of this many hashes in all (a still-sorting batch counts as this many) are written on all cores.
_PARALLEL_FILE_HASHES = 1 << 18


def _distinct_sorted(parts: list[tuple[np.ndarray | Later[np.ndarray], bool]]) -> np.ndarray:
    """The distinct hashes of ``parts``, sorted; one part from ``notify_new`` / ``notify_later`` already is."""
    arrays = [hashes.result() if isinstance(hashes, Later) else hashes for hashes, _ in parts]
    if len(parts) == 1 and parts[0][1]:
        return arrays[0]
    return distinct_sorted(np.concatenate(arrays))


def _runs_by_bucket(buckets: np.ndarray) -> Iterator[tuple[int, np.ndarray | None]]:
    """(bucket, positions) of each bucket in ``buckets``, positions ascending (None: every position)."""
    first = int(buckets[0])
    if bool((buckets == first).all()):
        yield first, None
        return
    order = np.argsort(buckets.astype(np.int16), kind="stable")  # int16: a radix sort, order kept per bucket
    sorted_b = buckets[order]
    bounds = (np.flatnonzero(np.diff(sorted_b)) + 1).tolist()
    for s, e in zip([0, *bounds], [*bounds, len(order)]):
        yield int(sorted_b[s]), order[s:e]


@dataclass(slots=True)
class HashBucketAssigner:
    """The assigners of one writer: ``assign_ids`` of ``layout`` (all of them in plain Python, one in a Spark task).

    Paimon: index.HashBucketAssigner (one per assign id), with the loads of a partition shared between them.
    """

    index: DynamicBucketIndex
    layout: AssignerLayout
    target_row_num: int
    max_buckets: int = -1
    assign_ids: tuple[int, ...] | None = None  # None: every assigner id (in-process sharding)
    seed: int | None = None
    _partitions: dict[bytes, dict[int, PartitionIndex]] = field(default_factory=dict)
    _rng: np.random.Generator = field(init=False)
    loads: int = 0  # partition loads so far (evicted partitions load again)
    _generation: int = field(init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)
        self._generation = self.index.generation

    @property
    def ids(self) -> tuple[int, ...]:
        return self.assign_ids if self.assign_ids is not None else tuple(range(self.layout.num_channels))

    def _owned(self, assign_id: int) -> int:
        return assign_id % self.layout.num_assigners

    def _load(self, partition: bytes, p_hash: int) -> dict[int, PartitionIndex]:
        files = self.index.partition_files(partition)
        self.loads += 1
        lay = self.layout
        out: dict[int, PartitionIndex] = {}
        for aid in self.ids:
            def keep(h: np.ndarray, aid: int = aid) -> np.ndarray:
                mine: np.ndarray = compute_assigner(p_hash, h, num_channels=lay.num_channels,
                                                    num_assigners=lay.num_assigners) == aid
                return mine

            out[aid] = PartitionIndex.load(
                files, target_row_num=self.target_row_num, keep_hash=keep if lay.num_channels > 1 else None,
                my_bucket=_owner_filter(lay.num_assigners, self._owned(aid)),
            )
        return out

    def assign(self, partition: bytes, key_hashes: np.ndarray) -> np.ndarray:
        """Bucket of every key of one partition, in order (vectorized per assigner)."""
        return self.assign_new(partition, key_hashes)[0]

    def assign_new(self, partition: bytes, key_hashes: np.ndarray) -> tuple[np.ndarray, list[Assigned]]:
        """``assign``, and per assigner the hashes met for the first time with their buckets (sorted, distinct;
        the assigners' hash sets are disjoint)."""
        if self._generation != self.index.generation:  # the index dropped what it was told: forget it too
            self._partitions.clear()
            self._generation = self.index.generation
        p_hash = partition_hash(partition)
        indexes = self._partitions.get(partition)
        if indexes is None:
            indexes = self._partitions[partition] = self._load(partition, p_hash)
        lay = self.layout
        if lay.num_channels == 1:  # one assigner takes every key
            return self._assign_one(indexes, 0, key_hashes)
        who = compute_assigner(p_hash, key_hashes, num_channels=lay.num_channels, num_assigners=lay.num_assigners)
        out = np.empty(len(key_hashes), dtype=np.int32)
        fresh: list[Assigned] = []
        for aid in present_ids(who, lay.num_channels).tolist():
            mask = who == aid
            buckets, new = self._assign_one(indexes, aid, key_hashes[mask])
            out[mask] = buckets
            fresh += new
        return out, fresh

    def _assign_one(self, indexes: dict[int, PartitionIndex], aid: int,
                    key_hashes: np.ndarray) -> tuple[np.ndarray, list[Assigned]]:
        index = indexes.get(aid)
        if index is None:
            raise ValueError(f"keys of assigner {aid} reached a writer that only assigns {self.ids}")
        got = index.assign_new(key_hashes, my_bucket=_owner_filter(self.layout.num_assigners, self._owned(aid)),
                               max_buckets=self.max_buckets, rng=self._rng)
        return got.buckets, [got]

    def prepare_commit(self) -> None:
        """Drop the partitions not touched since the last call (they reload from the index files on demand)."""
        for part in list(self._partitions):
            indexes = self._partitions[part]
            if not any(ix.accessed for ix in indexes.values()):
                del self._partitions[part]
                continue
            for ix in indexes.values():
                ix.accessed = False

    @property
    def cached_partitions(self) -> list[bytes]:
        return list(self._partitions)

    @property
    def nbytes(self) -> int:
        return sum(ix.nbytes for indexes in self._partitions.values() for ix in indexes.values())


def _owner_filter(num_assigners: int, owned: int) -> Callable[[int], bool]:
    def mine(bucket: int) -> bool:
        return bucket % num_assigners == owned

    return mine


def plan_dynamic(
    table: pa.Table,
    *,
    schema: TableSchema,
    partition_types: Sequence[object],
    index: DynamicBucketIndex | None,
    assigner: HashBucketAssigner | None,
    assigned: np.ndarray | None = None,
) -> Iterator[GroupRows]:
    """Split rows by partition, assign buckets (or take ``assigned``), record key hashes in ``index`` (None:
    cross-partition mode, which keeps no hash index): the bucket groups, not copied yet (a partition's buckets are
    assigned when its first group is asked for)."""
    keys = schema.trimmed_primary_keys
    key_types = [schema.field(k).type for k in keys]
    # hashed once over the input (in cache-sized chunks), then indexed per partition
    hashes = hash_rows(table, keys, key_types) if index is not None or assigned is None else None
    for values, positions in partition_runs(table, schema.partition_keys):
        part = serialize_binary_row(list(values), partition_types)  # type: ignore[arg-type]
        part_hashes = None if hashes is None else hashes if positions is None else hashes[positions]
        notify_rows = index is not None
        if assigned is not None:
            buckets = np.asarray(assigned if positions is None else assigned[positions], dtype=np.int32)
        else:
            assert assigner is not None and part_hashes is not None
            buckets, fresh = assigner.assign_new(part, part_hashes)
            if index is not None and assigner.index is index:
                # The assigner knows which hashes are new to their bucket, already sorted: the index files
                # change by exactly these (a known hash is in its bucket's file or pending there already).
                for got in fresh:
                    index.notify_assigned(part, got)
                notify_rows = False
        for bucket, idx in bucket_runs(buckets):
            if notify_rows and index is not None and part_hashes is not None:
                index.notify(part, bucket, part_hashes if idx is None else part_hashes[idx])
            rows_at = positions if idx is None else idx if positions is None else positions[idx]
            yield group_at(values, bucket, table, rows_at)


def assign_buckets(table: pa.Table, *, schema: TableSchema, assigner: HashBucketAssigner) -> np.ndarray:
    """The bucket of every row, in row order (Spark's assigner stage: rows go on to the writers with it)."""
    out = np.empty(table.num_rows, dtype=np.int32)
    if table.num_rows == 0:
        return out
    keys = schema.trimmed_primary_keys
    hashes = hash_rows(table, keys, [schema.field(k).type for k in keys])
    part_types = [f.type for f in schema.partition_fields]
    if not schema.partition_keys:
        out[:] = assigner.assign(serialize_binary_row([], []), hashes)
        return out
    indexed = table.select(list(schema.partition_keys)).append_column("__row", pa.array(np.arange(table.num_rows)))
    for group in split_by_partition_and_bucket(indexed, partition_keys=schema.partition_keys, bucket_keys=[],
                                               bucket_key_types=[], num_buckets=0):
        rows = np.asarray(group.rows.column("__row").to_numpy())
        part = serialize_binary_row(list(group.partition), part_types)
        out[rows] = assigner.assign(part, hashes[rows])
    return out
