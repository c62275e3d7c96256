"""Table.read decodes the files of an append table's splits in parallel: the rows and their order are those of
the streaming read, with projections, filters and file-index row selections, and with schema evolution."""

from __future__ import annotations

import pyarrow as pa

from laketide.schema.changes import AddColumn

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_parallel_read_equals_streamed_read(catalog) -> None:  # noqa: ANN001
    catalog.create_database("db", exist_ok=True)
    table = catalog.create_table("db.t", SCHEMA, options={"file-index.bitmap.columns": "name"})
    for i in range(12):  # small files: several per split
        ids = list(range(i * 100, i * 100 + 100))
        table.write(pa.table({"id": ids, "name": [f"n{v % 7}" for v in ids]}, schema=SCHEMA))
    table.alter(AddColumn(name="extra", type=pa.int32()))
    table = catalog.table("db.t")
    table.write(pa.table({"id": [5000, 5001], "name": ["n1", "n2"], "extra": [1, 2]},
                         schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("extra", pa.int32())])))
    splits = table.scan().plan()
    assert any(len(s.files) > 1 for s in splits)
    for kwargs in ({}, {"columns": ["extra", "id"]}, {"where": "name = 'n3'"}, {"where": "id >= 550 AND id < 1150"}):
        scan = table.scan(**kwargs)
        streamed = pa.Table.from_batches(list(scan.to_batches()), schema=scan.output_schema)
        assert table.scan(**kwargs).to_arrow().equals(streamed)
    assert table.read().num_rows == 1202
    assert table.read(where="name = 'n3'").column("id").to_pylist() == [v for v in range(1200) if v % 7 == 3]
