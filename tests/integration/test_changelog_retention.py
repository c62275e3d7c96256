"""Decoupled changelog retention: changelog/changelog-N outlives its snapshot, change reads still see it, orphan
cleanup keeps its files, and changelog expiration removes it with its files."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from tests.tree import tree

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
OPTIONS = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
           "snapshot.num-retained.max": "2", "changelog.num-retained.min": "1", "changelog.num-retained.max": "8"}


def _referenced_changelog_files(t) -> set[str]:  # noqa: ANN001
    scan = t.file_scan()
    kept = [t.store.changelog_manager.try_changelog(i) for i in t.store.changelog_manager.ids()]
    names: set[str] = set()
    for s in [*t.snapshot_manager.snapshots(), *kept]:
        if s is not None and s.changelog_manifest_list:
            names |= {e.file.file_name for m in scan.manifest_list(s.changelog_manifest_list)
                      for e in scan.manifest(m.file_name)}
    return names


def _on_disk_changelog_files(t) -> set[str]:  # noqa: ANN001
    return {n for n in os.listdir(f"{t.path}/bucket-0") if n.startswith("changelog-")}


def test_changelogs_outlive_snapshots_and_expire_on_their_own(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={**OPTIONS, "write-only": "true"})
    history = []
    for i in range(6):
        row = {"k": i % 3, "v": f"v{i}"}
        t.write(pa.Table.from_pylist([row], schema=SCHEMA))
        history.append(("+I", row["k"], row["v"]))
    t.expire_snapshots()
    assert len(list(t.snapshot_manager.snapshots())) == 2
    kept = t.store.changelog_manager.ids()
    assert kept == [1, 2, 3, 4]  # every expired snapshot kept as changelog-N
    got = [(r["rowkind"], r["k"], r["v"]) for r in t.read_changes(0).to_pylist()]
    assert got == history  # the whole changelog, though snapshots 1-4 are gone
    assert _on_disk_changelog_files(t) == _referenced_changelog_files(t)
    # Orphan cleanup knows the changelogs' files are live.
    t.remove_orphan_files(older_than=dt.timedelta(0))
    assert [(r["rowkind"], r["k"], r["v"]) for r in t.read_changes(0).to_pylist()] == history
    # More commits: changelog.num-retained.max (8, over changelogs and snapshots) expires the oldest ones.
    for i in range(6, 10):
        t.write(pa.Table.from_pylist([{"k": i % 3, "v": f"v{i}"}], schema=SCHEMA))
        history.append(("+I", i % 3, f"v{i}"))
    t.expire_snapshots()
    assert t.store.changelog_manager.ids() == [3, 4, 5, 6, 7, 8]
    assert _on_disk_changelog_files(t) == _referenced_changelog_files(t)
    got = [(r["rowkind"], r["k"], r["v"]) for r in t.read_changes(2).to_pylist()]
    assert got == history[2:]


def test_coupled_retention_writes_no_changelog_metadata(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2", "write-only": "true"})
    for i in range(4):
        t.write(pa.Table.from_pylist([{"k": i, "v": "x"}], schema=SCHEMA))
    t.expire_snapshots()
    assert t.store.changelog_manager.ids() == []
    assert _on_disk_changelog_files(t) == _referenced_changelog_files(t)


@pytest.mark.parametrize("options, error", [
    ({"changelog.num-retained.min": "50"}, UnsupportedOptionError),  # no producer: nothing to keep
    ({"changelog-producer": "input", "changelog.num-retained.min": "5", "changelog.num-retained.max": "3"},
     InvalidOptionError),
])
def test_bad_changelog_retention_is_refused(catalog, tmp_path, options: dict, error: type) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    with pytest.raises(error, match="changelog"):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={"bucket": "1", **options})
    assert tree(tmp_path) == before
