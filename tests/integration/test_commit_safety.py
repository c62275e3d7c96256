"""Committed data stays committed: issue 14, defects 1 (a lost compaction deleted committed files), 2 (retried or
foreign commits were accepted) and 6 (concurrent writers of one bucket: the later commit must win).

Each test asserts the typed error and that no file changed outside what the call owns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import (
    AlreadyCommittedError,
    CommitConflictError,
    CommitError,
    ForeignCommitMessageError,
    SequenceConflictError,
)
from laketide.meta.commit_message import CommitMessage
from laketide.meta.snapshot import CommitKind
from laketide.scan.file_scan import FileStoreScan
from laketide.table.orphan import _used_names
from laketide.table.table import Table
from laketide.write.commit import FileStoreCommit

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def rows(items: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"k": [r[0] for r in items], "dt": [r[1] for r in items], "v": [r[2] for r in items]},
                    schema=SCHEMA)


def pk_table(catalog: laketide.Catalog, name: str = "db.t", **options: str) -> Table:
    return catalog.create_table(name, SCHEMA, primary_key=["k", "dt"], partition_keys=["dt"], options=options)


def as_dict(t: Table, **read: Any) -> dict[tuple[int, str], str]:
    out: dict[tuple[int, str], str] = {}
    for r in t.read(**read).to_pylist():
        key = (r["k"], r["dt"])
        assert key not in out, f"duplicate key {key}"
        out[key] = r["v"]
    return out


def all_files(t: Table) -> dict[str, int]:
    """Every file of the table with its modification time (a rewrite shows)."""
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns for d, _, fs in os.walk(t.path) for f in fs}


def unreferenced(t: Table) -> set[str]:
    used = _used_names(t.store)
    return {p for p in all_files(t) if "/schema/" not in p and "/snapshot/" not in p
            and os.path.basename(p) not in used}


def every_snapshot_reads(t: Table) -> None:
    fresh = Table(name=t.name, path=t.path, file_io=t.file_io)
    for sid in fresh.snapshot_manager.snapshot_ids():
        fresh.read(snapshot_id=sid)


def messages_of(t: Table, data: pa.Table) -> list[CommitMessage]:
    w = t.new_write()
    w.write(data)
    msgs = w.prepare_commit()
    w.close()
    return msgs


# -- 1: a compaction that loses after its APPEND landed ------------------------------------------------------------
@pytest.fixture()
def compacting(catalog) -> Table:  # noqa: ANN001
    # Default options (writers compact), and every write compacts its bucket fully.
    t = pk_table(catalog, **{"bucket": "1", "full-compaction.delta-commits": "1"})
    for i in range(3):
        t.write(rows([(k, "a", f"v{i}") for k in range(10)]))
    return t


def _race_compaction(monkeypatch, other: Table) -> list[int]:  # noqa: ANN001
    """Before the writer's COMPACT commit, another job compacts the same bucket fully (a real conflict)."""
    real = FileStoreCommit._commit_compact
    raced: list[int] = []

    def racing(self, delta, **kw):  # noqa: ANN001, ANN003, ANN202
        if not raced:
            raced.append(0)  # once: the other job's own COMPACT passes through here too
            sid = other.compact(full=True)
            assert sid is not None
            raced[0] = sid
        return real(self, delta, **kw)

    monkeypatch.setattr(FileStoreCommit, "_commit_compact", racing)
    return raced


def test_a_lost_compaction_keeps_the_landed_append(compacting, monkeypatch, caplog) -> None:  # noqa: ANN001
    t = compacting
    other = Table(name=t.name, path=t.path, file_io=t.file_io)
    raced = _race_compaction(monkeypatch, other)
    before = t.latest_snapshot()
    with caplog.at_level(logging.WARNING, logger="laketide.write.commit"):
        sid = t.write(rows([(k, "a", "new") for k in range(5)]))
    monkeypatch.undo()
    assert raced and sid is not None
    append = t.snapshot(sid)
    assert append.commit_kind is CommitKind.APPEND and sid == before.id + 1  # the APPEND's id is reported
    assert t.latest_snapshot().id == raced[0]  # the other job's COMPACT; ours never landed
    assert any("was not committed" in r.getMessage() and "CommitConflictError" in r.getMessage()
               for r in caplog.records)
    every_snapshot_reads(t)  # defect 1: the APPEND's files were deleted and the table became unreadable
    assert as_dict(t) == {**{(k, "a"): "v2" for k in range(10)}, **{(k, "a"): "new" for k in range(5)}}
    assert not unreferenced(t)  # the lost compaction's outputs were removed, nothing else


