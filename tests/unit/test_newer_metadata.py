"""Metadata the newest Paimon writes: every field is known or ignored, newer types parse, VARIANT reads."""

from __future__ import annotations

import dataclasses
import io
import json
import os
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import laketide
from laketide.exceptions import UnsupportedFeatureError
from laketide.meta.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats
from laketide.meta.manifest_io import decode_records, encode_records, to_records
from laketide.meta.manifest_schema import MANIFEST_ENTRY, MANIFEST_FILE_META, Field, avro_schema
from laketide.meta.snapshot import Snapshot
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    VARIANT_ARROW_TYPE,
    DataField,
    IntType,
    RowType,
    VariantType,
    field_from_json,
    field_to_json,
    parse_type,
    to_arrow_type,
)

# Field names of the newest Java records (paimon-core DataFileMeta.SCHEMA, ManifestEntry.SCHEMA,
# ManifestFileMeta.SCHEMA at the reference checkout), written out by hand.
JAVA_DATA_FILE_META = [
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES", "_CREATION_TIME",
    "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
    "_FIRST_ROW_ID", "_WRITE_COLS",
]
JAVA_MANIFEST_ENTRY = ["_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"]
JAVA_MANIFEST_FILE_META = [
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_PARTITION_STATS",
    "_SCHEMA_ID", "_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL", "_MIN_ROW_ID", "_MAX_ROW_ID",
]


def test_manifest_records_have_the_newest_java_fields() -> None:
    assert [f.name for f in MANIFEST_ENTRY] == JAVA_MANIFEST_ENTRY
    file_meta = next(f for f in MANIFEST_ENTRY if f.name == "_FILE").type
    assert [f.name for f in file_meta] == JAVA_DATA_FILE_META
    assert [f.name for f in MANIFEST_FILE_META] == JAVA_MANIFEST_FILE_META


def _entry() -> ManifestEntry:
    stats = SimpleStats(min_values=b"\x00" * 8, max_values=b"\x00" * 8, null_counts=(0,))
    meta = DataFileMeta(
        file_name="data-1.parquet", file_size=10, row_count=1, min_key=b"", max_key=b"", key_stats=stats,
        value_stats=stats, min_sequence_number=0, max_sequence_number=0, schema_id=0, level=0,
        extra_files=(), creation_time_ms=1_700_000_000_000, first_row_id=7, write_cols=("a",),
    )
    return ManifestEntry(kind=FileKind.ADD, partition=b"", bucket=0, total_buckets=1, file=meta)


def _with_future_fields(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """``fields`` plus a field a later Paimon might add, at every record level."""
    out = []
    for f in fields:
        if isinstance(f.type, tuple):
            f = dataclasses.replace(f, type=_with_future_fields(f.type))
        out.append(f)
    return (*out, Field("_A_FIELD_FROM_THE_FUTURE", "long", nullable=True))


def test_unknown_manifest_fields_are_ignored_in_every_format() -> None:
    entry = _entry()
    record = to_records([entry])[0]
    future = _with_future_fields(MANIFEST_ENTRY)
    record = {**record, "_A_FIELD_FROM_THE_FUTURE": 1, "_FILE": {**record["_FILE"], "_A_FIELD_FROM_THE_FUTURE": 2}}
    for key in ("_KEY_STATS", "_VALUE_STATS"):
        record["_FILE"][key] = {**record["_FILE"][key], "_A_FIELD_FROM_THE_FUTURE": 3}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(avro_schema(future)), [record], codec="zstandard")
    for data in (buf.getvalue(), encode_records([record], future, fmt="orc", compression="zstd"),
                 encode_records([record], future, fmt="parquet", compression="zstd")):
        assert [ManifestEntry.from_record(r) for r in decode_records(data, path="m")] == [entry]


def test_manifest_lists_from_older_and_newer_writers() -> None:
    meta = ManifestFileMeta(file_name="manifest-1", file_size=1, num_added_files=1, num_deleted_files=0,
                            partition_stats=SimpleStats(min_values=b"", max_values=b"", null_counts=()), schema_id=0)
    record = to_records([meta])[0]
    older = tuple(f for f in MANIFEST_FILE_META if f.name not in ("_MIN_ROW_ID", "_MAX_ROW_ID", "_MIN_LEVEL",
                                                                     "_MAX_LEVEL"))
    for fields in (older, _with_future_fields(MANIFEST_FILE_META)):
        rec = {k: v for k, v in record.items() if k in {f.name for f in fields}}
        rec.setdefault("_A_FIELD_FROM_THE_FUTURE", None)
        data = encode_records([rec], fields, fmt="avro", compression="zstd")
        assert [ManifestFileMeta.from_record(r) for r in decode_records(data, path="l")] == [meta]


