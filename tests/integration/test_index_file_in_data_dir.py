"""``index-file-in-data-file-dir``: hash-index and deletion-vector files live in their bucket directory, named
``index-<uuid>-<n>`` as in ``index/``; every reader and maintenance operation resolves them per (partition, bucket).

Paimon: FileStorePathFactory#indexFileFactory, IndexInDataFileDirPathFactory
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pyarrow as pa

import laketide
from laketide.index.hash_index import read_hash_index

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])
IN_DATA_DIR = {"index-file-in-data-file-dir": "true"}


def rows(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def index_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("index-*") if p.is_file() and not p.name.startswith("index-manifest"))


def by_id(table: pa.Table) -> dict:
    return {(r["id"], r["dt"]): r["v"] for r in table.to_pylist()}


def test_deletion_vectors_live_in_the_bucket_directory(tmp_path: Path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", **IN_DATA_DIR,
        "compaction.max-size-amplification-percent": "100000"})
    t.write(pa.concat_tables([rows(range(50), "a", "x"), rows(range(20), "b", "x")]))
    t.write(rows(range(5, 15), "a", "y"))
    w = t.new_write()
    w.delete(pa.table({"id": [0, 1], "dt": ["a", "a"]}))
    t.commit(w.prepare_commit())
    entries = [e for e in t.file_scan().index_entries(t.latest_snapshot())
               if e.index_file.index_type == "DELETION_VECTORS"]
    assert entries and all(e.index_file.external_path is None for e in entries)
    assert not (Path(t.path) / "index").exists() or not index_files(Path(t.path) / "index")
    found = index_files(Path(t.path))
    assert found and all(p.parent.name == "bucket-0" and p.parent.parent.name.startswith("dt=") for p in found)
    expected = {**{(i, "a"): f"x{i}" for i in range(2, 50)}, **{(i, "a"): f"y{i}" for i in range(5, 15)},
                **{(i, "b"): f"x{i}" for i in range(20)}}
    assert by_id(t.read()) == expected
    # A full compaction drops the vectors; expiring the old snapshots deletes their index files.
    t.write(rows(range(60, 62), "a", "z"))
    t.compact(full=True)
    expected.update({(60, "a"): "z60", (61, "a"): "z61"})
    assert by_id(t.read()) == expected
    before = set(index_files(Path(t.path)))
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert set(index_files(Path(t.path))) < before
    orphans = t.remove_orphan_files(older_than=_dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=1))
    assert not [p for p in orphans.paths if "/index-" in p]  # live index files in bucket dirs are not orphans
    assert by_id(t.read()) == expected


def test_hash_index_files_live_in_the_bucket_directory_and_keep_keys_in_place(tmp_path: Path) -> None:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "20", **IN_DATA_DIR})
    t.write(rows(range(50), "a", "x"))
    t.write(rows(range(0, 60, 2), "a", "y"))  # updates must find their bucket through the hash index
    entries = [e for e in t.file_scan().index_entries(t.latest_snapshot()) if e.index_file.index_type == "HASH"]
    assert len(entries) >= 3
    for e in entries:
        bucket_dir = t.store.path_factory.bucket_dir(e.partition, e.bucket)
        assert len(read_hash_index(t.file_io, f"{bucket_dir}/{e.index_file.file_name}")) == e.index_file.row_count
    assert not index_files(Path(t.path) / "index") if (Path(t.path) / "index").exists() else True
    buckets: dict[int, set[int]] = {}
    for split in t.scan().plan():
        for batch in t.scan().read_split(split):
            for k in batch.column("id").to_pylist():
                buckets.setdefault(k, set()).add(split.bucket)
    assert all(len(b) == 1 for b in buckets.values())
    assert t.read().num_rows == 55


def test_append_table_deletion_vectors_live_in_the_bucket_directory(tmp_path: Path) -> None:
    # DELETE on an append table with vectors writes, reads back, compacts and drops them in the bucket directory.
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options={
        "deletion-vectors.enabled": "true", **IN_DATA_DIR})
    t.write(pa.concat_tables([rows(range(30), "a", "x"), rows(range(10), "b", "x")]))
    assert t.delete(where="id < 5").rows_deleted == 10
    found = index_files(Path(t.path))
    assert found and all(p.parent.name == "bucket-0" and p.parent.parent.name.startswith("dt=") for p in found)
    assert not (Path(t.path) / "index").exists() or not index_files(Path(t.path) / "index")
    expected = {**{(i, "a"): f"x{i}" for i in range(5, 30)}, **{(i, "b"): f"x{i}" for i in range(5, 10)}}
    assert by_id(t.read()) == expected
    assert t.delete(where="id = 7").rows_deleted == 2  # the bucket's vectors are read back from the bucket dir
    del expected[(7, "a")], expected[(7, "b")]
    assert by_id(t.read()) == expected
    t.compact(full=True)
    assert by_id(t.read()) == expected
