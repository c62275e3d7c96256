"""``index-file-in-data-file-dir`` tables cross-checked with pypaimon: each resolves the other's bucket-directory
index files (hash index, deletion vectors)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def by_id(table: pa.Table) -> dict:
    return {(r["id"], r["dt"]): r["v"] for r in table.select(SCHEMA.names).cast(SCHEMA).to_pylist()}


def bucket_index_files(table_dir: Path) -> list[Path]:
    return [p for p in table_dir.rglob("index-*") if p.parent.name.startswith("bucket-")]


def test_laketide_extends_a_pypaimon_dynamic_table_through_its_bucket_dir_hash_index(
        warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.dyn", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "20", "index-file-in-data-file-dir": "true"})
    pypaimon.write(warehouse, "db.dyn", rows(range(50), "a", "x"))
    t = catalog.table("db.dyn")
    assert bucket_index_files(Path(t.path))  # pypaimon put its hash index beside the data files
    t.write(rows(range(0, 60, 2), "a", "y"))  # laketide must find each old key's bucket in those files
    expected = {(i, "a"): (f"y{i}" if i % 2 == 0 else f"x{i}") for i in range(50)}
    expected.update({(i, "a"): f"y{i}" for i in range(50, 60, 2)})
    assert by_id(t.read()) == expected
    assert by_id(pypaimon.read(warehouse, "db.dyn")) == expected
    pypaimon.write(warehouse, "db.dyn", rows(range(1, 60, 10), "a", "z"))  # and pypaimon reads laketide's index
    expected.update({(i, "a"): f"z{i}" for i in range(1, 60, 10)})
    assert by_id(t.read()) == expected


def test_pypaimon_reads_laketide_deletion_vectors_in_the_bucket_dir(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true",
        "compaction.max-size-amplification-percent": "100000"})
    t.write(rows(range(100), "a", "x"))
    t.write(rows(range(10, 30), "a", "y"))
    assert bucket_index_files(Path(t.path))
    ours = by_id(t.read())
    assert len(ours) == 100 and ours[(10, "a")] == "y10"
    assert by_id(pypaimon.read(warehouse, "db.dv")) == ours
