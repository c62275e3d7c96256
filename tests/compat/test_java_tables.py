"""laketide reads tables written by Java Paimon (../shared/compat/tables), snapshot by snapshot."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import NoSuchSnapshotError

# append_09's README: rows added per snapshot (f0, f1, f2, f3); snapshot 5 is a full compaction.
APPEND_09_ADDED = {
    1: [("Alice", 10, 1, 11.1), ("Bob", 10, 0, 12.1), ("Emily", 10, 0, 13.1), ("Tony", 10, 0, 14.1),
        ("Lucy", 20, 1, 14.1)],
    2: [("Emily", 10, 0, 15.1), ("Bob", 10, 0, 12.1), ("Alex", 10, 0, 16.1), ("Paul", 20, 1, None)],
    3: [("David", 10, 0, 17.1)],
    4: [("Lily", 10, 0, 17.1)],
    5: [],
}


def _expected_append_09(snapshot_id: int) -> list[tuple]:
    rows = [r for sid in range(1, snapshot_id + 1) for r in APPEND_09_ADDED[sid]]
    return sorted(rows, key=repr)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@pytest.fixture()
def append_09(java_table):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=java_table("append_09"))
    return cat.table("append_09.append_09")


def test_append_09_latest_snapshot(append_09) -> None:  # noqa: ANN001
    assert append_09.schema.partition_keys == ("f1",)
    assert append_09.options.manifest_format == "orc"
    assert _rows(append_09.read()) == _expected_append_09(5)


@pytest.mark.parametrize("snapshot_id", [1, 2, 3, 4, 5])
def test_append_09_time_travel(append_09, snapshot_id: int) -> None:  # noqa: ANN001
    assert _rows(append_09.read(snapshot_id=snapshot_id)) == _expected_append_09(snapshot_id)


def test_append_09_expired_first_snapshot(append_09) -> None:  # noqa: ANN001
    # Expire snapshot-1 behind Paimon's back: EARLIEST still says 1, so the hint must be verified.
    import os

    os.remove(append_09.snapshot_manager.snapshot_path(1))
    assert append_09.snapshot_manager.earliest_snapshot_id() == 2
    assert _rows(append_09.read(snapshot_id=2)) == _expected_append_09(2)
    with pytest.raises(NoSuchSnapshotError, match="snapshot-1"):
        append_09.read(snapshot_id=1)


def test_append_09_filters_prune_and_filter(append_09) -> None:  # noqa: ANN001
    got = append_09.read(columns=["f0", "f3"], where="f1 = 20")
    assert sorted(got.column("f0").to_pylist()) == ["Lucy", "Paul"]
    got = append_09.read(columns=["f0"], where="f3 >= 17.1 AND f1 = 10")
    assert sorted(got.column("f0").to_pylist()) == ["David", "Lily"]
    assert append_09.read(where="f1 = 30").num_rows == 0
    splits = append_09.scan(where="f1 = 20").plan()
    assert {s.partition_values for s in splits} == {(20,)}


def test_append_09_bucket_layout_matches_java(append_09) -> None:  # noqa: ANN001
    """Our bucket function puts each Java-written row in the bucket Java chose."""
    from laketide.meta.bucket import bucket_ids

    for split in append_09.scan().plan():
        rows = append_09.scan().reader.read(split)
        table = pa.Table.from_batches(list(rows))
        ids = bucket_ids(table, ["f2"], [append_09.schema.field("f2").type], 2)
        assert set(ids.tolist()) == {split.bucket}


# pk_09's README: primary key (f0, f1, f2), deletion vectors; batch reads skip level-0 files.
_PK_09_BASE = {
    "Two roads diverged in a wood, and I took the one less traveled by, And that has made all the difference.":
        (10, 1, 11.0),
    "Alice": (10, 1, 11.1), "Bob": (10, 0, 12.1), "Emily": (10, 0, 13.1), "Tony": (10, 0, 14.1),
    "Alex": (10, 0, 16.1), "David": (10, 0, 17.1), "Lucy": (20, 1, 14.1), "Paul": (20, 1, 18.1),
}


def _pk_09_expected(snapshot_id: int) -> list[tuple]:
    rows = dict(_PK_09_BASE)
    if snapshot_id >= 4:
        rows["Whether I shall turn out to be the hero of my own life."] = (10, 1, 19.1)
        rows["Lily"] = (10, 1, 20.1)
    if snapshot_id >= 6:
        del rows["Tony"], rows["Lily"]
        rows["Alice"] = (10, 1, 19.1)
    if snapshot_id >= 8:
        rows["Alice"] = (10, 1, 21.1)
    return sorted(((name, *v) for name, v in rows.items()), key=repr)


@pytest.fixture()
def pk_09(java_table):  # noqa: ANN001, ANN201
    return laketide.load_catalog(warehouse=java_table("pk_09")).table("pk_09.pk_09")


@pytest.mark.parametrize("snapshot_id", [2, 4, 6, 8, None])
def test_pk_09_with_deletion_vectors(pk_09, snapshot_id: int | None) -> None:  # noqa: ANN001
    got = pk_09.read() if snapshot_id is None else pk_09.read(snapshot_id=snapshot_id)
    assert _rows(got) == _pk_09_expected(snapshot_id or 8)


def test_pk_09_level_zero_is_invisible_before_compaction(pk_09) -> None:  # noqa: ANN001
    # snapshot 1 only holds level-0 files: with deletion vectors a batch scan correctly sees nothing yet
    assert pk_09.read(snapshot_id=1).num_rows == 0
    assert _rows(pk_09.read(snapshot_id=3)) == _pk_09_expected(2)


def test_pk_09_filters(pk_09) -> None:  # noqa: ANN001
    assert sorted(pk_09.read(columns=["f0"], where="f3 > 18").column("f0").to_pylist()) == [
        "Alice", "Paul", "Whether I shall turn out to be the hero of my own life."]
    assert pk_09.read(where="f1 = 20").num_rows == 2
