"""Append tables end to end through the public API: write, commit, read, overwrite, bad input."""

from __future__ import annotations

import os

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import (
    CorruptMetadataError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidOptionError,
    NoSuchDatabaseError,
    NoSuchTableError,
    SchemaError,
    TableAlreadyExistsError,
)
from laketide.meta.snapshot import CommitKind

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("dt", pa.string()), ("note", pa.string())])


def orders(ids: range, dt: str | None = "2026-11-21") -> pa.Table:
    return pa.table({
        "id": list(ids),
        "amount": [float(i) * 1.5 for i in ids],
        "dt": [dt] * len(ids),
        "note": [f"note-{i}" for i in ids],
    }, schema=SCHEMA)


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.fixture()
def table(catalog):  # noqa: ANN001, ANN201
    return catalog.create_table("db.orders", SCHEMA, partition_keys=["dt"],
                                options={"bucket": "4", "bucket-key": "id"})


def test_write_read_round_trip_from_every_input_kind(table) -> None:  # noqa: ANN001
    assert table.write(orders(range(0, 10))) == 1
    assert table.write(orders(range(10, 20)).to_pandas()) == 2
    assert table.write(pl.from_arrow(orders(range(20, 30)))) == 3
    assert table.write(orders(range(30, 35)).to_batches()[0]) == 4
    got = table.read()
    assert got.schema.names == SCHEMA.names
    assert ids_of(got) == list(range(35))
    assert table.latest_snapshot().total_record_count == 35
    assert isinstance(table.to_pandas(), pd.DataFrame)


def test_projection_and_filters(table) -> None:  # noqa: ANN001
    table.write(orders(range(0, 50), dt="2026-11-21"))
    table.write(orders(range(50, 100), dt="2026-11-22"))
    got = table.read(columns=["amount", "id"], where="amount > 10 AND dt = '2026-11-21'")
    assert got.column_names == ["amount", "id"]
    assert ids_of(got) == [i for i in range(50) if i * 1.5 > 10]
    assert ids_of(table.read(where=laketide.col("id").isin([1, 77, 500]))) == [1, 77]
    assert ids_of(table.read(where="note LIKE 'note-9%'")) == [9] + list(range(90, 100))
    assert ids_of(table.read(where="NOT (id >= 2) OR id IS NULL")) == [0, 1]
    # partition pruning: only the matching partition's splits are planned
    splits = table.scan(where="dt = '2026-11-22'").plan()
    assert splits and all(s.partition_values == ("2026-11-22",) for s in splits)
    # file stats pruning: a range outside every file plans no split
    assert table.scan(where="id > 1000").plan() == []


def test_null_partition_goes_to_default_partition(table, warehouse) -> None:  # noqa: ANN001
    table.write(orders(range(3), dt=None))
    assert os.path.isdir(os.path.join(warehouse, "db.db", "orders", "dt=__DEFAULT_PARTITION__"))
    assert ids_of(table.read(where="dt IS NULL")) == [0, 1, 2]


def test_overwrite_table_and_partition(table) -> None:  # noqa: ANN001
    table.write(orders(range(0, 10), dt="a"))
    table.write(orders(range(10, 20), dt="b"))
    sid = table.write(orders(range(100, 103), dt="a"), mode="overwrite", partition={"dt": "a"})
    assert table.snapshot(sid).commit_kind is CommitKind.OVERWRITE
    assert ids_of(table.read()) == list(range(10, 20)) + [100, 101, 102]
    with pytest.raises(SchemaError, match="other partitions"):
        table.write(orders(range(5), dt="b"), mode="overwrite", partition={"dt": "a"})
    table.write(orders(range(200, 201), dt="c"), mode="overwrite")
    assert ids_of(table.read()) == [200]
    # time travel still sees the old rows
    assert ids_of(table.read(snapshot_id=2)) == list(range(20))


def test_two_phase_commit_is_idempotent_per_user_and_identifier(table) -> None:  # noqa: ANN001
    w = table.new_write()
    w.write(orders(range(5)))
    w.write(orders(range(5, 8)))
    messages = w.prepare_commit()
    sid = table.commit(messages, commit_user="job-1", commit_identifier=7)
    assert table.commit(messages, commit_user="job-1", commit_identifier=7) == sid
    assert ids_of(table.read()) == list(range(8))
    assert table.commit([], commit_user="job-1", commit_identifier=8) is None  # empty commits are skipped
    assert table.latest_snapshot().id == sid


