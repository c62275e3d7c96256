"""Deletion vectors written by laketide: compaction looks keys up in the higher levels and deletes old rows by
vector instead of rewriting their files; checked against a dict oracle at every snapshot."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import CommitConflictError, InvalidOptionError
from laketide.index.deletion_vectors import DeletionVectorIndex, read_dv_index_file
from laketide.meta.snapshot import CommitKind
from laketide.schema.changes import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                    ("op", pa.string())])

ENGINES = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {"fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_non_null_value",
                    "aggregation.remove-record-on-delete": "true"},
}


def _options(engine: str, **extra: str) -> dict[str, str]:
    return {"bucket": "2", "deletion-vectors.enabled": "true", "merge-engine": engine, "rowkind.field": "op",
            **ENGINES[engine], **extra}


def _rows(items: list[tuple]) -> pa.Table:
    # A delete carries its key only: partial-update starts a key deleted and re-inserted in one merge from the
    # delete's values (as Java does), which the oracle does not model.
    items = [(k, None, None, op) if op == "-D" else (k, a, b, op) for k, a, b, op in items]
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def _apply(engine: str, oracle: dict[int, tuple], batch: list[tuple]) -> None:
    for k, a, b, op in batch:
        if op == "-D":
            oracle.pop(k, None)
        elif engine == "deduplicate" or k not in oracle:
            oracle[k] = (a, b)
        elif engine == "partial-update":
            old = oracle[k]
            oracle[k] = (a if a is not None else old[0], b if b is not None else old[1])
        else:
            old = oracle[k]
            total = a if old[0] is None else (old[0] if a is None else old[0] + a)
            oracle[k] = (total, b if b is not None else old[1])


def _state(t, snapshot_id: int | None = None) -> dict[int, tuple]:  # noqa: ANN001
    got = t.read() if snapshot_id is None else t.read(snapshot_id=snapshot_id)
    out: dict[int, tuple] = {}
    for r in got.to_pylist():
        assert r["k"] not in out, f"key {r['k']} read twice"
        out[r["k"]] = (r["a"], r["b"])
    return out


def _check_vectors(t, snapshot) -> int:  # noqa: ANN001
    """Every vector of ``snapshot`` belongs to a live file of its bucket and points at existing rows."""
    scan = t.file_scan()
    files = {(e.partition, e.bucket, e.file.file_name): e.file for e in scan.plan(snapshot)}
    index = DeletionVectorIndex(t.file_io, f"{t.path}/index", entries=scan.index_entries(snapshot))
    deleted = 0
    for e in scan.index_entries(snapshot):
        if e.index_file.index_type != "DELETION_VECTORS":
            continue
        for name, dv in index.dvs_for(e.partition, e.bucket).items():
            f = files.get((e.partition, e.bucket, name))
            assert f is not None, f"vector of {name} in snapshot {snapshot.id}, which has no such file"
            assert f.level > 0
            assert dv.cardinality and int(dv.positions()[-1]) < f.row_count
            deleted += dv.cardinality
    return deleted


def _referenced_index_files(t) -> set[str]:  # noqa: ANN001
    scan = t.file_scan()
    names: set[str] = set()
    for s in t.snapshot_manager.snapshots():
        names |= {e.index_file.file_name for e in scan.index_entries(s)}
    return names


_op = st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(-5, 50)),
                st.one_of(st.none(), st.sampled_from(["x", "y", "zz"])),
                st.sampled_from(["+I", "+I", "+U", "-D"]))
_step = st.one_of(
    st.tuples(st.just("write"), st.lists(_op, min_size=1, max_size=25)),
    st.tuples(st.just("compact"), st.booleans()),
)


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_step, min_size=1, max_size=8), long_lived=st.booleans(),
       trigger=st.sampled_from(["2", "5"]))
def test_reads_equal_the_oracle_at_every_snapshot(engine: str, steps: list, long_lived: bool, trigger: str) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_key=["k"], options=_options(
            engine, **{"num-sorted-run.compaction-trigger": trigger,
                       "compaction.max-size-amplification-percent": "100000", "snapshot.num-retained.min": "1000",
                       "snapshot.num-retained.max": "1000"}))
        writer = t.new_write() if long_lived else None
        oracle: dict[int, tuple] = {}
        seen: dict[int, dict[int, tuple]] = {}
        for kind, arg in steps:
            if kind == "write":
                # One change per key and batch: how a -D and a later +I of one key merge inside a write buffer is
                # the engine's business (test_reads_equal_merge_on_read covers it), not this oracle's.
                arg = list({op[0]: op for op in arg}.values())
                _apply(engine, oracle, arg)
                if writer is not None:
                    writer.write(_rows(arg))
                    t.commit(writer.prepare_commit())
                else:
                    t.write(_rows(arg))
            elif writer is None:  # a long-lived writer keeps its bucket to itself
                t.compact(full=arg)
            latest = t.latest_snapshot()
            if latest is not None:
                assert _state(t) == oracle
                seen[latest.id] = dict(oracle)
        for sid, expected in seen.items():
            assert _state(t, sid) == expected
        for s in t.snapshot_manager.snapshots():
            _check_vectors(t, s)
        t.expire_snapshots(retain_min=1, retain_max=1)
        on_disk = set(os.listdir(f"{t.path}/index")) if os.path.isdir(f"{t.path}/index") else set()
        assert on_disk == _referenced_index_files(t)
        assert _state(t) == oracle


@pytest.mark.parametrize("engine", sorted(ENGINES))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(_op, min_size=1, max_size=25), min_size=1, max_size=6))
def test_reads_equal_merge_on_read(engine: str, batches: list) -> None:
    """Any batches (several changes of a key in one): the DV table reads as the same table merged on read."""
    _assert_reads_as_merge_on_read(_options(engine), batches)


# Deduplicate where the newest row need not win: the older rows found above must be merged, not only deleted.
DEDUPLICATE_VARIANTS = {"sequence.field": {"sequence.field": "a"}, "ignore-delete": {"ignore-delete": "true"}}


@pytest.mark.parametrize("variant", sorted(DEDUPLICATE_VARIANTS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(_op, min_size=1, max_size=25), min_size=1, max_size=6))
def test_deduplicate_variants_read_as_merge_on_read(variant: str, batches: list) -> None:
    _assert_reads_as_merge_on_read(_options("deduplicate", **DEDUPLICATE_VARIANTS[variant]), batches)


def _assert_reads_as_merge_on_read(options: dict[str, str], batches: list) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db")
        extra = {"compaction.max-size-amplification-percent": "100000", "num-sorted-run.compaction-trigger": "2"}
        dv = cat.create_table("db.dv", SCHEMA, primary_key=["k"], options=options | extra)
        mor = cat.create_table("db.mor", SCHEMA, primary_key=["k"], options={
            **options, **extra, "deletion-vectors.enabled": "false"})
        for batch in batches:
            dv.write(_rows(batch))
            mor.write(_rows(batch))
            assert _state(dv) == _state(mor)


@pytest.mark.parametrize("bit64", [False, True])
def test_compaction_deletes_old_rows_by_vector(catalog, bit64: bool) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options=_options(
        "deduplicate", **{"compaction.max-size-amplification-percent": "100000",
                          "deletion-vectors.bitmap64": str(bit64).lower()}))
    t.write(_rows([(k, k, "base", "+I") for k in range(100)]))
    top = {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}
    t.write(_rows([(3, 30, "new", "+I"), (4, None, None, "-D"), (70, 700, "new", "+U")]))
    latest = t.latest_snapshot()
    assert latest.commit_kind is CommitKind.COMPACT
    live = {e.file.file_name: e.file for e in t.file_scan().plan(latest)}
    assert top <= set(live)  # the big files were not rewritten
    assert _check_vectors(t, latest) == 3  # each old row of keys 3, 4, 70 is deleted by vector
    entries = [e for e in t.file_scan().index_entries(latest) if e.index_file.index_type == "DELETION_VECTORS"
               and e.index_file.dv_ranges]
    assert entries
    for entry in entries:
        data = t.file_io.read_bytes(f"{t.path}/index/{entry.index_file.file_name}")
        # What Java's DeletionVectorsIndexFile writes: version 1, then framed vectors of the table's width.
        assert data[0] == 1
        assert entry.index_file.file_size == len(data)
        assert all(dv.bit64 == bit64 for dv in read_dv_index_file(data, entry.index_file.dv_ranges).values())
    expected = {k: (k, "base") for k in range(100)}
    expected.update({3: (30, "new"), 70: (700, "new")})
    del expected[4]
    assert _state(t) == expected
    # A full compaction folds the vectors in and leaves none.
    t.compact(full=True)
    assert _state(t) == expected
    assert _check_vectors(t, t.latest_snapshot()) == 0


def test_long_lived_writer_reuses_its_lookup_files(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options=_options(
        "deduplicate", **{"compaction.max-size-amplification-percent": "100000", "bucket": "1"}))
    t.write(_rows([(k, k, "base", "+I") for k in range(50)]))
    w = t.new_write()
    oracle = {k: (k, "base") for k in range(50)}
    for round_ in range(4):
        batch = [(k, round_, f"r{round_}", "+U") for k in range(round_, 50, 7)]
        w.write(_rows(batch))
        t.commit(w.prepare_commit())
        oracle.update({k: (a, b) for k, a, b, _ in batch})
        assert _state(t) == oracle
    _check_vectors(t, t.latest_snapshot())


def _files(t, snapshot) -> dict[str, int]:  # noqa: ANN001
    return {e.file.file_name: e.file.level for e in t.file_scan().plan(snapshot)}


def _write_and_compact(t, batch: list[tuple]) -> tuple[dict[str, int], dict[str, int]]:  # noqa: ANN001
    """Write ``batch``: the level-0 files its append snapshot added, and the files after its compaction."""
    before = _files(t, t.latest_snapshot()) if t.latest_snapshot() is not None else {}
    t.write(_rows(batch))
    latest = t.latest_snapshot()
    assert latest.commit_kind is CommitKind.COMPACT
    appended = t.snapshot_manager.snapshot(latest.id - 1)
    assert appended.commit_kind is CommitKind.APPEND
    added = {name: level for name, level in _files(t, appended).items() if name not in before}
    assert added and set(added.values()) == {0}
    return added, _files(t, latest)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_level0_files_are_upgraded_without_a_rewrite_where_java_keeps_them(catalog, engine: str) -> None:
    """As Java's LookupMergeTreeCompactRewriter: an insert-only level-0 file going to the top level, or to any level
    under deduplicate, keeps its bytes (its keys' older rows are deleted by vector); otherwise it is rewritten."""
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options=_options(
        engine, **{"bucket": "1", "compaction.max-size-amplification-percent": "100000"}))
    oracle: dict[int, tuple] = {}
    base = [(k, k, "base", "+I") for k in range(100)]
    _apply(engine, oracle, base)
    added, after = _write_and_compact(t, base)
    assert {after[name] for name in added} == {5}  # the first write: to the top level, as it is
    assert _check_vectors(t, t.latest_snapshot()) == 0
    update = [(k, 1, "new", "+U") for k in range(90, 110)]  # ten old keys, ten new ones
    _apply(engine, oracle, update)
    added, after = _write_and_compact(t, update)
    upgraded = [name for name in added if name in after]
    if engine == "deduplicate":
        assert [after[name] for name in upgraded] == [4]  # under the top level's file, kept as it is
    else:
        assert upgraded == []  # its rows must fold in the older values
    assert _check_vectors(t, t.latest_snapshot()) == 10
    assert _state(t) == oracle
    deletes = [(k, None, None, "-D") for k in (0, 95, 105)]
    _apply(engine, oracle, deletes)
    added, after = _write_and_compact(t, deletes)
    assert not set(added) & set(after)  # retractions are dropped, so the file is rewritten
    assert _state(t) == oracle
    t.compact(full=True)
    assert _state(t) == oracle and _check_vectors(t, t.latest_snapshot()) == 0


