"""LSM compaction against a dict oracle: automatic, explicit, COW, write-only + dedicated compaction jobs."""

from __future__ import annotations

import collections
import os

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import CommitConflictError, PredicateError
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import FileKind, FileSource
from laketide.meta.snapshot import CommitKind
from laketide.mergetree.levels import Levels

SCHEMA = pa.schema([("k", pa.int32()), ("part", pa.string()), ("name", pa.string()), ("v", pa.int64())])


def rows(items: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def as_dict(table: pa.Table) -> dict[tuple, tuple]:
    out = {}
    for r in table.to_pylist():
        key = (r["k"], r["part"])
        assert key not in out, f"duplicate key {key}"
        out[key] = (r["name"], r["v"])
    return out


def bucket_files(t) -> dict[tuple[bytes, int], list]:  # noqa: ANN001
    scan = t.file_scan()
    out: dict[tuple[bytes, int], list] = collections.defaultdict(list)
    latest = t.latest_snapshot()
    for e in scan.plan(latest) if latest is not None else []:
        out[(e.partition, e.bucket)].append(e.file)
    return out


def levels_of(t, files) -> Levels:  # noqa: ANN001
    types = [t.schema.field(k).type for k in t.schema.trimmed_primary_keys]
    # Levels rejects overlapping files above level 0
    return Levels(files, num_levels=t.options.num_levels, key_of=lambda raw: tuple(deserialize_binary_row(raw, types)))


def assert_fully_compacted(t) -> None:  # noqa: ANN001
    top = t.options.num_levels - 1
    for files in bucket_files(t).values():
        levels = levels_of(t, files)
        assert all(f.level == top for f in files)
        assert levels.number_of_sorted_runs() == 1
        assert all(not f.delete_row_count for f in files)  # the top level keeps no retractions


_row = st.tuples(st.integers(0, 30), st.sampled_from(["p0", "p1"]), st.text(alphabet="abxyz", max_size=10),
                 st.integers(-9, 9))
_op = st.one_of(
    st.tuples(st.sampled_from(["upsert", "delete"]), st.lists(_row, min_size=1, max_size=25)),
    st.tuples(st.sampled_from(["compact", "full"]), st.just([])),
)

MODES = {
    "auto": {"num-sorted-run.compaction-trigger": "2", "num-sorted-run.stop-trigger": "3"},
    "cow": {"full-compaction.delta-commits": "1"},
    "write-only": {"write-only": "true"},
    "levels": {"num-levels": "3", "num-sorted-run.compaction-trigger": "3", "compaction.size-ratio": "20"},
}


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=8))
def test_compaction_keeps_the_table_equal_to_the_oracle(tmp_path_factory, mode: str, ops) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path_factory.mktemp("wh")))
    cat.create_database("db")
    options = {"bucket": "2", "write-buffer-size": "2 kb", "target-file-size": "1 kb", **MODES[mode]}
    t = cat.create_table("db.t", SCHEMA, primary_key=["k", "part"], partition_keys=["part"], options=options)
    oracle: dict[tuple, tuple] = {}
    for kind, items in ops:
        if kind in ("compact", "full"):
            sid = t.compact(full=kind == "full")
            if sid is not None:
                assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
            if kind == "full":
                assert_fully_compacted(t)
                assert as_dict(t.read(read_optimized=True)) == oracle
        else:
            w = t.new_write()
            if kind == "upsert":
                w.write(rows(items))
            else:
                w.delete(rows(items))
            t.commit(w.prepare_commit())
            for k, part, name, v in items:
                if kind == "upsert":
                    oracle[(k, part)] = (name, v)
                else:
                    oracle.pop((k, part), None)
            if mode == "cow":
                assert_fully_compacted(t)
            if mode == "write-only":  # writers never compact: no COMPACT snapshot after a write
                assert t.latest_snapshot().commit_kind is CommitKind.APPEND
        assert as_dict(t.read()) == oracle
    if t.latest_snapshot() is not None:
        for files in bucket_files(t).values():
            levels_of(t, files)  # every level above 0 is one sorted run


