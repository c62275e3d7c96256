"""format/parquet_keyed.py: the same row groups and rows as ParquetFormat's read_pruned / read_selected."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.exceptions import FileIOError
from laketide.format import file_format
from laketide.format.parquet_keyed import read_pruned_keyed, read_selected_keyed

ROWS = 1000


def _file(*, dictionary: bool | list[str] = True) -> bytes:
    """Ten row groups of 100 rows: a sorted key, low- and high-cardinality strings, binary, a nullable string."""
    k = np.arange(ROWS, dtype=np.int64)
    table = pa.table({
        "k": k,
        "low": pa.array([["new", "paid", "done"][i % 3] for i in range(ROWS)]),
        "high": pa.array([f"unique-{i:06d}" for i in range(ROWS)], pa.large_string()),
        "raw": pa.array([bytes([i % 7]) * (i % 5) for i in range(ROWS)], pa.binary()),
        "maybe": pa.array([None if i % 4 == 0 else str(i % 9) for i in range(ROWS)]),
        "x": pa.array(np.arange(ROWS) * 0.5),
    })
    out = io.BytesIO()
    # A tiny dictionary page limit makes "high" fall back to plain encoding inside its chunks.
    pq.write_table(table, out, row_group_size=100, use_dictionary=dictionary, dictionary_pagesize_limit=256)
    return out.getvalue()


COLUMNS = ["k", "low", "high", "raw", "maybe", "x"]


@settings(max_examples=60, deadline=None)
@given(positions=st.lists(st.integers(0, ROWS - 1), max_size=40, unique=True).map(sorted),
       dictionary=st.sampled_from([True, False, ["low"]]), batch_size=st.sampled_from([7, 100, 65536]))
def test_selected_rows_equal_the_plain_read(positions: list[int], dictionary: bool | list[str],
                                            batch_size: int) -> None:
    data = _file(dictionary=dictionary)
    rows = np.array(positions, dtype=np.int64)
    plain = list(file_format("parquet").read_selected(io.BytesIO(data), rows=rows, columns=COLUMNS))
    keyed = list(read_selected_keyed(io.BytesIO(data), rows=rows, columns=COLUMNS,
                                     dictionary=["low", "high", "raw", "maybe", "x", "absent"],
                                     batch_size=batch_size))

    def taken(batches: list[tuple[int, pa.RecordBatch]]) -> pa.Table:
        out = []
        for offset, batch in batches:
            mask = np.isin(np.arange(offset, offset + batch.num_rows), rows)
            out.append(batch.filter(pa.array(mask)))
        return pa.Table.from_batches(out, schema=batches[0][1].schema) if batches else pa.table({})

    want, got = taken(plain), taken(keyed)
    assert got.num_rows == want.num_rows == len(positions)
    if positions:
        # strings come back as dictionaries (not the float column); cast, they are the same values
        assert pa.types.is_dictionary(got.schema.field("low").type)
        assert pa.types.is_dictionary(got.schema.field("high").type)
        assert got.schema.field("x").type == pa.float64()
        decoded = pa.table({n: got.column(n).cast(want.schema.field(n).type) for n in COLUMNS})
        assert decoded.equals(want.select(COLUMNS))


def test_pruned_groups_and_positions_equal_read_pruned() -> None:
    data = _file()
    for lo, hi in ((0, 0), (150, 420), (999, 999), (2000, 3000)):
        def keep(stats_of, num_rows: int, lo: int = lo, hi: int = hi) -> bool:  # noqa: ANN001
            s = stats_of("k")
            return s.max >= lo and s.min <= hi

        plain = list(file_format("parquet").read_pruned(io.BytesIO(data), keep=keep, columns=["k", "low"]))
        keyed = list(read_pruned_keyed(io.BytesIO(data), keep=keep, columns=["k", "low"], batch_size=1 << 20))
        # every batch starts at its rows' file position, and the same rows come back
        for pos, batch in plain + keyed:
            assert batch.column("k")[0].as_py() == pos
        assert [b.column("k").to_pylist() for _, b in keyed] == [
            [k for _, b in plain for k in b.column("k").to_pylist()]] if plain else keyed == []
        assert sum((b.column("low").to_pylist() for _, b in keyed), []) == sum(
            (b.column("low").to_pylist() for _, b in plain), [])


def test_unreadable_file_is_a_typed_error() -> None:
    with pytest.raises(FileIOError, match="not a readable Parquet file"):
        list(read_selected_keyed(io.BytesIO(b"not parquet at all"), rows=np.array([0]), columns=["k"],
                                 dictionary=[], batch_size=10))
    with pytest.raises(FileIOError, match="not a readable Parquet file"):
        list(read_pruned_keyed(io.BytesIO(b"PAR1garbagePAR1"), keep=lambda s, n: True, columns=["k"], batch_size=10))
