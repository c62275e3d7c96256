"""MERGE INTO against a row-by-row Python oracle of SQL MERGE, on every table layout, plus the refusals."""

from __future__ import annotations

import tempfile
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import laketide
from laketide.exceptions import MergeSourceError, PredicateError, SchemaError
from tests.integration.test_dml import LAYOUTS, SCHEMA, as_frame, canonical, fill, frame, key_batches


def source_rows(ids: list[int], seed: int) -> pa.Table:
    return frame(sorted(set(ids)), seed + 7)  # one row per id: a valid MERGE source


def gt(x: Any, k: int) -> bool:
    return x is not None and not pd.isna(x) and x > k


def lt(x: Any, k: int) -> bool:
    return x is not None and not pd.isna(x) and x < k


def oracle(target: pd.DataFrame, source: pd.DataFrame, program: str, keys: list[str]) -> pd.DataFrame:
    """SQL MERGE row by row: the first clause of a row's kind whose condition holds decides."""
    by_id = {int(r["id"]): r for r in source.to_dict("records")}
    out = []
    matched_ids = set()
    for t in target.to_dict("records"):
        s = by_id.get(int(t["id"]))
        if s is not None:
            matched_ids.add(int(t["id"]))
            if program == "upsert":
                out.append({**s, **{k: t[k] for k in keys}})
            elif gt(s["v"], 50):
                v = None if pd.isna(s["v"]) or pd.isna(t["v"]) else s["v"] + t["v"]
                out.append({**t, "v": v})
            # else: when_matched_delete
        elif program == "full" and lt(t["v"], 30):
            continue  # when_not_matched_by_source_delete
        else:
            out.append(t)
    for i, s in by_id.items():
        if i in matched_ids:
            continue
        if program == "upsert" or lt(s["v"], 80):
            out.append(dict(s) if program == "upsert" else {**s, "s": "new"})
    return canonical(pd.DataFrame(out, columns=SCHEMA.names))


def run(t: laketide.Table, source: pa.Table, program: str):  # noqa: ANN201
    m = t.merge(source, on=["id"])
    if program == "upsert":
        return m.when_matched_update_all().when_not_matched_insert_all().execute()
    return (m.when_matched_update({"v": "source.v + target.v"}, condition="source.v > 50")
            .when_matched_delete()
            .when_not_matched_insert({"id": "source.id", "p": "source.p", "v": "source.v", "s": "'new'"},
                                     condition="source.v < 80")
            .when_not_matched_by_source_delete(condition="target.v < 30")
            .execute())


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(max_examples=6)
@given(ids=st.lists(st.integers(0, 60), min_size=1, max_size=40),
       src=st.lists(st.integers(0, 90), max_size=30), seed=st.integers(0, 1000),
       program=st.sampled_from(["upsert", "full"]))
def test_merge_matches_oracle(layout: str, ids: list[int], src: list[int], seed: int, program: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cat = laketide.load_catalog(warehouse=tmp)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, **LAYOUTS[layout])
        before = fill(t, layout, key_batches(ids, layout, seed))
        source = source_rows(src, seed)
        if layout == "pk-partitioned":  # (id, p) is the key: a source row keeps the partition of its target row
            by_id = dict(zip(before.id, before.p))
            source = source.set_column(1, SCHEMA.field("p"), pa.array(
                [by_id.get(i, p) for i, p in zip(source.column("id").to_pylist(), source.column("p").to_pylist())],
                pa.string()))
        keys = list(LAYOUTS[layout].get("primary_key", []))
        expected = oracle(before, as_frame(source), program, keys)
        result = run(t, source, program)
        assert as_frame(t.read()).equals(expected)
        changed = result.rows_inserted + result.rows_updated + (result.rows_deleted or 0)
        assert (result.snapshot_id is None) == (changed == 0)


def test_duplicate_source_keys_are_refused(catalog) -> None:  # noqa: ANN001
    for name, layout in (("a", "append"), ("k", "pk-fixed")):
        t = catalog.create_table(f"db.{name}", SCHEMA, **LAYOUTS[layout])
        t.write(frame(list(range(10)), 1))
        dup = pa.concat_tables([frame([3, 4], 2), frame([3], 3)])
        with pytest.raises(MergeSourceError, match="more than one source row"):
            t.merge(dup, on="id").when_matched_update_all().execute()
        assert t.latest_snapshot().id == 1
        # Duplicates that match nothing are just inserts.
        fresh = pa.concat_tables([frame([50], 2), frame([51], 3)])
        assert t.merge(fresh, on="id").when_not_matched_insert_all().execute().rows_inserted == 2


def test_predicate_aliases_and_conditions(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(frame(list(range(5)), 1))
    src = pa.table({"key": [1, 2, 9], "val": [10, 20, 90]})
    r = (t.merge(src, predicate="t.id = s.key", source_alias="s", target_alias="t")
         .when_matched_update({"t.v": "s.val * 2", "s": "'it''s'"}, condition="s.val > 15")
         .when_not_matched_insert({"id": "s.key", "p": "'z'", "v": "s.val"})
         .execute())
    assert (r.rows_updated, r.rows_inserted, r.rows_deleted) == (1, 1, 0)
    rows = {row["id"]: row for row in t.read().to_pylist()}
    assert rows[2]["v"] == 40 and rows[2]["s"] == "it's" and rows[9]["p"] == "z" and rows[1]["v"] != 20


def test_bad_merges_are_typed_and_change_nothing(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(frame(list(range(5)), 1))
    src = frame([1, 7], 2)
    with pytest.raises(MergeSourceError, match="on="):
        t.merge(src)
    with pytest.raises(MergeSourceError, match="missing"):
        t.merge(src, on="nope")
    with pytest.raises(MergeSourceError, match="equalities"):
        t.merge(src, predicate="target.id > source.id")
    with pytest.raises(MergeSourceError, match="no WHEN clause"):
        t.merge(src, on="id").execute()
    with pytest.raises(SchemaError, match="primary-key"):
        t.merge(src, on="id").when_matched_update({"id": 3}).execute()
    with pytest.raises(SchemaError, match="lacks"):
        t.merge(src.select(["id", "v"]), on="id").when_not_matched_insert_all().execute()
    with pytest.raises(PredicateError):
        t.merge(src, on="id").when_matched_delete(condition="source.nope > 1").execute()
    with pytest.raises(SchemaError, match="NOT NULL"):
        t.merge(src, on="id").when_not_matched_insert({"id": "source.id"}).execute()
    assert t.latest_snapshot().id == 1
    # an empty source changes nothing, and so does a merge into an empty table with no insert clause
    assert t.merge(src.slice(0, 0), on="id").when_matched_delete().execute().snapshot_id is None
    empty = catalog.create_table("db.e", SCHEMA)
    assert empty.merge(src, on="id").when_matched_delete().execute().snapshot_id is None
    assert empty.merge(src, on="id").when_not_matched_insert_all().execute().rows_inserted == 2
