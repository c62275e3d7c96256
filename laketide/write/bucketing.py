"""Splitting a batch into (partition, bucket) groups, vectorized.

Paimon: table.sink.FixedBucketRowKeyExtractor, RowPartitionKeyExtractor
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.meta.bucket import bucket_ids
from laketide.format.ascending_take import take_ascending
from laketide.types import DataType
from laketide.write.key_codes import count_ids

__all__ = ["Group", "GroupRows", "group_rows", "partition_codes", "split_by_partition_and_bucket"]


@dataclass(frozen=True, slots=True)
class Group:
    partition: tuple[object, ...]  # Python values of the partition columns, in partition-key order
    bucket: int
    rows: pa.Table


class GroupRows:
    """One (partition, bucket) group of a batch, not copied yet: its rows of ``source`` in input order.

    The row numbers are found when first needed (on the thread that copies the rows): either given, or the rows
    whose ``codes`` equal ``code``.
    """

    __slots__ = ("partition", "bucket", "source", "num_rows", "_indices", "_codes", "_code")

    def __init__(self, partition: tuple[object, ...], bucket: int, source: pa.Table, *,
                 indices: np.ndarray | None = None, codes: np.ndarray | None = None, code: int = 0,
                 num_rows: int | None = None) -> None:
        self.partition = partition  # Python values of the partition columns, in partition-key order
        self.bucket = bucket
        self.source = source
        self._indices = indices  # ascending row numbers in ``source``; None (and no codes): every row of it
        self._codes, self._code = codes, code
        if num_rows is None:
            num_rows = source.num_rows if indices is None else len(indices)
        self.num_rows = num_rows

    @property
    def indices(self) -> np.ndarray | None:
        if self._codes is not None:
            self._indices = np.flatnonzero(self._codes == self._code)
            self._codes = None
        return self._indices

    def take(self, start: int = 0, stop: int | None = None) -> pa.Table:
        """The group's rows ``start:stop`` copied out of ``source`` (a zero-copy slice when they are adjacent)."""
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        indices = self.indices
        if indices is None:
            return self.source.slice(start, stop - start)
        idx = indices[start:stop]
        # Ascending and distinct: first..last spans exactly len(idx) rows only when they are adjacent.
        if len(idx) and int(idx[-1]) - int(idx[0]) == len(idx) - 1:
            return self.source.slice(int(idx[0]), len(idx))
        return take_ascending(self.source, idx)


def partition_codes(table: pa.Table, partition_keys: Sequence[str]) -> tuple[list[pa.Array], list[np.ndarray]]:
    """Each partition column dictionary-encoded: its distinct values, and each row's index into them (int64).
    Nulls get their own value (the default partition)."""
    dictionaries: list[pa.Array] = []
    part_codes: list[np.ndarray] = []
    for name in partition_keys:
        encoded = pc.dictionary_encode(table.column(name), null_encoding="encode").combine_chunks()
        dictionaries.append(encoded.dictionary)
        part_codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    return dictionaries, part_codes


# Up to this many groups (and codes that fit a byte), each group finds its own rows with one pass over the codes,
# on the thread that copies them, instead of a stable sort of all codes on the caller's thread.
LAZY_GROUPS_MAX = 16


def group_rows(
    table: pa.Table,
    *,
    partition_keys: Sequence[str],
    bucket_keys: Sequence[str],
    bucket_key_types: Sequence[DataType],
    num_buckets: int,
) -> list[GroupRows]:
    """The (partition, bucket) groups of ``table`` (hash and grouping only: rows are copied by ``take``), in
    order of their first code; ``num_buckets`` <= 0 puts every row in bucket 0."""
    return _plan(table, partition_keys=partition_keys, bucket_keys=bucket_keys, bucket_key_types=bucket_key_types,
                 num_buckets=num_buckets, lazy=True)[0]


