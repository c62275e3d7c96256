"""Bad input is refused when a table is created or altered, with the same typed error, and nothing is written
(issue 14 defects 4b and 7, issues 15/16: every option honoured or refused, one validation for create and alter).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import (
    InvalidOptionError,
    InvalidTypeError,
    SchemaChangeError,
    SchemaError,
    UnsupportedFeatureError,
    UnsupportedOptionError,
)
from laketide.options import UNSUPPORTED_WRITE_OPTIONS, check_write_options
from laketide.schema.changes import AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption
from laketide.table.table import Table
from laketide.types import IntType
from tests.tree import tree

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("seq", pa.int64())])
ROWS = pa.table({"id": [1, 2], "v": ["a", "b"], "seq": [1, 1]}, schema=SCHEMA)

# Options create_table refuses on a primary-key table, the error and a word the message must hold. Options
# fixed at creation ('bucket', 'sequence.field', ...) are refused by alter as immutable instead (see below).
BAD_OPTIONS = [
    ({"data-file.prefix": "../../x-"}, InvalidOptionError, "data-file.prefix"),
    ({"data-file.prefix": "a/b-"}, InvalidOptionError, "data-file.prefix"),
    ({"data-file.prefix": "a\\b-"}, InvalidOptionError, "data-file.prefix"),
    ({"data-file.prefix": ""}, InvalidOptionError, "data-file.prefix"),
    ({"data-file.prefix": ".hidden-"}, InvalidOptionError, "data-file.prefix"),
    ({"changelog-file.prefix": "../c-"}, InvalidOptionError, "changelog-file.prefix"),
    ({"file.format": "bogus"}, InvalidOptionError, "file.format"),
    ({"file.format": "csv"}, UnsupportedOptionError, "file.format"),
    ({"file.compression": "bogus"}, InvalidOptionError, "compression"),
    ({"file.format": "orc", "file.compression": "brotli"}, UnsupportedOptionError, "file.compression"),
    ({"parquet.compression": "bogus"}, InvalidOptionError, "parquet.compression"),
    ({"file.compression.zstd-level": "abc"}, InvalidOptionError, "file.compression.zstd-level"),
    ({"manifest.compression": "bogus"}, InvalidOptionError, "manifest.compression"),
    ({"write-buffer-size": "0"}, InvalidOptionError, "write-buffer-size"),
    ({"write-buffer-size": "abc"}, InvalidOptionError, "write-buffer-size"),
    ({"target-file-size": "0"}, InvalidOptionError, "target-file-size"),
    ({"target-file-size": "0 mb"}, InvalidOptionError, "target-file-size"),
    ({"manifest.target-file-size": "0"}, InvalidOptionError, "manifest.target-file-size"),
    ({"snapshot.num-retained.min": "20", "snapshot.num-retained.max": "10"}, InvalidOptionError,
     "snapshot.num-retained.min"),
    ({"rowkind.field": "nope"}, InvalidOptionError, "rowkind.field"),
    ({"sequence.field.sort-order": "Descending"}, InvalidOptionError, "sequence.field.sort-order"),
    ({"changelog-producer": "bogus"}, InvalidOptionError, "changelog-producer"),
    ({"file-index.bloom-filter.columns": "nope"}, InvalidOptionError, "file-index.bloom-filter.columns"),
    ({"file-index.bsi.columns": "v"}, InvalidOptionError, "file-index.bsi.columns"),
    ({"file-index.bitmap.columns": "v", "file-index.bitmap.v.version": "9"}, InvalidOptionError, "version"),
    ({"file-index.bloom-filter.v.fpp": "0.1"}, InvalidOptionError, "file-index.bloom-filter.v.fpp"),
    ({"file-index.range-bitmap.columns": "id"}, UnsupportedOptionError, "file-index.range-bitmap.columns"),
    ({"file-index.in-manifest-threshold": "abc"}, InvalidOptionError, "file-index.in-manifest-threshold"),
    ({"file-index.bloom-filter.column": "v"}, InvalidOptionError, "did you mean 'file-index.bloom-filter.columns'"),
    ({"file-index.read.enabeld": "false"}, InvalidOptionError, "did you mean 'file-index.read.enabled'"),
    ({"file-index.in-manifest-treshold": "1kb"}, InvalidOptionError, "did you mean 'file-index.in-manifest"),
    ({"data-file.external-paths": "/tmp/elsewhere", "data-file.external-paths.strategy": "round-robin"},
     InvalidOptionError, "data-file.external-paths"),
    ({"row-tracking.enabled": "true"}, InvalidOptionError, "row-tracking.enabled"),  # not on a primary-key table
    ({"row-tracking.enabled": "true", "data-evolution.enabled": "true"}, InvalidOptionError,
     "row-tracking.enabled"),  # not on a primary-key table either
    # Read by the compaction and the bucket assigner: refused here instead of failing a later write.
    ({"compaction.small-file-ratio": "abc"}, InvalidOptionError, "compaction.small-file-ratio"),
    ({"force-lookup": "yes"}, InvalidOptionError, "force-lookup"),
    ({"dynamic-bucket.max-buckets": "0"}, InvalidOptionError, "dynamic-bucket.max-buckets"),
    # Per-column options naming a missing column or misspelling the suffix would be kept and silently ignored
    # (Java: validateFieldsPrefix).
    ({"fields.vv.ignore-retract": "true"}, InvalidOptionError, "'vv', which can not be found"),
    ({"fields.v,nope.sequence-group": "seq"}, InvalidOptionError, "'nope', which can not be found"),
    ({"fields.v.agregate-function": "max"}, InvalidOptionError, "did you mean 'fields.v.aggregate-function'"),
]
IMMUTABLE_BAD_OPTIONS = [
    ({"bucket": "abc"}, InvalidOptionError, "bucket"),
    ({"bucket": "0"}, InvalidOptionError, "bucket"),
    ({"bucket": "-2"}, UnsupportedOptionError, "bucket"),
    ({"sequence.field": "nope"}, InvalidOptionError, "sequence.field"),
    ({"sequence.field": "seq,seq"}, InvalidOptionError, "sequence.field"),
    ({"merge-engine": "bogus"}, InvalidOptionError, "merge-engine"),
    ({"bucket-key": "v"}, InvalidOptionError, "bucket-key"),
    ({"fields.v.aggregate-function": "sum", "merge-engine": "aggregation"}, InvalidOptionError, "sum"),
]


def _key_example(key: str) -> str:
    """A concrete key for a pattern of UNSUPPORTED_WRITE_OPTIONS ('file-index.*.columns')."""
    return key.replace("*", "bitmap" if key.startswith("file-index") else "btree")


def _schema_files(t: Table) -> int:
    return len(t.schema_manager.list_ids())


@pytest.fixture()
def pk(catalog):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(ROWS)
    return t


# -- create -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "error", "word"), BAD_OPTIONS + IMMUTABLE_BAD_OPTIONS)
def test_create_refuses_bad_options_and_writes_nothing(catalog, tmp_path: Path, options, error, word) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    with pytest.raises(error, match=word) as info:
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], options=options)
    assert "db.t" in str(info.value)
    with pytest.raises(error):
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], options=options, exist_ok=True)
    assert tree(tmp_path) == before
    assert not catalog.table_exists("db.t")


# -- alter: the same validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "error", "word"), BAD_OPTIONS)
def test_alter_refuses_what_create_refuses(pk, tmp_path: Path, options, error, word) -> None:  # noqa: ANN001
    before, files = tree(tmp_path), _schema_files(pk)
    with pytest.raises(error, match=word) as info:
        pk.alter(*(SetOption(k, v) for k, v in options.items()))
    assert "db.pk" in str(info.value)
    assert tree(tmp_path) == before and _schema_files(pk) == files
    # The table is untouched: it still reads and writes.
    pk.write(pa.table({"id": [3], "v": ["c"], "seq": [1]}, schema=SCHEMA))
    assert sorted(pk.read().column("id").to_pylist()) == [1, 2, 3]


@pytest.mark.parametrize(("options", "error", "word"), IMMUTABLE_BAD_OPTIONS)
def test_alter_refuses_immutable_options(pk, tmp_path: Path, options, error, word) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    with pytest.raises((error, SchemaChangeError)):
        pk.alter(*(SetOption(k, v) for k, v in options.items()))
    assert tree(tmp_path) == before


def test_alter_columns_through_the_validation(pk, tmp_path: Path) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    for change in (AddColumn(name="", type=IntType()), AddColumn(name="_KEY_x", type=IntType()),
                   AddColumn(name="_SEQUENCE_NUMBER", type=IntType()), RenameColumn("v", "rowkind"),
                   RenameColumn("seq", " ")):
        with pytest.raises(SchemaError, match="db.pk"):
            pk.alter(change)
    assert tree(tmp_path) == before


def test_valid_alters_still_work(pk) -> None:  # noqa: ANN001
    pk.alter(SetOption("snapshot.num-retained.min", "5"), SetOption("data-file.prefix", "part-"),
             SetOption("file.compression", "snappy"), SetOption("write-buffer-size", "1 mb"),
             SetOption("some.unknown.key", "kept"))
    pk.alter(RemoveOption("snapshot.num-retained.min"))
    pk.write(pa.table({"id": [3], "v": ["c"], "seq": [1]}, schema=SCHEMA))
    assert pk.options.raw("some.unknown.key") == "kept"
    assert any(p.name.startswith("part-") for p in Path(pk.path).rglob("*.parquet"))
    assert sorted(pk.read().column("id").to_pylist()) == [1, 2, 3]


# -- the list of options laketide cannot write with ---------------------------------------------------------------

@pytest.mark.parametrize("entry", UNSUPPORTED_WRITE_OPTIONS, ids=lambda e: e.key)
def test_unsupported_write_option_is_refused_everywhere(catalog, tmp_path: Path, entry) -> None:  # noqa: ANN001
    key = _key_example(entry.key)
    assert entry.matches(key) and entry.unsupported(entry.example)
    before = tree(tmp_path)
    with pytest.raises(UnsupportedOptionError, match=key):
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1", key: entry.example})
    with pytest.raises(UnsupportedOptionError, match=key):
        catalog.create_table("db.a", SCHEMA, options={key: entry.example})
    assert tree(tmp_path) == before
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(ROWS)
    before, files = tree(tmp_path), _schema_files(t)
    with pytest.raises((UnsupportedOptionError, SchemaChangeError), match=key):
        t.alter(SetOption(key, entry.example))
    assert tree(tmp_path) == before and _schema_files(t) == files


@pytest.mark.parametrize(
    "entry", [e for e in UNSUPPORTED_WRITE_OPTIONS if e.key not in ("file.format", "manifest.format", "bucket")],
    ids=lambda e: e.key,
)
def test_a_table_carrying_an_unsupported_option_reads_but_is_not_written(catalog, tmp_path: Path, entry) -> None:  # noqa: ANN001
    """As a Java-written table would: its schema carries the option (written here as Java would)."""
    key = _key_example(entry.key)
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(ROWS)
    forged = replace(t.schema, id=t.schema.id + 1, options={**t.schema.options, key: entry.example})
    Path(t.schema_manager.schema_path(forged.id)).write_text(forged.to_json())
    java = catalog.table("db.t")
    assert sorted(java.read().column("id").to_pylist()) == [1, 2]
    before = tree(tmp_path)
    with pytest.raises(UnsupportedOptionError, match=key):
        java.write(pa.table({"id": [3], "v": ["c"], "seq": [1]}, schema=SCHEMA))
    with pytest.raises(UnsupportedOptionError, match=key):
        java.new_write()
    with pytest.raises(UnsupportedOptionError, match=key):
        java.compact(full=True)
    assert tree(tmp_path) == before
    # Evolving it is fine as long as the alter does not set the option itself.
    java.alter(AddColumn(name="extra", type=IntType()))
    assert java.read().num_rows == 2


def test_check_write_options_names_every_offender() -> None:
    with pytest.raises(UnsupportedOptionError) as info:
        check_write_options({"tag.automatic-creation": "watermark", "chain-table.enabled": "true", "bucket": "4"},
                            table_name="db.t")
    text = str(info.value)
    assert "tag.automatic-creation" in text and "chain-table.enabled" in text and "'bucket'" not in text
    assert isinstance(info.value, UnsupportedFeatureError) and isinstance(info.value, InvalidOptionError)
    # Values laketide implements pass.
    check_write_options({"changelog-producer": "none", "bucket": "-1", "file.format": "ORC", "type": "table",
                         "snapshot.ignore-empty-commit": "true", "tag.automatic-creation": "none"},
                        table_name="db.t")
    check_write_options({"changelog-producer": "input"}, table_name="db.t")
    check_write_options({"changelog-producer": "lookup"}, table_name="db.t")
    check_write_options({"changelog-producer": "full-compaction"}, table_name="db.t")


def test_java_table_with_file_indexes_reads_and_writes_indexed_files(java_table) -> None:  # noqa: ANN001
    import laketide

    wh = java_table("append_with_bloomfilter")
    t = laketide.load_catalog(warehouse=wh).table("append_with_bloomfilter.append_with_bloomfilter")
    rows = t.read()
    assert rows.num_rows > 0
    before = {e.file.file_name for e in t.file_scan().plan(t.latest_snapshot())}
    t.write(rows.slice(0, 1))
    new = [e.file for e in t.file_scan().plan(t.latest_snapshot()) if e.file.file_name not in before]
    assert len(new) == 1 and (new[0].embedded_index or new[0].extra_files)  # laketide indexed it as Java asks
    assert t.read().num_rows == rows.num_rows + 1


def test_deletion_vector_tables_are_written_and_read(catalog) -> None:  # noqa: ANN001
    """deletion-vectors.enabled is honoured (each write compacts level 0 away, so readers see every row)."""
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(ROWS)
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"], "seq": [2, 2]}, schema=SCHEMA))
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "seq": 1}, {"id": 2, "v": "B", "seq": 2}, {"id": 3, "v": "c", "seq": 2}]


# -- columns and keys -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("names", [["id", ""], ["id", " "], ["id", "id"], ["id", "_KEY_id"],
                                   ["id", "_SEQUENCE_NUMBER"], ["id", "_VALUE_KIND"], ["id", "rowkind"]])
def test_create_refuses_bad_column_names(catalog, tmp_path: Path, names: list[str]) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    schema = pa.schema([(n, pa.int64()) for n in names])
    with pytest.raises((SchemaError, InvalidTypeError)):
        catalog.create_table("db.t", schema)
    assert tree(tmp_path) == before


def test_create_refuses_empty_struct_field_names(catalog, tmp_path: Path) -> None:  # noqa: ANN001
    before = tree(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("", pa.int32())]))])
    with pytest.raises(SchemaError, match="db.t.s"):
        catalog.create_table("db.t", schema)
    assert tree(tmp_path) == before


def test_keys_may_come_as_options_like_in_java(catalog) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, options={"primary-key": "id, dt", "partition": "dt", "bucket": "2"})
    assert t.primary_keys == ("id", "dt") and t.partition_keys == ("dt",)
    assert "primary-key" not in t.schema.options and "partition" not in t.schema.options
    with pytest.raises(InvalidOptionError, match="primary-key"):
        catalog.create_table("db.u", schema, primary_key=["id"], options={"primary-key": "id"})


def test_sequence_field_is_checked_at_create_not_at_every_write(catalog) -> None:  # noqa: ANN001
    # Before: accepted, then every write failed with a raw pyarrow error.
    with pytest.raises(InvalidOptionError, match="'sequence.field' names columns \\['nope'\\]"):
        catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"sequence.field": "nope"})
    t = catalog.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1", "sequence.field": "seq"})
    t.write(pa.table({"id": [1, 1], "v": ["new", "old"], "seq": [2, 1]}, schema=SCHEMA))
    assert t.read().column("v").to_pylist() == ["new"]


def test_java_tables_still_read(java_table) -> None:  # noqa: ANN001
    import laketide

    for name in ("pk_09", "append_09", "append_with_bitmap", "pk_with_bitmap_dv"):
        wh = java_table(name)
        t = laketide.load_catalog(warehouse=wh).table(f"{name}.{name}")
        assert t.read().num_rows > 0
        shutil.rmtree(Path(wh) / f"{name}.db")


# -- per-column options (fields.<columns>.<suffix>) ------------------------------------------------------------------

AGG_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a.b", pa.int64()), ("n", pa.int64()),
                        ("r", pa.struct([("x", pa.int64())]))])


def test_per_column_options_follow_the_columns(catalog, tmp_path: Path) -> None:  # noqa: ANN001
    """A column whose name holds a dot takes per-column options (Java splits at every dot and refuses it); a
    dropped column's options must go in the same alter; a rename carries them; a ROW member path is refused."""
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_key=["id"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.a.b.aggregate-function": "sum",
        "fields.n.aggregate-function": "sum"})
    for _ in range(2):
        t.write(pa.table({"id": [1], "a.b": [5], "n": [1], "r": [{"x": 1}]}, schema=AGG_SCHEMA))
    assert t.read().to_pylist() == [{"id": 1, "a.b": 10, "n": 2, "r": {"x": 1}}]

    before = tree(tmp_path)
    with pytest.raises(InvalidOptionError, match="'fields.n.aggregate-function' names field 'n'") as info:
        t.alter(DropColumn("n"))
    assert "db.agg" in str(info.value) and "same alter" in str(info.value)
    with pytest.raises(InvalidOptionError, match="nested-field path is not supported on ROW column 'r'"):
        t.alter(SetOption("fields.r.x.aggregate-function", "max"))
    with pytest.raises(InvalidOptionError, match="'nope', which can not be found"):
        t.copy({"fields.nope.ignore-retract": "true"})
    assert tree(tmp_path) == before

    t = t.alter(RenameColumn("n", "m"))
    assert t.schema.options["fields.m.aggregate-function"] == "sum"
    t = t.alter(DropColumn("m"), RemoveOption("fields.m.aggregate-function"))
    assert t.schema.field_names == ["id", "a.b", "r"]
    t.write(pa.table({"id": [1], "a.b": [1], "r": [{"x": 2}]}))
    assert t.read().to_pylist() == [{"id": 1, "a.b": 11, "r": {"x": 2}}]
