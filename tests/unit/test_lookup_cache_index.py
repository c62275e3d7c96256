"""The lookup cache's key index (scan/lookup_cache.py): the positions of the wanted keys in a file's search column,
whether the file's batches are sorted (views of the mapped file) or not (a sorted copy), with duplicates."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.scan.lookup_cache import _KeyIndex


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-50, 50), max_size=200), wanted=st.lists(st.integers(-60, 60), max_size=40),
       cuts=st.lists(st.integers(0, 200), max_size=5), presort=st.booleans())
def test_positions_equal_a_scan_of_every_row(values, wanted, cuts, presort) -> None:  # noqa: ANN001
    data = np.array(sorted(values) if presort else values, dtype=np.int64)
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    chunks = [pa.array(data[a:b]) for a, b in zip(bounds, bounds[1:])] or [pa.array([], pa.int64())]
    rows = pa.table({"k": pa.chunked_array(chunks, pa.int64())})
    index = _KeyIndex.of(rows, "k")
    assert index is not None
    asked = np.unique(np.array(wanted, dtype=np.int64))
    expected = np.flatnonzero(np.isin(data, asked))
    assert index.positions(asked).tolist() == expected.tolist()
    if presort:
        assert index.order is None, "a sorted file is searched in place"


def test_dates_nulls_and_other_types() -> None:
    dates = pa.table({"d": pa.array([1, 5, 9], pa.int32()).view(pa.date32())})
    index = _KeyIndex.of(dates, "d")
    assert index is not None and index.positions(np.array([5, 9], dtype=np.int32)).tolist() == [1, 2]
    assert _KeyIndex.of(pa.table({"k": pa.array([1, None])}), "k") is None
    assert _KeyIndex.of(pa.table({"k": pa.array(["a"])}), "k") is None
    assert _KeyIndex.of(pa.table({"k": pa.array([1.5])}), "k") is None
