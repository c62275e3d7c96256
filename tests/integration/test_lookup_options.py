"""Lookup file options: ``local-temp-dir`` (where a bucket writer's lookup files go), ``lookup.cache-max-disk-size``
(least recently used files dropped beyond it), ``lookup.cache-spill-compression`` and ``lookup.local-file-type``
(checked and accepted)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


def _rows(keys: range, v: int) -> pa.Table:
    return pa.table({"k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _lookup_files(root: Path) -> list[Path]:
    return [p for d in root.glob("laketide-lookup-*") for p in d.iterdir()]


@pytest.fixture
def catalog(tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _long_lived_writes(t, rounds: int, *, check_dir: Path | None = None) -> tuple[dict[int, int], int]:  # noqa: ANN001
    """Rounds of overlapping upserts through one writer; returns the oracle and the most lookup files seen."""
    w = t.new_write()
    oracle = {k: -1 for k in range(400)}
    most = 0
    try:
        w.write(_rows(range(400), -1))
        t.commit(w.prepare_commit())
        for i in range(rounds):
            keys = range(i * 37 % 300, i * 37 % 300 + 100)
            w.write(_rows(keys, i))
            t.commit(w.prepare_commit())
            oracle.update({k: i for k in keys})
            if check_dir is not None:
                most = max(most, len(_lookup_files(check_dir)))
    finally:
        w.close()
    return oracle, most


@pytest.mark.parametrize("mode", [{"deletion-vectors.enabled": "true"}, {"changelog-producer": "lookup"}])
def test_lookup_files_go_to_local_temp_dir_and_stay_within_the_disk_budget(catalog, tmp_path, mode) -> None:  # noqa: ANN001
    unbounded_dir, bounded_dir = tmp_path / "unbounded", tmp_path / "bounded"
    base = {"bucket": "1", "target-file-size": "2 kb", **mode}
    free = catalog.create_table("db.free", SCHEMA, primary_key=["k"],
                                options={**base, "local-temp-dir": str(unbounded_dir)})
    oracle, most_free = _long_lived_writes(free, 5, check_dir=unbounded_dir)
    assert most_free > 1, "several data files above level 0 should have been looked up"
    tight = catalog.create_table("db.tight", SCHEMA, primary_key=["k"],
                                 options={**base, "local-temp-dir": str(bounded_dir),
                                          "lookup.cache-max-disk-size": "1 b"})
    oracle_tight, most_tight = _long_lived_writes(tight, 5, check_dir=bounded_dir)
    assert most_tight == 1, "a one-byte budget keeps only the lookup file in use"
    got = {r["k"]: r["v"] for r in tight.read().to_pylist()}
    assert got == oracle_tight == oracle
    assert {r["k"]: r["v"] for r in free.read().to_pylist()} == oracle
    # Closed writers leave no lookup file behind.
    assert _lookup_files(unbounded_dir) == [] and _lookup_files(bounded_dir) == []


@pytest.mark.parametrize("key, value", [
    ("lookup.cache-max-disk-size", "0"),
    ("lookup.cache-max-disk-size", "lots"),
    ("lookup.cache-spill-compression", "snappy"),
    ("lookup.local-file-type", "btree"),
    ("local-temp-dir", "relative/dir"),
    ("local-temp-dir", "/tmp/../etc"),
])
def test_bad_lookup_options_are_refused(catalog, key: str, value: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={"bucket": "1", key: value})
    assert "bad" not in catalog.list_tables("db")


@pytest.mark.parametrize("file_type", ["sort", "hash", "SORT"])
@pytest.mark.parametrize("compression", ["zstd", "none", "lz4", "lzo"])
def test_accepted_lookup_layout_options(catalog, file_type: str, compression: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.ok", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "lookup.local-file-type": file_type,
        "lookup.cache-spill-compression": compression})
    t.write(_rows(range(10), 0))
    t.write(_rows(range(5), 1))
    assert sorted(r["v"] for r in t.read().to_pylist()) == [0] * 5 + [1] * 5


def test_unusable_local_temp_dir_fails_the_write_with_a_typed_error(catalog, tmp_path) -> None:  # noqa: ANN001
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "local-temp-dir": str(blocker / "sub")})
    t.write(_rows(range(10), 0))  # nothing above level 0 yet: no lookup
    before = t.latest_snapshot().id
    with pytest.raises(InvalidOptionError, match="local-temp-dir"):
        t.write(_rows(range(5), 1))
    assert t.latest_snapshot().id == before
    assert sorted(r["v"] for r in t.read().to_pylist()) == [0] * 10
    assert os.path.isfile(blocker)
