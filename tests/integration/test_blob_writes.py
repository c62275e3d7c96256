"""Tables with BLOB columns laketide creates and writes: blob values in ``.blob`` files beside the data file of the
other columns (Java's DedicatedFormatRollingFileWriter), row ids shared, read back whole.

Paimon: SchemaValidation (BLOB needs data evolution), MultipleBlobFileWriter, BlobFormatWriter.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, SchemaError, UnsupportedFeatureError
from laketide.format.blob import BlobFile, encode_blob_file, is_blob_file, split_blob_values
from laketide.types import ArrayType, BigIntType, BlobType, DataField, RowType, VarCharType

ROW = RowType((DataField(0, "id", BigIntType(nullable=False)), DataField(1, "name", VarCharType(2147483647)),
               DataField(2, "payload", BlobType())))
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def batch(ids: list[int], payloads: list[bytes | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
                     "payload": pa.array(payloads, pa.large_binary())})


def by_id(table: pa.Table) -> dict:
    return {r["id"]: (r["name"], r["payload"]) for r in table.select(["id", "name", "payload"]).to_pylist()}


@pytest.mark.parametrize("values", [[b"abc", None, b"", b"x" * 1000], [], [None], [bytes(range(256)) * 64]])
def test_encoded_blob_files_read_back(values: list) -> None:  # noqa: ANN001
    data = encode_blob_file(pa.array(values, pa.large_binary()))
    blob = BlobFile(data, "t.blob")
    assert blob.values().to_pylist() == values and not blob.placeholders.any()


def test_blob_record_layout_is_javas() -> None:
    import struct
    import zlib

    data = encode_blob_file(pa.array([b"hi"], pa.large_binary()))
    head = struct.pack("<i", 1481511375) + b"hi" + struct.pack("<q", 18)
    assert data == head + struct.pack("<I", zlib.crc32(head)) + b"\x24" + struct.pack("<i", 1) + b"\x01"


def test_blob_files_roll_after_the_record_reaching_the_target() -> None:
    values = pa.array([b"a" * 10, b"b" * 10, None, b"c" * 10], pa.large_binary())
    parts = split_blob_values(values, 40)  # 26 bytes a record: the second one reaches 40
    assert [p.to_pylist() for p in parts] == [[b"a" * 10, b"b" * 10], [None, b"c" * 10]]


def test_write_and_read_blob_table(catalog, warehouse) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", ROW, options=OPTIONS)
    oracle: dict = {}
    rnd = random.Random(7)
    for start in (0, 3, 9):
        ids = list(range(start, start + rnd.randint(1, 6)))
        payloads = [None if rnd.random() < 0.2 else rnd.randbytes(rnd.randint(0, 3000)) for _ in ids]
        t.write(batch(ids, payloads))
        oracle.update({i: (f"n{i}", p) for i, p in zip(ids, payloads)})
        assert by_id(t.read()) == oracle
    files = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    data = [f for f in files if not is_blob_file(f.file_name)]
    blobs = [f for f in files if is_blob_file(f.file_name)]
    assert all(f.write_cols == ("id", "name") for f in data) and all(f.write_cols == ("payload",) for f in blobs)
    assert sorted((f.first_row_id, f.row_count) for f in data) == sorted((f.first_row_id, f.row_count) for f in blobs)
    assert len(list(Path(warehouse).rglob("*.blob"))) == len(blobs)
    got = t.read(columns=["_ROW_ID", "id", "payload"]).sort_by("_ROW_ID")
    assert got.column("id").to_pylist() == sorted(oracle)
    assert got.column("_ROW_ID").to_pylist() == list(range(len(oracle)))
    assert t.read(columns=["payload"], where="id = 3").column("payload").to_pylist() == [oracle[3][1]]


def test_blob_files_roll_by_blob_target_file_size(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", ROW, options={**OPTIONS, "blob.target-file-size": "1 kb"})
    payloads = [bytes([i]) * 600 for i in range(5)]
    t.write(batch(list(range(5)), payloads))
    blobs = sorted((f for f in (e.file for e in t.file_scan().plan(t.latest_snapshot()))
                    if is_blob_file(f.file_name)), key=lambda f: f.first_row_id)
    assert [(f.first_row_id, f.row_count) for f in blobs] == [(0, 2), (2, 2), (4, 1)]
    assert by_id(t.read()) == {i: (f"n{i}", p) for i, p in enumerate(payloads)}


@pytest.mark.parametrize("row, options, primary_key, partition_keys, error, word", [
    (ROW, {"row-tracking.enabled": "true"}, None, None, InvalidOptionError, "data-evolution.enabled"),
    (RowType((DataField(0, "payload", BlobType()),)), OPTIONS, None, None, SchemaError, "other columns"),
    (ROW, OPTIONS, None, ["payload"], SchemaError, "partition"),
    (RowType((DataField(0, "id", BigIntType(nullable=False)), DataField(1, "bs", ArrayType(BlobType())))), OPTIONS,
     None, None, UnsupportedFeatureError, "ARRAY"),
    (ROW, {"bucket": "1"}, ["id"], None, UnsupportedFeatureError, "primary-key"),
], ids=["no-data-evolution", "only-blob", "blob-partition", "array-of-blob", "primary-key"])
def test_bad_blob_tables_are_refused(catalog, row, options, primary_key, partition_keys, error, word) -> None:  # noqa: ANN001
    with pytest.raises(error, match=word):
        catalog.create_table("db.b", row, options=options, primary_key=primary_key, partition_keys=partition_keys)
    assert not catalog.table_exists("db.b")


def test_an_aborted_blob_write_deletes_its_files(catalog, warehouse) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", ROW, options=OPTIONS)
    w = t.new_write()
    w.write(batch([1, 2], [b"a", b"b"]))
    kept = w.prepare_commit()  # prepared, not committed: its files stay until the caller commits or aborts them
    w.write(batch([3], [b"c"]))
    w.abort()  # only the files written since prepare_commit
    names = sorted(p.name for p in Path(warehouse).rglob("data-*"))
    assert names == sorted(f.file_name for m in kept for f in m.new_files) and len(names) == 2
    t.abort(kept)
    assert not list(Path(warehouse).rglob("data-*")) and t.latest_snapshot() is None


def test_blob_files_follow_external_paths(catalog, tmp_path) -> None:  # noqa: ANN001
    root = tmp_path / "ext"
    root.mkdir()
    t = catalog.create_table("db.b", ROW, options={**OPTIONS, "data-file.external-paths": f"file://{root}",
                                                   "data-file.external-paths.strategy": "round-robin"})
    t.write(batch([1, 2], [b"one", None]))
    files = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    assert len(files) == 2 and all(f.external_path and str(root) in f.external_path for f in files)
    assert len(list(root.rglob("*.blob"))) == 1
    assert by_id(t.read()) == {1: ("n1", b"one"), 2: ("n2", None)}


def test_update_by_row_id_of_a_blob_table_keeps_the_blobs(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", ROW, options=OPTIONS)
    t.write(batch([1, 2, 3], [b"a", b"b", None]))
    t.update_by_row_id(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "name": ["renamed"]}))
    assert by_id(t.read()) == {1: ("n1", b"a"), 2: ("renamed", b"b"), 3: ("n3", None)}
    with pytest.raises(UnsupportedFeatureError, match="BLOB"):
        t.update_by_row_id(pa.table({"_ROW_ID": pa.array([0], pa.int64()),
                                     "payload": pa.array([b"x"], pa.large_binary())}))


def test_update_where_on_a_blob_table(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.b", ROW, options=OPTIONS)
    t.write(batch([1, 2], [b"a", b"b"]))
    assert t.update({"name": "'x'"}, where="id = 2").rows_updated == 1
    assert by_id(t.read()) == {1: ("n1", b"a"), 2: ("x", b"b")}
    with pytest.raises(UnsupportedFeatureError, match="BLOB"):
        t.update({"payload": "NULL"}, where="id = 1")
    assert by_id(t.read()) == {1: ("n1", b"a"), 2: ("x", b"b")}
