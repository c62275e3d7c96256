"""The store layer: one FileStore per (table, schema, branch), one path factory, options parsed once and validated
the same way on create and alter, unknown keys kept and warned about, changes between snapshots in core."""

from __future__ import annotations

import datetime
import logging
import os
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, LaketideError, SchemaChangeError, UnsupportedOptionError
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.paths import POSTPONE_BUCKET, FileStorePathFactory
from laketide.schema.changes import SetOption
from laketide.store import AppendOnlyFileStore, KeyValueFileStore
from laketide.types import IntType, VarCharType

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


@pytest.fixture()
def cat(tmp_path: Path):  # noqa: ANN201
    c = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    c.create_database("db")
    return c


# -- the path factory ------------------------------------------------------------------------------------------------
def test_bucket_directories_of_every_kind_of_bucket_and_partition() -> None:
    types = [VarCharType(nullable=True), IntType(nullable=True)]
    paths = FileStorePathFactory("/wh/db.db/t", partition_keys=["dt", "hr"], partition_types=types,
                                 default_partition_name="__NULL__")
    part = serialize_binary_row(["2026-11-26", 7], types)
    assert paths.bucket_dir(part, 3) == "/wh/db.db/t/dt=2026-11-26/hr=7/bucket-3"
    # The postpone bucket (bucket = -2) has its own directory name in Java; any hand-made f"bucket-{n}" gets it wrong.
    assert paths.bucket_dir(part, POSTPONE_BUCKET) == "/wh/db.db/t/dt=2026-11-26/hr=7/bucket-postpone"
    nulls = serialize_binary_row([None, None], types)
    assert paths.bucket_dir(nulls, 0) == "/wh/db.db/t/dt=__NULL__/hr=__NULL__/bucket-0"
    escaped = serialize_binary_row(["a/b:c", 1], types)
    assert paths.bucket_dir(escaped, 0) == "/wh/db.db/t/dt=a%2Fb%3Ac/hr=1/bucket-0"
    flat = FileStorePathFactory("/wh/db.db/t")
    assert flat.bucket_dir(serialize_binary_row([], []), 1) == "/wh/db.db/t/bucket-1"


def test_branch_metadata_directories_and_shared_files() -> None:
    main = FileStorePathFactory("/wh/db.db/t")
    b1 = FileStorePathFactory("/wh/db.db/t", branch="b1")
    assert (main.snapshot_dir, main.schema_dir, main.tag_dir) == (
        "/wh/db.db/t/snapshot", "/wh/db.db/t/schema", "/wh/db.db/t/tag")
    assert (b1.snapshot_dir, b1.schema_dir, b1.consumer_dir) == (
        "/wh/db.db/t/branch/branch-b1/snapshot", "/wh/db.db/t/branch/branch-b1/schema",
        "/wh/db.db/t/branch/branch-b1/consumer")
    # Data, manifests and indexes are shared by every branch.
    assert b1.manifest_path("m-1") == main.manifest_path("m-1") == "/wh/db.db/t/manifest/m-1"
    assert b1.index_file_path("index-1") == "/wh/db.db/t/index/index-1"
    assert b1.index_file_path("index-1", "s3://x/index-1") == "s3://x/index-1"


def test_data_file_paths_with_external_path_and_extra_files(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]}))
    paths = t.store.path_factory
    for e in t.file_scan().plan(t.latest_snapshot()):
        main, *extra = paths.data_file_paths(e.partition, e.bucket, e.file)
        assert Path(main).is_file() and not extra
        assert main.startswith(f"{t.path}/dt=") and f"/bucket-{e.bucket}/" in main


# -- one store per schema ------------------------------------------------------------------------------------------
def test_the_store_is_built_once_per_schema_and_renewed_by_alter(cat) -> None:  # noqa: ANN001
    pk = cat.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    store = pk.store
    assert isinstance(store, KeyValueFileStore) and store.bucket_mode == "fixed"
    assert pk.store is store and pk.options is store.options  # no new parse per access
    pk.alter(SetOption("write-buffer-size", "64 mb"))
    assert pk.store is not store and pk.options.write_buffer_size == 64 << 20
    append = cat.create_table("db.ap", SCHEMA)
    assert isinstance(append.store, AppendOnlyFileStore) and append.store.bucket_mode == "unaware"
    dyn = cat.create_table("db.dyn", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"])
    assert dyn.store.bucket_mode == "dynamic"
    cross = cat.create_table("db.cross", SCHEMA, primary_key=["id"], partition_keys=["dt"])
    assert cross.store.bucket_mode == "cross-partition"


# -- one validation for create and alter -------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "value", "error"), [
    ("write-buffer-size", "abc", InvalidOptionError),
    ("snapshot.num-retained.min", "0", InvalidOptionError),
    ("metadata.stats-mode", "truncate(0)", InvalidOptionError),
    ("fields.v.stats-mode", " full", InvalidOptionError),  # Java does not trim it either
    ("compaction.small-file-ratio", "-1", InvalidOptionError),
    ("dynamic-bucket.max-buckets", "0", InvalidOptionError),
    ("changelog-producer", "sometimes", InvalidOptionError),
    ("changelog.num-retained.min", "50", UnsupportedOptionError),  # decoupled changelogs need a producer
    ("file.format", "csv", UnsupportedOptionError),
    ("data-file.prefix", "../x-", InvalidOptionError),
])
def test_alter_refuses_what_create_refuses_and_writes_nothing(cat, tmp_path: Path, key: str, value: str,
                                                               error: type[LaketideError]) -> None:  # noqa: ANN001
    with pytest.raises(error, match=key.replace(".", r"\.")):
        cat.create_table("db.refused", SCHEMA, primary_key=["id"], options={"bucket": "2", key: value})
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    schema_files = sorted(p.name for p in Path(t.path, "schema").iterdir())
    with pytest.raises(error, match=key.replace(".", r"\.")):
        t.alter(SetOption(key, value))
    assert sorted(p.name for p in Path(t.path, "schema").iterdir()) == schema_files
    assert key not in cat.table("db.t").schema.options
    t.write(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}))  # the table still works
    assert cat.table("db.t").read().num_rows == 1


