"""BLOB tables written by pypaimon (row tracking + data evolution, blob values in ``.blob`` files beside the data
files) read by laketide as pypaimon reads them; blob tables laketide writes read by pypaimon."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import UnsupportedFeatureError
from laketide.types import BlobType

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("payload", pa.large_binary())])
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def batch(ids: list[int], payloads: list[bytes | None]) -> pa.Table:
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "payload": payloads}, schema=SCHEMA)


def by_id(table: pa.Table) -> dict:
    return {r["id"]: (r["name"], r["payload"]) for r in table.select(SCHEMA.names).to_pylist()}


def test_laketide_reads_pypaimon_blob_columns(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.b", SCHEMA, options=OPTIONS)
    pypaimon.write(warehouse, "db.b", batch([1, 2, 3], [b"abc", None, b""]))
    pypaimon.write(warehouse, "db.b", batch([4, 5], [bytes(range(256)) * 400, b"\x00tail"]))
    assert len(list(Path(warehouse).rglob("*.blob"))) >= 2
    t = catalog.table("db.b")
    assert isinstance(t.schema.field("payload").type, BlobType)
    ours = t.read()
    assert ours.schema.field("payload").type == pa.large_binary()
    assert by_id(ours) == by_id(pypaimon.read(warehouse, "db.b"))
    assert by_id(ours)[4][1] == bytes(range(256)) * 400 and by_id(ours)[2][1] is None
    # Projections with and without the blob column, a filter, the row ids beside the blobs.
    assert sorted(t.read(columns=["id"]).column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert t.read(columns=["payload"], where="id = 5").column("payload").to_pylist() == [b"\x00tail"]
    tracked = t.read(columns=["id", "payload", "_ROW_ID"]).sort_by("_ROW_ID")
    assert tracked.column("id").to_pylist() == [1, 2, 3, 4, 5]


def test_blob_columns_need_data_evolution_to_be_read(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.b", SCHEMA, options=OPTIONS)
    pypaimon.write(warehouse, "db.b", batch([1], [b"abc"]))
    t = catalog.table("db.b")
    # Without data evolution nothing says where the blob values are: refused, never read as nulls.
    options = {k: v for k, v in t.schema.options.items() if k != "data-evolution.enabled"}
    with pytest.raises(UnsupportedFeatureError, match="BLOB"):
        t.store.new_read(read_schema=dataclasses.replace(t.schema, options=options))


def test_pypaimon_reads_the_blob_files_laketide_writes(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    """laketide appends to a pypaimon-created blob table and creates one itself; pypaimon reads both whole."""
    pypaimon.create_table(warehouse, "db.b", SCHEMA, options=OPTIONS)
    pypaimon.write(warehouse, "db.b", batch([1, 2], [b"abc", None]))
    t = catalog.table("db.b")
    t.write(batch([3, 4, 5], [b"", bytes(range(256)) * 50, None]))
    pypaimon.write(warehouse, "db.b", batch([6], [b"six"]))
    t.write(batch([7], [b"\x00seven"]))
    ours = by_id(t.read())
    assert ours == by_id(pypaimon.read(warehouse, "db.b"))
    assert ours[4][1] == bytes(range(256)) * 50 and ours[5][1] is None and ours[7][1] == b"\x00seven"
    tracked = ["id", "_ROW_ID"]
    assert (pypaimon.read(warehouse, "db.b", columns=tracked).sort_by("_ROW_ID").to_pydict()
            == t.read(columns=tracked).sort_by("_ROW_ID").to_pydict())

    from laketide.types import BigIntType, DataField, RowType, VarCharType

    row = RowType((DataField(0, "id", BigIntType(nullable=False)), DataField(1, "name", VarCharType(2147483647)),
                   DataField(2, "payload", BlobType())))
    mine = catalog.create_table("db.mine", row, options={**OPTIONS, "blob.target-file-size": "1 kb"})
    mine.write(batch([1, 2, 3], [b"a" * 700, None, b"c" * 700]))
    assert by_id(pypaimon.read(warehouse, "db.mine")) == by_id(mine.read()) == {
        1: ("n1", b"a" * 700), 2: ("n2", None), 3: ("n3", b"c" * 700)}
