"""The metadata system tables: Paimon's columns and types, and values cross-checked against an independent
computation (a GROUP BY of the data, the files a scan plans, the parquet files themselves)."""

from __future__ import annotations

import datetime as _dt
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import laketide
from laketide.catalog.system_tables import GlobalSystemTable
from laketide.exceptions import NoSuchTableError
from laketide.table.system import SystemTable
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int32())])

# Paimon's columns: name, Arrow type, nullable (Java's table/system/*Table.java TABLE_TYPE).
EXPECTED = {
    "tags": [("tag_name", "string", False), ("snapshot_id", "int64", False), ("schema_id", "int64", False),
             ("commit_time", "timestamp[ms]", False), ("record_count", "int64", True),
             ("create_time", "timestamp[ms]", True), ("time_retained", "string", True)],
    "branches": [("branch_name", "string", False), ("create_time", "timestamp[ms]", False)],
    "consumers": [("consumer_id", "string", False), ("next_snapshot_id", "int64", False)],
    "manifests": [("file_name", "string", False), ("file_size", "int64", False), ("num_added_files", "int64", False),
                  ("num_deleted_files", "int64", False), ("schema_id", "int64", False),
                  ("min_partition_stats", "string", True), ("max_partition_stats", "string", True),
                  ("min_row_id", "int64", True), ("max_row_id", "int64", True)],
    "files": [("partition", "string", True), ("bucket", "int32", False), ("file_path", "string", False),
              ("file_format", "string", False), ("schema_id", "int64", False), ("level", "int32", False),
              ("record_count", "int64", False), ("file_size_in_bytes", "int64", False), ("min_key", "string", True),
              ("max_key", "string", True), ("null_value_counts", "string", False),
              ("min_value_stats", "string", False), ("max_value_stats", "string", False),
              ("min_sequence_number", "int64", True), ("max_sequence_number", "int64", True),
              ("creation_time", "timestamp[ms]", True), ("deleteRowCount", "int64", True),
              ("file_source", "string", True), ("first_row_id", "int64", True),
              ("write_cols", "list<item: string>", True),
              # laketide's additions after Java's columns: the file index each file carries
              ("file_index", "string", True), ("file_index_path", "string", True), ("file_indexes", "string", True)],
    "partitions": [("partition", "string", True), ("record_count", "int64", False),
                   ("file_size_in_bytes", "int64", False), ("file_count", "int64", False),
                   ("last_update_time", "timestamp[ms]", True), ("created_at", "timestamp[ms]", True),
                   ("created_by", "string", True), ("updated_by", "string", True), ("options", "string", True),
                   ("total_buckets", "int32", False), ("done", "bool", False),
                   ("deleted_record_count", "int64", True)],
    "buckets": [("partition", "string", True), ("bucket", "int32", False), ("record_count", "int64", False),
                ("file_size_in_bytes", "int64", False), ("file_count", "int64", False),
                ("last_update_time", "timestamp[ms]", True)],
    "statistics": [("snapshot_id", "int64", False), ("schema_id", "int64", False),
                   ("mergedRecordCount", "int64", True), ("mergedRecordSize", "int64", True),
                   ("colstat", "string", True)],
    "table_indexes": [("partition", "string", True), ("bucket", "int32", False), ("index_type", "string", False),
                      ("file_name", "string", False), ("file_size", "int64", False), ("row_count", "int64", False),
                      ("dv_ranges", "list<item: struct<f0: string not null, f1: int32 not null, f2: int32 not null, "
                                    "_CARDINALITY: int64>>", True),
                      ("row_range_start", "int64", True), ("row_range_end", "int64", True),
                      ("index_field_id", "int32", True), ("index_field_name", "string", True)],
    "aggregation_fields": [("field_name", "string", False), ("field_type", "string", False),
                           ("function", "string", True), ("function_options", "string", True),
                           ("comment", "string", True)],
}


