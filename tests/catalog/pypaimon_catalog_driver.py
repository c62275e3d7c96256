"""Runs inside pypaimon's environment: a list of catalog operations against any pypaimon catalog.

Usage: ``python pypaimon_catalog_driver.py request.json``; the request is
``{"catalog": {<pypaimon catalog options>}, "ops": [{"op": ..., ...}, ...]}``. Prints one JSON object:
``{"results": [...]}`` (one entry per op) or ``{"error": ..., "type": ..., "traceback": ...}``.
Columns are int64 or string (``"fields": [["id", "int64"], ["v", "string"]]``); rows travel as JSON columns.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import pyarrow as pa

TYPES = {"int64": pa.int64(), "string": pa.string(), "int32": pa.int32()}


def run(catalog: Any, op: dict[str, Any]) -> Any:
    from pypaimon import Schema

    kind = op["op"]
    if kind == "create_database":
        catalog.create_database(op["name"], op.get("ignore_if_exists", False), op.get("properties") or None)
        return None
    if kind == "list_databases":
        return sorted(catalog.list_databases())
    if kind == "list_tables":
        return sorted(catalog.list_tables(op["database"]))
    if kind == "create_table":
        schema = pa.schema([(name, TYPES[t]) for name, t in op["fields"]])
        catalog.create_table(op["name"], Schema.from_pyarrow_schema(
            schema, partition_keys=op.get("partition_keys") or None, primary_keys=op.get("primary_keys") or None,
            options=op.get("options") or None, comment=op.get("comment")), False)
        return None
    if kind == "write":
        table = catalog.get_table(op["name"])
        data = pa.Table.from_pydict(op["rows"], schema=pa.schema([(n, TYPES[t]) for n, t in op["fields"]]))
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        return None
    if kind == "read":
        table = catalog.get_table(op["name"])
        builder = table.new_read_builder()
        result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
        return result.to_pydict()
    if kind == "schema":
        ts = catalog.get_table(op["name"]).table_schema
        return {"fields": [f.name for f in ts.fields], "options": dict(ts.options),
                "primary_keys": list(ts.primary_keys), "partition_keys": list(ts.partition_keys),
                "comment": ts.comment}
    if kind == "drop_table":
        catalog.drop_table(op["name"], op.get("ignore_if_not_exists", False))
        return None
    if kind == "rename_table":
        catalog.rename_table(op["name"], op["to"])
        return None
    if kind == "alter_table":
        catalog.alter_table(op["name"], [_schema_change(c) for c in op["changes"]],
                            bool(op.get("ignore_if_not_exists", False)))
        return None
    raise ValueError(f"unknown op {kind!r}")


def _schema_change(spec: dict[str, Any]) -> Any:
    """``{"kind": "add_column", "kwargs": {...}}``: pypaimon's ``SchemaChange.<kind>(**kwargs)``; type names
    (``data_type`` / ``new_data_type``) become atomic types. (No moves: pypaimon 2.1.0 cannot serialize one.)"""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    kwargs = dict(spec.get("kwargs") or {})
    for key in ("data_type", "new_data_type"):
        if key in kwargs:
            kwargs[key] = AtomicType(kwargs[key])
    return getattr(SchemaChange, spec["kind"])(**kwargs)


def main() -> None:
    request = json.loads(open(sys.argv[1], encoding="utf-8").read())
    try:
        from pypaimon import CatalogFactory

        catalog = CatalogFactory.create(request["catalog"])
        results = [run(catalog, op) for op in request["ops"]]
    except Exception as e:  # noqa: BLE001 - reported to the test
        print(json.dumps({"error": str(e), "type": type(e).__name__, "traceback": traceback.format_exc()}))
        sys.exit(1)
    print(json.dumps({"results": results}, default=str))


if __name__ == "__main__":
    main()
