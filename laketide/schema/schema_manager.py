"""Reading and committing ``schema/schema-N`` files.

Paimon: schema.SchemaManager
"""

from __future__ import annotations

import re
from collections.abc import Callable

from laketide.exceptions import CorruptMetadataError, NotFoundError, SchemaAlreadyExistsError, SchemaChangeError
from laketide.fs import FileIO
from laketide.schema.changes import SchemaChange, apply_changes
from laketide.schema.table_schema import TableSchema

__all__ = ["SchemaManager", "SchemaValidator"]

# Checks a new schema against the one it replaces (None on creation); raises to refuse it.
SchemaValidator = Callable[[TableSchema, "TableSchema | None"], None]

_SCHEMA_RE = re.compile(r"^schema-(\d+)$")


class SchemaManager:
    def __init__(self, file_io: FileIO, table_path: str, *, schema_dir: str | None = None) -> None:
        """``schema_dir`` is the branch's directory from the store's path factory (default: the main branch's)."""
        self.file_io = file_io
        self.table_path = table_path
        self.schema_dir = schema_dir or f"{table_path}/schema"
        self._cache: dict[int, TableSchema] = {}

    def forget(self) -> None:
        """Drop the parsed schemas (after a fast-forward rewrote schema files)."""
        self._cache.clear()

    def schema_path(self, schema_id: int) -> str:
        return f"{self.schema_dir}/schema-{schema_id}"

    def list_ids(self) -> list[int]:
        ids = []
        for st in self.file_io.list_status(self.schema_dir):
            m = _SCHEMA_RE.match(st.path.rstrip("/").rsplit("/", 1)[-1])
            if m:
                ids.append(int(m.group(1)))
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except NotFoundError as e:
            raise CorruptMetadataError(f"Schema file {path} is missing", path=path) from e
        schema = TableSchema.from_json(data, path=path)
        self._cache[schema_id] = schema
        return schema

    def create(self, schema: TableSchema) -> TableSchema:
        """Write schema-0; SchemaAlreadyExistsError when the table already has one (a concurrent create)."""
        if not self.file_io.try_write_atomic(self.schema_path(schema.id), schema.to_json().encode()):
            raise SchemaAlreadyExistsError(f"Schema {schema.id} of table {self.table_path} already exists")
        self._cache[schema.id] = schema
        return schema

    def commit_changes(
        self, changes: list[SchemaChange] | tuple[SchemaChange, ...], *, validate: SchemaValidator | None = None
    ) -> TableSchema:
        """Apply ``changes`` to the latest schema and publish it; concurrent changes are retried on top.

        ``validate`` sees each candidate (and the schema it replaces) before it is written: an error leaves the
        table unchanged.
        """
        while True:
            latest = self.latest()
            if latest is None:
                raise SchemaChangeError(f"Table {self.table_path} has no schema")
            new = apply_changes(latest, changes)
            if validate is not None:
                validate(new, latest)
            if self.file_io.try_write_atomic(self.schema_path(new.id), new.to_json().encode()):
                self._cache[new.id] = new
                return new
