"""String and binary column stats of Parquet data files come from the footer the writer just produced: they must
be exactly the stats computed from the rows (metadata.stats-mode / fields.<f>.stats-mode, truncation, nulls,
empty strings, values too long for Parquet's statistics, many row groups, many batches)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from laketide.format.stats import collect_stats
from laketide.io.file_writer import simple_stats
from laketide.types import from_arrow_type

ALPHABET = np.array(list("abcz\u00e9\u4e2d\U0001f600\U0010ffff"))


def _strings(rng: np.random.Generator, n: int, *, long_every: int) -> list[str | None]:
    out: list[str | None] = []
    for i in range(n):
        r = rng.random()
        if r < 0.15:
            out.append(None)
        elif r < 0.25:
            out.append("")
        elif long_every and i % long_every == 0:
            # Beyond Parquet's 4 KB statistics limit, and the greatest value: its row group has no bounds.
            out.append("\U0010ffff" * 3 + "".join(rng.choice(ALPHABET, 5000)))
        else:
            out.append("".join(rng.choice(ALPHABET, int(rng.integers(1, 40)))))
    return out


def _data(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    amount = rng.normal(size=n)
    amount[rng.random(n) < 0.05] = np.nan
    amount[rng.random(n) < 0.05] = -0.0
    binary = [None if s is None else s.encode("utf-8")[:30] + bytes([255, 0]) for s in _strings(rng, n, long_every=0)]
    columns = {
        "id": pa.array(np.arange(n), pa.int64()),
        "amount": pa.array(amount, mask=rng.random(n) < 0.1),
        "s_default": pa.array(_strings(rng, n, long_every=0), pa.string()),
        "s_long": pa.array(_strings(rng, n, long_every=97), pa.string()),
        "s_full": pa.array(_strings(rng, n, long_every=131), pa.string()),
        "s_trunc3": pa.array(_strings(rng, n, long_every=0), pa.large_string()),
        "s_counts": pa.array(_strings(rng, n, long_every=0), pa.string()),
        "s_none": pa.array(_strings(rng, n, long_every=0), pa.string()),
        "s_all_null": pa.array([None] * n, pa.string()),
        # A struct before the string columns shifts their Parquet leaf positions; "s.x" names a top-level column.
        "s": pa.array([{"x": "\U0010ffff" * 20, "y": i} for i in range(n)],
                      pa.struct([("x", pa.string()), ("y", pa.int64())])),
        "s.x": pa.array(_strings(rng, n, long_every=0), pa.string()),
        "bin": pa.array(binary, pa.binary()),
    }
    return pa.table(columns)


OPTIONS = {
    "parquet.block.size": "20000",  # many row groups per file
    "fields.s_full.stats-mode": "full",
    "fields.s_trunc3.stats-mode": "truncate(3)",
    "fields.s_counts.stats-mode": "counts",
    "fields.s_none.stats-mode": "none",
}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_footer_stats_equal_computed_stats(catalog, seed: int) -> None:  # noqa: ANN001
    data = _data(seed, 3000)
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table(f"db.t{seed}", data.schema, options=OPTIONS)
    # Several input batches, some ending inside a row group.
    table.write(pa.Table.from_batches(data.to_batches(max_chunksize=700)))
    entries = table.file_scan().plan(table.snapshot_manager.latest_snapshot())
    assert len(entries) == 1
    meta = entries[0].file
    names = list(data.column_names)
    modes = [table.options.stats_mode(n) for n in names]
    keep = [i for i, m in enumerate(modes) if m != "none"]
    expected_all = collect_stats(data, modes)
    expected = simple_stats([expected_all[i] for i in keep], [from_arrow_type(data.schema.field(i).type)
                                                               for i in keep])
    assert meta.value_stats_cols == tuple(names[i] for i in keep)
    assert meta.value_stats == expected
    path = table.store.path_factory.data_file_paths(entries[0].partition, entries[0].bucket, meta)[0]
    import pyarrow.parquet as pq

    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    assert table.read().num_rows == data.num_rows


def test_format_options_reach_data_files(catalog) -> None:  # noqa: ANN001
    import pyarrow.parquet as pq

    catalog.create_database("db", exist_ok=True)
    data = _data(7, 2000)
    table = catalog.create_table("db.opts", data.schema, options={
        "parquet.compression": "snappy", "parquet.block.size": "30000", "parquet.enable.dictionary": "false"})
    table.write(data)
    compact = catalog.table("db.opts")
    compact.write(data)
    compact.compact(full=True)  # compaction writes with the same options
    for entry in table.file_scan().plan(table.snapshot_manager.latest_snapshot()):
        path = table.store.path_factory.data_file_paths(entry.partition, entry.bucket, entry.file)[0]
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups > 3
        chunk = meta.row_group(0).column(2)
        assert chunk.compression == "SNAPPY"
        assert not chunk.has_dictionary_page


def test_bad_format_option_is_refused(catalog) -> None:  # noqa: ANN001
    from laketide.exceptions import InvalidOptionError

    catalog.create_database("db", exist_ok=True)
    with pytest.raises(InvalidOptionError, match="parquet.block.size"):
        catalog.create_table("db.bad", pa.schema([("id", pa.int64())]), options={"parquet.block.size": "big"})
    assert "bad" not in [str(t) for t in catalog.list_tables("db")]
