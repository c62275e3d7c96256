"""A view: a query text (a default and one per SQL dialect) and the schema of its result.

Stored as Paimon's ViewSchema JSON (``{"fields", "query", "dialects", "comment", "options"}``): the
``view_schema`` column of the JDBC catalog's ``paimon_views`` table and the ``schema`` of the REST API's views.

Paimon: view.View, view.ViewImpl, view.ViewSchema
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from laketide.exceptions import SchemaError
from laketide.types import (
    DataField,
    RowType,
    field_from_json,
    field_to_json,
    row_type_from_arrow_schema,
    to_arrow_schema,
)

__all__ = ["View"]


@dataclass(frozen=True)
class View:
    fields: tuple[DataField, ...]
    query: str
    dialects: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, schema: pa.Schema, query: str, *, dialects: Mapping[str, str] | None = None,
           comment: str | None = None, options: Mapping[str, str] | None = None) -> View:
        """A view whose rows have ``schema`` (an Arrow schema), ``query`` its default SQL text."""
        if not isinstance(query, str) or not query.strip():
            raise SchemaError("A view needs a non-empty query")
        row_type = row_type_from_arrow_schema(schema)
        return cls(tuple(row_type.fields), query, dict(dialects or {}), comment,
                   {str(k): str(v) for k, v in (options or {}).items()})

    def query_for(self, dialect: str | None = None) -> str:
        """The query text for ``dialect`` ("spark", "flink", ...), else the default one (Java: View#query)."""
        return self.dialects.get(dialect, self.query) if dialect else self.query

    @property
    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(RowType(self.fields))

    def to_json(self) -> str:
        d: dict[str, Any] = {"fields": [field_to_json(f) for f in self.fields], "query": self.query,
                             "dialects": dict(self.dialects)}
        if self.comment is not None:
            d["comment"] = self.comment
        d["options"] = dict(self.options)
        return json.dumps(d, ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.to_json())
        return out

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any], *, what: str = "view") -> View:
        try:
            d = json.loads(text) if isinstance(text, str) else dict(text)
            return cls(tuple(field_from_json(f) for f in d["fields"]), d["query"], dict(d.get("dialects") or {}),
                       d.get("comment"), dict(d.get("options") or {}))
        except (ValueError, KeyError, TypeError) as e:
            raise SchemaError(f"The schema of {what} is not Paimon's ViewSchema JSON: {e}") from e
