"""Spark reads reach the file indexes through the DataFrame's ``where`` option (Spark's own filters are not
pushed into the source: see laketide/spark/reader.py), and ``db.t$files`` shows each file's index."""

from __future__ import annotations

import laketide.spark as ls
from laketide.schema.changes import SetOption
from tests.integration.test_file_index_write import INDEXES, SCHEMA, rows


def test_where_option_uses_the_file_indexes_in_spark_tasks(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": "1 b"})
    t.write(rows(300))
    t.write(rows(300, start=300))
    where = "grp = 2 AND amount >= 600"
    report = t.scan(where=where).explain().file_index
    assert report.files_with_row_selection == 2  # the plan the Spark driver makes carries row selections
    got = sorted(r["id"] for r in ls.read(spark, "db.t", warehouse=wh, where=where).collect())
    assert got == sorted(r["id"] for r in t.read(where=where).to_pylist())
    assert got == [i for i in range(200, 600) if i % 4 == 2 and i % 13 != 0]  # amount is null when i % 13 == 0
    # a file the bloom filter rules out is not read at all
    assert t.scan(where="name = 'name-1x'").explain().file_index.files_skipped >= 1
    assert ls.read(spark, "db.t", warehouse=wh, where="name = 'name-1x'").count() == 0


def test_files_system_table_shows_each_files_index(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.f", SCHEMA, options={"file-index.bitmap.columns": "grp"})
    t.write(rows(50))
    t = t.alter(*[SetOption(k, v)
                  for k, v in {"file-index.bloom-filter.columns": "name",
                               "file-index.in-manifest-threshold": "1 b"}.items()])
    t.write(rows(50, start=50))
    mine = sorted((r["record_count"], r["file_index"], r["file_indexes"])
                  for r in cat.table("db.f$files").read().to_pylist())
    assert mine == [(50, "embedded", "grp:bitmap"), (50, "sidecar", "grp:bitmap,name:bloom-filter")]
    theirs = sorted((r["record_count"], r["file_index"], r["file_indexes"])
                    for r in ls.read(spark, "db.f$files", warehouse=wh).collect())
    assert theirs == mine
