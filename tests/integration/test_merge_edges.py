"""Merge-on-read with a section's edges passed through (scan/run_edges.py): same rows, same order as the plain merge.

Rows of the run starting lowest below every other run's first key (and of the run ending highest above every
other run's last key) skip the merge and, in files without retractions, the system columns. Checked against a dict
oracle and against the same read with the shortcut switched off, with many small row groups (``parquet.block.size``
of a few hundred bytes) so that files straddle the edge bounds row group by row group.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laketide
import laketide.scan.split_read as split_read
from laketide.scan.run_edges import Part, RunEdges, edge_part, file_part, run_edges
from laketide.expr import FieldStats

SMALL_GROUPS = {"bucket": "1", "write-only": "true", "parquet.block.size": "300"}


def _table(tmp_path, name: str, schema: pa.Schema, keys: list[str], **options: str) -> laketide.Table:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table(f"db.{name}", schema, primary_key=keys, options={**SMALL_GROUPS, **options})


def _commit(t: laketide.Table, upserts: pa.Table | None = None, deletes: pa.Table | None = None) -> None:
    w = t.new_write()
    if upserts is not None:
        w.write(upserts)
    if deletes is not None:
        w.delete(deletes)
    t.commit(w.prepare_commit())
    w.close()


def _without_edges(t: laketide.Table, monkeypatch, **kwargs) -> pa.Table:  # noqa: ANN001, ANN003
    with monkeypatch.context() as m:
        m.setattr(split_read, "run_edges", lambda *a: None)
        return t.read(**kwargs)


def _edge_reads(monkeypatch) -> list[tuple[Part, int]]:  # noqa: ANN001
    """Records (edge, rows) of every edge batch read."""
    seen: list[tuple[Part, int]] = []
    real = split_read.SplitRead._edge_rows

    def recording(self, section, edges, part, paths):  # noqa: ANN001, ANN202
        for batch in real(self, section, edges, part, paths):
            seen.append((part, batch.num_rows))
            yield batch

    monkeypatch.setattr(split_read.SplitRead, "_edge_rows", recording)
    return seen


_KV = pa.schema([("k", pa.int64()), ("v", pa.int64())])
_range = st.tuples(st.integers(0, 80), st.integers(0, 40), st.integers(1, 3), st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(_range, min_size=1, max_size=5), where=st.sampled_from([None, "k >= 30", "v > 0"]))
def test_edges_read_equals_dict_oracle_and_plain_merge(tmp_path_factory, monkeypatch, commits, where) -> None:  # noqa: ANN001
    # Each commit writes keys lo, lo+step, ... (or deletes them): runs overlapping in every way, ties at the bounds,
    # single-row runs, a run inside another.
    t = _table(tmp_path_factory.mktemp("p"), "t", _KV, ["k"])
    oracle: dict[int, int] = {}
    for i, (lo, span, step, delete) in enumerate(commits):
        keys = list(range(lo, lo + span + 1, step))
        rows = pa.table({"k": keys, "v": [i * 1000 + k for k in keys]}, schema=_KV)
        if delete and i > 0:
            _commit(t, deletes=rows)
            for k in keys:
                oracle.pop(k, None)
        else:
            _commit(t, upserts=rows)
            oracle.update({k: i * 1000 + k for k in keys})
    got = t.read(where=where)
    expected = {k: v for k, v in oracle.items()
                if where is None or (where == "k >= 30" and k >= 30) or (where == "v > 0" and v > 0)}
    assert dict(zip(got.column("k").to_pylist(), got.column("v").to_pylist())) == expected
    assert got.num_rows == len(expected)
    assert got.equals(_without_edges(t, monkeypatch, where=where))  # same rows in the same order


def test_upsert_at_the_top_passes_the_base_below_it_through(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path, "t", _KV, ["k"])
    _commit(t, pa.table({"k": range(0, 1000), "v": range(0, 1000)}, schema=_KV))
    _commit(t, pa.table({"k": range(900, 1100), "v": [-k for k in range(900, 1100)]}, schema=_KV))
    seen = _edge_reads(monkeypatch)
    got = t.read()
    assert got.column("k").to_pylist() == list(range(1100))
    assert got.column("v").to_pylist() == list(range(900)) + [-k for k in range(900, 1100)]
    head = sum(n for part, n in seen if part is Part.HEAD)
    tail = sum(n for part, n in seen if part is Part.TAIL)
    assert 800 <= head <= 900  # whole row groups below key 900, read without the system columns
    assert 0 < tail <= 99  # the upsert's row groups above 999
    assert got.equals(_without_edges(t, monkeypatch))


def test_ties_at_the_bound_and_single_row_runs_are_merged(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path, "t", _KV, ["k"])
    _commit(t, pa.table({"k": range(0, 200), "v": [0] * 200}, schema=_KV))
    _commit(t, pa.table({"k": [199], "v": [1]}, schema=_KV))  # equal to the base's last key
    _commit(t, pa.table({"k": [0], "v": [2]}, schema=_KV))  # equal to the base's first key
    _commit(t, pa.table({"k": [100], "v": [3]}, schema=_KV))
    got = t.read()
    assert got.column("k").to_pylist() == list(range(200))
    assert dict(zip(got.column("k").to_pylist(), got.column("v").to_pylist())) == {
        **dict.fromkeys(range(200), 0), 199: 1, 0: 2, 100: 3}
    assert got.equals(_without_edges(t, monkeypatch))


def test_retractions_in_an_edge_file_are_dropped(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    t = _table(tmp_path, "t", _KV, ["k"])
    _commit(t, pa.table({"k": range(100, 200), "v": range(100, 200)}, schema=_KV))
    # The head run: one file of +I rows and -D rows (deletes of keys no run holds) below key 100.
    ups = list(range(0, 50)) + list(range(150, 161))
    _commit(t, pa.table({"k": ups, "v": [-1] * len(ups)}, schema=_KV),
            deletes=pa.table({"k": range(50, 60), "v": [0] * 10}, schema=_KV))
    seen = _edge_reads(monkeypatch)
    got = t.read()
    assert got.column("k").to_pylist() == list(range(0, 50)) + list(range(100, 200))
    assert got.column("v").to_pylist() == [-1] * 50 + list(range(100, 150)) + [-1] * 11 + list(range(161, 200))
    assert any(part is Part.HEAD for part, _ in seen)
    assert got.equals(_without_edges(t, monkeypatch))


@pytest.mark.parametrize("key_type", [pa.int32(), pa.int16(), pa.string()])
def test_composite_and_non_integer_keys(tmp_path, monkeypatch, key_type: pa.DataType) -> None:  # noqa: ANN001
    # Row groups are placed by integer first-key statistics only; a string key still passes whole files through.
    schema = pa.schema([("a", key_type), ("b", pa.string()), ("v", pa.int64())])
    t = _table(tmp_path, "t", schema, ["a", "b"])

    def rows(keys: range, tag: str, v: int) -> pa.Table:
        a = [f"{k:05d}" if pa.types.is_string(key_type) else k for k in keys]
        return pa.table({"a": a, "b": [tag] * len(keys), "v": [v] * len(keys)}, schema=schema)

    _commit(t, rows(range(0, 300), "x", 0))
    _commit(t, rows(range(200, 310), "x", 1))  # same (a, b): replaces
    _commit(t, rows(range(250, 260), "a", 2))  # same a, smaller b: a new key just below an existing one
    _commit(t, rows(range(500, 600), "x", 3))  # overlaps nothing: a section of its own
    got = t.read()
    assert got.num_rows == 300 + 10 + 10 + 100
    values = {(a, b): v for a, b, v in zip(*(got.column(c).to_pylist() for c in ("a", "b", "v")))}
    key = (lambda k: f"{k:05d}") if pa.types.is_string(key_type) else (lambda k: k)
    assert values[(key(199), "x")] == 0 and values[(key(200), "x")] == 1 and values[(key(255), "a")] == 2
    assert got.equals(_without_edges(t, monkeypatch))


def test_run_edges_bounds() -> None:
    ranges = {"a": ((0,), (100,)), "b": ((50,), (80,)), "c": ((60,), (120,))}
    edges = run_edges([["a"], ["b"], ["c"]], lambda f: ranges[f])
    assert edges == RunEdges(head_run=0, head_below=(50,), tail_run=2, tail_above=(100,))
    assert file_part(edges, 0, (0,), (49,)) is Part.HEAD
    assert file_part(edges, 0, (0,), (50,)) is None  # straddles: key 50 must merge
    assert file_part(edges, 2, (101,), (120,)) is Part.TAIL
    assert file_part(edges, 1, (50,), (80,)) is Part.MERGE
    assert edge_part(edges, 0, FieldStats(min=0, max=49, null_count=0)) is Part.HEAD
    assert edge_part(edges, 0, FieldStats(min=0, max=50, null_count=0)) is Part.MERGE
    assert edge_part(edges, 0, None) is Part.MERGE
    assert edge_part(edges, 2, FieldStats(min=101, max=120, null_count=0)) is Part.TAIL
    assert edge_part(edges, 2, FieldStats(min=100, max=120, null_count=0)) is Part.MERGE
    # Equal first keys: no run is alone below the other's first key.
    tie = run_edges([["a"], ["a"]], lambda f: ranges[f])
    assert tie is not None and file_part(tie, tie.head_run, (0,), (100,)) is Part.MERGE
    alone = run_edges([["a", "c"]], lambda f: ranges[f])  # a section of one run: nothing to merge
    assert alone is not None and file_part(alone, 0, (0,), (100,)) is Part.HEAD
    assert edge_part(alone, 0, None) is Part.HEAD
    assert run_edges([], lambda f: ranges[f]) is None


def test_sections_of_one_run_pass_through(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    # New keys only (time-ordered ids): each section is one run, nothing is merged, no system column is read.
    t = _table(tmp_path, "t", _KV, ["k"])
    _commit(t, pa.table({"k": range(0, 100), "v": range(0, 100)}, schema=_KV))
    _commit(t, pa.table({"k": range(100, 150), "v": range(100, 150)}, schema=_KV))
    seen = _edge_reads(monkeypatch)
    got = t.read()
    assert got.column("k").to_pylist() == list(range(150)) == got.column("v").to_pylist()
    assert sum(n for part, n in seen if part is Part.HEAD) == 150
    assert got.equals(_without_edges(t, monkeypatch))


def test_edges_across_schema_changes(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    # The base file predates an added column and a renamed value column: edge rows go through the same evolution.
    from laketide.schema.changes import AddColumn, RenameColumn

    t = _table(tmp_path, "t", _KV, ["k"])
    _commit(t, pa.table({"k": range(0, 300), "v": range(0, 300)}, schema=_KV))
    t = t.alter(AddColumn(name="w", type=pa.string()), RenameColumn("v", "value"))
    schema = pa.schema([("k", pa.int64()), ("value", pa.int64()), ("w", pa.string())])
    _commit(t, pa.table({"k": range(250, 350), "value": [-1] * 100, "w": ["new"] * 100}, schema=schema))
    got = t.read()
    assert got.column_names == ["k", "value", "w"]
    assert got.column("k").to_pylist() == list(range(350))
    assert got.column("value").to_pylist() == list(range(250)) + [-1] * 100
    assert got.column("w").to_pylist() == [None] * 250 + ["new"] * 100
    assert got.equals(_without_edges(t, monkeypatch))


def test_sequence_field_decides_inside_the_merge_and_edges_keep_their_rows(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("v", pa.string())])
    t = _table(tmp_path, "t", schema, ["k"], **{"sequence.field": "ts"})
    _commit(t, pa.table({"k": range(0, 200), "ts": [10] * 200, "v": ["base"] * 200}, schema=schema))
    # A later commit with an older ts for keys 150..199 loses there; its keys 200..249 are new.
    _commit(t, pa.table({"k": range(150, 250), "ts": [5] * 100, "v": ["late"] * 100}, schema=schema))
    got = t.read()
    assert got.column("k").to_pylist() == list(range(250))
    assert got.column("v").to_pylist() == ["base"] * 200 + ["late"] * 50
    assert got.equals(_without_edges(t, monkeypatch))
