"""Where a row goes: the public bucket routing of a table, for any engine that spreads a write over tasks.

A fixed-bucket table computes each row's bucket from its bucket key (Java's hash). A dynamic-bucket table first
sends each key to one assigner (its partition and key hashes), and the assigner task picks the bucket from the
hash index of the latest snapshot. Both are vectorized over Arrow columns.

Paimon: table.sink.FixedBucketRowKeyExtractor, index.BucketAssigner#computeAssigner, index.HashBucketAssigner
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from laketide.exceptions import UnsupportedFeatureError
from laketide.index.hash_index import compute_assigner
from laketide.meta.binary_row import hash_rows, serialize_binary_row
from laketide.meta.bucket import bucket_ids
from laketide.types import to_arrow_type
from laketide.write.bucket_assigner import (
    AssignerLayout,
    DynamicBucketIndex,
    HashBucketAssigner,
    assign_buckets,
    assigner_layout,
    max_buckets,
    partition_hash,
)

if TYPE_CHECKING:
    from laketide.store.file_store import FileStore

__all__ = ["BucketRouter", "DynamicBucketTask"]


class BucketRouter:
    """The routing of one table's rows (picklable: engines ship it to their tasks)."""

    def __init__(self, store: FileStore) -> None:
        schema = store.schema
        self.table_name = store.table_name
        self.mode = store.bucket_mode
        self.num_buckets = store.options.bucket
        self.partition_keys = list(schema.partition_keys)
        self.schema = schema
        self._file_io = store.file_io
        self._table_path = store.table_path
        self._options = store.options
        if self.mode == "fixed":
            self.key_columns = list(schema.bucket_keys())
        elif self.mode == "dynamic":
            self.key_columns = [*self.partition_keys, *schema.trimmed_primary_keys]
        else:
            self.key_columns = []
        self.key_arrow_types = [to_arrow_type(schema.field(k).type) for k in self.key_columns]

    def typed_keys(self, columns: Sequence[pa.Array]) -> pa.Table:
        """The key columns as one table of the table's types (engines may hand over wider types)."""
        return pa.table([c.cast(t) for c, t in zip(columns, self.key_arrow_types, strict=True)],
                        names=self.key_columns)

    # -- fixed buckets ---------------------------------------------------------------------------------------------
    def buckets(self, *key_columns: pa.Array) -> pa.Array:
        """The bucket (int32) of each row of a fixed-bucket table, from its ``key_columns`` in order."""
        if self.mode != "fixed":
            raise UnsupportedFeatureError(f"Table {self.table_name} has {self.mode} buckets, not fixed ones")
        keys = self.typed_keys(key_columns)
        types = [self.schema.field(k).type for k in self.key_columns]
        return pa.array(bucket_ids(keys, self.key_columns, types, self.num_buckets), pa.int32())

    # -- dynamic buckets -------------------------------------------------------------------------------------------
    def assigner_layout(self, parallelism: int | None = None) -> AssignerLayout:
        """How many assigner tasks (channels) and bucket owners a write with ``parallelism`` tasks uses."""
        return assigner_layout(self._options, parallelism=parallelism)

    def assigners(self, layout: AssignerLayout, *key_columns: pa.Array) -> pa.Array:
        """The assigner task (int32) of each row of a dynamic-bucket table: one key always reaches the same one."""
        if self.mode != "dynamic":
            raise UnsupportedFeatureError(
                f"Table {self.table_name} has {self.mode} buckets; only hash-dynamic tables route through assigners"
            )
        t = self.typed_keys(key_columns)
        schema = self.schema
        part_types = [f.type for f in schema.partition_fields]
        keys = list(schema.trimmed_primary_keys)
        if self.partition_keys:
            p_hash = hash_rows(t, self.partition_keys, part_types)
        else:
            p_hash = np.full(t.num_rows, partition_hash(serialize_binary_row([], [])))
        k_hash = hash_rows(t, keys, [schema.field(k).type for k in keys])
        return pa.array(compute_assigner(p_hash, k_hash, num_channels=layout.num_channels,
                                         num_assigners=layout.num_assigners), pa.int32())

    def assigner_task(self, layout: AssignerLayout) -> DynamicBucketTask:
        """What one assigner task runs: buckets for the keys it receives, from the latest snapshot's hash index."""
        index = DynamicBucketIndex.latest(file_io=self._file_io, table_path=self._table_path, schema=self.schema)
        assigner = HashBucketAssigner(index=index, layout=layout,
                                      target_row_num=self._options.dynamic_bucket_target_row_num,
                                      max_buckets=max_buckets(self._options))
        return DynamicBucketTask(self, assigner)


class DynamicBucketTask:
    def __init__(self, router: BucketRouter, assigner: HashBucketAssigner) -> None:
        self._router = router
        self._assigner = assigner

    def buckets(self, *key_columns: pa.Array) -> pa.Array:
        """The bucket (int32) of each row, in row order; the rows then go to one writer task per bucket."""
        typed = self._router.typed_keys(key_columns)
        return pa.array(assign_buckets(typed, schema=self._router.schema, assigner=self._assigner), pa.int32())