def _plan(
    table: pa.Table,
    *,
    partition_keys: Sequence[str],
    bucket_keys: Sequence[str],
    bucket_key_types: Sequence[DataType],
    num_buckets: int,
    lazy: bool = False,
) -> tuple[list[GroupRows], np.ndarray | None]:
    """The groups, and the row order that lists them one after the other (None: a single group, in input order,
    or ``lazy`` groups that find their own rows)."""
    n = table.num_rows
    if n == 0:
        return [], None
    if num_buckets <= 0 and not partition_keys:  # an unpartitioned unaware-bucket table: one group, no codes
        return [GroupRows((), 0, table)], None
    if num_buckets > 0:
        buckets = np.asarray(bucket_ids(table, bucket_keys, bucket_key_types, num_buckets), dtype=np.int32)
    else:
        buckets = np.zeros(n, dtype=np.int32)

    # One integer code per row: dictionary indices of each partition column, combined mixed-radix with the
    # bucket. Nulls get their own code (the default partition). Without partitions the bucket is the code.
    code: np.ndarray = buckets.astype(np.int64) if partition_keys else buckets
    radix = int(buckets.max()) + 1
    radices = [radix]
    dictionaries, part_codes = partition_codes(table, partition_keys)
    for d, idx in zip(dictionaries, part_codes):
        code = code + idx * radix
        radix *= len(d) or 1
        radices.append(len(d) or 1)

    # A single group (every row of a Spark writer task: its rows were routed to it by bucket) needs no grouping
    # and no copy in group order, whichever bucket it is.
    if radix == 1 or not bool((code != code[0]).any()):
        return [GroupRows(tuple(d[int(c[0])].as_py() for d, c in zip(dictionaries, part_codes)), int(buckets[0]),
                          table)], None
    # numpy's stable sort is a radix sort for integers of 16 bits or less: use the narrowest type that fits.
    if radix <= 1 << 8:
        code = code.astype(np.uint8)
        if lazy:
            counts = count_ids(code, radix)  # (a chunk at a time: bincount copies the codes to int64)
            present = np.flatnonzero(counts)
            if len(present) <= LAZY_GROUPS_MAX:
                return [_lazy_group(table, code, int(c), int(counts[c]), radices, dictionaries)
                        for c in present.tolist()], None
    elif radix <= 1 << 16:
        code = code.astype(np.uint16)
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    boundaries = np.flatnonzero(np.diff(sorted_code)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [n]))
    groups = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        first = int(order[s])
        values = tuple(d[int(c[first])].as_py() for d, c in zip(dictionaries, part_codes))
        groups.append(GroupRows(values, int(buckets[first]), table, indices=order[s:e]))
    return groups, order


def _lazy_group(table: pa.Table, codes: np.ndarray, code: int, rows: int, radices: Sequence[int],
                dictionaries: Sequence[pa.Array]) -> GroupRows:
    """The group of ``code``: its bucket and partition values read back from the mixed-radix code."""
    bucket, rest = code % radices[0], code // radices[0]
    values = []
    for d, r in zip(dictionaries, radices[1:]):
        values.append(d[rest % r].as_py())
        rest //= r
    return GroupRows(tuple(values), bucket, table, codes=codes, code=code, num_rows=rows)


def split_by_partition_and_bucket(
    table: pa.Table,
    *,
    partition_keys: Sequence[str],
    bucket_keys: Sequence[str],
    bucket_key_types: Sequence[DataType],
    num_buckets: int,
    max_rows: int | None = None,
) -> Iterator[Group]:
    """Group rows by partition values and bucket; ``num_buckets`` <= 0 puts every row in bucket 0.

    With ``max_rows`` a group comes as several consecutive pieces of at most that many rows (in input order), each
    copied from ``table`` only when the caller asks for it: the caller bounds the memory of the copies.
    """
    groups, order = _plan(table, partition_keys=partition_keys, bucket_keys=bucket_keys,
                          bucket_key_types=bucket_key_types, num_buckets=num_buckets)
    if order is None:
        for g in groups:
            yield from _pieces(g.partition, g.bucket, table, max_rows)
        return
    if max_rows is None:
        taken = table.take(pa.array(order))
        start = 0
        for g in groups:
            yield Group(g.partition, g.bucket, taken.slice(start, g.num_rows))
            start += g.num_rows
        return
    for g in groups:
        for start in range(0, g.num_rows, max_rows):  # taken piece by piece: no copy of the whole input at once
            yield Group(g.partition, g.bucket, g.take(start, start + max_rows))


def _pieces(partition: tuple[object, ...], bucket: int, table: pa.Table, max_rows: int | None) -> Iterator[Group]:
    if max_rows is None or table.num_rows <= max_rows:
        yield Group(partition, bucket, table)
        return
    for start in range(0, table.num_rows, max_rows):
        yield Group(partition, bucket, table.slice(start, max_rows))
