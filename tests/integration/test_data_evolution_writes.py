"""Data-evolution tables laketide writes: whole-row appends, partial-column updates by row id (update_by_row_id).

Paimon: RowTrackingCommitUtils, pypaimon TableUpdateByRowId, DataEvolutionSplitRead.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from laketide.exceptions import CastError, SchemaError, UnsupportedFeatureError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32()),
                    ("p", pa.string())])
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}


def rows(ids: list[int], part: str = "a") -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "n": [i % 7 for i in ids], "p": [part] * len(ids)},
                    schema=SCHEMA)


def by_row_id(t) -> dict[int, tuple]:  # noqa: ANN001
    out = t.read(columns=["_ROW_ID", "id", "v", "n", "p"]).to_pydict()
    return {r: (i, v, n, p) for r, i, v, n, p in zip(out["_ROW_ID"], out["id"], out["v"], out["n"], out["p"])}


def table(catalog, partitioned: bool = False):  # noqa: ANN001, ANN201
    return catalog.create_table("db.t", SCHEMA, options=EVOLUTION, partition_keys=["p"] if partitioned else None)


def test_appends_get_consecutive_row_ids_and_whole_row_files(catalog) -> None:  # noqa: ANN001
    t = table(catalog)
    t.write(rows([0, 1, 2]))
    t.write(rows([10, 11]))
    assert {r: row[0] for r, row in by_row_id(t).items()} == {0: 0, 1: 1, 2: 2, 3: 10, 4: 11}
    assert t.latest_snapshot().next_row_id == 5
    files = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    assert sorted((f.first_row_id, f.row_count, f.write_cols) for f in files) == [(0, 3, None), (3, 2, None)]


def test_update_by_row_id_writes_only_the_columns_and_keeps_row_ids(catalog) -> None:  # noqa: ANN001
    t = table(catalog)
    t.write(rows([0, 1, 2, 3]))
    t.write(rows([4, 5]))
    sid = t.update_by_row_id(pa.table({"_ROW_ID": pa.array([1, 4], pa.int64()), "v": ["x1", "x4"]}))
    assert sid == t.latest_snapshot().id
    got = by_row_id(t)
    assert got[1] == (1, "x1", 1, "a") and got[4] == (4, "x4", 4, "a") and got[0] == (0, "v0", 0, "a")
    assert t.latest_snapshot().next_row_id == 6  # no new row ids
    added = [e.file for e in t.file_scan().plan(t.latest_snapshot()) if e.file.write_cols == ("v",)]
    assert sorted(f.first_row_id for f in added) == [0, 4]
    assert {f.row_count for f in added} == {4, 2} and all(f.max_sequence_number == sid for f in added)
    seq = t.read(columns=["_ROW_ID", "_SEQUENCE_NUMBER"]).to_pydict()
    assert dict(zip(seq["_ROW_ID"], seq["_SEQUENCE_NUMBER"]))[1] == sid
    # Stats of a partial-column file cover its write_cols (Java's stats evolution projects them so).
    stats = {r["record_count"]: r for r in t.inspect.files().to_pylist() if r["null_value_counts"]["id"] is None}
    assert stats[4]["min_values"] == {"id": None, "v": "v0", "n": None, "p": None}
    assert stats[4]["max_values"]["v"] == "x1"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_updates_match_a_dict_oracle(catalog, seed) -> None:  # noqa: ANN001
    rnd = random.Random(seed)
    t = table(catalog, partitioned=True)
    oracle: dict[int, tuple] = {}
    next_id = 0
    for step in range(6):
        if step % 2 == 0 or not oracle:
            ids = list(range(next_id, next_id + rnd.randint(1, 6)))
            part = rnd.choice("ab")
            t.write(rows(ids, part))
            for i in ids:  # row ids follow the commit order of rows
                oracle[len(oracle)] = (i, f"v{i}", i % 7, part)
            next_id = ids[-1] + 1
        else:
            chosen = rnd.sample(sorted(oracle), rnd.randint(1, len(oracle)))
            cols = rnd.choice([["v"], ["n"], ["v", "n"]])
            data = {"_ROW_ID": pa.array(chosen, pa.int64())}
            if "v" in cols:
                data["v"] = [None if rnd.random() < 0.2 else f"u{step}-{r}" for r in chosen]
            if "n" in cols:
                data["n"] = pa.array([rnd.randint(-5, 5) for _ in chosen], pa.int32())
            t.update_by_row_id(pa.table(data))
            for k, r in enumerate(chosen):
                i, v, n, p = oracle[r]
                oracle[r] = (i, data["v"][k] if "v" in cols else v, data["n"][k].as_py() if "n" in cols else n, p)
        assert by_row_id(t) == oracle


@pytest.mark.parametrize("data, columns, error, word", [
    ({"v": ["x"]}, None, SchemaError, "_ROW_ID"),
    ({"_ROW_ID": [99], "v": ["x"]}, None, SchemaError, "99"),
    ({"_ROW_ID": [-1], "v": ["x"]}, None, SchemaError, "-1"),
    ({"_ROW_ID": [0, 0], "v": ["x", "y"]}, None, SchemaError, "repeat"),
    ({"_ROW_ID": [0, None], "v": ["x", "y"]}, None, SchemaError, "null"),
    ({"_ROW_ID": [0], "nope": ["x"]}, None, SchemaError, "nope"),
    ({"_ROW_ID": [0], "p": ["b"]}, None, SchemaError, "partition"),
    ({"_ROW_ID": [0], "id": [None]}, None, SchemaError, "NOT NULL"),
    ({"_ROW_ID": [0], "n": ["abc"]}, None, CastError, "n"),
    ({"_ROW_ID": [0]}, None, SchemaError, "no column"),
    ({"_ROW_ID": [0], "v": ["x"]}, ["n"], SchemaError, "lacks"),
    ({"_ROW_ID": ["0"], "v": ["x"]}, None, SchemaError, "integer"),
], ids=["no-row-id", "unknown-id", "negative-id", "duplicate-ids", "null-id", "unknown-column", "partition-column",
        "null-into-not-null", "bad-cast", "no-columns", "column-not-in-data", "string-row-id"])
def test_bad_updates_are_refused_and_change_nothing(catalog, data, columns, error, word) -> None:  # noqa: ANN001
    t = table(catalog, partitioned=True)
    t.write(rows([0, 1, 2]))
    before, sid = by_row_id(t), t.latest_snapshot().id
    with pytest.raises(error, match=word):
        t.update_by_row_id(pa.table(data), columns)
    assert t.latest_snapshot().id == sid and by_row_id(t) == before


def test_update_by_row_id_needs_a_data_evolution_table(catalog) -> None:  # noqa: ANN001
    plain = catalog.create_table("db.plain", SCHEMA)
    plain.write(rows([0]))
    with pytest.raises(UnsupportedFeatureError, match="data-evolution.enabled"):
        plain.update_by_row_id(pa.table({"_ROW_ID": [0], "v": ["x"]}))
    pk = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    with pytest.raises(UnsupportedFeatureError, match="primary-key"):
        pk.update_by_row_id(pa.table({"_ROW_ID": [0], "v": ["x"]}))
    assert plain.read().num_rows == 1


def test_empty_update_and_reuse(catalog) -> None:  # noqa: ANN001
    t = table(catalog)
    t.write(rows([0, 1]))
    sid = t.latest_snapshot().id
    assert t.update_by_row_id(pa.table({"_ROW_ID": pa.array([], pa.int64()), "v": pa.array([], pa.string())})) is None
    assert t.latest_snapshot().id == sid
    update = pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["same"]})
    t.update_by_row_id(update)
    t.update_by_row_id(update)  # the same update twice: same rows, one more snapshot
    assert by_row_id(t)[0] == (0, "same", 0, "a") and t.latest_snapshot().id == sid + 2


def test_delete_stays_refused(catalog) -> None:  # noqa: ANN001
    t = table(catalog)
    t.write(rows([0, 1]))
    t.update_by_row_id(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["x"]}))
    sid = t.latest_snapshot().id
    with pytest.raises(UnsupportedFeatureError, match="row-tracking"):
        t.delete("id = 1")
    assert t.latest_snapshot().id == sid


def test_update_where_writes_partial_columns_and_keeps_row_ids(catalog) -> None:  # noqa: ANN001
    """Table.update on a data-evolution table: the set columns of the matching rows by row id, no file rewritten."""
    t = table(catalog, partitioned=True)
    t.write(rows([0, 1, 2, 3], "a"))
    t.write(rows([4, 5], "b"))
    before = by_row_id(t)
    files_before = {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}
    result = t.update({"n": "n * 10 + id", "v": "'set'"}, where="id >= 2 AND id <= 4")
    assert result.rows_updated == 3 and result.files_removed == 0
    expected = {r: ((i, "set", n * 10 + i, p) if 2 <= i <= 4 else (i, v, n, p))
                for r, (i, v, n, p) in before.items()}
    assert by_row_id(t) == expected
    files_after = {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}
    assert files_before < files_after  # only added
    assert t.update({"v": "'none'"}, where="id > 100").snapshot_id is None
    with pytest.raises(SchemaError):
        t.update({"p": "'c'"}, where="id = 0")  # a partition column
    assert by_row_id(t) == expected
