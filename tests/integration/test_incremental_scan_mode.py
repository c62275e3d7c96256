"""``incremental-between-scan-mode``: ``changelog`` reads the changelog files between two snapshots, ``delta`` the
data files the writes added, ``auto`` the changelog of a table with a changelog-producer (else the deltas)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import NoSuchSnapshotError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(pairs: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"k": [k for k, _ in pairs], "v": [v for _, v in pairs]}, schema=SCHEMA)


def _changes(t, mode: str, between: str = "1,3") -> list[tuple[str, int, str]]:  # noqa: ANN001
    out = t.copy({"incremental-between": between, "incremental-between-scan-mode": mode}).read_changes()
    return sorted((r["rowkind"], r["k"], r["v"]) for r in out.to_pylist())


@pytest.fixture
def catalog(tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path))
    cat.create_database("db")
    return cat


def _snapshots_by_write(t) -> None:  # noqa: ANN001
    t.write(_rows([(1, "a"), (2, "b"), (3, "c")]))
    t.write(_rows([(1, "a2"), (4, "d")]))
    t.delete(where="k = 2")


@pytest.mark.parametrize("producer", ["lookup", "input"])
def test_changelog_mode_reads_the_changelog_files(catalog, producer: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "changelog-producer": producer})
    _snapshots_by_write(t)
    # Snapshot ids of the writes (a lookup producer adds a COMPACT snapshot after each APPEND).
    ids = [s.id for s in t.snapshot_manager.snapshots()]
    first, last = ids[0], ids[-1]
    between = f"{first},{last}"
    changelog = _changes(t, "changelog", between)
    expected = t.read_changes(first, last)  # the table's change stream (its changelog)
    assert changelog == sorted((r["rowkind"], r["k"], r["v"]) for r in expected.to_pylist())
    assert ("-D", 2, "b") in changelog or ("-D", 2, None) in changelog
    if producer == "lookup":
        assert ("-U", 1, "a") in changelog and ("+U", 1, "a2") in changelog
    # auto picks the changelog on a table with a producer.
    assert _changes(t, "auto", between) == changelog
    # delta reads the data files as written: no before-images.
    delta = _changes(t, "delta", between)
    assert not any(kind == "-U" for kind, _, _ in delta)
    assert delta != changelog or producer == "input"
    # A batch read of the range leaves the retractions out.
    read = t.copy({"incremental-between": between, "incremental-between-scan-mode": "changelog"}).read()
    assert sorted(read.column("k").to_pylist()) == sorted(k for kind, k, _ in changelog if kind in ("+I", "+U"))


def test_changelog_mode_without_a_producer_reads_nothing_and_auto_reads_deltas(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    _snapshots_by_write(t)
    assert _changes(t, "changelog") == []
    assert _changes(t, "auto") == _changes(t, "delta") != []


def test_changelog_mode_needs_the_range_still_there(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "changelog-producer": "input"})
    _snapshots_by_write(t)
    t.tags.create("first", 1)
    t.expire_snapshots(retain_min=1, retain_max=1)
    with pytest.raises(NoSuchSnapshotError, match="changelog"):
        t.copy({"incremental-between": "first,3", "incremental-between-scan-mode": "changelog"}).read()
