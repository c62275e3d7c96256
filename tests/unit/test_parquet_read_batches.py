"""ParquetFormat.read: a batch size that could hold several large row groups gives one batch per row group (no batch
is assembled across them); small row groups are still joined; the rows are the file's either way."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laketide.format import file_format
from laketide.format import parquet as parquet_format


@pytest.mark.parametrize("batch_size", [1, 7, 100, 250, 1 << 22])
def test_batches_follow_row_groups_and_keep_every_row(tmp_path, monkeypatch, batch_size: int) -> None:  # noqa: ANN001
    monkeypatch.setattr(parquet_format, "_WHOLE_GROUP_ROWS", 200)  # these groups count as large
    table = pa.table({"k": pa.array(range(620), pa.int64()), "s": [f"v{i % 13}" for i in range(620)]})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=250)  # groups of 250, 250, 120
    batches = list(file_format("parquet").read(str(path), columns=["s", "k"], batch_size=batch_size))
    assert pa.Table.from_batches(batches).equals(table.select(["s", "k"]))
    assert all(b.num_rows <= batch_size for b in batches)
    if batch_size >= 250:
        assert [b.num_rows for b in batches] == [250, 250, 120]


def test_small_row_groups_are_joined_into_batches(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "f.parquet"
    table = pa.table({"k": pa.array(range(1000), pa.int64())})
    pq.write_table(table, path, row_group_size=100)
    batches = list(file_format("parquet").read(str(path), batch_size=1 << 22))
    assert [b.num_rows for b in batches] == [1000]
    assert pa.Table.from_batches(batches).equals(table)


def test_empty_and_single_group_files(tmp_path) -> None:  # noqa: ANN001
    schema = pa.schema([("k", pa.int64())])
    empty, single = tmp_path / "e.parquet", tmp_path / "s.parquet"
    pq.write_table(schema.empty_table(), empty)
    pq.write_table(pa.table({"k": [3, 1, 2]}, schema=schema), single)
    fmt = file_format("parquet")
    assert sum(b.num_rows for b in fmt.read(str(empty), batch_size=1 << 22)) == 0
    assert [b.num_rows for b in fmt.read(str(single), batch_size=1 << 22)] == [3]


# -- pruned and selected reads: consecutive row groups are read by one reader (format/parquet_runs.py) --------------

def _small_groups_file(tmp_path, rows: int = 1000, group_rows: int = 100):  # noqa: ANN001, ANN202
    path = tmp_path / "groups.parquet"
    table = pa.table({"k": pa.array(range(rows), pa.int64()), "s": [f"v{i % 7}" for i in range(rows)]})
    pq.write_table(table, path, row_group_size=group_rows)
    return str(path), table


def _keep_groups(wanted: set[int], group_rows: int = 100):  # noqa: ANN202
    def keep(stats_of, num_rows: int) -> bool:  # noqa: ANN001
        low = stats_of("k").min
        return low // group_rows in wanted

    return keep


def _check_positions(batches: list[tuple[int, pa.RecordBatch]], table: pa.Table) -> None:
    for pos, batch in batches:  # each batch is the file's rows from its position on
        assert batch.equals(table.slice(pos, batch.num_rows).to_batches()[0].select(batch.schema.names))


def test_group_runs_cuts_at_gaps() -> None:
    from laketide.format.parquet_runs import group_runs

    assert group_runs([]) == []
    assert group_runs([4]) == [[4]]
    assert group_runs([0, 1, 2, 5, 6, 9]) == [[0, 1, 2], [5, 6], [9]]


@pytest.mark.parametrize("wanted", [set(range(10)), {0, 1, 2, 5, 6, 9}, {3}, set(), {9}, {0, 2, 4, 6, 8}])
@pytest.mark.parametrize("batch_size", [1, 64, 250, 65536])
def test_pruned_read_spans_consecutive_groups_with_exact_positions(tmp_path, wanted: set[int],  # noqa: ANN001
                                                                   batch_size: int) -> None:
    path, table = _small_groups_file(tmp_path)
    got = list(file_format("parquet").read_pruned(path, keep=_keep_groups(wanted), columns=["s", "k"],
                                                  batch_size=batch_size))
    _check_positions(got, table)
    rows = sorted(r for _, b in got for r in b.column("k").to_pylist())
    assert rows == [r for r in range(1000) if r // 100 in wanted]
    assert all(b.num_rows <= batch_size for _, b in got)
    if batch_size == 65536 and wanted == set(range(10)):
        assert [b.num_rows for _, b in got] == [1000]  # one reader over every group: one batch, not ten


def test_selected_read_covers_the_groups_of_the_selected_rows(tmp_path) -> None:  # noqa: ANN001
    import numpy as np

    path, table = _small_groups_file(tmp_path)
    rows = np.array([5, 150, 199, 201, 750, 999], dtype=np.int64)  # groups 0, 1, 2, 7, 9
    got = list(file_format("parquet").read_selected(path, rows=rows, columns=["k"], batch_size=65536))
    _check_positions(got, table)
    assert [(pos, b.num_rows) for pos, b in got] == [(0, 300), (700, 100), (900, 100)]


def test_large_groups_stay_one_batch_each_in_pruned_reads(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(parquet_format, "_WHOLE_GROUP_ROWS", 100)  # these groups count as large
    path, table = _small_groups_file(tmp_path)
    got = list(file_format("parquet").read_pruned(path, keep=_keep_groups({1, 2, 3}), batch_size=1 << 22))
    _check_positions(got, table)
    assert [(pos, b.num_rows) for pos, b in got] == [(100, 100), (200, 100), (300, 100)]
