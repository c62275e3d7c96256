"""changelog-producer = full-compaction: the changelog is the difference between consecutive full compactions;
replaying it equals the batch read right after every full compaction."""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.meta.snapshot import CommitKind
from tests.integration.test_changelog_lookup import ENGINES, SCHEMA, _batch, _replay, _rows


def _fully_compacted(t, snapshot) -> bool:  # noqa: ANN001
    top = t.options.num_levels - 1
    return snapshot is not None and snapshot.commit_kind is CommitKind.COMPACT and all(
        e.file.level == top for e in t.file_scan().plan(snapshot))


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), every=st.sampled_from([1, 2, 3]))
def test_replaying_the_changelog_equals_the_read_after_each_full_compaction(engine: str, data, every: int) -> None:  # noqa: ANN001
    op = st.tuples(st.integers(0, 20), st.one_of(st.none(), st.integers(-3, 30)),
                   st.one_of(st.none(), st.sampled_from(["x", "y"])), st.sampled_from(ENGINES[engine][1]))
    batches = data.draw(st.lists(st.lists(op, min_size=1, max_size=15), min_size=1, max_size=7))
    with tempfile.TemporaryDirectory() as warehouse:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_key=["k"], options={
            "bucket": "2", "changelog-producer": "full-compaction", "merge-engine": engine, "rowkind.field": "op",
            "full-compaction.delta-commits": str(every), **ENGINES[engine][0]})
        w = t.new_write()
        state: dict[int, tuple] = {}
        done = 0
        for batch in batches:
            w.write(_rows(batch))
            t.commit(w.prepare_commit())
            latest = t.latest_snapshot()
            if _fully_compacted(t, latest):
                _replay(t.read_changes(done, latest.id), state)
                assert state == _batch(t, latest.id)
                done = latest.id
        t.compact(full=True)
        latest = t.latest_snapshot()
        if latest is not None:  # first-row with ignore-delete may have written nothing at all
            _replay(t.read_changes(done, latest.id), state)
            assert state == _batch(t, latest.id)


def test_only_full_compactions_produce_changelog(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "full-compaction", "rowkind.field": "op"})
    t.write(_rows([(1, 1, "a", "+I"), (2, 2, "b", "+I")]))
    t.compact(full=True)
    first = t.latest_snapshot().id
    t.write(_rows([(1, 5, "c", "+I"), (2, None, None, "-D"), (3, 3, "d", "+I")]))
    assert t.read_changes(first).num_rows == 0  # no full compaction yet
    t.compact(full=True)
    got = [(r["rowkind"], r["k"], r["a"]) for r in t.read_changes(first).to_pylist()]
    assert got == [("-U", 1, 1), ("+U", 1, 5), ("-D", 2, 2), ("+I", 3, 3)]


def test_full_compaction_producer_with_deletion_vectors_is_refused(catalog) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match="full-compaction"):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={
            "bucket": "1", "changelog-producer": "full-compaction", "deletion-vectors.enabled": "true"})


def test_a_table_with_no_change_between_full_compactions_emits_nothing(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "full-compaction", "changelog-producer.row-deduplicate": "true"})
    t.write(_rows([(1, 1, "a", "+I")]))
    t.compact(full=True)
    first = t.latest_snapshot().id
    t.write(_rows([(1, 1, "a", "+I")]))
    t.compact(full=True)
    assert t.read_changes(first).num_rows == 0
