"""changelog-producer = input: the rows written are written again as changelog files, listed by the snapshot,
and change reads replay them; replaying the changelog from the start equals the batch read at every snapshot."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.meta.manifest import FileKind
from laketide.meta.snapshot import CommitKind
from laketide.schema.changes import SetOption
from tests.tree import tree

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string()), ("op", pa.string())])


def _rows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def _changelog_files(t, snapshot) -> list:  # noqa: ANN001
    if not snapshot.changelog_manifest_list:
        return []
    scan = t.file_scan()
    return [e for m in scan.manifest_list(snapshot.changelog_manifest_list) for e in scan.manifest(m.file_name)]


def _replay(changes: pa.Table, state: dict[int, str | None]) -> None:
    for r in changes.to_pylist():
        if r["rowkind"] in ("+I", "+U"):
            state[r["k"]] = r["v"]
        else:
            assert state.get(r["k"], "<absent>") == r["v"] or r["rowkind"] == "-D", r
            state.pop(r["k"], None)


def _state(t, snapshot_id: int) -> dict[int, str | None]:  # noqa: ANN001
    return {r["k"]: r["v"] for r in t.read(snapshot_id=snapshot_id).to_pylist()}


def test_changelog_files_are_named_listed_and_counted(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "2", "changelog-producer": "input", "changelog-file.prefix": "cl-", "file.format": "orc",
        "rowkind.field": "op"})
    t.write(_rows([(1, "a", "+I"), (2, "b", "+I"), (1, "c", "+U")]))
    s = t.latest_snapshot()
    assert s.commit_kind is CommitKind.APPEND
    entries = _changelog_files(t, s)
    assert entries and all(e.kind is FileKind.ADD and e.file.level == 0 for e in entries)
    assert s.changelog_record_count == 3 == sum(e.file.row_count for e in entries)
    for e in entries:
        name = e.file.file_name
        assert name.startswith("cl-") and name.endswith(".orc")
        assert os.path.isfile(t.store.path_factory.data_file_paths(e.partition, e.bucket, e.file)[0])
    # The changelog keeps every input row, the data files the merged ones.
    got = t.read_changes(0)
    assert sorted((r["rowkind"], r["k"], r["v"]) for r in got.to_pylist()) == [
        ("+I", 1, "a"), ("+I", 2, "b"), ("+U", 1, "c")]
    assert sorted((r["k"], r["v"]) for r in t.read().to_pylist()) == [(1, "c"), (2, "b")]


_op = st.tuples(st.integers(0, 15), st.sampled_from(["a", "b", "c"]), st.sampled_from(["+I", "+U", "-D"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(_op, min_size=1, max_size=12), min_size=1, max_size=6), dv=st.booleans(),
       compact_every=st.sampled_from([0, 2]))
def test_replaying_the_changelog_equals_the_batch_read(batches: list, dv: bool, compact_every: int) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_key=["k"], options={
            "bucket": "2", "changelog-producer": "input", "rowkind.field": "op",
            "deletion-vectors.enabled": str(dv).lower()})
        state: dict[int, str | None] = {}
        done = 0
        for i, batch in enumerate(batches):
            # Input changelogs are as complete as the input: a -D or +U only for keys that exist, as a CDC source.
            rows = []
            live = set(_state(t, done)) if done else set()
            for k, v, op in batch:
                op = op if (op == "+I") == (k not in live) else ("+U" if op == "+I" else op)
                if op == "-D" and k not in live:
                    continue
                rows.append((k, None if op == "-D" else v, op))
                live.discard(k) if op == "-D" else live.add(k)
            if not rows:
                continue
            t.write(_rows(rows))
            if compact_every and i % compact_every == 1:
                t.compact(full=True)
            latest = t.latest_snapshot().id
            _replay(t.read_changes(done, latest), state)
            assert state == _state(t, latest)
            done = latest


def test_expiring_snapshots_deletes_their_changelog_files(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "input", "rowkind.field": "op"})
    for i in range(4):
        t.write(_rows([(i, "x", "+I"), (i + 10, "y", "+I")]))
    first = [e.file.file_name for e in _changelog_files(t, t.snapshot(1))]
    bucket_dir = f"{t.path}/bucket-0"
    assert all(os.path.exists(f"{bucket_dir}/{n}") for n in first)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert not any(os.path.exists(f"{bucket_dir}/{n}") for n in first)
    kept = {e.file.file_name for e in _changelog_files(t, t.latest_snapshot())}
    assert kept and {n for n in os.listdir(bucket_dir) if n.startswith("changelog-")} == kept
    assert t.read_changes(t.latest_snapshot().id - 1).num_rows == 2


# -- bad input ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("producer, error", [("sometimes", InvalidOptionError), ("", InvalidOptionError)])
def test_producers_laketide_cannot_write_are_refused(catalog, tmp_path, producer: str, error: type) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    with pytest.raises(error, match="changelog-producer"):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "changelog-producer": producer})
    assert tree(tmp_path) == before
    t = catalog.create_table("db.ok", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    with pytest.raises(error, match="changelog-producer"):
        t.alter(SetOption("changelog-producer", producer))
    assert t.schema.id == 0


def test_changelog_producer_on_an_append_table_is_refused(catalog, tmp_path) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    with pytest.raises(InvalidOptionError, match="primary key"):
        catalog.create_table("db.bad", SCHEMA, options={"changelog-producer": "input"})
    with pytest.raises(InvalidOptionError, match="primary key"):
        catalog.create_table("db.bad", SCHEMA, options={"changelog-producer": "lookup"})
    assert tree(tmp_path) == before
    t = catalog.create_table("db.app", SCHEMA)
    with pytest.raises(InvalidOptionError, match="primary key"):
        t.alter(SetOption("changelog-producer", "input"))
    assert t.schema.id == 0


# -- audit_log / binlog ------------------------------------------------------------------------------------------

def test_binlog_pairs_before_and_after_images(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "input", "rowkind.field": "op"})
    t.write(_rows([(1, "a", "+I"), (2, "b", "+I")]))
    t.write(_rows([(1, "a", "-U"), (1, "A", "+U"), (2, "b", "-D"), (3, "c", "+I")]))
    got = t.read_changes(1, binlog=True, columns=["k", "v"])
    assert got.schema.field("v").type == pa.list_(pa.string())
    assert sorted(got.to_pylist(), key=lambda r: (r["k"], r["rowkind"])) == [
        {"rowkind": "+U", "k": [1, 1], "v": ["a", "A"]},
        {"rowkind": "-D", "k": [2], "v": ["b"]},
        {"rowkind": "+I", "k": [3], "v": ["c"]},
    ]
    audit = catalog.table("db.t$audit_log").read(columns=["rowkind", "k", "v"])
    assert sorted(audit.to_pylist(), key=lambda r: r["k"]) == [
        {"rowkind": "+I", "k": 1, "v": "A"}, {"rowkind": "+I", "k": 3, "v": "c"}]
    binlog = catalog.table("db.t$binlog").read(columns=["rowkind", "k", "v"])
    assert sorted(binlog.to_pylist(), key=lambda r: r["k"]) == [
        {"rowkind": "+I", "k": [1], "v": ["A"]}, {"rowkind": "+I", "k": [3], "v": ["c"]}]


def test_binlog_needs_the_key_columns(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(_rows([(1, "a", "+I")]))
    with pytest.raises(InvalidOptionError, match="primary key"):
        t.read_changes(0, binlog=True, columns=["v"])