def test_commit_of_a_compacting_writer_gives_append_then_compact(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"],
                             options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"})
    t.write(rows([(k, "a", "x", 1) for k in range(10)]))
    w = t.new_write()
    w.write(rows([(k, "a", "y", 2) for k in range(5, 15)]))
    messages = w.prepare_commit()
    (m,) = messages
    assert m.new_files and m.compact_before and m.compact_after
    assert set(f.file_name for f in m.new_files) <= {f.file_name for f in m.compact_before}
    sid = t.commit(messages, commit_user="job", commit_identifier=7)
    append, compact = t.snapshot(sid - 1), t.snapshot(sid)
    assert (append.commit_kind, compact.commit_kind) == (CommitKind.APPEND, CommitKind.COMPACT)
    assert append.commit_identifier == compact.commit_identifier == 7
    scan = t.file_scan()
    delta = [e for mf in scan.manifest_list(compact.delta_manifest_list) for e in scan.manifest(mf.file_name)]
    assert {e.file.file_name for e in delta if e.kind is FileKind.DELETE} == {f.file_name for f in m.compact_before}
    assert all(e.file.file_source is FileSource.COMPACT for e in delta if e.kind is FileKind.ADD)
    assert t.commit(messages, commit_user="job", commit_identifier=7) == sid  # idempotent
    assert as_dict(t.read()) == {(k, "a"): ("x", 1) if k < 5 else ("y", 2) for k in range(15)}


def test_stop_trigger_makes_the_writer_compact_before_taking_more(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={
        "bucket": "1", "write-buffer-size": "1 kb", "num-sorted-run.compaction-trigger": "2",
        "num-sorted-run.stop-trigger": "3"})
    w = t.new_write()
    for r in range(12):
        w.write(rows([(k, "a", f"r{r}", r) for k in range(r * 3, r * 3 + 40)]))
        writer = next(iter(w._writers.values()))
        assert writer.manager.levels.number_of_sorted_runs() <= 3  # type: ignore[attr-defined]
    t.commit(w.prepare_commit())
    expected: dict[tuple, tuple] = {}
    for r in range(12):
        expected.update({(k, "a"): (f"r{r}", r) for k in range(r * 3, r * 3 + 40)})
    assert as_dict(t.read()) == expected


def test_upgrade_moves_big_non_overlapping_files_without_rewriting(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"],
                             options={"bucket": "1", "write-only": "true", "target-file-size": "1 kb"})
    t.write(rows([(k, "a", "x" * 50, k) for k in range(0, 100)]))
    t.write(rows([(k, "a", "y" * 50, k) for k in range(1000, 1100)]))  # no overlap with the first run
    before = {f.file_name for fs in bucket_files(t).values() for f in fs}
    t.compact(full=True)
    after = {f.file_name: f for fs in bucket_files(t).values() for f in fs}
    assert before == set(after)  # renamed nothing, rewrote nothing: only the level changed
    assert all(f.level == t.options.num_levels - 1 for f in after.values())
    assert t.read().num_rows == 200


def test_deletes_survive_until_the_top_level(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"],
                             options={"bucket": "1", "write-only": "true", "num-levels": "4"})
    t.write(rows([(k, "a", "old", k) for k in range(20)]))
    t.compact(full=True)  # level 3
    w = t.new_write()
    w.delete(rows([(k, "a", "", 0) for k in range(5)]))
    t.commit(w.prepare_commit())
    t.write(rows([(k, "a", "new", k) for k in range(15, 25)]))
    t.compact()  # below the threshold of the strategy: nothing, or a partial compaction keeping retractions
    assert sorted(as_dict(t.read())) == [(k, "a") for k in range(5, 25)]
    t.compact(full=True)
    assert_fully_compacted(t)
    assert sorted(as_dict(t.read())) == [(k, "a") for k in range(5, 25)]


def test_compact_some_partitions_or_a_partition_predicate(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], partition_keys=["part"],
                             options={"bucket": "1", "write-only": "true"})
    for r in range(3):
        t.write(rows([(k, p, f"r{r}", r) for k in range(10) for p in ("p0", "p1", "p2")]))
    t.compact(full=True, partitions=[{"part": "p0"}])
    levels = {p: {f.level for f in fs} for (p, _), fs in bucket_files(t).items()}
    codec = t.file_scan().partition_codec
    by_name = {codec.values(p)[0]: lv for p, lv in levels.items()}
    assert by_name == {"p0": {t.options.num_levels - 1}, "p1": {0}, "p2": {0}}
    t.compact(full=True, where="part = 'p2'")
    by_name = {codec.values(p)[0]: {f.level for f in fs} for (p, _), fs in bucket_files(t).items()}
    assert by_name["p1"] == {0} and by_name["p2"] == {t.options.num_levels - 1}
    with pytest.raises(PredicateError, match="partition keys"):
        t.compact(where="k = 1")
    assert len(as_dict(t.read())) == 30