def test_concurrent_compactions_of_one_bucket_conflict(catalog) -> None:  # noqa: ANN001
    """Two jobs that delete rows of the same file by vector: the second must not replace the first's vectors."""
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options=_options(
        "deduplicate", **{"compaction.max-size-amplification-percent": "100000", "bucket": "1",
                          "write-only": "true"}))
    t.write(_rows([(k, k, "base", "+I") for k in range(20)]))
    t.compact()
    first = t.new_write(compact=False)
    first.write(_rows([(1, 100, "one", "+U")]))
    t.commit(first.prepare_commit())
    from laketide.table.compact import compact_bucket, plan_compaction

    tasks_a = plan_compaction(t)
    tasks_b = plan_compaction(t)
    t.commit([m for m in (compact_bucket(t, task) for task in tasks_a) if m is not None])
    messages_b = [m for m in (compact_bucket(t, task) for task in tasks_b) if m is not None]
    with pytest.raises(CommitConflictError):
        t.commit(messages_b)
    expected = {k: (k, "base") for k in range(20)}
    expected[1] = (100, "one")
    assert _state(t) == expected


# -- bad input ---------------------------------------------------------------------------------------------------

def test_first_row_with_deletion_vectors_is_refused(catalog, tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match="first-row"):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={
            "bucket": "1", "merge-engine": "first-row", "deletion-vectors.enabled": "true"})
    assert not catalog.table_exists("db.bad") if hasattr(catalog, "table_exists") else True


def test_switching_deletion_vectors_needs_modifiable(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    t.write(_rows([(1, 1, "a", "+I")]))
    with pytest.raises(InvalidOptionError, match="deletion-vectors.modifiable"):
        t.alter(SetOption("deletion-vectors.enabled", "true"))
    assert t.schema.id == 0
    t.alter(SetOption("deletion-vectors.modifiable", "true"), SetOption("deletion-vectors.enabled", "true"))
    assert t.options.deletion_vectors_enabled