def test_snapshot_fields_of_newer_writers_are_kept() -> None:
    text = json.dumps({
        "version": 3, "id": 5, "schemaId": 0, "baseManifestList": "b", "deltaManifestList": "d",
        "commitUser": "u", "commitIdentifier": 1, "commitKind": "APPEND", "timeMillis": 1, "totalRecordCount": 1,
        "deltaRecordCount": 1, "nextRowId": 10, "operation": "MERGE", "aFieldFromTheFuture": {"x": [1]},
    })
    snap = Snapshot.from_json(text)
    assert snap.next_row_id == 10 and snap.extra == {"operation": "MERGE", "aFieldFromTheFuture": {"x": [1]}}
    again = json.loads(snap.to_json())
    assert again["operation"] == "MERGE" and again["aFieldFromTheFuture"] == {"x": [1]}


def test_schema_fields_of_newer_writers_are_ignored() -> None:
    text = json.dumps({
        "version": 3, "id": 1, "highestFieldId": 1, "partitionKeys": [], "primaryKeys": [], "options": {},
        "timeMillis": 1, "aTopLevelFieldFromTheFuture": True,
        "fields": [{"id": 0, "name": "a", "type": "INT", "aFieldAttributeFromTheFuture": 1},
                   {"id": 1, "name": "v", "type": "VARIANT NOT NULL", "description": "doc"}],
    })
    schema = TableSchema.from_json(text)
    assert schema.field("v").type == VariantType(nullable=False) and schema.field("a").type == IntType()


def test_variant_type_strings_and_json_round_trip() -> None:
    assert parse_type("VARIANT") == VariantType() and str(VariantType(nullable=False)) == "VARIANT NOT NULL"
    field = DataField(3, "v", VariantType(), "semi-structured")
    assert field_to_json(field) == {"id": 3, "name": "v", "type": "VARIANT", "description": "semi-structured"}
    assert field_from_json(field_to_json(field)) == field
    nested = RowType((DataField(0, "inner", VariantType(nullable=False)),))
    assert parse_type(str(nested)) == nested
    assert to_arrow_type(VariantType()) == VARIANT_ARROW_TYPE


@pytest.mark.parametrize(
    "type_json", ['"GEOMETRY(4326)"', '{"type": "VECTOR", "element": "FLOAT", "length": 3}'])
def test_types_laketide_does_not_model_are_named(type_json: str) -> None:
    text = (
        '{"version": 3, "id": 0, "highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], "options": {}, '
        f'"fields": [{{"id": 0, "name": "x", "type": {type_json}}}]}}'
    )
    with pytest.raises(UnsupportedFeatureError, match=r"schema-0: Paimon type (GEOMETRY|VECTOR) is not"):
        TableSchema.from_json(text, path="/t/schema/schema-0")


def test_blob_round_trips_through_schema_json() -> None:
    # BLOB is modelled now (read from .blob files): tests/compat/test_pypaimon_blob.py reads real blob tables.
    from laketide.types import BlobType

    field = DataField(0, "payload", BlobType())
    assert field_from_json(field_to_json(field)) == field
    assert parse_type("BLOB NOT NULL") == BlobType(nullable=False)
    assert to_arrow_type(BlobType()) == pa.large_binary()


def _variant_table(warehouse: str, variant: pa.Array) -> laketide.Table:
    """A table whose column ``v`` Java declared VARIANT and stored as a group of binaries (unannotated, as
    Paimon's ParquetSchemaConverter writes it)."""
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    t = cat.create_table("db.variants", pa.schema([("id", pa.int32()), ("v", variant.type)]))
    t.write(pa.table({"id": list(range(len(variant))), "v": variant}))
    schema_path = os.path.join(warehouse, "db.db", "variants", "schema", "schema-0")
    doc = json.loads(Path(schema_path).read_text())
    doc["fields"][1]["type"] = "VARIANT"
    Path(schema_path).write_text(json.dumps(doc))
    return cat.table("db.variants")


def test_unshredded_variants_read_as_value_and_metadata(tmp_path: Path) -> None:
    values = pa.array([{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}, None], VARIANT_ARROW_TYPE)
    t = _variant_table(str(tmp_path / "wh"), values)
    assert t.schema.field("v").type == VariantType()
    got = t.read()
    assert got.schema.field("v").type == VARIANT_ARROW_TYPE
    assert got.column("v").to_pylist() == values.to_pylist()
    data_file = next(p for p in (tmp_path / "wh").rglob("data-*.parquet"))
    group = pq.ParquetFile(data_file).schema_arrow.field("v").type
    assert [group.field(i).name for i in range(group.num_fields)] == ["value", "metadata"]


def test_shredded_variants_are_refused_clearly(tmp_path: Path) -> None:
    shredded = pa.array([{"value": b"\x00", "metadata": b"\x01", "typed_value": 5}],
                        pa.struct([("value", pa.binary()), ("metadata", pa.binary()), ("typed_value", pa.int64())]))
    t = _variant_table(str(tmp_path / "wh"), shredded)
    with pytest.raises(UnsupportedFeatureError, match="shredded"):
        t.read()
    assert t.read(columns=["id"]).num_rows == 1