def rows(ids: range, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "v": [f"v{i}" if i % 3 else None for i in ids],
                     "n": pa.array([i % 7 for i in ids], pa.int32())}, schema=SCHEMA)


@pytest.fixture()
def cat(tmp_path) -> laketide.Catalog:
    c = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    c.create_database("db")
    return c


def sys_table(cat: laketide.Catalog, name: str) -> SystemTable:
    t = cat.table(name)
    assert isinstance(t, SystemTable)
    return t


def append_table(cat: laketide.Catalog) -> Table:
    t = cat.create_table("db.a", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"})
    t.write(pa.concat_tables([rows(range(0, 30), "x"), rows(range(30, 40), "y")]))
    t.write(rows(range(40, 55), "x"))
    t.write(rows(range(55, 60), "z"))
    return t


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_columns_and_types_are_paimons(cat, name: str) -> None:
    append_table(cat)
    got = sys_table(cat, f"db.a${name}").read().schema
    assert [(f.name, str(f.type), f.nullable) for f in got] == EXPECTED[name]


def test_partitions_and_buckets_match_the_data(cat) -> None:
    t = append_table(cat)
    data = t.read()
    by_dt = {r["dt"]: r["id_count"] for r in data.group_by("dt").aggregate([("id", "count")]).to_pylist()}
    parts = sys_table(cat, "db.a$partitions").read()
    assert {p.removeprefix("dt="): n for p, n in zip(parts["partition"].to_pylist(),
                                                     parts["record_count"].to_pylist())} == by_dt
    assert parts["partition"].to_pylist() == ["dt=x", "dt=y", "dt=z"]
    assert set(parts["total_buckets"].to_pylist()) == {2}
    splits = t.scan().plan()
    files_per_partition = Counter(s.partition_values[0] for s in splits for _ in s.files)
    assert dict(zip([p.removeprefix("dt=") for p in parts["partition"].to_pylist()],
                    parts["file_count"].to_pylist())) == files_per_partition
    buckets = sys_table(cat, "db.a$buckets").read()
    per_bucket = Counter()
    for s in splits:
        per_bucket[(f"{{{s.partition_values[0]}}}", s.bucket)] += s.row_count
    assert dict(zip(zip(buckets["partition"].to_pylist(), buckets["bucket"].to_pylist()),
                    buckets["record_count"].to_pylist())) == per_bucket
    assert sum(buckets["record_count"].to_pylist()) == data.num_rows
    # where and column pruning
    assert sys_table(cat, "db.a$partitions").read(columns=["partition"], where="record_count > 10").column(
        "partition").to_pylist() == ["dt=x"]


def test_files_are_the_planned_files_with_their_statistics(cat) -> None:
    t = append_table(cat)
    files = sys_table(cat, "db.a$files").read()
    planned = {p for s in t.scan().plan() for p in s.file_paths()}
    assert set(files["file_path"].to_pylist()) == planned
    assert set(files["file_format"].to_pylist()) == {"parquet"}
    for row in files.to_pylist():
        on_disk = pq.read_table(row["file_path"])
        assert row["record_count"] == on_disk.num_rows
        assert row["partition"] == "{" + on_disk["dt"][0].as_py() + "}"
        assert row["min_key"] is None and row["max_key"] is None  # append table: no key
        lo, hi = pc.min(on_disk["id"]).as_py(), pc.max(on_disk["id"]).as_py()
        nulls = on_disk["v"].null_count
        assert f"id={lo}" in row["min_value_stats"] and f"id={hi}" in row["max_value_stats"]
        assert row["null_value_counts"] == f"{{dt=0, id=0, n=0, v={nulls}}}"  # sorted by name, as a TreeMap
        assert row["file_source"] == "APPEND" and row["level"] == 0
        assert isinstance(row["creation_time"], _dt.datetime)
    # time travel: $files at snapshot 1 shows only what snapshot 1 had
    first = cat.table("db.a")
    assert isinstance(first, Table)
    from laketide.table.system import system_table

    at_one = system_table(first.copy({"scan.snapshot-id": "1"}), "files").read()
    assert set(at_one["file_path"].to_pylist()) == {p for s in t.scan(snapshot_id=1).plan() for p in s.file_paths()}


def test_pk_files_keys_manifests_and_indexes(cat) -> None:
    t = cat.create_table("db.k", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "-1"})
    t.write(rows(range(0, 20), "x"))
    t.write(rows(range(10, 25), "x"))
    files = sys_table(cat, "db.k$files").read().to_pylist()
    for row in files:
        on_disk = pq.read_table(row["file_path"])
        assert row["min_key"] == f"[{pc.min(on_disk['id']).as_py()}]"
        assert row["max_key"] == f"[{pc.max(on_disk['id']).as_py()}]"
    manifests = sys_table(cat, "db.k$manifests").read()
    live = len(files)
    assert sum(manifests["num_added_files"].to_pylist()) - sum(manifests["num_deleted_files"].to_pylist()) == live
    assert set(manifests["min_partition_stats"].to_pylist()) == {"{x}"}
    indexes = sys_table(cat, "db.k$table_indexes").read()
    assert set(indexes["index_type"].to_pylist()) == {"HASH"}
    assert sum(indexes["row_count"].to_pylist()) == t.read().num_rows  # one hash per key