def test_a_compaction_that_runs_out_of_retries_keeps_the_landed_append(compacting, monkeypatch) -> None:  # noqa: ANN001
    t = compacting
    sm_cls = type(t.snapshot_manager)
    real = sm_cls.try_publish

    def no_compaction(self, snapshot):  # noqa: ANN001, ANN202 - compactions always lose the race
        return False if snapshot.commit_kind is CommitKind.COMPACT else real(self, snapshot)

    monkeypatch.setattr(sm_cls, "try_publish", no_compaction)
    monkeypatch.setattr(FileStoreCommit, "_backoff", lambda self, attempt: None)
    sid = t.write(rows([(k, "a", "new") for k in range(5)]))
    monkeypatch.undo()
    assert sid is not None and t.snapshot(sid).commit_kind is CommitKind.APPEND
    every_snapshot_reads(t)
    assert as_dict(t)[(0, "a")] == "new"
    assert not unreferenced(t)


def test_abort_keeps_every_file_a_snapshot_holds(catalog, caplog) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1")
    t.write(rows([(1, "a", "x")]))
    msgs = messages_of(t, rows([(2, "a", "y")]))
    t.commit(msgs)
    t.compact(full=True)  # the committed files are replaced: no longer live, still in snapshot 2
    files = all_files(t)
    with caplog.at_level(logging.WARNING, logger="laketide.write.commit"):
        t.abort(msgs)  # e.g. a Spark abort after a commit that landed, or a replay
    assert all_files(t) == files
    assert any("they are kept" in r.getMessage() for r in caplog.records)
    every_snapshot_reads(t)
    # Messages that never landed are deleted as before.
    dropped = messages_of(t, rows([(3, "a", "z")]))
    new = set(all_files(t)) - set(files)
    assert new
    t.abort(dropped)
    assert all_files(t) == files


def test_a_failed_two_phase_commit_is_aborted_without_touching_the_table(catalog, monkeypatch) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1", **{"commit.max-retries": "1"})
    t.write(rows([(1, "a", "x")]))
    files = all_files(t)
    monkeypatch.setattr(type(t.snapshot_manager), "try_publish", lambda self, snapshot: False)
    monkeypatch.setattr(FileStoreCommit, "_backoff", lambda self, attempt: None)
    with pytest.raises(CommitError, match="after 1 retries"):
        t.write(rows([(2, "a", "y")]))
    monkeypatch.undo()
    assert all_files(t) == files


# -- 2: retried and foreign commits --------------------------------------------------------------------------------
def test_the_same_messages_committed_twice_are_refused(catalog) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="2")
    t.write(rows([(k, "a", "old") for k in range(6)]))
    msgs = messages_of(t, rows([(k, "a", "new") for k in range(6)]))
    sid = t.commit(msgs)
    state = (t.latest_snapshot(), all_files(t))
    with pytest.raises(AlreadyCommittedError, match=f"already added.*added by snapshot {sid}"):
        t.commit(msgs)  # the retry after a timeout, without commit_user
    assert (t.latest_snapshot(), all_files(t)) == state
    # ... also once a compaction replaced the files (they are not live any more, but were added after the write).
    t.compact(full=True)
    state = (t.latest_snapshot(), all_files(t))
    with pytest.raises(AlreadyCommittedError, match=f"added by snapshot {sid}"):
        t.commit(msgs)
    assert (t.latest_snapshot(), all_files(t)) == state
    assert as_dict(t) == {(k, "a"): "new" for k in range(6)}
    every_snapshot_reads(t)