def test_misspelled_keys_are_refused_and_foreign_keys_kept_with_a_warning(
    cat, caplog: pytest.LogCaptureFixture  # noqa: ANN001
) -> None:
    known = {"bucket": "2", "sink.parallelism": "4", "fields.v.aggregate-function": "max",
             "parquet.block.size": "1048576", "file-index.bloom-filter.columns": "v",
             "file-index.bloom-filter.v.fpp": "0.01", "snapshot.expire.limit": "5"}
    with caplog.at_level(logging.WARNING, logger="laketide.options"):
        t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options=known)
    assert not caplog.records  # Paimon's own keys, the key families and laketide's options: no warning
    schema_files = sorted(p.name for p in Path(t.path, "schema").iterdir())
    with pytest.raises(InvalidOptionError, match=r"db\.t.*'snapshot\.num-retained\.minn' \(did you mean "
                                                 r"'snapshot\.num-retained\.min'\?\)"):
        t.alter(SetOption("snapshot.num-retained.minn", "3"))
    for typo, meant in (("merge_engine", "merge-engine"), ("buckett", "bucket"), ("Bucket", "bucket")):
        with pytest.raises(InvalidOptionError, match=f"did you mean '{meant}'"):
            cat.create_table(f"db.{typo.lower()}_t", SCHEMA, primary_key=["id"], options={typo: "2"})
        assert not cat.table_exists(f"db.{typo.lower()}_t")
    assert sorted(p.name for p in Path(t.path, "schema").iterdir()) == schema_files
    # Foreign keys (user metadata, other engines' settings) are kept, as Java keeps them, with a warning.
    with caplog.at_level(logging.WARNING, logger="laketide.options"):
        t.alter(SetOption("owner", "team-a"), SetOption("spark.sql.x", "1"), SetOption("myapp.retention", "3"))
    assert sorted(r.getMessage().split("'")[1] for r in caplog.records) == ["myapp.retention", "owner", "spark.sql.x"]
    assert all("db.t" in r.getMessage() for r in caplog.records)
    reloaded = cat.table("db.t")
    assert reloaded.schema.options["owner"] == "team-a"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="laketide.options"):
        reloaded.alter(SetOption("write-buffer-size", "32 mb"))  # an alter warns only about what it changes
    assert not caplog.records


def test_a_table_that_already_carries_a_misspelled_key_stays_usable(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.schema_manager.commit_changes([SetOption("snapshot.num-retained.minn", "3")])  # as Java or an old laketide
    reloaded = cat.table("db.t")
    assert reloaded.schema.options["snapshot.num-retained.minn"] == "3"
    assert reloaded.options.snapshot_num_retained_min == 10  # changes nothing
    reloaded.write(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}))
    reloaded.alter(SetOption("write-buffer-size", "32 mb"))  # other alters still work
    assert cat.table("db.t").read().num_rows == 1


def test_a_misspelled_read_option_is_refused(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1], "v": ["a"], "dt": ["x"]}))
    with pytest.raises(InvalidOptionError, match="did you mean 'scan.snapshot-id'"):
        t.copy({"scan.snapshot-idd": "1"})
    assert t.copy({"scan.snapshot-id": "1"}).read().num_rows == 1


