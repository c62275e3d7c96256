"""The per-column dictionary decision of Parquet files (laketide/format/parquet_dictionary.py)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from laketide.exceptions import InvalidOptionError
from laketide.format import file_format
from laketide.format.parquet_dictionary import dictionary_columns, keeps_dictionary

ROWS = 50_000


def _mixed(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(7)
    statuses = np.array(["new", "paid", "shipped", "done", "returned"])
    return pa.table({
        "key": pa.array(np.arange(rows, dtype=np.int64)),  # unique, sorted: as a PK file's key
        "status": pa.array(statuses[rng.integers(0, 5, rows)]),
        "code": pa.array(rng.integers(0, 12, rows).astype(np.int16)),
        "flag": pa.array(rng.integers(0, 2, rows) == 1),
        "amount": pa.array(rng.uniform(0, 1000, rows)),
        "note": pa.array([f"note-{i:09d}" for i in range(rows)]),  # unique strings
        "nothing": pa.nulls(rows, pa.int64()),
    })


def _write(table: pa.Table, options: dict[str, str] | None = None) -> pq.FileMetaData:
    out = io.BytesIO()
    file_format("parquet").write(out, table, compression="zstd", options=options or {})
    parquet_file = pq.ParquetFile(io.BytesIO(out.getvalue()))
    assert parquet_file.read().equals(table.cast(parquet_file.schema_arrow))  # the rows round-trip either way
    return parquet_file.metadata


def _dictionary_pages(meta: pq.FileMetaData) -> dict[str, bool]:
    """Column path -> whether every row group of the file has a dictionary page for it."""
    out: dict[str, bool] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            out[chunk.path_in_schema] = out.get(chunk.path_in_schema, True) and chunk.has_dictionary_page
    return out


def _chunk_bytes(meta: pq.FileMetaData) -> dict[str, int]:
    out: dict[str, int] = {}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i in range(group.num_columns):
            chunk = group.column(i)
            out[chunk.path_in_schema] = out.get(chunk.path_in_schema, 0) + chunk.total_compressed_size
    return out


@pytest.mark.parametrize("block_size", [None, str(256 * 1024)], ids=["one group", "small groups"])
def test_low_cardinality_columns_keep_the_dictionary_unique_ones_do_not(block_size: str | None) -> None:
    options = {} if block_size is None else {"parquet.block.size": block_size}
    meta = _write(_mixed(), options)
    pages = _dictionary_pages(meta)
    assert pages["status"] and pages["code"] and pages["nothing"]
    assert not pages["key"] and not pages["amount"] and not pages["note"]
    if block_size is not None:
        assert meta.num_row_groups > 1


@pytest.mark.parametrize("block_size", [None, str(256 * 1024)], ids=["one group", "small groups"])
def test_sizes_do_not_grow_against_dictionary_everywhere(block_size: str | None) -> None:
    table = _mixed()
    options = {} if block_size is None else {"parquet.block.size": block_size}
    decided = _chunk_bytes(_write(table, options))
    everywhere = _chunk_bytes(_write(table, {**options, "parquet.enable.dictionary": "true"}))
    for name in ("status", "code", "flag", "nothing"):  # same encodings: same bytes
        assert decided[name] == everywhere[name], name
    for name in ("key", "amount", "note"):
        assert decided[name] <= everywhere[name], name


def test_explicit_option_wins() -> None:
    table = _mixed(5_000)
    none = _dictionary_pages(_write(table, {"parquet.enable.dictionary": "false"}))
    assert not any(none.values())
    every = _dictionary_pages(_write(table, {"parquet.enable.dictionary": " TRUE "}))
    # Java's behaviour: every column starts with a dictionary (Parquet has none for booleans).
    assert all(has for name, has in every.items() if name != "flag")
    assert every["key"] and every["note"]


def test_bad_option_value_is_a_typed_error() -> None:
    with pytest.raises(InvalidOptionError, match="parquet.enable.dictionary"):
        file_format("parquet").open_writer(io.BytesIO(), pa.schema([("a", pa.int64())]), compression="zstd",
                                           options={"parquet.enable.dictionary": "yes"})


def test_empty_input_writes_a_readable_file() -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    out = io.BytesIO()
    writer = file_format("parquet").open_writer(out, schema, compression="zstd")
    writer.write_batch(schema.empty_table())
    writer.close()
    assert writer.bytes_written() == len(out.getvalue())
    read = pq.read_table(io.BytesIO(out.getvalue()))
    assert read.num_rows == 0 and read.schema.names == ["a", "s"]
    assert dictionary_columns(schema.empty_table(), group_rows=1) == ["a", "s"]


def test_nulls_only_and_mostly_null_columns() -> None:
    assert keeps_dictionary(pa.nulls(10_000, pa.string()), group_rows=10_000)
    # Mostly null around a few repeated values: judged on the values present.
    values = pa.array([None if i % 10 else f"v{i % 3}" for i in range(10_000)])
    assert keeps_dictionary(values, group_rows=10_000)
    # Mostly null around unique values.
    unique = pa.array([None if i % 10 else i for i in range(100_000)], pa.int64())
    assert not keeps_dictionary(unique, group_rows=100_000)


def test_moderate_cardinality_depends_on_the_row_group() -> None:
    rng = np.random.default_rng(3)
    column = pa.array(rng.integers(0, 20_000, 1_000_000))  # 20k distinct int64 values
    # A row group of 1M rows: a 160 KB dictionary and 15-bit indices beat 8 MB of plain values.
    assert keeps_dictionary(column, group_rows=1_000_000)
    # A row group of 5k rows holds ~4.4k distinct values: the dictionary is about as big as the values.
    assert not keeps_dictionary(column, group_rows=5_000)


def test_arrow_dictionary_input_keeps_the_dictionary() -> None:
    unique = pa.array([f"u{i}" for i in range(20_000)]).dictionary_encode()
    assert keeps_dictionary(unique, group_rows=20_000)
    pages = _dictionary_pages(_write(pa.table({"u": unique})))
    assert pages["u"]


def test_nested_columns_keep_the_dictionary_on_every_leaf() -> None:
    rows = 20_000
    table = pa.table({
        "key": pa.array(np.arange(rows, dtype=np.int64)),
        "s": pa.array([{"x": i, "tag": "ab"[i % 2]} for i in range(rows)],
                      pa.struct([("x", pa.int64()), ("tag", pa.string())])),
        "l": pa.array([[i, i + 1] for i in range(rows)], pa.list_(pa.int64())),
        "m": pa.array([[("k", i)] for i in range(rows)], pa.map_(pa.string(), pa.int64())),
    })
    chosen = dictionary_columns(table, group_rows=rows)
    meta = _write(table)
    leaves = [meta.schema.column(i).path for i in range(meta.num_columns)]
    assert set(chosen) == set(leaves) - {"key"}  # the names pyarrow's writer gives the leaves
    pages = _dictionary_pages(meta)
    assert not pages["key"]
    assert all(pages[leaf] for leaf in chosen)


def test_the_decision_is_per_file() -> None:
    # A writer that gets unique values first and repeated ones later decides from what it saw first; a new
    # file decides again.
    unique = pa.table({"a": pa.array(np.arange(20_000, dtype=np.int64))})
    repeated = pa.table({"a": pa.array(np.arange(20_000, dtype=np.int64) % 4)})
    assert not _dictionary_pages(_write(unique))["a"]
    assert _dictionary_pages(_write(repeated))["a"]