def test_abort_deletes_written_files(table, warehouse) -> None:  # noqa: ANN001
    w = table.new_write()
    w.write(orders(range(5)))
    w.prepare_commit()  # files exist now, but are never committed
    w.write(orders(range(5, 10)))
    w.abort()
    part_dir = os.path.join(warehouse, "db.db", "orders", "dt=2026-11-21")
    files = [f for _, _, fs in os.walk(part_dir) for f in fs]
    assert len(files) <= 4  # only the first (prepared) batch's files, one per bucket at most


def test_bad_input_changes_nothing(table) -> None:  # noqa: ANN001
    table.write(orders(range(3)))
    bad = orders(range(3)).rename_columns(["id", "amount", "dt", "comment"])
    with pytest.raises(SchemaError, match="unknown columns"):
        table.write(bad)
    with pytest.raises(SchemaError, match="incompatible"):
        table.write(orders(range(3)).set_column(0, "id", pa.array(["x", "y", "z"])))
    assert table.latest_snapshot().id == 1
    assert ids_of(table.read()) == [0, 1, 2]


def test_corrupt_snapshot_names_the_file(table, warehouse) -> None:  # noqa: ANN001
    table.write(orders(range(3)))
    table.write(orders(range(3, 6)))
    path = os.path.join(warehouse, "db.db", "orders", "snapshot", "snapshot-2")
    with open(path, "w") as f:
        f.write('{"version": 3, "id": 2, "schem')
    with pytest.raises(CorruptMetadataError, match="snapshot-2"):
        table.read()
    with open(path, "w") as f:
        f.write("not json at all")
    with pytest.raises(CorruptMetadataError, match="snapshot-2"):
        table.read()
    assert ids_of(table.read(snapshot_id=1)) == [0, 1, 2]


def test_latest_hint_is_verified(table, warehouse) -> None:  # noqa: ANN001
    for i in range(3):
        table.write(orders(range(i, i + 1)))
    hint = os.path.join(warehouse, "db.db", "orders", "snapshot", "LATEST")
    with open(hint, "w") as f:
        f.write("1")  # stale hint: snapshot-2 exists, so listing decides
    assert table.snapshot_manager.latest_snapshot_id() == 3
    os.remove(hint)
    assert table.snapshot_manager.latest_snapshot_id() == 3


def test_catalog_operations(catalog) -> None:  # noqa: ANN001
    with pytest.raises(DatabaseAlreadyExistsError):
        catalog.create_database("db")
    catalog.create_database("db", exist_ok=True)
    catalog.create_database("other")
    assert catalog.list_databases() == ["db", "other"]
    t = catalog.create_table("db.a", SCHEMA, comment="first table")
    assert t.schema.comment == "first table"
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.a", SCHEMA)
    assert catalog.create_table("db.a", SCHEMA, exist_ok=True).schema.id == 0
    catalog.create_table("db.b", SCHEMA)
    assert catalog.list_tables("db") == ["a", "b"]
    t.write(orders(range(4)))
    catalog.rename_table("db.a", "other.a2")
    assert ids_of(catalog.table("other.a2").read()) == [0, 1, 2, 3]
    with pytest.raises(NoSuchTableError):
        catalog.table("db.a")
    catalog.drop_table("db.b")
    catalog.drop_table("db.b", ignore_missing=True)
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.b")
    with pytest.raises(DatabaseNotEmptyError):
        catalog.drop_database("other")
    catalog.drop_database("other", cascade=True)
    with pytest.raises(NoSuchDatabaseError):
        catalog.create_table("nope.t", SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.table("db.missing")


def test_table_options_are_validated(catalog) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match="bucket"):
        catalog.create_table("db.x", SCHEMA, options={"bucket": "abc"})
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.x", SCHEMA, options={"bucket": "2"})
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.x", SCHEMA, options={"bucket-key": "id"})
    assert not catalog.table_exists("db.x")
    t = catalog.create_table("db.x", SCHEMA, options={"my.custom.key": "kept"})
    assert t.schema.options["my.custom.key"] == "kept"


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
@pytest.mark.parametrize("manifest_format", ["avro", "orc", "parquet"])
def test_formats(catalog, file_format: str, manifest_format: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.f", SCHEMA, partition_keys=["dt"], options={
        "file.format": file_format, "manifest.format": manifest_format,
    })
    t.write(orders(range(10)))
    t.write(orders(range(10, 12), dt="z"))
    assert ids_of(t.read()) == list(range(12))
    assert ids_of(t.read(where="dt = 'z'")) == [10, 11]


