"""Cross-partition bucket assignment: a batch of new keys gets the buckets the keys would get one at a time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import laketide
from laketide.write.cross_partition import CrossPartitionAssigner

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])


@pytest.mark.parametrize("num_assigners,assign_id", [(1, 0), (3, 1)])
def test_a_batch_fills_buckets_as_keys_one_at_a_time(tmp_path, num_assigners: int, assign_id: int) -> None:
    catalog = laketide.load_catalog(warehouse=str(tmp_path))
    catalog.create_database("db")
    schema = catalog.create_table("db.t", SCHEMA, primary_key=["id"], partition_keys=["dt"],
                                  options={"dynamic-bucket.target-row-num": "4"}).schema

    def assigner() -> CrossPartitionAssigner:
        a = CrossPartitionAssigner.with_counts(schema=schema, counts={}, num_assigners=num_assigners,
                                               assign_id=assign_id)
        for dt in ("a", "b", "c"):
            a.partition_id((dt,))
        # existing buckets: one with room, one full, one more (another assigner's when there are several)
        a.counts[0] = {assign_id: 2, assign_id + num_assigners: 4, (assign_id + 1) % num_assigners + 7: 1}
        a.counts[2] = {assign_id: 3}
        return a

    rng = np.random.default_rng(11)
    pids = rng.choice(np.array([0, 0, 1, 2], np.int32), 40)  # interleaved partitions, several buckets each
    batch, one_by_one = assigner(), assigner()
    got = batch._new_buckets(pids)
    expected = [int(one_by_one._new_buckets(np.array([p], np.int32))[0]) for p in pids.tolist()]
    assert got.tolist() == expected
    assert batch.counts == one_by_one.counts
    assert all(b % num_assigners == assign_id for b in got.tolist())
    # one bucket per partition: the short path gives the same
    few = np.array([1, 2, 1], np.int32)
    short, single = assigner(), assigner()
    assert short._new_buckets(few).tolist() == [int(single._new_buckets(few[i:i + 1])[0]) for i in range(3)]


@pytest.mark.parametrize("groups,dtype", [(5, np.uint16), (300, np.uint16), (7, np.int64)])
def test_positions_by_code_lists_each_group_in_order(groups: int, dtype: type) -> None:
    from laketide.write.cross_partition import _positions_by_code

    code = np.random.default_rng(groups).integers(0, groups, 5000).astype(dtype)
    got = [(g, p.tolist()) for g, p in _positions_by_code(code)]
    expected = [(g, np.flatnonzero(code == g).tolist()) for g in sorted(set(code.tolist()))]
    assert got == expected
