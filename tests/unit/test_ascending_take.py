"""take_ascending (format/ascending_take.py) equals Arrow's take for ascending row numbers, however the columns
are chunked, and copies only the rows asked for."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.format.ascending_take import MAX_CHUNKS, take_ascending, take_rows


def _chunked(values: list[object], type_: pa.DataType, cuts: list[int]) -> pa.ChunkedArray:
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(values)), len(values)]
    return pa.chunked_array([pa.array(values[a:b], type_) for a, b in zip(bounds, bounds[1:])], type=type_)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 300),
    cuts=st.lists(st.integers(0, 300), max_size=6),
    other_cuts=st.lists(st.integers(0, 300), max_size=3),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31),
)
def test_equals_arrow_take(n: int, cuts: list[int], other_cuts: list[int], density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    strings = [None if rng.random() < 0.1 else "v" * int(rng.integers(0, 30)) + str(i) for i in range(n)]
    ints = [None if rng.random() < 0.1 else int(v) for v in rng.integers(-10**12, 10**12, n)]
    table = pa.table({
        "s": _chunked(strings, pa.string(), cuts),  # the columns of one table chunked differently
        "i": _chunked(ints, pa.int64(), other_cuts),
        "l": _chunked([[i] * (i % 3) for i in range(n)], pa.list_(pa.int32()), cuts),
    })
    indices = np.flatnonzero(rng.random(n) < density)
    got = take_ascending(table, indices)
    assert got.schema == table.schema
    assert got.equals(table.take(indices))


def test_empty_chunks_and_no_rows() -> None:
    column = pa.chunked_array([pa.array([], pa.string()), pa.array(["a", "b"]), pa.array([], pa.string()),
                               pa.array(["c"])])
    table = pa.table({"s": column})
    assert take_ascending(table, np.array([1, 2], dtype=np.int64)).column("s").to_pylist() == ["b", "c"]
    none = take_ascending(table, np.array([], dtype=np.int64))
    assert none.num_rows == 0 and none.schema == table.schema


def test_only_chunks_holding_rows_are_touched() -> None:
    chunks = [pa.array([f"{c}-{i}" for i in range(1000)]) for c in range(4)]
    table = pa.table({"s": pa.chunked_array(chunks)})
    got = take_ascending(table, np.array([1000, 1500, 2999], dtype=np.int64)).column("s")
    assert got.to_pylist() == ["1-0", "1-500", "2-999"]
    assert got.num_chunks == 2  # one piece per source chunk with rows, no concatenation of the column
    assert sum(c.nbytes for c in got.chunks) < chunks[0].nbytes


@pytest.mark.parametrize("chunks", [1, MAX_CHUNKS, MAX_CHUNKS + 1])
def test_any_number_of_chunks(chunks: int) -> None:
    table = pa.table({"v": pa.chunked_array([pa.array([c * 10 + i for i in range(10)]) for c in range(chunks)])})
    indices = np.arange(0, chunks * 10, 3, dtype=np.int64)
    assert take_ascending(table, indices).column("v").to_pylist() == indices.tolist()


def test_dictionary_sample_of_a_multi_chunk_column_decides_as_of_one_chunk() -> None:
    from laketide.format.parquet_dictionary import dictionary_columns

    values = [f"v{i % 50}" for i in range(30_000)]
    one = pa.table({"s": pa.array(values), "u": pa.array([f"u{i}" for i in range(30_000)])})
    many = pa.table({"s": pa.chunked_array([pa.array(values[a:a + 7_000]) for a in range(0, 30_000, 7_000)]),
                     "u": one.column("u")})
    assert dictionary_columns(many, group_rows=30_000) == dictionary_columns(one, group_rows=30_000) == ["s"]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 200),
    cuts=st.lists(st.integers(0, 200), max_size=5),
    picks=st.lists(st.integers(0, 10**6), max_size=60),
    ascending=st.booleans(),
)
def test_take_rows_equals_arrow_take_for_any_order(n: int, cuts: list[int], picks: list[int],
                                                   ascending: bool) -> None:
    # take_rows goes chunk by chunk only for non-decreasing positions (repeats included); any other order is
    # Arrow's own take: the same rows either way.
    strings = [None if i % 7 == 0 else f"s{i}" * (i % 5) for i in range(n)]
    table = pa.table({"s": _chunked(strings, pa.string(), cuts), "i": pa.array(range(n), pa.int64())})
    indices = np.array([p % n for p in picks] if n else [], dtype=np.int64)
    if ascending:
        indices = np.sort(indices)
    got = take_rows(table, indices)
    assert got.schema == table.schema
    assert got.equals(table.take(indices))


def test_take_rows_of_a_few_rows_copies_no_whole_column() -> None:
    # Arrow's take on a multi-chunk string column first concatenates the whole column (a cross-partition upsert
    # took each group's deletes so, once per group); ascending rows are copied alone.
    chunks = [pa.array([f"{c}-{i}" for i in range(1000)]) for c in range(4)]
    table = pa.table({"s": pa.chunked_array(chunks)})
    pool = pa.default_memory_pool()
    before = pool.total_bytes_allocated()
    got = take_rows(table, np.array([5, 1999, 3000], dtype=np.int64))
    assert pool.total_bytes_allocated() - before < chunks[0].nbytes
    assert got.column("s").to_pylist() == ["0-5", "1-999", "3-0"]
    backwards = take_rows(table, np.array([3000, 5], dtype=np.int64))
    assert backwards.column("s").to_pylist() == ["3-0", "0-5"]
