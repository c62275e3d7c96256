"""Postpone-bucket tables (``bucket = -2``), laid out as Java lays them out: rows compacted into real buckets
(each entry carrying its partition's bucket count) plus rows still waiting in ``bucket-postpone`` (bucket -2).
A batch read returns the real buckets only (Java: AbstractBatchTableScan#onlyReadRealBuckets)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pyarrow as pa

from laketide.meta.paths import FileStorePathFactory, bucket_dir_name
from laketide.types import VarCharType

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def test_batch_reads_see_real_buckets_only(catalog, warehouse) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pp", SCHEMA, primary_key=["k"], options={"bucket": "2"})
    t.write(pa.table({"k": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]}, schema=SCHEMA))  # as compaction left them
    table_dir = os.path.join(warehouse, "db.db", "pp")
    # rows written since: in bucket-postpone, bucket -2 in the manifest
    w = t.new_write()
    w.write(pa.table({"k": [1, 9], "v": ["new", "z"]}, schema=SCHEMA))
    postponed = []
    os.makedirs(os.path.join(table_dir, "bucket-postpone"))
    for m in w.prepare_commit():
        for f in m.new_files:
            os.rename(os.path.join(table_dir, f"bucket-{m.bucket}", f.file_name),
                      os.path.join(table_dir, "bucket-postpone", f.file_name))
        postponed.append(dataclasses.replace(m, bucket=-2, total_buckets=-2))
    t.commit(postponed)
    # the schema Java writes for such a table (laketide refuses to set bucket = -2 itself)
    schema_file = Path(table_dir, "schema", "schema-0")
    doc = json.loads(schema_file.read_text())
    doc["options"]["bucket"] = "-2"
    schema_file.write_text(json.dumps(doc))
    table = catalog.table("db.pp")
    entries = table.file_scan().plan(table.latest_snapshot())
    assert sorted({e.bucket for e in entries}) == [-2, 0, 1]
    assert sorted(table.read().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}, {"k": 4, "v": "d"},
    ]
    assert table.read(where="k = 9").num_rows == 0


def test_postpone_bucket_directory_name(tmp_path) -> None:  # noqa: ANN001
    assert bucket_dir_name(-2) == "bucket-postpone" and bucket_dir_name(3) == "bucket-3"
    paths = FileStorePathFactory(str(tmp_path), partition_keys=["dt"], partition_types=[VarCharType(nullable=True)])
    assert paths.bucket_dir_of(["x"], -2).endswith("/dt=x/bucket-postpone")