def test_files_roll_at_target_file_size(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.r", SCHEMA, options={"target-file-size": "16 kb"})
    big = orders(range(20_000))
    w = t.new_write()
    for batch in big.to_batches(max_chunksize=2000):
        w.write(batch)
    messages = w.prepare_commit()
    files = [f for m in messages for f in m.new_files]
    assert len(files) > 1
    assert sum(f.row_count for f in files) == 20_000
    t.commit(messages)
    assert ids_of(t.read()) == list(range(20_000))


def test_manifests_are_merged_so_planning_follows_live_files(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.m", SCHEMA, options={"manifest.merge-min-count": "5"})
    for i in range(12):
        t.write(orders(range(i, i + 1)))
    from laketide.scan.file_scan import FileStoreScan

    scan = FileStoreScan(file_io=t.file_io, table_path=t.path, schema_manager=t.schema_manager, schema=t.schema)
    manifests = scan.data_manifests(t.latest_snapshot())
    assert len(manifests) < 6
    assert ids_of(t.read()) == list(range(12))


def test_batches_stream(table) -> None:  # noqa: ANN001
    table.write(orders(range(1000)))
    batches = list(table.scan(columns=["id"]).to_batches())
    assert sum(b.num_rows for b in batches) == 1000
    assert all(b.schema.names == ["id"] for b in batches)


def test_system_tables(table, catalog) -> None:  # noqa: ANN001
    table.write(orders(range(3)))
    table.write(orders(range(3, 5)))
    snaps = catalog.table("db.orders$snapshots").read()
    assert snaps.column("snapshot_id").to_pylist() == [1, 2]
    assert snaps.column("total_record_count").to_pylist() == [3, 5]
    assert catalog.table("db.orders$schemas").read().num_rows == 1


def test_object_store_warehouse_through_fsspec() -> None:
    """The same table life cycle on an fsspec store (memory://), with conditional-create publishing."""
    import uuid

    cat = laketide.load_catalog(warehouse=f"memory://wh-{uuid.uuid4().hex}")
    cat.create_database("db")
    t = cat.create_table("db.orders", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"})
    t.write(orders(range(10)))
    t.write(orders(range(10, 15), dt="x"))
    assert ids_of(cat.table("db.orders").read()) == list(range(15))
    assert ids_of(t.read(where="dt = 'x'")) == list(range(10, 15))


def test_a_failed_commit_leaves_no_files(table, warehouse, monkeypatch) -> None:  # noqa: ANN001
    from laketide.write.commit import FileStoreCommit

    table.write(orders(range(3)))
    before = sorted(f for _, _, fs in os.walk(warehouse) for f in fs)

    def boom(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise OSError("storage went away")

    monkeypatch.setattr(FileStoreCommit, "_try_commit", boom)
    with pytest.raises(OSError, match="went away"):
        table.write(orders(range(3, 9)))
    after = sorted(f for _, _, fs in os.walk(warehouse) for f in fs)
    assert after == before
    monkeypatch.undo()
    assert ids_of(table.read()) == [0, 1, 2]


@pytest.mark.parametrize("primary_key", [None, ["k"]])
def test_nested_types_round_trip(catalog, primary_key) -> None:  # noqa: ANN001
    schema = pa.schema([
        ("k", pa.int64()), ("tags", pa.list_(pa.string())), ("m", pa.map_(pa.string(), pa.int32())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ])
    data = pa.table({"k": [1, 2], "tags": [["a", "b"], None], "m": [[("x", 1)], None],
                     "st": [{"a": 1, "b": "q"}, None]}, schema=schema)
    t = catalog.create_table("db.nested", schema, primary_key=primary_key,
                             options={"bucket": "2"} if primary_key else {})
    t.write(data)
    t.write(data)
    got = t.read()
    assert got.num_rows == (2 if primary_key else 4)
    assert sorted(got.to_pylist(), key=lambda r: r["k"])[0] == data.to_pylist()[0]
