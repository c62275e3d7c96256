"""Row-level changes (delete / update / upsert) against a pandas oracle, on every table layout, plus the refusals."""

from __future__ import annotations

import tempfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import CommitConflictError, PredicateError, SchemaError, UnsupportedFeatureError
from laketide.meta.snapshot import CommitKind
from laketide.table.dml import plan_delete, plan_update

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
    ("v", pa.int64()), ("s", pa.string()),
])

# name -> (create_table kwargs)
LAYOUTS = {
    "append": {},
    "append-partitioned": {"partition_keys": ["p"]},
    "pk-fixed": {"primary_key": ["id"], "options": {"bucket": "2"}},
    "pk-dynamic": {"primary_key": ["id"], "options": {"bucket": "-1"}},
    "pk-partitioned": {"primary_key": ["id", "p"], "partition_keys": ["p"], "options": {"bucket": "2"}},
    # the key lacks the partition column: an upsert may move a row to another partition
    "pk-cross-partition": {"primary_key": ["id"], "partition_keys": ["p"], "options": {"bucket": "-1"}},
}

# (WHERE text, the same condition on a pandas frame; null compares false, as in SQL)
PREDICATES = [
    ("v > 50", lambda df: df.v.gt(50).fillna(False)),
    ("v IS NULL", lambda df: df.v.isna()),
    ("p = 'a'", lambda df: df.p.eq("a")),
    ("p IN ('a', 'c')", lambda df: df.p.isin(["a", "c"])),
    ("p = 'b' AND v <= 20", lambda df: df.p.eq("b") & df.v.le(20).fillna(False)),
    ("id < 7 OR s LIKE 'x%'", lambda df: df.id.lt(7) | df.s.str.startswith("x").fillna(False)),
    ("id = -1", lambda df: df.id.eq(-1)),
]


def frame(ids: list[int], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    v = rng.integers(0, 100, n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": pa.array(rng.choice(["a", "b", "c"], n).tolist()),
        "v": pa.array(v.tolist(), mask=rng.random(n) < 0.2, type=pa.int64()),
        "s": pa.array(rng.choice(["x1", "y2", "x3", None], n).tolist()),
    }, schema=SCHEMA)


