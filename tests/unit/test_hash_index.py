"""Hash index files and the vectorized PartitionIndex / assigner sharding against Java's rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.exceptions import CommitConflictError
from laketide.fs import LocalFileIO
from laketide.index.hash_index import (
    BucketCapacityError,
    PartitionIndex,
    compute_assigner,
    decode_hashes,
    encode_hashes,
    read_hash_index,
    write_hash_index,
)
from laketide.meta.commit_message import CommitMessage
from laketide.meta.manifest import FileKind, IndexFileMeta, IndexManifestEntry
from laketide.write.index_manifest import (
    check_hash_index_conflicts,
    combine_index_entries,
    index_changes,
)


def test_file_is_big_endian_int32(tmp_path) -> None:
    hashes = np.array([123456, -1, 0, 2**31 - 1, -(2**31)], dtype=np.int32)
    assert encode_hashes(hashes)[:8] == b"\x00\x01\xe2\x40\xff\xff\xff\xff"
    meta = write_hash_index(LocalFileIO(), str(tmp_path), "index-x-0", hashes)
    assert (meta.index_type, meta.file_size, meta.row_count) == ("HASH", 20, 5)
    assert read_hash_index(LocalFileIO(), str(tmp_path / "index-x-0")).tolist() == hashes.tolist()
    with pytest.raises(Exception, match="multiple of 4"):
        decode_hashes(b"\x00\x01\x02")


def _java_assign(index: dict, non_full: dict, total: list, hashes: list[int], target: int, max_buckets: int,
                 mine=lambda b: True) -> list[int]:
    """PartitionIndex.assign as Java runs it, one hash at a time (random step left out)."""
    out = []
    for h in hashes:
        if h in index:
            out.append(index[h])
            continue
        placed = None
        for b in list(non_full):
            if non_full[b] < target:
                non_full[b] += 1
                placed = b
                break
            del non_full[b]
        if placed is None:
            top = (32767 if max_buckets == -1 else max_buckets) - 1
            for i in range(top + 1):
                if mine(i) and i not in total:
                    non_full[i] = 1
                    total.append(i)
                    placed = i
                    break
        assert placed is not None
        index[h] = placed
        out.append(placed)
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(-50, 50), max_size=40), min_size=1, max_size=5), st.integers(1, 7))
def test_partition_index_matches_java_row_loop(batches: list[list[int]], target: int) -> None:
    ours = PartitionIndex(target_row_num=target)
    index: dict = {}
    non_full: dict = {}
    total: list = []
    for batch in batches:
        got = ours.assign(np.array(batch, dtype=np.int32))
        assert got.tolist() == _java_assign(index, non_full, total, batch, target, -1)


def test_worked_example_1001st_key_opens_bucket_1() -> None:
    ix = PartitionIndex(target_row_num=1000)
    assert ix.assign(np.array([123456, 123456, 789012], np.int32)).tolist() == [0, 0, 0]
    ix.assign(np.arange(1, 999, dtype=np.int32))  # 998 more keys: bucket 0 holds 1000
    assert ix.assign(np.array([111222], np.int32)).tolist() == [1]
    assert ix.lookup(np.array([123456, 111222, 5], np.int32)).tolist() == [0, 1, 0]


def test_max_buckets_then_random_existing_bucket() -> None:
    ix = PartitionIndex(target_row_num=2)
    got = ix.assign(np.arange(10, dtype=np.int32), max_buckets=2, rng=np.random.default_rng(1))
    assert got[:4].tolist() == [0, 0, 1, 1] and set(got[4:].tolist()) <= {0, 1}
    assert ix.upper_bound_reached
    small = PartitionIndex(target_row_num=1)
    with pytest.raises(BucketCapacityError):
        small.assign(np.arange(3, dtype=np.int32), my_bucket=lambda b: b < 2)


def test_load_counts_all_hashes_of_owned_buckets_keeps_own_hashes() -> None:
    files = [(0, np.array([1, 2, 3], np.int32)), (1, np.array([4, 5], np.int32))]
    ix = PartitionIndex.load(files, target_row_num=3, keep_hash=lambda h: h % 2 == 0, my_bucket=lambda b: b == 1)
    assert ix.hashes.tolist() == [2, 4] and ix.buckets.tolist() == [0, 1]
    assert ix.non_full == {1: 2}
    assert ix.assign(np.array([7, 8, 9], np.int32), my_bucket=lambda b: b % 2 == 1).tolist() == [1, 3, 3]


def test_compute_assigner_matches_java_formula() -> None:
    key = np.array([-7, 5, 2**31 - 1, -(2**31)], dtype=np.int32)
    got = compute_assigner(-13, key, num_channels=4, num_assigners=3)
    start = 1  # Java: Math.abs(-13 % 4) == 1
    want = [(start + abs(int(np.fmod(k, 3)))) % 4 for k in key.tolist()]
    assert got.tolist() == want


def _entry(kind: FileKind, bucket: int, name: str, typ: str = "HASH", part: bytes = b"p") -> IndexManifestEntry:
    return IndexManifestEntry(kind=kind, partition=part, bucket=bucket,
                              index_file=IndexFileMeta(index_type=typ, file_name=name, file_size=4, row_count=1))


def test_combine_per_bucket_replaces_and_deletes_first() -> None:
    prev = [_entry(FileKind.ADD, 0, "a"), _entry(FileKind.ADD, 1, "b"), _entry(FileKind.ADD, 0, "g", "OTHER")]
    changes = [_entry(FileKind.DELETE, 0, "a"), _entry(FileKind.ADD, 0, "c"), _entry(FileKind.ADD, 2, "d")]
    live = combine_index_entries(prev, changes)
    assert sorted((e.bucket, e.index_file.file_name) for e in live) == [(0, "c"), (0, "g"), (1, "b"), (2, "d")]
    assert all(e.kind is FileKind.ADD for e in live)


def test_conflicting_hash_index_is_detected() -> None:
    live = [_entry(FileKind.ADD, 0, "f1")]
    ok = [_entry(FileKind.DELETE, 0, "f1"), _entry(FileKind.ADD, 0, "f2")]
    check_hash_index_conflicts(live, ok, table_name="t")
    chain = ok + [_entry(FileKind.DELETE, 0, "f2"), _entry(FileKind.ADD, 0, "f3")]
    check_hash_index_conflicts(live, chain, table_name="t")
    with pytest.raises(CommitConflictError, match="concurrent"):
        check_hash_index_conflicts(live, [_entry(FileKind.DELETE, 0, "f0"), _entry(FileKind.ADD, 0, "f2")],
                                   table_name="t")
    with pytest.raises(CommitConflictError, match="concurrent"):  # a new bucket another job created first
        check_hash_index_conflicts(live, [_entry(FileKind.ADD, 0, "x")], table_name="t")
    with pytest.raises(CommitConflictError, match="independently"):
        check_hash_index_conflicts([], [_entry(FileKind.ADD, 3, "x"), _entry(FileKind.ADD, 3, "y")], table_name="t")


def test_index_changes_from_messages() -> None:
    f = IndexFileMeta(index_type="HASH", file_name="n", file_size=4, row_count=1)
    g = IndexFileMeta(index_type="HASH", file_name="o", file_size=4, row_count=1)
    m = CommitMessage(partition=b"p", bucket=2, total_buckets=-1, new_index_files=(f,), deleted_index_files=(g,))
    assert [(e.kind, e.index_file.file_name, e.bucket) for e in index_changes([m])] == [
        (FileKind.DELETE, "o", 2), (FileKind.ADD, "n", 2)]
