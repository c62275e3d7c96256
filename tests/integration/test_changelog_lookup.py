"""changelog-producer = lookup: compaction of level 0 emits what readers saw before and see after, per merge engine.

Property: replaying the changelog from snapshot 1 into a dict (+I / +U put, -U / -D delete) equals the batch read
at every COMPACT snapshot, and every -U / -D carries exactly the row the consumer holds for that key.
"""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
from laketide.meta.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                    ("op", pa.string())])

ENGINES = {
    "deduplicate": ({}, ["+I", "+U", "-U", "-D"]),
    "partial-update": ({"partial-update.remove-record-on-delete": "true"}, ["+I", "+U", "-D"]),
    "aggregation": ({"fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_non_null_value",
                     "aggregation.remove-record-on-delete": "true"}, ["+I", "+U", "-D"]),
    "first-row": ({"ignore-delete": "true"}, ["+I", "-D"]),
}
CASES = [(e, dv) for e in sorted(ENGINES) for dv in (False, True) if not (e == "first-row" and dv)]


def _rows(items: list[tuple]) -> pa.Table:
    items = [(k, None, None, op) if op == "-D" else (k, a, b, op) for k, a, b, op in items]
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in items], schema=SCHEMA)


def _row(r: dict) -> tuple:
    return tuple(r[n] for n in SCHEMA.names)


def _replay(changes: pa.Table, state: dict[int, tuple]) -> None:
    for r in changes.to_pylist():
        kind = r.pop("rowkind")
        if kind in ("+I", "+U"):
            assert kind == "+U" or r["k"] not in state, f"+I of key {r['k']} the consumer holds already"
            state[r["k"]] = _row(r)
        else:
            assert state.get(r["k"]) == _row(r), f"{kind} {r} does not retract what the consumer holds"
            del state[r["k"]]


def _batch(t, snapshot_id: int) -> dict[int, tuple]:  # noqa: ANN001
    return {r["k"]: _row(r) for r in t.read(snapshot_id=snapshot_id).to_pylist()}


def _table(warehouse: str, engine: str, dv: bool, **extra: str):  # noqa: ANN202
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "2", "changelog-producer": "lookup", "merge-engine": engine, "rowkind.field": "op",
        "deletion-vectors.enabled": str(dv).lower(), **ENGINES[engine][0], **extra})


@st.composite
def _steps(draw, kinds: list[str]) -> list:  # noqa: ANN001
    op = st.tuples(st.integers(0, 20), st.one_of(st.none(), st.integers(-3, 30)),
                   st.one_of(st.none(), st.sampled_from(["x", "y"])), st.sampled_from(kinds))
    step = st.one_of(st.tuples(st.just("write"), st.lists(op, min_size=1, max_size=15)),
                     st.tuples(st.just("compact"), st.just(True)))
    return draw(st.lists(step, min_size=1, max_size=7))


@pytest.mark.parametrize("engine, dv", CASES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), long_lived=st.booleans(), trigger=st.sampled_from(["2", "5"]))
def test_replaying_the_changelog_equals_the_batch_read(engine: str, dv: bool, data, long_lived: bool,  # noqa: ANN001
                                                       trigger: str) -> None:
    steps = data.draw(_steps(ENGINES[engine][1]))
    with tempfile.TemporaryDirectory() as warehouse:
        t = _table(warehouse, engine, dv, **{"num-sorted-run.compaction-trigger": trigger})
        writer = t.new_write() if long_lived else None
        state: dict[int, tuple] = {}
        done = 0
        for kind, arg in steps:
            if kind == "write":
                if writer is not None:
                    writer.write(_rows(arg))
                    t.commit(writer.prepare_commit())
                else:
                    t.write(_rows(arg))
            elif writer is None:
                t.compact(full=arg)
            latest = t.latest_snapshot()
            if latest is None or latest.id == done:
                continue
            # Level 0 is folded in at every commit: the last snapshot is the COMPACT one with the changelog.
            assert latest.commit_kind is CommitKind.COMPACT
            _replay(t.read_changes(done, latest.id), state)
            assert state == _batch(t, latest.id)
            done = latest.id


def test_update_emits_before_and_after_images(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "lookup", "rowkind.field": "op", "merge-engine": "partial-update"})
    t.write(_rows([(1, 10, "x", "+I"), (2, 20, "y", "+I")]))
    first = t.latest_snapshot().id
    t.write(_rows([(1, None, "z", "+I"), (3, 30, None, "+I")]))
    got = [(r["rowkind"], r["k"], r["a"], r["b"]) for r in t.read_changes(first).to_pylist()]
    assert got == [("-U", 1, 10, "x"), ("+U", 1, 10, "z"), ("+I", 3, 30, None)]
    assert t.latest_snapshot().changelog_record_count == 3


@pytest.mark.parametrize("dedupe, expected", [("false", 2), ("true", 0)])
def test_row_deduplicate_drops_unchanged_updates(catalog, dedupe: str, expected: int) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "lookup", "changelog-producer.row-deduplicate": dedupe})
    t.write(_rows([(1, 10, "x", "+I")]))
    first = t.latest_snapshot().id
    t.write(_rows([(1, 10, "x", "+I")]))
    assert t.read_changes(first).num_rows == expected


def test_dedicated_compaction_of_a_write_only_table_produces_the_changelog(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "changelog-producer": "lookup", "write-only": "true"})
    t.write(_rows([(1, 1, "a", "+I"), (2, 2, "b", "+I")]))
    t.write(_rows([(1, 5, "c", "+I")]))
    assert t.read_changes(0).num_rows == 0  # nothing compacted yet: no changelog
    t.compact()
    got = sorted((r["rowkind"], r["k"], r["a"]) for r in t.read_changes(0).to_pylist())
    assert got == [("+I", 1, 5), ("+I", 2, 2)]
