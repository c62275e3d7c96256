"""Dynamic-bucket hash index: the key hashes of one (partition, bucket), and the per-partition hash -> bucket map.

A hash index file is nothing but the bucket's key hashes (``BinaryRow.hashCode()`` of the trimmed primary key)
as big-endian int32, one file per (partition, bucket), named ``index-<uuid>-<n>`` under ``<table>/index``. Each
commit that touches a bucket writes the bucket's whole hash set again and the index manifest keeps only the
newest file of each (partition, bucket).

``PartitionIndex`` is the assigner's memory: sorted int32 hashes with an int16 bucket beside each (6 bytes a key,
Paimon's ``Int2ShortHashMap`` takes ~10), plus the row count of every bucket it may still fill. Assignment runs
over whole arrays: known hashes by binary search, new ones poured into non-full buckets, then new buckets.

Paimon: index.HashIndexFile, utils.IntFileUtils, index.PartitionIndex, index.BucketAssigner
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from laketide.exceptions import CorruptMetadataError, LaketideError
from laketide.fs import FileIO
from laketide.meta.manifest import IndexFileMeta
from laketide.index.split_search import merge_by_halves, merge_first_kept, search_by_halves
from laketide.index.parallel_sort import Later, distinct_sorted_later, positions_bucket, sort_each
from laketide.meta.stable_sort import stable_argsort

__all__ = [
    "HASH_INDEX",
    "Assigned",
    "MAX_DYNAMIC_BUCKETS",
    "BucketCapacityError",
    "PartitionIndex",
    "compute_assigner",
    "decode_hashes",
    "encode_hashes",
    "is_my_bucket",
    "read_hash_index",
    "write_hash_index",
]

HASH_INDEX = "HASH"
# Buckets are stored as Java shorts: ids 0 .. Short.MAX_VALUE - 1 when unbounded.
MAX_DYNAMIC_BUCKETS = 32767
_BIG_ENDIAN_INT32 = np.dtype(">i4")


class BucketCapacityError(LaketideError):
    """Every bucket id an assigner may use is taken: raise dynamic-bucket.target-row-num."""


def encode_hashes(hashes: np.ndarray) -> bytes:
    """The file body: each hash as a big-endian int32 (Paimon: IntFileUtils.writeInts)."""
    return np.ascontiguousarray(hashes, dtype=np.int32).astype(_BIG_ENDIAN_INT32).tobytes()


def decode_hashes(data: bytes, *, path: str = "<bytes>") -> np.ndarray:
    if len(data) % 4:
        raise CorruptMetadataError(f"Hash index {path} is {len(data)} bytes, not a multiple of 4", path=path)
    return np.frombuffer(data, dtype=_BIG_ENDIAN_INT32).astype(np.int32)


def read_hash_index(file_io: FileIO, path: str) -> np.ndarray:
    """The int32 hashes of one hash index file."""
    return decode_hashes(file_io.read_bytes(path), path=path)


def write_hash_index(file_io: FileIO, index_dir: str, file_name: str, hashes: np.ndarray) -> IndexFileMeta:
    """Write ``hashes`` as ``<index_dir>/<file_name>``; the meta the index manifest records."""
    body = encode_hashes(hashes)
    file_io.write_bytes(f"{index_dir}/{file_name}", body)
    return IndexFileMeta(index_type=HASH_INDEX, file_name=file_name, file_size=len(body), row_count=len(body) // 4)


def _java_abs_mod(values: np.ndarray, n: int) -> np.ndarray:
    """Java's ``Math.abs(v % n)`` over int32 values (truncated remainder)."""
    return np.abs(np.fmod(np.asarray(values, dtype=np.int64), n))


def compute_assigner(partition_hash: int | np.ndarray, key_hashes: np.ndarray, *, num_channels: int,
                     num_assigners: int) -> np.ndarray:
    """The assigner of each key (Paimon: BucketAssigner.computeAssigner), vectorized.

    The partition hash offsets the first channel so partitions spread over channels; a key's assigner then only
    depends on its hash, so one key always reaches the same assigner.
    """
    start = _java_abs_mod(np.asarray(partition_hash), num_channels)
    out: np.ndarray = (start + _java_abs_mod(key_hashes, num_assigners)) % num_channels
    return out.astype(np.int32)


