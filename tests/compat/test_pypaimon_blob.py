"""BLOB tables written by pypaimon (row tracking + data evolution, blob values in ``.blob`` files beside the data
files) read by laketide as pypaimon reads them; laketide writes none and says so."""

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


def test_laketide_writes_no_blob_table(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.b", SCHEMA, options=OPTIONS)
    pypaimon.write(warehouse, "db.b", batch([1], [b"abc"]))
    t = catalog.table("db.b")
    before = t.latest_snapshot()
    with pytest.raises(UnsupportedFeatureError, match="BLOB"):
        t.write(batch([2], [b"x"]))
    assert t.latest_snapshot() == before
    # Without data evolution nothing says where the blob values are: refused, never read as nulls.
    options = {k: v for k, v in t.schema.options.items() if k != "data-evolution.enabled"}
    with pytest.raises(UnsupportedFeatureError, match="BLOB"):
        t.store.new_read(read_schema=dataclasses.replace(t.schema, options=options))
