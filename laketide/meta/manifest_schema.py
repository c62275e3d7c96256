"""Record schemas of manifest lists, manifests and index manifests, as Java Paimon declares them.

One declaration per record, rendered to Avro (exactly the schema Java's AvroSchemaConverter emits: record names
``org.apache.paimon.avro.generated.record`` and ``<parent>_<field>`` for nested rows, nullable types as
``["null", T]`` unions) and to Arrow (for ``manifest.format`` = orc / parquet).

Paimon: ManifestFileMeta.SCHEMA, ManifestEntry.SCHEMA, DataFileMeta.SCHEMA, SimpleStats.SCHEMA,
IndexManifestEntry.SCHEMA, DeletionVectorMeta.SCHEMA, GlobalIndexMeta.SCHEMA, ManifestSchemaUtils (``_VERSION``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = [
    "Field",
    "MANIFEST_FILE_META",
    "MANIFEST_ENTRY",
    "INDEX_MANIFEST_ENTRY",
    "avro_schema",
    "arrow_schema",
]

AVRO_RECORD_NAME = "org.apache.paimon.avro.generated.record"


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Any  # "string" | "long" | "int" | "tinyint" | "bytes" | "timestamp_millis" | Array | tuple[Field, ...]
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class Array:
    element: Any
    element_nullable: bool


_SIMPLE_STATS = (
    Field("_MIN_VALUES", "bytes"),
    Field("_MAX_VALUES", "bytes"),
    Field("_NULL_COUNTS", Array("long", True), nullable=True),
)

_DATA_FILE_META = (
    Field("_FILE_NAME", "string"),
    Field("_FILE_SIZE", "long"),
    Field("_ROW_COUNT", "long"),
    Field("_MIN_KEY", "bytes"),
    Field("_MAX_KEY", "bytes"),
    Field("_KEY_STATS", _SIMPLE_STATS),
    Field("_VALUE_STATS", _SIMPLE_STATS),
    Field("_MIN_SEQUENCE_NUMBER", "long"),
    Field("_MAX_SEQUENCE_NUMBER", "long"),
    Field("_SCHEMA_ID", "long"),
    Field("_LEVEL", "int"),
    Field("_EXTRA_FILES", Array("string", False)),
    Field("_CREATION_TIME", "timestamp_millis", nullable=True),
    Field("_DELETE_ROW_COUNT", "long", nullable=True),
    Field("_EMBEDDED_FILE_INDEX", "bytes", nullable=True),
    Field("_FILE_SOURCE", "tinyint", nullable=True),
    Field("_VALUE_STATS_COLS", Array("string", False), nullable=True),
    Field("_EXTERNAL_PATH", "string", nullable=True),
    Field("_FIRST_ROW_ID", "long", nullable=True),
    Field("_WRITE_COLS", Array("string", False), nullable=True),
)

VERSION = Field("_VERSION", "int")

# Format identifiers (not schema versions): ManifestFileMetaSerializer / ManifestEntrySerializer = 2,
# IndexManifestEntrySerializer = 1.
MANIFEST_FILE_META_VERSION = 2
MANIFEST_ENTRY_VERSION = 2
INDEX_MANIFEST_ENTRY_VERSION = 1

MANIFEST_FILE_META = (
    VERSION,
    Field("_FILE_NAME", "string"),
    Field("_FILE_SIZE", "long"),
    Field("_NUM_ADDED_FILES", "long"),
    Field("_NUM_DELETED_FILES", "long"),
    Field("_PARTITION_STATS", _SIMPLE_STATS),
    Field("_SCHEMA_ID", "long"),
    Field("_MIN_BUCKET", "int", nullable=True),
    Field("_MAX_BUCKET", "int", nullable=True),
    Field("_MIN_LEVEL", "int", nullable=True),
    Field("_MAX_LEVEL", "int", nullable=True),
    Field("_MIN_ROW_ID", "long", nullable=True),
    Field("_MAX_ROW_ID", "long", nullable=True),
)

MANIFEST_ENTRY = (
    VERSION,
    Field("_KIND", "tinyint"),
    Field("_PARTITION", "bytes"),
    Field("_BUCKET", "int"),
    Field("_TOTAL_BUCKETS", "int"),
    Field("_FILE", _DATA_FILE_META),
)

_DELETION_VECTOR_META = (
    Field("f0", "string"),
    Field("f1", "int"),
    Field("f2", "int"),
    Field("_CARDINALITY", "long", nullable=True),
)

_GLOBAL_INDEX_META = (
    Field("_ROW_RANGE_START", "long"),
    Field("_ROW_RANGE_END", "long"),
    Field("_INDEX_FIELD_ID", "int"),
    Field("_EXTRA_FIELD_IDS", Array("int", False), nullable=True),
    Field("_INDEX_META", "bytes", nullable=True),
    Field("_SOURCE_META", "bytes", nullable=True),
)

INDEX_MANIFEST_ENTRY = (
    VERSION,
    Field("_KIND", "tinyint"),
    Field("_PARTITION", "bytes"),
    Field("_BUCKET", "int"),
    Field("_INDEX_TYPE", "string"),
    Field("_FILE_NAME", "string"),
    Field("_FILE_SIZE", "long"),
    Field("_ROW_COUNT", "long"),
    Field("_DELETIONS_VECTORS_RANGES", Array(_DELETION_VECTOR_META, False), nullable=True),
    Field("_EXTERNAL_PATH", "string", nullable=True),
    Field("_GLOBAL_INDEX", _GLOBAL_INDEX_META, nullable=True),
)

_AVRO_PRIMITIVE = {
    "string": "string",
    "long": "long",
    "int": "int",
    "tinyint": "int",
    "bytes": "bytes",
    "timestamp_millis": {"type": "long", "logicalType": "timestamp-millis"},
}


def avro_schema(fields: tuple[Field, ...]) -> dict[str, Any] | list[Any]:
    """The Avro schema Java writes for a top-level (nullable) row of ``fields``."""
    # Java declares the top row nullable too, hence the union around the top-level record.
    return ["null", _avro_record(fields, AVRO_RECORD_NAME)]


def _avro_record(fields: tuple[Field, ...], name: str) -> dict[str, Any]:
    out = []
    for f in fields:
        t = _avro_type(f.type, f"{name}_{f.name}")
        if f.nullable:
            out.append({"name": f.name, "type": ["null", t], "default": None})
        else:
            out.append({"name": f.name, "type": t})
    return {"type": "record", "name": name, "fields": out}


def _avro_type(t: Any, name: str) -> Any:
    if isinstance(t, tuple):
        return _avro_record(t, name)
    if isinstance(t, Array):
        item = _avro_type(t.element, name)
        return {"type": "array", "items": ["null", item] if t.element_nullable else item}
    return _AVRO_PRIMITIVE[t]


_ARROW_PRIMITIVE = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "tinyint": pa.int8(),
    "bytes": pa.binary(),
    "timestamp_millis": pa.timestamp("ms"),
}


def arrow_schema(fields: tuple[Field, ...]) -> pa.Schema:
    return pa.schema([_arrow_field(f) for f in fields])


def _arrow_field(f: Field) -> pa.Field:
    return pa.field(f.name, _arrow_type(f.type), nullable=f.nullable)


def _arrow_type(t: Any) -> pa.DataType:
    if isinstance(t, tuple):
        return pa.struct([_arrow_field(f) for f in t])
    if isinstance(t, Array):
        return pa.list_(pa.field("element", _arrow_type(t.element), nullable=t.element_nullable))
    return _ARROW_PRIMITIVE[t]
