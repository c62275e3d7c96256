"""Splitting rows into (partition, bucket) groups when they all belong to one (a Spark writer task's rows)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from laketide.meta.bucket import bucket_ids
from laketide.types import BigIntType
from laketide.write.bucketing import group_rows, split_by_partition_and_bucket

SPEC = {"bucket_keys": ["k"], "bucket_key_types": [BigIntType()], "num_buckets": 4}


def _one_bucket(bucket: int, n: int = 5000) -> pa.Table:
    keys = np.arange(16 * n, dtype=np.int64)
    table = pa.table({"k": keys})
    mine = np.asarray(bucket_ids(table, ["k"], [BigIntType()], 4)) == bucket
    keys = keys[mine][:n]
    return pa.table({"p": pa.array(["b"] * len(keys)), "k": keys, "v": pa.array([f"v{k}" for k in keys])})


def _same_buffers(a: pa.Table, b: pa.Table) -> bool:
    return all(x.chunk(0).buffers()[-1].address == y.chunk(0).buffers()[-1].address
               for x, y in zip(a.columns, b.columns))


@pytest.mark.parametrize("bucket", [0, 1, 3])
@pytest.mark.parametrize("partitioned", [False, True])
def test_rows_of_one_bucket_are_one_group_and_not_copied(bucket: int, partitioned: bool) -> None:
    data = _one_bucket(bucket)
    keys = ["p"] if partitioned else []
    groups = list(split_by_partition_and_bucket(data, partition_keys=keys, **SPEC))
    assert [(g.partition, g.bucket, g.rows.num_rows) for g in groups] == [
        (("b",) if partitioned else (), bucket, data.num_rows)]
    assert groups[0].rows.equals(data)
    assert _same_buffers(groups[0].rows, data)  # the input itself, not a copy in group order
    lazy = group_rows(data, partition_keys=keys, **SPEC)
    assert [(g.partition, g.bucket, g.num_rows) for g in lazy] == [
        (("b",) if partitioned else (), bucket, data.num_rows)]
    assert _same_buffers(lazy[0].take(), data)


def test_one_bucket_of_the_default_partition() -> None:
    data = _one_bucket(2)
    data = data.set_column(0, "p", pa.nulls(data.num_rows, pa.string()))
    groups = list(split_by_partition_and_bucket(data, partition_keys=["p"], **SPEC))
    assert [(g.partition, g.bucket) for g in groups] == [((None,), 2)]
    assert groups[0].rows.equals(data)


def test_two_groups_still_split() -> None:
    data = pa.concat_tables([_one_bucket(1, 100), _one_bucket(3, 50)]).combine_chunks()
    groups = list(split_by_partition_and_bucket(data, partition_keys=["p"], **SPEC))
    assert [(g.partition, g.bucket, g.rows.num_rows) for g in groups] == [(("b",), 1, 100), (("b",), 3, 50)]