def test_racing_compactions_fail_with_conflict_and_change_nothing(catalog, warehouse) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={"bucket": "1", "write-only": "true"})
    for r in range(3):
        t.write(rows([(k, "a", f"r{r}", r) for k in range(r, r + 20)]))
    other = laketide.load_catalog(warehouse=warehouse).table("db.t")
    racing = catalog.table("db.t")
    original_commit = racing.commit

    def commit_after_the_other_job(messages, **kwargs):  # noqa: ANN001, ANN202
        other.compact(full=True)  # the other job wins the race for the same bucket
        return original_commit(messages, **kwargs)

    racing.commit = commit_after_the_other_job  # type: ignore[method-assign]
    with pytest.raises(CommitConflictError):
        racing.compact(full=True)
    winner = t.latest_snapshot()
    assert winner.commit_kind is CommitKind.COMPACT and winner.id == 4  # the loser published nothing
    on_disk = set(os.listdir(f"{t.path}/bucket-0"))
    assert on_disk == _names_of_history(t)  # the loser's output files were deleted
    assert as_dict(t.read()) == {(k, "a"): (f"r{min(2, k)}", min(2, k)) for k in range(22)}


def _names_of_history(t) -> set[str]:  # noqa: ANN001
    scan = t.file_scan()
    names = set()
    for sid in range(1, t.latest_snapshot().id + 1):
        names |= {e.file.file_name for e in scan.plan(t.snapshot(sid))}
    return names


def test_append_table_small_file_compaction(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    t = catalog.create_table("db.a", schema, options={"bucket": "-1", "compaction.min.file-num": "3"})
    for i in range(6):
        t.write(pa.table({"id": [i * 10 + j for j in range(10)], "s": [f"s{i}"] * 10}))
    assert sum(len(s.files) for s in t.scan().plan()) == 6
    sid = t.compact()
    assert t.snapshot(sid).commit_kind is CommitKind.COMPACT
    files = [f for s in t.scan().plan() for f in s.files]
    assert len(files) == 1 and files[0].file_source is FileSource.COMPACT
    assert sorted(t.read().column("id").to_pylist()) == list(range(60))
    assert t.compact() is None  # one file left: nothing to do
    fixed = catalog.create_table("db.b", schema, options={"bucket": "2", "bucket-key": "id"})
    for i in range(3):
        fixed.write(pa.table({"id": list(range(i * 10, i * 10 + 10)), "s": ["x"] * 10}))
    fixed.compact(full=True)
    assert all(len(s.files) == 1 for s in fixed.scan().plan())
    assert sorted(fixed.read().column("id").to_pylist()) == list(range(30))


def test_read_optimized_reads_only_the_top_level(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k", "part"], options={"bucket": "2", "write-only": "true"})
    t.write(rows([(k, "a", "v1", 1) for k in range(10)]))
    assert t.read(read_optimized=True).num_rows == 0  # nothing compacted yet
    t.compact(full=True)
    t.write(rows([(k, "a", "v2", 2) for k in range(5)]))
    ro = as_dict(catalog.table("db.t$ro").read())
    assert ro == {(k, "a"): ("v1", 1) for k in range(10)}  # stale by design: the last write is still in level 0
    assert as_dict(t.read())[(0, "a")] == ("v2", 2)
