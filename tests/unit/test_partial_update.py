"""The partial-update merge function on its own: vectorized sequence groups against a plain-Python reference of
Paimon's row-by-row algorithm (several ordering fields, nulls, ties, out-of-order rows, aggregate functions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.exceptions import RowKindError
from laketide.mergetree.engines import PartialUpdateMergeFunction, merge_function_for
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND
from laketide.schema.create import new_table_schema

SCHEMA = pa.schema([("k", pa.int32()), ("x", pa.string()), ("s1", pa.int32()), ("s2", pa.int64()),
                    ("a", pa.int32()), ("b", pa.string()), ("t", pa.int32()), ("c", pa.int64()),
                    ("d", pa.int32())])
OPTIONS = {
    "bucket": "1", "merge-engine": "partial-update",
    "fields.s1,s2.sequence-group": "a,b",           # two ordering fields, compared in order
    "fields.t.sequence-group": "c,d",
    "fields.c.aggregate-function": "sum",
    "fields.d.aggregate-function": "first_value",   # order-sensitive: out-of-order rows take the slow path
}


def _cmp(x: tuple, y: tuple) -> int:
    for p, q in zip(x, y):
        if p == q:
            continue
        if p is None:
            return -1
        if q is None:
            return 1
        return -1 if p < q else 1
    return 0


def reference(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Paimon's PartialUpdateMergeFunction for +I rows of one key, oldest first."""
    out: dict[str, Any] = dict.fromkeys(SCHEMA.names)
    d_started = False
    for r in rows:
        out["k"] = r["k"]
        if r["x"] is not None:
            out["x"] = r["x"]
        if (r["s1"], r["s2"]) != (None, None):
            if _cmp((r["s1"], r["s2"]), (out["s1"], out["s2"])) >= 0:
                out.update(a=r["a"], b=r["b"], s1=r["s1"], s2=r["s2"])
        if r["t"] is not None:
            newer = _cmp((r["t"],), (out["t"],)) >= 0
            if r["c"] is not None:
                out["c"] = r["c"] if out["c"] is None else out["c"] + r["c"]
            # first_value: the first call keeps its input; an older row later replaces it (aggReversed)
            if not d_started:
                out["d"] = r["d"] if newer else out["d"]
                d_started = True
            elif not newer:
                out["d"] = r["d"]
            if newer:
                out["t"] = r["t"]
    return out


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    t = pa.Table.from_pylist(rows, schema=SCHEMA)
    return t.append_column(SEQUENCE_NUMBER, pa.array(range(len(rows)), pa.int64())).append_column(
        VALUE_KIND, pa.array([0] * len(rows), pa.int8()))


def _merge() -> PartialUpdateMergeFunction:
    fn = merge_function_for(new_table_schema(SCHEMA, table_name="t", primary_key=["k"], options=OPTIONS))
    assert isinstance(fn, PartialUpdateMergeFunction)
    return fn


_small = st.one_of(st.none(), st.integers(0, 3))
_row = st.fixed_dictionaries({
    "k": st.integers(0, 3), "x": st.one_of(st.none(), st.sampled_from(["p", "q"])), "s1": _small,
    "s2": _small, "a": _small, "b": st.one_of(st.none(), st.sampled_from(["u", "v"])), "t": _small,
    "c": st.one_of(st.none(), st.integers(-5, 5)), "d": _small,
})


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_row, min_size=1, max_size=25), seed=st.integers(0, 2**16))
def test_merge_equals_reference(rows: list[dict[str, Any]], seed: int) -> None:
    table = _table(rows)
    shuffled = table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows)))
    got = {r["k"]: {n: r[n] for n in SCHEMA.names} for r in _merge().merge(shuffled).to_pylist()}
    by_key: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_key.setdefault(r["k"], []).append(r)
    expected = {k: rs[0] if len(rs) == 1 else reference(rs) for k, rs in by_key.items()}
    assert got == expected


def test_fast_path_matches_row_by_row_port() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    cols = {
        "k": rng.integers(0, 200, n).astype(np.int32), "x": rng.choice(["p", "q", None], n),
        "s1": rng.integers(0, 5, n).astype(np.int32), "s2": rng.integers(0, 5, n),
        "a": rng.integers(0, 9, n).astype(np.int32), "b": rng.choice(["u", "v", None], n),
        "t": rng.integers(0, 5, n).astype(np.int32), "c": rng.integers(-5, 5, n),
        "d": rng.integers(0, 9, n).astype(np.int32),
    }
    table = _table(pa.table(cols, schema=SCHEMA).to_pylist())
    fn = _merge()
    fast = fn.merge(table)
    slow = fn._sequential(table.sort_by([("k", "ascending"), (SEQUENCE_NUMBER, "ascending")]))
    assert fast.select(SCHEMA.names).to_pylist() == slow.select(SCHEMA.names).to_pylist()


def test_plain_partial_update_rejects_deletes_at_merge() -> None:
    schema = pa.schema([("k", pa.int32()), ("v", pa.int32())])
    ts = new_table_schema(schema, table_name="t", primary_key=["k"],
                          options={"bucket": "1", "merge-engine": "partial-update"})
    rows = pa.table({"k": pa.array([1, 1], pa.int32()), "v": pa.array([1, None], pa.int32()),
                     SEQUENCE_NUMBER: pa.array([0, 1], pa.int64()), VALUE_KIND: pa.array([0, 3], pa.int8())})
    with pytest.raises(RowKindError, match="remove-record-on-delete"):
        merge_function_for(ts).merge(rows)


def test_projection_reads_the_sequence_fields() -> None:
    fn = _merge()
    assert fn.input_columns(set(SCHEMA.names)) == {"s1", "s2", "t"}