def test_duplicates_within_append_tables_are_refused_too(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.log", SCHEMA, options={"bucket": "-1"})
    msgs = messages_of(t, rows([(1, "a", "x")]))
    t.commit(msgs)
    state = (t.latest_snapshot(), all_files(t))
    with pytest.raises(AlreadyCommittedError):
        t.commit(msgs)
    assert (t.latest_snapshot(), all_files(t)) == state
    assert t.read().num_rows == 1


def test_messages_of_another_table_are_refused(catalog) -> None:  # noqa: ANN001
    a = pk_table(catalog, "db.a", bucket="1")
    b = pk_table(catalog, "db.b", bucket="1")
    b.write(rows([(9, "a", "b")]))
    msgs = messages_of(a, rows([(1, "a", "x")]))
    state = (b.latest_snapshot(), all_files(b))
    with pytest.raises(ForeignCommitMessageError, match="written for the table at"):
        b.commit(msgs)
    assert (b.latest_snapshot(), all_files(b)) == state
    a.commit(msgs)  # they still belong to their own table
    assert as_dict(a) == {(1, "a"): "x"}


def test_messages_of_a_dropped_and_recreated_table_are_refused(catalog) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1")
    msgs = messages_of(t, rows([(1, "a", "x")]))
    catalog.drop_table("db.t")
    again = pk_table(catalog, bucket="1")
    assert again.path == t.path
    state = all_files(again)
    with pytest.raises(ForeignCommitMessageError, match="re-created"):
        again.commit(msgs)
    assert all_files(again) == state and again.latest_snapshot() is None


def test_commit_messages_pickle_with_their_origin_and_old_ones_still_commit(catalog) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1")
    msgs = messages_of(t, rows([(1, "a", "x")]))
    assert all(m.origin is not None and m.origin.table_path == t.path for m in msgs)
    assert pickle.loads(pickle.dumps(msgs)) == msgs
    # A message built without an origin (by hand, or by an older laketide) is not checked for its table.
    legacy = [CommitMessage(partition=m.partition, bucket=m.bucket, total_buckets=m.total_buckets,
                            new_files=m.new_files) for m in msgs]
    assert t.commit(legacy) is not None
    with pytest.raises(AlreadyCommittedError):  # ... but a duplicate still is refused (live files)
        t.commit(legacy)


def test_the_duplicate_check_reads_only_the_changed_partitions(catalog, monkeypatch) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1")
    for p in range(30):
        t.write(rows([(1, f"p{p}", "x")]))
    msgs = messages_of(t, rows([(2, "p7", "y")]))
    planned: list[str] = []
    real = FileStoreScan.plan

    def recording(self, snapshot, **kw):  # noqa: ANN001, ANN003, ANN202
        out = real(self, snapshot, **kw)
        planned.extend(self.partition_codec.values(e.partition)[0] for e in out)
        return out

    monkeypatch.setattr(FileStoreScan, "plan", recording)
    # A committer that did not write (a Spark driver): the writer's own restore plan is not at hand.
    Table(name=t.name, path=t.path, file_io=t.file_io).commit(msgs)
    monkeypatch.undo()
    assert planned and set(planned) == {"p7"}


# -- 6: concurrent writers of one bucket ---------------------------------------------------------------------------
def test_a_second_two_phase_writer_of_a_bucket_is_refused(catalog) -> None:  # noqa: ANN001
    t = pk_table(catalog, bucket="1")
    t.write(rows([(1, "a", "base")]))
    w1, w2 = t.new_write(), t.new_write()
    w1.write(rows([(1, "a", "first")]))
    w2.write(rows([(1, "a", "second")]))
    t.commit(w1.prepare_commit())
    m2 = w2.prepare_commit()
    state = (t.latest_snapshot(), all_files(t))
    with pytest.raises(SequenceConflictError, match=r"only writer of its buckets.*paimon#5872") as err:
        t.commit(m2)
    assert isinstance(err.value, CommitConflictError)
    assert (t.latest_snapshot(), all_files(t)) == state
    t.abort(m2)
    assert as_dict(t) == {(1, "a"): "first"}
    # Writers of other buckets (here: partitions) never conflict.
    w3, w4 = t.new_write(), t.new_write()
    w3.write(rows([(1, "b", "b")]))
    w4.write(rows([(1, "c", "c")]))
    t.commit(w4.prepare_commit())
    t.commit(w3.prepare_commit())
    assert as_dict(t) == {(1, "a"): "first", (1, "b"): "b", (1, "c"): "c"}


def _interleave(monkeypatch, action) -> list[int]:  # noqa: ANN001
    """Run ``action`` once, just before the first APPEND commit of the code under test publishes."""
    real = FileStoreCommit._commit_changes
    done: list[int] = []

    def hooked(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if not done:
            done.append(1)
            action()
        return real(self, *args, **kw)

    monkeypatch.setattr(FileStoreCommit, "_commit_changes", hooked)
    return done


@pytest.mark.parametrize("options", [{"bucket": "1"}, {}], ids=["fixed-bucket", "default-dynamic-bucket"])
def test_the_later_commit_wins_before_and_after_compaction(catalog, monkeypatch, options) -> None:  # noqa: ANN001
    t = pk_table(catalog, **options)
    t.write(rows([(k, "a", "base") for k in range(4)]))
    other = Table(name=t.name, path=t.path, file_io=t.file_io)
    # Writer A restores the bucket, then B writes and commits the same keys before A's commit.
    _interleave(monkeypatch, lambda: other.write(rows([(k, "a", "B") for k in range(3)])))
    sid_a = t.write(rows([(k, "a", "A") for k in range(1, 4)]))
    monkeypatch.undo()
    appends = [s for s in (t.snapshot(i) for i in t.snapshot_manager.snapshot_ids())
               if s.commit_kind is CommitKind.APPEND]
    assert appends[-1].id <= sid_a  # A's APPEND landed after B's: A wrote again on top of B
    expected = {(0, "a"): "B", (1, "a"): "A", (2, "a"): "A", (3, "a"): "A"}
    assert as_dict(t) == expected
    t.compact(full=True)
    assert as_dict(t) == expected  # the same after a full compaction (a tie used to flip here)
    live = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    every_snapshot_reads(t)
    assert live


def test_sequence_field_decides_first_and_commit_order_breaks_ties(catalog, monkeypatch) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.s", schema, primary_key=["k"],
                             options={"bucket": "1", "sequence.field": "ts"})
    t.write(pa.table({"k": [1, 2], "ts": [0, 0], "v": ["base", "base"]}, schema=schema))
    other = Table(name=t.name, path=t.path, file_io=t.file_io)
    # B commits ts=5 for key 1 and ts=3 for key 2; A commits later with ts=3 for both.
    _interleave(monkeypatch, lambda: other.write(pa.table({"k": [1, 2], "ts": [5, 3], "v": ["B", "B"]},
                                                           schema=schema)))
    t.write(pa.table({"k": [1, 2], "ts": [3, 3], "v": ["A", "A"]}, schema=schema))
    monkeypatch.undo()
    got = {r["k"]: r["v"] for r in t.read().to_pylist()}
    assert got == {1: "B", 2: "A"}  # the user's field decides; on a tie the later commit wins
    t.compact(full=True)
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == got


def test_append_tables_take_concurrent_writers_of_a_bucket(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.log", SCHEMA, options={"bucket": "1", "bucket-key": "k"})
    w1, w2 = t.new_write(), t.new_write()
    w1.write(rows([(1, "a", "x")]))
    w2.write(rows([(1, "a", "y")]))
    t.commit(w1.prepare_commit())
    t.commit(w2.prepare_commit())
    assert sorted(t.read().column("v").to_pylist()) == ["x", "y"]


# Property: any interleaving of two-phase writers of one bucket gives what a dict oracle built from the order of
# the commits that landed says, and a full compaction never changes it.
_op = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 2), st.lists(st.integers(0, 5), min_size=1, max_size=4)),
    st.tuples(st.just("commit"), st.integers(0, 2)),
    st.tuples(st.just("compact"), st.just(0)),
)


