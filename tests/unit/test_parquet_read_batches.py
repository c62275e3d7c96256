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
