"""t.inspect: metadata as Arrow tables with Python-typed partitions, keys and statistics; informative reprs."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from laketide.exceptions import NoSuchSnapshotError
from laketide.schema.changes import AddColumn

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.date32(), nullable=False),
                    ("v", pa.float64()), ("s", pa.string())])


def batch(ids: list[int], day: int, v0: float) -> pa.Table:
    return pa.table({"id": ids, "d": [dt.date(2026, 1, day)] * len(ids), "v": [v0 + i for i in range(len(ids))],
                     "s": [None if i % 2 else f"s{i}" for i in ids]}, schema=SCHEMA)


def no_binary(table: pa.Table) -> None:
    def walk(t: pa.DataType) -> None:
        assert not (pa.types.is_binary(t) or pa.types.is_large_binary(t)), table.schema
        for i in range(t.num_fields):
            walk(t.field(i).type)

    for f in table.schema:
        walk(f.type)


@pytest.fixture()
def pk(catalog):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id", "d"], partition_keys=["d"],
                             options={"bucket": "1", "write-only": "true"})
    t.write(batch([1, 2, 3], 1, 0.5))
    t.write(batch([4, 5], 2, 10.0))
    return t


def test_files_decode_partitions_keys_and_stats(pk) -> None:  # noqa: ANN001
    files = pk.inspect.files()
    no_binary(files)
    assert files.num_rows == 2
    assert files.schema.field("partition").type == pa.struct([pa.field("d", pa.date32())])
    assert files.column("partition").to_pylist() == [{"d": dt.date(2026, 1, 1)}, {"d": dt.date(2026, 1, 2)}]
    assert files.column("min_key").to_pylist() == [{"id": 1}, {"id": 4}]
    assert files.column("max_key").to_pylist() == [{"id": 3}, {"id": 5}]
    for row in files.to_pylist():  # statistics equal what the Parquet file holds
        data = pq.read_table(row["file_path"], columns=["v", "s", "id"])
        assert row["min_values"]["v"] == pc.min(data.column("v")).as_py()
        assert row["max_values"]["v"] == pc.max(data.column("v")).as_py()
        assert row["min_values"]["s"] == pc.min(data.column("s")).as_py()
        assert row["null_value_counts"]["s"] == data.column("s").null_count
        assert row["record_count"] == data.num_rows
        assert isinstance(row["creation_time"], dt.datetime)
    assert files.schema.field("min_values").type.field("d").type == pa.date32()


def test_files_at_a_snapshot_and_after_schema_evolution(pk) -> None:  # noqa: ANN001
    assert pk.inspect.files(snapshot_id=1).num_rows == 1
    with pytest.raises(NoSuchSnapshotError):
        pk.inspect.files(snapshot_id=99)
    pk.alter(AddColumn(name="w", type=pa.int32()))
    pk.write(pa.table({"id": [9], "d": [dt.date(2026, 1, 3)], "v": [1.0], "s": ["x"], "w": [7]}))
    files = pk.inspect.files()
    assert [r["w"] for r in files.column("max_values").to_pylist()] == [None, None, 7]  # old files: no stats


def test_partitions_and_buckets_match_the_data(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.a", SCHEMA, partition_keys=["d"])
    t.write(batch([1, 2, 3], 1, 0.0))
    t.write(batch([4], 1, 0.0))
    t.write(batch([5, 6], 2, 0.0))
    parts = t.inspect.partitions()
    no_binary(parts)
    expected = t.read().group_by("d").aggregate([("id", "count")]).sort_by("d")
    assert [p["d"] for p in parts.column("partition").to_pylist()] == expected.column("d").to_pylist()
    assert parts.column("record_count").to_pylist() == expected.column("id_count").to_pylist()
    assert parts.column("file_count").to_pylist() == [2, 1]
    buckets = t.inspect.buckets()
    assert buckets.column("record_count").to_pylist() == [4, 2]
    assert pc.sum(buckets.column("file_size_in_bytes")).as_py() == pc.sum(
        t.inspect.files().column("file_size_in_bytes")).as_py()
    manifests = t.inspect.manifests()
    no_binary(manifests)
    assert {m["d"] for m in manifests.column("min_partition").to_pylist()} <= {dt.date(2026, 1, 1),
                                                                                 dt.date(2026, 1, 2)}


def test_unpartitioned_append_table(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.u", SCHEMA)
    assert t.inspect.files().num_rows == 0  # empty table: the columns, no rows
    t.write(batch([1, 2], 1, 0.0))
    files = t.inspect.files()
    assert "min_key" not in files.column_names  # no primary key
    assert files.column("partition").to_pylist() == [{}]
    assert t.inspect.partitions().column("record_count").to_pylist() == [2]


def test_snapshots_schemas_tags_branches(pk) -> None:  # noqa: ANN001
    snaps = pk.inspect.snapshots()
    assert snaps.schema.field("commit_time").type == pa.timestamp("ms", tz="UTC")
    now = dt.datetime.now(dt.UTC)
    for when in snaps.column("commit_time").to_pylist():
        assert when.tzinfo is not None and abs(now - when) < dt.timedelta(hours=1)
    assert pk.inspect.history().column("snapshot_id").to_pylist() == [2, 1]
    pk.alter(AddColumn(name="w", type=pa.int32()))
    schemas = pk.inspect.schemas()
    assert schemas.column("schema_id").to_pylist() == [0, 1]
    assert [f["name"] for f in schemas.column("fields").to_pylist()[1]] == ["id", "d", "v", "s", "w"]
    assert schemas.column("primary_keys").to_pylist()[0] == ["id", "d"]
    assert dict(schemas.column("options").to_pylist()[0])["bucket"] == "1"
    assert schemas.schema.field("update_time").type.tz == "UTC"
    pk.tags.create("t1", snapshot_id=1)
    tags = pk.inspect.tags()
    assert tags.column("tag_name").to_pylist() == ["t1"]
    assert tags.schema.field("commit_time").type.tz == "UTC"
    pk.branches.create("b1")
    assert pk.inspect.branches().column("branch_name").to_pylist() == ["b1"]


def test_reprs_are_one_informative_line(pk, catalog) -> None:  # noqa: ANN001
    text = repr(pk)
    assert text.startswith("<Table db.pk at ") and "primary key ['id', 'd']" in text and "snapshot 2" in text
    snap = repr(pk.latest_snapshot())
    assert snap.startswith("Snapshot(id=2, kind=APPEND, time=") and "+00:00" in snap and "\n" not in snap
    assert repr(catalog.table("db.pk$files")) == "<SystemTable db.pk$files>"
    assert repr(pk.scan(columns=["id"], where="id > 1")).startswith("<TableScan of db.pk at snapshot 2: columns")
    assert "IncrementalScan of db.pk" in repr(pk.incremental_scan())
    assert repr(pk.delete("id = 1")).startswith("ChangeResult(rows_inserted=0, rows_updated=0, rows_deleted=1")
    assert repr(pk.inspect) == "<TableInspector of db.pk>"
    for r in (text, snap):
        assert "\n" not in r
