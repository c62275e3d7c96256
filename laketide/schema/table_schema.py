"""A table's schema as stored in ``schema/schema-N``: fields with ids, keys, options, comment.

Paimon: schema.TableSchema, schema.SchemaSerializer
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from laketide.exceptions import CorruptMetadataError, SchemaError, UnsupportedFeatureError
from laketide.meta.json_util import jackson_dumps
from laketide.options import CoreOptions
from laketide.types import DataField, RowType, field_from_json, field_to_json

__all__ = ["TableSchema"]

CURRENT_SCHEMA_VERSION = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = field(default_factory=lambda: int(time.time() * 1000))
    version: int = CURRENT_SCHEMA_VERSION
    _core_options: CoreOptions | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def core_options(self) -> CoreOptions:
        """The options parsed by the typed registry, once per schema (InvalidOptionError on a bad value)."""
        parsed = self._core_options
        if parsed is None:
            parsed = CoreOptions(self.options)
            object.__setattr__(self, "_core_options", parsed)  # a cache: the schema itself stays immutable
        return parsed

    @property
    def row_type(self) -> RowType:
        return RowType(fields=self.fields)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"Column {name!r} does not exist; columns are {self.field_names}")

    def field_by_id(self, field_id: int) -> DataField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    @property
    def partition_fields(self) -> list[DataField]:
        return [self.field(n) for n in self.partition_keys]

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary key minus partition keys (Paimon: TableSchema.trimmedPrimaryKeys)."""
        return [k for k in self.primary_keys if k not in self.partition_keys]

    def bucket_keys(self) -> list[str]:
        """``bucket-key`` option, else the trimmed primary key, else every column (append tables)."""
        raw = self.options.get("bucket-key")
        if raw:
            return [k.strip() for k in raw.split(",") if k.strip()]
        if self.primary_keys:
            return self.trimmed_primary_keys
        return [n for n in self.field_names if n not in self.partition_keys]

    def to_json(self) -> str:
        d: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            d["comment"] = self.comment
        d["timeMillis"] = self.time_millis
        return jackson_dumps(d)

    @classmethod
    def from_json(cls, text: str | bytes, *, path: str = "<schema>") -> TableSchema:
        try:
            d = json.loads(text)
            version = int(d.get("version", 1))
            options = {str(k): str(v) for k, v in (d.get("options") or {}).items()}
            # Older schema versions imply defaults that newer writers store explicitly.
            if version <= 1 and "bucket" not in options:
                options["bucket"] = "1"
            if version <= 2 and "file.format" not in options:
                options["file.format"] = "orc"
            fields = tuple(field_from_json(f) for f in d["fields"])
            return cls(
                version=version,
                id=int(d["id"]),
                fields=fields,
                highest_field_id=int(d.get("highestFieldId", max((f.id for f in fields), default=-1))),
                partition_keys=tuple(d.get("partitionKeys") or ()),
                primary_keys=tuple(d.get("primaryKeys") or ()),
                options=options,
                comment=d.get("comment"),
                time_millis=int(d.get("timeMillis") or 0),
            )
        except UnsupportedFeatureError as e:
            raise UnsupportedFeatureError(f"Schema file {path}: {e}") from e
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(f"Cannot parse schema file {path}: {e!r}", path=path) from e