def is_my_bucket(bucket: int, *, num_assigners: int, assign_id: int) -> bool:
    """Assigners own disjoint bucket ids: bucket % n == id % n (Paimon: BucketAssigner.isMyBucket)."""
    return bucket % num_assigners == assign_id % num_assigners


# From this many query hashes on, sorting them first pays off (binary searches in order stay in cache).
_SORTED_SEARCH_MIN = 4096


def _search(sorted_values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """np.searchsorted, with large query sets sorted first: binary searches in order stay in cache (~5x)."""
    if len(queries) < _SORTED_SEARCH_MIN:
        return np.searchsorted(sorted_values, queries)
    order = stable_argsort(queries)
    out = np.empty(len(queries), dtype=np.intp)
    out[order] = np.searchsorted(sorted_values, queries[order])
    return out


def _insert_sorted(hashes: np.ndarray, buckets: np.ndarray, at: np.ndarray, new_hashes: np.ndarray,
                   new_buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.insert`` of ``new_hashes`` / ``new_buckets`` before positions ``at`` (ascending) of both arrays,
    sharing one placement between them."""
    total = len(hashes) + len(at)
    dest = at + np.arange(len(at))  # where each new entry lands
    old = np.ones(total, dtype=bool)
    old[dest] = False
    out_h = np.empty(total, dtype=hashes.dtype)
    out_h[old] = hashes
    out_h[dest] = new_hashes
    out_b = np.empty(total, dtype=buckets.dtype)
    out_b[old] = buckets
    out_b[dest] = new_buckets
    return out_h, out_b


# From this many rows on, a first batch into one bucket has its hashes sorted in the background (a thread's start
# costs ~0.1 ms; sorting 64k hashes ~2 ms).
_LATER_MIN = 1 << 16


# From this many hashes on, a batch is looked up on two cores (index/split_search.py).
_SPLIT_MIN = 1 << 18


# Sorted queries at least 1/8 of the sorted values: one merge of the two runs beats a binary search per query.
_MERGE_MIN_SHARE = 8


def _sorted_search(sorted_values: np.ndarray, sorted_queries: np.ndarray) -> np.ndarray:
    """``np.searchsorted(sorted_values, sorted_queries)`` (left) when both are sorted: for many queries, by one
    stable merge (queries first, so a query precedes the values equal to it: the values before it are those
    below it)."""
    m = len(sorted_queries)
    if m * _MERGE_MIN_SHARE < len(sorted_values):
        return np.searchsorted(sorted_values, sorted_queries)
    order = np.argsort(np.concatenate([sorted_queries, sorted_values]), kind="stable")  # timsort: two runs
    out: np.ndarray = np.flatnonzero(order < m) - np.arange(m)
    return out


_NO_HASHES = np.zeros(0, np.int32)
_NO_BUCKETS = np.zeros(0, np.int16)


def _uniform(values: np.ndarray) -> bool:
    return len(values) == 0 or bool((values == values[0]).all())


@dataclass(frozen=True, slots=True)
class Assigned:
    """What ``PartitionIndex.assign_new`` decided: ``buckets`` of every row (arrival order), and the hashes met
    for the first time, sorted and distinct, with their buckets aligned (``new_buckets``, int16)."""

    buckets: np.ndarray
    new_hashes: np.ndarray
    _new_buckets: np.ndarray | Later[np.ndarray]  # (or still being worked out, when ``by_bucket`` is given)
    # the same new hashes split by bucket, each part sorted, when that came for free (else None)
    by_bucket: tuple[tuple[int, np.ndarray], ...] | None = None
    # new hashes still being sorted (then ``new_hashes`` is empty): per bucket, its distinct new hashes
    later: tuple[tuple[int, Later[np.ndarray]], ...] = ()

    @property
    def new_buckets(self) -> np.ndarray:
        b = self._new_buckets
        return b.result() if isinstance(b, Later) else b


@dataclass(frozen=True, slots=True)
class _Pending:
    """A first batch whose index state is still being worked out on a background thread."""

    hashes: np.ndarray | Later[np.ndarray]  # its distinct hashes, sorted
    buckets: int | Later[np.ndarray]  # the one bucket of every row, or the bucket of each of ``hashes``
    counted: int = 0  # one bucket: the rows _place counted (a repeated hash takes one place)


@dataclass(frozen=True, slots=True)
class _Known:
    buckets: np.ndarray  # int32, -1 where unknown
    sorted_new: np.ndarray | None  # the unknown hashes sorted (None: every hash is known)
    rank: np.ndarray | None  # arrival rank (among the unknown rows) of each sorted_new entry; None: not computed
    insert_at: np.ndarray | None = None  # each sorted_new entry's insertion point in the index (None: not known)


@dataclass(slots=True)
class PartitionIndex:
    """hash -> bucket of one partition, as one assigner sees it (Paimon: index.PartitionIndex)."""

    target_row_num: int
    _hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # sorted, unique
    _buckets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))  # aligned with hashes
    # bucket -> rows, for buckets this assigner may fill, ascending ids (Java's HashMap order for small ints)
    _non_full: dict[int, int] = field(default_factory=dict)
    all_buckets: list[int] = field(default_factory=list)  # every bucket this assigner owns, in creation order
    upper_bound_reached: bool = False
    accessed: bool = True
    # A first batch that went to one bucket, its hashes still being sorted (joined in at the next use).
    _pending: _Pending | None = None

    @classmethod
    def load(
        cls,
        files: Iterable[tuple[int, np.ndarray]],
        *,
        target_row_num: int,
        keep_hash: Callable[[np.ndarray], np.ndarray] | None = None,
        my_bucket: Callable[[int], bool] = lambda b: True,
    ) -> PartitionIndex:
        """Build from the (bucket, hashes) of a partition's index files.

        ``keep_hash`` keeps the hashes of this assigner (the others belong to other assigners); every hash of a
        bucket this assigner owns counts toward that bucket's fill, as in Java's loadIndex.
        """
        hs: list[np.ndarray] = []
        bs: list[np.ndarray] = []
        kept_files: list[tuple[int, np.ndarray]] = []
        counts: dict[int, int] = {}
        for bucket, hashes in files:
            if my_bucket(bucket):
                counts[bucket] = counts.get(bucket, 0) + len(hashes)
            kept = hashes if keep_hash is None else hashes[keep_hash(hashes)]
            hs.append(kept)
            bs.append(np.full(len(kept), bucket, dtype=np.int16))
            kept_files.append((bucket, kept))
        index = cls(target_row_num=target_row_num)
        if (len(kept_files) > 1 and sum(len(h) for h in hs) >= _SPLIT_MIN and (os.cpu_count() or 1) > 1
                and all(len(h) < 2 or bool((h[1:] > h[:-1]).all()) for h in hs)):
            # laketide's files, each sorted: merged by halves on two cores (index/split_search.py)
            index.hashes, index.buckets = merge_by_halves(kept_files)
        elif hs:
            all_h = np.concatenate(hs)
            all_b = np.concatenate(bs)
            if len(all_h) < 2 or bool((all_h[1:] > all_h[:-1]).all()):
                # laketide writes each file sorted: one file (or files in hash order) needs no sort
                index.hashes, index.buckets = all_h.astype(np.int32, copy=False), all_b
            else:
                # Each of laketide's files is sorted: a stable sort merges the runs (timsort, ~10x a full sort)
                # and puts the first file's copy of a hash two files hold first, the one kept (as np.unique's
                # first index did); Java's files, in hash-set order, take the same path.
                index.hashes, index.buckets = merge_first_kept(all_h.astype(np.int32, copy=False), all_b)
        ordered = sorted(counts)
        index.non_full = {b: counts[b] for b in ordered}
        index.all_buckets = list(ordered)
        return index

    @property
    def hashes(self) -> np.ndarray:
        """The known hashes, sorted and distinct."""
        self._settle()
        return self._hashes

    @hashes.setter
    def hashes(self, values: np.ndarray) -> None:
        self._hashes = values

    @property
    def buckets(self) -> np.ndarray:
        """The bucket of each of ``hashes`` (int16)."""
        self._settle()
        return self._buckets

    @buckets.setter
    def buckets(self, values: np.ndarray) -> None:
        self._buckets = values

    @property
    def non_full(self) -> dict[int, int]:
        """Bucket -> rows, for the buckets this assigner may still fill (ascending ids)."""
        self._settle()
        return self._non_full

    @non_full.setter
    def non_full(self, values: dict[int, int]) -> None:
        self._non_full = values

    def _settle(self) -> None:
        """Join a first batch worked out in the background into the index."""
        pending = self._pending
        if pending is None:
            return
        # (a failure raises here and leaves the batch pending: the index never looks settled without it)
        hashes = pending.hashes.result() if isinstance(pending.hashes, Later) else pending.hashes
        if isinstance(pending.buckets, Later):
            buckets = pending.buckets.result()
        else:
            buckets = np.full(len(hashes), pending.buckets, dtype=np.int16)
            # _place counted every row of the batch; a repeated hash takes one place in its bucket
            self._non_full[pending.buckets] -= pending.counted - len(hashes)
        self._pending = None
        self._hashes, self._buckets = hashes, buckets

    def __len__(self) -> int:
        return len(self.hashes)

    @property
    def nbytes(self) -> int:
        return int(self.hashes.nbytes + self.buckets.nbytes)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of each hash, -1 where unknown."""
        out = np.full(len(hashes), -1, dtype=np.int32)
        if len(self.hashes) == 0 or len(hashes) == 0:
            return out
        pos = _search(self.hashes, hashes)
        pos_c = np.minimum(pos, len(self.hashes) - 1)
        hit = self.hashes[pos_c] == hashes
        out[hit] = self.buckets[pos_c[hit]]
        return out

    def assign(
        self,
        hashes: np.ndarray,
        *,
        my_bucket: Callable[[int], bool] = lambda b: True,
        max_buckets: int = -1,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """Bucket of every hash, in arrival order; new hashes are remembered (Paimon: PartitionIndex.assign).

        1. a known hash keeps its bucket; 2. a new one fills the first non-full bucket; 3. then a new bucket id
        (the smallest free one this assigner owns, below ``max_buckets``); 4. past that bound, a random bucket.
        """
        return self.assign_new(hashes, my_bucket=my_bucket, max_buckets=max_buckets, rng=rng).buckets

    def assign_new(
        self,
        hashes: np.ndarray,
        *,
        my_bucket: Callable[[int], bool] = lambda b: True,
        max_buckets: int = -1,
        rng: np.random.Generator | None = None,
    ) -> Assigned:
        """``assign``, also handing over the hashes it met for the first time (sorted, distinct) with their
        buckets: what the bucket index files gain, without sorting them again."""
        self.accessed = True
        hashes = np.asarray(hashes, dtype=np.int32)
        if len(self.hashes) == 0 and len(hashes) >= _LATER_MIN and max_buckets == -1:
            later = self._assign_one_bucket_later(hashes, my_bucket=my_bucket)
            if later is not None:
                return later
        if (len(self.hashes) == 0 and len(hashes) >= _SORTED_SEARCH_MIN and max_buckets == -1
                and not self._fits_one_bucket(len(hashes))):
            got = self._assign_distinct_into_empty(hashes, my_bucket=my_bucket)
            if got is not None:
                return got
        found = self._known(hashes)
        out = found.buckets
        if found.sorted_new is None:
            return Assigned(out, _NO_HASHES, _NO_BUCKETS)
        sorted_h, rank, insert_at = found.sorted_new, found.rank, found.insert_at
        unknown = out < 0
        starts = np.ones(len(sorted_h), dtype=bool)
        np.not_equal(sorted_h[1:], sorted_h[:-1], out=starts[1:])
        if starts.all():  # every new hash once (the usual case): the rows are the arrival order
            given = self._place(len(sorted_h), my_bucket=my_bucket, max_buckets=max_buckets, rng=rng)
            out[unknown] = given
            new_h = sorted_h
            if rank is None and _uniform(given):  # one bucket for all: no arrival rank needed
                bucket_of_new = np.full(len(given), given[0], dtype=np.int16)
            else:
                if rank is None:  # the one-bucket guess was wrong (no room for all): rank the new hashes
                    rank = stable_argsort(hashes[unknown])
                bucket_of_new = given[rank]
        else:
            assert rank is not None  # duplicates always come with their arrival ranks (see _known)
            group = np.cumsum(starts) - 1  # distinct hash of each sorted position
            first_rank = rank[starts]
            # groups in arrival order, by scattering over the ranks (no second sort)
            group_of_rank = np.full(len(sorted_h), -1, dtype=np.int64)
            group_of_rank[first_rank] = np.arange(len(first_rank))
            arrival = group_of_rank[group_of_rank >= 0]
            given = self._place(len(first_rank), my_bucket=my_bucket, max_buckets=max_buckets, rng=rng)
            bucket_of_new = np.empty(len(first_rank), dtype=np.int16)
            bucket_of_new[arrival] = given
            placed = np.empty(len(sorted_h), dtype=np.int32)
            placed[rank] = bucket_of_new[group]
            out[unknown] = placed
            new_h = sorted_h[starts]
            if insert_at is not None:
                insert_at = insert_at[starts]
        if len(self.hashes) == 0:
            self.hashes, self.buckets = new_h, bucket_of_new
        else:  # both sorted: merge in one pass
            pos = np.searchsorted(self.hashes, new_h) if insert_at is None else insert_at
            self.hashes, self.buckets = _insert_sorted(self.hashes, self.buckets, pos, new_h, bucket_of_new)
        return Assigned(out, new_h, bucket_of_new)

    def _assign_one_bucket_later(self, hashes: np.ndarray, *, my_bucket: Callable[[int], bool]) -> Assigned | None:
        """A large first batch of a partition that fits one bucket (else None, nothing changed): every row goes to
        that bucket, a repeated hash too (its first arrival went there). The distinct hashes - the bucket's index
        file and this index's next state - are sorted on a background thread while the rows are written."""
        if not self._fits_one_bucket(len(hashes)):
            return None
        saved = (dict(self.non_full), list(self.all_buckets), self.upper_bound_reached)
        given = self._place(len(hashes), my_bucket=my_bucket, max_buckets=-1, rng=None)  # counts every row
        if not _uniform(given):  # the guess was wrong: leave it to the general path
            self.non_full, self.all_buckets, self.upper_bound_reached = saved
            return None
        bucket = int(given[0])
        distinct = distinct_sorted_later(hashes)
        self._pending = _Pending(distinct, bucket, counted=len(hashes))
        return Assigned(np.full(len(hashes), bucket, dtype=np.int32), _NO_HASHES, _NO_BUCKETS,
                        later=((bucket, distinct),))

    def _assign_distinct_into_empty(self, hashes: np.ndarray, *,
                                    my_bucket: Callable[[int], bool]) -> Assigned | None:
        """A large first batch of a partition spread over several buckets, when its hashes are distinct (else
        None, nothing changed): each bucket's share is one run of arrival order, so sorting each run on its own
        (on all cores) and merging the sorted runs (timsort, values only) gives the sorted hashes, ~2x cheaper than
        one sort of (hash, arrival rank) pairs over the whole batch. Which bucket each merged hash belongs to is
        only needed by a next batch: it is worked out when one comes (a one-shot write has none)."""
        saved = (dict(self.non_full), list(self.all_buckets), self.upper_bound_reached)
        given = self._place(len(hashes), my_bucket=my_bucket, max_buckets=-1, rng=None)  # arrival order
        bounds = (np.flatnonzero(given[1:] != given[:-1]) + 1).tolist()
        starts, ends = [0, *bounds], [*bounds, len(given)]
        sorted_runs = sort_each([hashes[s:e] for s, e in zip(starts, ends)])
        merged = np.sort(np.concatenate(sorted_runs), kind="stable")  # timsort merges the sorted runs
        if bool((merged[1:] == merged[:-1]).any()):  # a hash twice: the general path ranks arrivals
            self.non_full, self.all_buckets, self.upper_bound_reached = saved
            return None
        # each bucket fills one run of arrival order (buckets are filled one after the other)
        by_bucket = tuple((int(given[s]), run) for s, run in zip(starts, sorted_runs))
        buckets = Later(positions_bucket, merged, by_bucket, background=False)
        self._pending = _Pending(merged, buckets)
        return Assigned(given.astype(np.int32), merged, buckets, by_bucket)

    def _known(self, hashes: np.ndarray) -> _Known:
        """Buckets of the known hashes (-1 elsewhere) and the unknown hashes sorted, with the arrival rank (among
        the unknown rows) of each, ties in arrival order.

        One sort serves both the binary searches and the new hashes: a large batch against a non-empty index is
        sorted with its arrival order (the searches run in order, ~5x faster), the unknown part of it is then
        already sorted. Otherwise only the unknown hashes are sorted; when they will all go to one bucket and are
        distinct, a plain sort of the hashes does (no rank: ``rank`` is None).
        """
        n = len(hashes)
        if len(self.hashes) and n >= _SPLIT_MIN and (os.cpu_count() or 1) > 1:
            split = search_by_halves(self.hashes, self.buckets, hashes, sorted_search=_sorted_search)
            if len(split.sorted_new) == 0:
                return _Known(split.buckets, None, None)
            ranks = np.cumsum(split.buckets < 0) - 1  # rank of each unknown row among the unknown rows
            return _Known(split.buckets, split.sorted_new, ranks[split.rows_new], split.insert_at)
        out = np.full(n, -1, dtype=np.int32)
        if len(self.hashes) and n >= _SORTED_SEARCH_MIN:
            order = stable_argsort(hashes)
            sorted_q = hashes[order]
            at = _sorted_search(self.hashes, sorted_q)
            pos = np.minimum(at, len(self.hashes) - 1)
            hit = self.hashes[pos] == sorted_q
            out[order[hit]] = self.buckets[pos[hit]]
            miss = ~hit
            if not miss.any():
                return _Known(out, None, None)
            arrival_rank = np.cumsum(out < 0) - 1  # rank of each unknown row among the unknown rows
            # the searches also told where each unknown hash goes in the index: no second search to insert them
            return _Known(out, sorted_q[miss], arrival_rank[order[miss]], at[miss])
        if len(self.hashes):
            out = self.lookup(hashes)
        unknown = out < 0
        if not unknown.any():
            return _Known(out, None, None)
        new = hashes[unknown]
        if self._fits_one_bucket(len(new)):
            plain = np.sort(new)
            if len(plain) < 2 or bool((plain[1:] != plain[:-1]).all()):
                return _Known(out, plain, None)
        # A stable sort gives the new hashes sorted (for the merge) and, within a hash, its first arrival first:
        # new keys are placed in the order a row loop meets them.
        order = stable_argsort(new)
        return _Known(out, new[order], order)

    def _fits_one_bucket(self, m: int) -> bool:
        """Whether ``m`` new keys would all go to one bucket (a guess: ``assign_new`` checks what it got)."""
        for fill in self.non_full.values():
            room = self.target_row_num - fill
            if room > 0:
                return room >= m
        return self.target_row_num >= m and not self.upper_bound_reached

    def _place(self, m: int, *, my_bucket: Callable[[int], bool], max_buckets: int,
               rng: np.random.Generator | None) -> np.ndarray:
        """Buckets for ``m`` new keys, in arrival order."""
        out = np.empty(m, dtype=np.int16)
        filled = 0
        for bucket in list(self.non_full):
            room = self.target_row_num - self.non_full[bucket]
            if room <= 0:
                del self.non_full[bucket]
                continue
            take = min(room, m - filled)
            out[filled:filled + take] = bucket
            self.non_full[bucket] += take
            filled += take
            if filled == m:
                return out
        global_max = (MAX_DYNAMIC_BUCKETS if max_buckets == -1 else max_buckets) - 1
        taken = set(self.all_buckets)
        candidate = 0
        while filled < m and not self.upper_bound_reached:
            while candidate <= global_max and (candidate in taken or not my_bucket(candidate)):
                candidate += 1
            if candidate > global_max:
                if max_buckets == -1:
                    raise BucketCapacityError(
                        f"All {global_max + 1} dynamic bucket ids are in use; increase "
                        f"dynamic-bucket.target-row-num (now {self.target_row_num})"
                    )
                self.upper_bound_reached = True
                break
            take = min(self.target_row_num, m - filled)
            out[filled:filled + take] = candidate
            self.non_full[candidate] = take
            self.all_buckets.append(candidate)
            taken.add(candidate)
            filled += take
        if filled < m:
            if not self.all_buckets:
                raise BucketCapacityError(
                    "No dynamic bucket id is left for this assigner: lower the assigner parallelism or raise "
                    "dynamic-bucket.max-buckets"
                )
            gen = rng if rng is not None else np.random.default_rng()
            out[filled:] = gen.choice(np.asarray(self.all_buckets, dtype=np.int16), size=m - filled)
        return out