def as_frame(table: pa.Table) -> pd.DataFrame:
    return canonical(table.select(SCHEMA.names).to_pandas())


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in one order whatever the storage order (append tables may hold equal ids)."""
    df = df.astype({"id": "int64", "p": "string", "v": "Int64", "s": "string"})
    return df.sort_values(["id", "p", "v", "s"], na_position="last").reset_index(drop=True)


def fill(t: laketide.Table, layout: str, batches: list[pa.Table]) -> pd.DataFrame:
    """Write ``batches`` (one commit each) and return the expected content (later keys win on PK tables)."""
    for b in batches:
        t.write(b)
    everything = pd.concat([as_frame(b) for b in batches], ignore_index=True)
    if "primary_key" in LAYOUTS[layout]:
        keys = LAYOUTS[layout]["primary_key"]
        everything = everything.drop_duplicates(subset=keys, keep="last")
    return canonical(everything)


def key_batches(draw_ids: list[int], layout: str, seed: int) -> list[pa.Table]:
    """Two overlapping batches; on PK tables keys are unique across partitions unless p is part of the key."""
    first = frame(sorted(set(draw_ids)), seed)
    second = frame(sorted(set(draw_ids))[::2], seed + 1)
    if layout in ("pk-fixed", "pk-dynamic", "pk-cross-partition"):
        return [first, second]
    if layout == "pk-partitioned":  # keep (id, p) keys but make updates hit the same partition
        second = second.set_column(1, SCHEMA.field("p"), first.filter(pa.array(
            np.isin(first.column("id").to_numpy(), second.column("id").to_numpy()))).column("p"))
        return [first, second]
    return [first, second]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(max_examples=6)
@given(ids=st.lists(st.integers(0, 60), min_size=1, max_size=40), seed=st.integers(0, 1000),
       which=st.integers(0, len(PREDICATES) - 1))
def test_delete_matches_pandas(layout: str, ids: list[int], seed: int, which: int) -> None:
    where, oracle = PREDICATES[which]
    with tempfile.TemporaryDirectory() as tmp:
        cat = laketide.load_catalog(warehouse=tmp)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, **LAYOUTS[layout])
        expected = fill(t, layout, key_batches(ids, layout, seed))
        before = t.latest_snapshot()
        result = t.delete(where)
        keep = canonical(expected[~oracle(expected)])
        assert as_frame(t.read()).equals(keep)
        deleted = len(expected) - len(keep)
        if deleted == 0 and result.rows_deleted is not None:
            assert result.snapshot_id is None
            assert t.latest_snapshot().id == before.id
        elif deleted == 0:  # a metadata-only partition drop: its files held only rows deleted before
            assert layout == "pk-cross-partition" and result.rows_deleted is None
        else:
            assert result.snapshot_id is not None and result.rows_deleted in (deleted, None)
            if result.rows_deleted is None:  # whole partitions of a PK table dropped from metadata
                assert layout in ("pk-partitioned", "pk-cross-partition")


SETS = [
    ({"v": "v * 2 + 1"}, lambda df: df.v * 2 + 1),
    ({"v": None}, lambda df: pd.Series([pd.NA] * len(df), dtype="Int64", index=df.index)),
    ({"s": "'changed'"}, None),
    ({"v": 7, "s": "s"}, lambda df: pd.Series([7] * len(df), dtype="Int64", index=df.index)),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(max_examples=6)
@given(ids=st.lists(st.integers(0, 60), min_size=1, max_size=40), seed=st.integers(0, 1000),
       which=st.integers(0, len(PREDICATES) - 1), how=st.integers(0, len(SETS) - 1))
def test_update_matches_pandas(layout: str, ids: list[int], seed: int, which: int, how: int) -> None:
    where, oracle = PREDICATES[which]
    values, v_oracle = SETS[how]
    with tempfile.TemporaryDirectory() as tmp:
        cat = laketide.load_catalog(warehouse=tmp)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, **LAYOUTS[layout])
        expected = fill(t, layout, key_batches(ids, layout, seed))
        result = t.update(values, where)
        hit = oracle(expected)
        if "v" in values:
            expected.loc[hit, "v"] = v_oracle(expected[hit])
        if "s" in values:
            expected.loc[hit, "s"] = "changed" if values["s"] == "'changed'" else expected.loc[hit, "s"]
        assert as_frame(t.read()).equals(canonical(expected))
        assert result.rows_updated == int(hit.sum())
        assert (result.snapshot_id is None) == (int(hit.sum()) == 0)


def test_upsert_counts(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    first = t.upsert(frame(list(range(10)), 1))
    assert (first.rows_inserted, first.rows_updated) == (10, 0)
    second = t.upsert(frame(list(range(5, 15)), 2))
    assert (second.rows_inserted, second.rows_updated) == (5, 5)
    assert t.read().num_rows == 15
    with pytest.raises(SchemaError, match="no primary key"):
        catalog.create_table("db.app", SCHEMA).upsert(frame([1], 1))


def test_append_delete_replaces_exactly_the_touched_files(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write(frame(list(range(30)), 3))
    t.write(frame(list(range(30, 60)), 4))
    live_before = {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}
    result = t.delete("id BETWEEN 30 AND 59 AND v > 10")
    snap = t.latest_snapshot()
    assert snap.commit_kind is CommitKind.OVERWRITE
    live_after = {e.file.file_name for e in t.file_scan().plan(snap)}
    removed = live_before - live_after
    assert len(removed) == result.files_removed
    assert result.files_removed <= 3  # only files of the second write (one per partition) hold matching rows
    assert len(live_after - live_before) == result.files_added


def test_partition_predicate_drops_partitions_without_reading(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    data = frame(list(range(40)), 5)
    t.write(data)
    # Proof that no data file is opened: the files of partition 'a' are gone from storage, the drop still works.
    paths = t.store.path_factory
    for e in t.file_scan().plan(t.latest_snapshot()):
        if paths.partition_codec.as_dict(e.partition)["p"] == "a":
            t.file_io.delete(f"{paths.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}")
    result = t.delete("p = 'a'")
    assert result.rows_deleted == data.column("p").to_pylist().count("a") and result.files_removed == 1
    assert t.latest_snapshot().commit_kind is CommitKind.OVERWRITE
    assert "a" not in t.read(columns=["p"]).column("p").to_pylist()


def test_concurrent_compaction_conflicts_and_changes_nothing(catalog, warehouse) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        t.write(frame(list(range(i * 10, i * 10 + 10)), i))
    pending = plan_delete(t, "v >= 0")
    other = laketide.load_catalog(warehouse=warehouse).table("db.t")
    assert other.compact(full=True) is not None
    latest = t.latest_snapshot().id
    rows = as_frame(t.read())
    with pytest.raises(CommitConflictError, match="no longer live"):
        pending.commit()
    assert t.latest_snapshot().id == latest
    assert as_frame(t.read()).equals(rows)
    # the rewritten files of the failed change were removed
    for m in pending.messages:
        for f in m.new_files:
            assert not t.file_io.exists(f"{t.store.path_factory.bucket_dir(m.partition, m.bucket)}/{f.file_name}")


def test_pending_change_abort_leaves_table_unchanged(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    t.write(frame(list(range(10)), 1))
    pending = plan_update(t, {"v": 1}, "id < 5")
    pending.abort()
    assert t.latest_snapshot().id == 1
    assert t.update({"v": 1}, "id < 5").rows_updated == 5


def test_bad_inputs_are_typed_and_change_nothing(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(frame(list(range(10)), 1))
    with pytest.raises(PredicateError, match="unknown column"):
        t.delete("nope > 1")
    with pytest.raises(PredicateError, match="empty"):
        t.delete("  ")
    with pytest.raises(SchemaError, match="primary key"):
        t.update({"id": 5}, "v > 1")
    with pytest.raises(SchemaError, match="unknown column 'zz'"):
        t.update({"zz": 5}, "v > 1")
    with pytest.raises(PredicateError, match="unknown column 'zz'"):
        t.update({"v": "zz + 1"}, "v > 1")
    with pytest.raises(PredicateError, match="unsupported syntax"):
        t.update({"v": "__import__('os')"}, "v > 1")
    with pytest.raises(SchemaError, match="does not fit"):
        t.update({"v": "'not a number'"}, "v > 1")
    with pytest.raises(SchemaError, match="NOT NULL"):
        t.update({"p": None})
    assert t.latest_snapshot().id == 1


def test_empty_table_and_retry(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    assert t.delete("v > 1").snapshot_id is None
    assert t.update({"v": 1}).snapshot_id is None
    t.write(frame([1, 2, 3], 1))
    assert t.delete("TRUE").rows_deleted == 3
    assert t.delete("TRUE").snapshot_id is None  # the same delete again: nothing left to match
    assert t.read().num_rows == 0


@pytest.mark.parametrize(("engine", "options"), [
    ("aggregation", {"fields.v.aggregate-function": "sum"}),
    ("partial-update", {}),
    ("first-row", {}),
])
def test_engines_that_would_not_store_changes_are_refused(catalog, engine: str, options: dict) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"],
                             options={"bucket": "1", "merge-engine": engine, **options})
    t.write(frame(list(range(5)), 1))
    before = t.latest_snapshot().id
    with pytest.raises(UnsupportedFeatureError, match=f"merge engine '{engine}'"):
        t.update({"v": 1}, "id = 1")
    with pytest.raises(UnsupportedFeatureError, match="deduplicate"):
        t.delete("id = 1")
    with pytest.raises(UnsupportedFeatureError, match="deduplicate"):
        t.merge(frame([1], 2), on="id").when_matched_update_all().execute()
    assert t.latest_snapshot().id == before
    # inserting new keys suits every engine
    assert t.merge(frame([77], 2), on="id").when_not_matched_insert_all().execute().rows_inserted == 1


def test_deletes_where_the_engine_removes_rows(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={
        "bucket": "1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    t.write(frame(list(range(5)), 1))
    assert t.delete("id < 2").rows_deleted == 2
    assert sorted(t.read(columns=["id"]).column("id").to_pylist()) == [2, 3, 4]