# -- changes between snapshots, in core --------------------------------------------------------------------------
def test_read_changes_lists_every_row_kind_in_commit_order(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1", "write-only": "true"})
    s1 = t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["x", "x"]}))
    t.write(pa.table({"id": [1], "v": ["a2"], "dt": ["x"]}))
    w = t.new_write()
    w.delete(pa.table({"id": [2]}))
    s3 = t.commit(w.prepare_commit())
    changes = t.read_changes(0)
    assert changes.column_names == ["rowkind", "id", "v", "dt"]
    # A delete by key carries only the key (as Java's delete records do when written by key).
    assert list(zip(changes["rowkind"].to_pylist(), changes["id"].to_pylist(), changes["v"].to_pylist())) == [
        ("+I", 1, "a"), ("+I", 2, "b"), ("+I", 1, "a2"), ("-D", 2, None)]
    after_first = t.read_changes(s1, s3, columns=["id"])
    assert after_first.column_names == ["rowkind", "id"] and after_first["id"].to_pylist() == [1, 2]
    assert t.read_changes(s1, s3, full_start=True)["id"].to_pylist() == [1, 2, 1, 2]
    assert t.read_changes(s3, s3).num_rows == 0  # an empty range is an empty table with the columns
    assert t.read_changes(s3, s3).column_names == ["rowkind", "id", "v", "dt"]
    with pytest.raises(InvalidOptionError, match="db.t"):
        t.read_changes(s3, s1)


# -- the public bucket routing ------------------------------------------------------------------------------------
def test_bucket_router_sends_rows_where_the_table_writer_puts_them(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.fixed", SCHEMA, partition_keys=["dt"], primary_key=["id", "dt"],
                         options={"bucket": "4"})
    rows = pa.table({"id": list(range(40)), "v": [str(i) for i in range(40)], "dt": ["x"] * 40})
    router = t.store.bucket_router()
    assert router.mode == "fixed" and router.key_columns == ["id"]
    # Engines may hand over wider or narrower integer columns: the router casts to the table's types.
    routed = router.buckets(rows.column("id").cast(pa.int32())).to_pylist()
    t.write(rows)
    written = {}
    for split in t.scan().plan():
        for batch in t.scan().read_split(split):
            written.update(dict.fromkeys(batch.column("id").to_pylist(), split.bucket))
    assert [written[i] for i in range(40)] == routed
    assert len(set(routed)) == 4


def test_dynamic_bucket_router_assigners_and_buckets(cat) -> None:  # noqa: ANN001
    t = cat.create_table("db.dyn", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"],
                         options={"dynamic-bucket.target-row-num": "10"})
    router = t.store.bucket_router()
    assert router.mode == "dynamic" and router.key_columns == ["dt", "id"]
    layout = router.assigner_layout(3)
    keys = (pa.array(["x"] * 30 + ["y"] * 30), pa.array(list(range(30)) * 2, pa.int64()))
    first = router.assigners(layout, *keys).to_pylist()
    assert first == router.assigners(layout, *keys).to_pylist()  # one key, one assigner, every time
    assert set(first) <= set(range(layout.num_channels))
    buckets = router.assigner_task(layout).buckets(*keys).to_pylist()
    assert max(buckets) >= 2  # 30 keys per partition, 10 per bucket
    with pytest.raises(LaketideError, match="db.dyn"):
        router.buckets(*keys)


# -- data-file.path-directory --------------------------------------------------------------------------------------
def test_data_file_path_directory_holds_the_bucket_directories(cat, tmp_path: Path) -> None:  # noqa: ANN001
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], primary_key=["id", "dt"],
                         options={"bucket": "2", "data-file.path-directory": "data"})
    for i in range(3):
        t.write(pa.table({"id": [1, 2, i + 10], "v": [f"r{i}"] * 3, "dt": ["x", "y", "x"]}))
    files = sorted(p.relative_to(t.path).parts[:2] for p in Path(t.path).rglob("data-*.parquet"))
    assert files and all(parts[0] == "data" and parts[1].startswith("dt=") for parts in files)
    assert not any(Path(t.path).glob("dt=*"))  # nothing at the table root
    assert t.read().num_rows == 5
    t.compact(full=True)
    assert sorted(cat.table("db.t").read()["id"].to_pylist()) == [1, 2, 10, 11, 12]
    # Orphan clean-up walks the data directory and finds nothing to delete in a healthy table ...
    assert not t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).paths
    # ... and a stray file in a bucket directory under it is found.
    stray = next(Path(t.path, "data").rglob("bucket-*")) / "data-stray.parquet"
    stray.write_bytes(b"x")
    hour_ago = datetime.datetime.now().timestamp() - 3600
    os.utime(stray, (hour_ago, hour_ago))
    found = t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True).paths
    assert [Path(p).name for p in found] == ["data-stray.parquet"]
    with pytest.raises(SchemaChangeError, match="data-file.path-directory"):
        t.alter(SetOption("data-file.path-directory", "other"))


@pytest.mark.parametrize("bad", ["../out", "/abs", "a/../b", "", "s3://x/y", "./d"])
def test_data_file_path_directory_must_stay_inside_the_table(cat, bad: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match="data-file.path-directory"):
        cat.create_table("db.t", SCHEMA, options={"data-file.path-directory": bad})
    assert cat.list_tables("db") == []
