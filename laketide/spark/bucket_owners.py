"""Which Spark task owns a (partition, bucket) of a cross-partition table: spread over partitions too.

``cross_partition_keyed`` sends a key the table holds to the task owning its bucket, and that task alone fills
the bucket with new keys. Owning bucket ``b`` by ``b % n`` alone gives every partition's bucket 0 to task 0: a
table of many partitions each below ``dynamic-bucket.target-row-num`` (one bucket each, the common case) would
have every update of an existing key written by one task while the others idle. Here task ``i`` owns ``(P, b)``
when ``(b + offset(P)) % n == i``, ``offset(P)`` being the partition's index among the partitions the driver
planned (0 for a partition the table does not hold yet: its buckets are all new, and each task still fills its
own every n-th bucket). The driver routes with the same formula, on the partition index the lookup returns.
Within one partition the owners take every n-th bucket, as Paimon's assigners (``bucket % n == id``) do.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from laketide.schema.table_schema import TableSchema
from laketide.write.cross_partition import CrossPartitionAssigner
from laketide.write.key_codes import present_ids
from laketide.write.key_locations import KeyLocations

__all__ = ["SpreadAssigner", "owned_live_counts", "partition_offsets"]


def partition_offsets(partitions: Sequence[bytes]) -> dict[bytes, int]:
    """offset(P) of each planned partition: its index (the partition index of a located key)."""
    return {p: i for i, p in enumerate(partitions)}


def _residue(task: int, offset: int, n: int) -> int:
    """Task ``task`` owns the buckets ``b`` of a partition of this offset with ``b % n`` equal to this."""
    return (task - offset) % n


class SpreadAssigner(CrossPartitionAssigner):
    """A cross-partition assigner of one Spark task that fills, in each partition, only the buckets it owns
    under the spread ownership (``CrossPartitionAssigner`` owns ``b % n == assign_id`` in every partition)."""

    __slots__ = ("offsets",)
    offsets: Mapping[bytes, int]

    @classmethod
    def spread(cls, *, schema: TableSchema, num_assigners: int, assign_id: int,
               offsets: Mapping[bytes, int]) -> SpreadAssigner:
        out = cls.with_counts(schema=schema, counts={}, num_assigners=num_assigners, assign_id=assign_id)
        assert isinstance(out, SpreadAssigner)
        out.offsets = offsets
        return out

    def owns(self, partition: bytes, bucket: int) -> bool:
        return bucket % self.num_assigners == _residue(self.assign_id, self.offsets.get(partition, 0),
                                                       self.num_assigners)

    def owns_bucket(self, bucket: int) -> bool:  # a bucket alone does not say: ownership needs the partition
        raise TypeError("SpreadAssigner ownership depends on the partition: use owns(partition, bucket)")

    def _new_buckets(self, pids: np.ndarray) -> np.ndarray:
        # The base assigner fills buckets with b % n == assign_id: run it once per partition with the residue
        # this task owns there (the partitions of one chunk are few), then restore the task's id.
        out = np.empty(len(pids), dtype=np.int32)
        task = self.assign_id
        try:
            for pid in present_ids(pids, len(self.partitions)).tolist():
                mask = pids == pid
                self.assign_id = _residue(task, self.offsets.get(self.partitions[pid], 0), self.num_assigners)
                out[mask] = CrossPartitionAssigner._new_buckets(self, pids[mask])
        finally:
            self.assign_id = task
        return out


def owned_live_counts(locations: KeyLocations, partitions: Collection[bytes],
                      assigner: SpreadAssigner) -> Iterator[tuple[tuple[bytes, int], int]]:
    """``KeyLocations.live_counts`` of the buckets ``assigner`` owns in ``partitions``: one pass per residue
    (partitions whose owned buckets are alike), at most ``n`` passes."""
    n = assigner.num_assigners
    by_residue: dict[int, set[bytes]] = {}
    for p in partitions:
        by_residue.setdefault(_residue(assigner.assign_id, assigner.offsets.get(p, 0), n), set()).add(p)
    for residue, parts in sorted(by_residue.items()):
        yield from locations.live_counts(parts, _bucket_residue(n, residue))


def _bucket_residue(n: int, residue: int) -> Callable[[int], bool]:
    def owned(bucket: int) -> bool:
        return bucket % n == residue

    return owned
