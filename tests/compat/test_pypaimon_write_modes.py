"""pypaimon reads what Table.write's overwrite modes and schema_mode='merge' leave, with the same rows."""

from __future__ import annotations

import pyarrow as pa

from tests.compat.pypaimon_client import PyPaimon


def rows_of(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r["p"], r["id"]))


def test_pypaimon_reads_overwrites_and_a_merged_schema(catalog, warehouse, pypaimon: PyPaimon) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                        ("v", pa.int32())])
    t = catalog.create_table("db.t", schema, primary_key=["id", "p"], partition_keys=["p"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3, 4], "p": ["a", "a", "b", "c"], "v": [1, 2, 3, 4]}, schema=schema))
    t.write(pa.table({"id": [5], "p": ["a"], "v": [5]}, schema=schema), mode="overwrite", where="p = 'a'")
    t.write(pa.table({"id": [6], "p": ["b"], "v": [6]}, schema=schema), mode="overwrite",
            partition_overwrite="dynamic")
    t.write(pa.table({"id": [7], "p": ["d"], "v": [2**40], "w": ["new"]}), schema_mode="merge")  # BIGINT + w
    assert t.arrow_schema.field("v").type == pa.int64()
    ours = rows_of(t.read())
    assert ours == [{"id": 5, "p": "a", "v": 5, "w": None}, {"id": 6, "p": "b", "v": 6, "w": None},
                    {"id": 4, "p": "c", "v": 4, "w": None}, {"id": 7, "p": "d", "v": 2**40, "w": "new"}]
    theirs = pypaimon.read(warehouse, "db.t")
    assert rows_of(theirs) == ours