def test_tags_branches_consumers_tables(cat) -> None:
    t = append_table(cat)
    t.tags.create("t1", 1)
    t.tags.create("t2", time_retained=_dt.timedelta(days=1))
    t.branches.create("b1", tag="t1")
    t.consumers.reset("c1", 2)
    tags = sys_table(cat, "db.a$tags").read().to_pylist()
    assert [(r["tag_name"], r["snapshot_id"], r["record_count"], r["time_retained"]) for r in tags] == [
        ("t1", 1, t.snapshot(1).total_record_count, None), ("t2", 3, t.snapshot(3).total_record_count, "PT24H")]
    assert tags[1]["create_time"] is not None
    assert sys_table(cat, "db.a$branches").read()["branch_name"].to_pylist() == ["b1"]
    assert sys_table(cat, "db.a$consumers").read().to_pylist() == [{"consumer_id": "c1", "next_snapshot_id": 2}]
    # a branch has its own tags
    assert sys_table(cat, "db.a$branch_b1$tags").read()["tag_name"].to_pylist() == ["t1"]


def test_aggregation_fields_and_statistics(cat) -> None:
    t = cat.create_table("db.g", SCHEMA, primary_key=["id", "dt"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    t.write(rows(range(3), "x"))
    agg = sys_table(cat, "db.g$aggregation_fields").read().to_pylist()
    by_name = {r["field_name"]: r for r in agg}
    assert by_name["n"]["function"] == "[sum]"
    assert by_name["n"]["function_options"] == "[fields.n.aggregate-function]"
    assert by_name["id"]["function"] == "[]" and by_name["id"]["field_type"] == "BIGINT NOT NULL"
    assert sys_table(cat, "db.g$statistics").read().num_rows == 0  # laketide writes no ANALYZE statistics


def test_global_system_tables(cat, tmp_path) -> None:
    append_table(cat)
    cat.create_table("db.b", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    opts = cat.table("sys.all_table_options")
    assert isinstance(opts, GlobalSystemTable)
    got = opts.read(where="table_name = 'a'").to_pylist()
    assert {(r["database_name"], r["key"], r["value"]) for r in got} == {
        ("db", "bucket", "2"), ("db", "bucket-key", "id")}
    catalog_opts = cat.table("sys.catalog_options").read().to_pylist()
    assert catalog_opts == [{"key": "warehouse", "value": str(tmp_path / "wh")}]
    with pytest.raises(NoSuchTableError, match="sys.nope"):
        cat.table("sys.nope")
    with pytest.raises(NoSuchTableError, match="available"):
        cat.table("db.a$nope")