@settings(max_examples=25)
@given(ops=st.lists(_op, min_size=1, max_size=14))
def test_interleaved_writers_match_a_commit_order_oracle(tmp_path_factory, ops) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db", exist_ok=True)
    t = pk_table(cat, bucket="1", **{"write-only": "true"})
    oracle: dict[tuple[int, str], str] = {}
    writers: dict[int, Any] = {}
    pending: dict[int, dict[tuple[int, str], str]] = {}
    for n, op in enumerate(ops):
        if op[0] == "write":
            _, w, keys = op
            if w not in writers:
                writers[w] = t.new_write()  # restores the bucket as it is now
                pending[w] = {}
            data = rows([(k, "a", f"{w}.{n}.{k}") for k in keys])
            writers[w].write(data)
            pending[w].update({(k, "a"): f"{w}.{n}.{k}" for k in keys})
        elif op[0] == "commit" and op[1] in writers:
            w = op[1]
            msgs = writers[w].prepare_commit()
            try:
                t.commit(msgs)
                oracle.update(pending[w])
            except SequenceConflictError:
                t.abort(msgs)
                del writers[w]  # a refused writer starts over from the latest snapshot
            else:
                pending[w] = {}
        elif op[0] == "compact":
            t.compact(full=True)
        assert as_dict(t) == oracle
    t.compact(full=True)
    assert as_dict(t) == oracle


def test_a_write_whose_restored_files_were_expired_meanwhile_writes_again(catalog, monkeypatch, caplog) -> None:  # noqa: ANN001
    from laketide.table.compact import BucketFiles

    t = pk_table(catalog, bucket="1", **{"full-compaction.delta-commits": "1"})
    plain = dataclasses.replace(t.schema, options={**t.schema.options, "write-only": "true"})
    setup = Table(name=t.name, path=t.path, file_io=t.file_io, schema=plain)  # writes without compacting
    setup.write(rows([(k, "a", "old") for k in range(5)]))
    setup.write(rows([(k, "a", "mid") for k in range(3)]))  # two files the next writer restores
    other = Table(name=t.name, path=t.path, file_io=t.file_io)
    real = BucketFiles._load
    raced: list[int] = []

    def load_then_race(self):  # noqa: ANN001, ANN202 - the writer restored; another job compacts and expires
        out = real(self)
        if not raced:
            raced.append(1)
            other.compact(full=True)
            other.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
        return out

    monkeypatch.setattr(BucketFiles, "_load", load_then_race)
    with caplog.at_level(logging.INFO, logger="laketide.table.table"):
        sid = t.write(rows([(k, "a", "new") for k in range(2)]))
    monkeypatch.undo()
    assert raced and sid is not None
    assert any("(WriteConflictError); writing again" in r.getMessage() for r in caplog.records)
    assert as_dict(t) == {(0, "a"): "new", (1, "a"): "new", (2, "a"): "mid", (3, "a"): "old", (4, "a"): "old"}
    every_snapshot_reads(t)
