"""Drive pypaimon (the official Python port of Apache Paimon) from a JSON request.

This script runs INSIDE the interop environment (.venv-pypaimon: pypaimon 2.1.0, pyarrow 19), never in
laketide's environment, so it must not import laketide or pytest. Usage::

    python pypaimon_driver.py <request.json>

The request names a ``command``; the response is one JSON object on stdout. Tables cross the process
boundary as Arrow IPC *files* (pyarrow 26 writes them, pyarrow 19 reads them, and back). On any failure
the exit code is 1 and stdout holds ``{"error": <type>, "message": ..., "traceback": ..., "unsupported": bool}``.

Commands (``identifier`` is always ``"database.table"``):

- ``create_table``: warehouse, identifier, schema_path (IPC file whose schema is the table schema),
  partition_keys, primary_keys, options -> {"schema_id", "fields", "partition_keys", "primary_keys", "options"}
- ``write``: warehouse, identifier, data_path, mode ("append" | "overwrite"), partition (static overwrite
  partition or null) -> {"snapshot_id": int | null}
- ``read``: warehouse, identifier, output_path, columns (list or null), snapshot_id (int or null)
  -> {"rows", "schema": [[name, type, nullable], ...], "snapshot_id"}
- ``alter``: warehouse, identifier, changes: list of {"action": "add_column", "name", "schema_path"} |
  {"action": "rename_column", "name", "new_name"} | {"action": "drop_column", "name"} |
  {"action": "set_option", "key", "value"} | {"action": "remove_option", "key"} |
  {"action": "update_column_type", "name", "type"} (a Paimon type string, e.g. "BIGINT") -> {"schema_id", "fields"}
- ``snapshot``: warehouse, identifier -> {"snapshot": <snapshot JSON as pypaimon serialises it> | null}
- ``read`` also takes ``tag`` (a tag name, or null) for time travel by tag.
- ``create_tag``: warehouse, identifier, tag, snapshot_id (or null), time_retained (e.g. "1d" or null) -> {}
- ``list_tags``: warehouse, identifier -> {"tags": {name: {"snapshot_id", "tag_time_retained_s" | null}}}
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.ipc

Response = dict[str, Any]


class UnsupportedByPyPaimon(Exception):
    """pypaimon lacks the API a request needs; reported with ``unsupported: true``."""


def _catalog(request: dict[str, Any]) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": request["warehouse"]})


def _table(request: dict[str, Any]) -> Any:
    return _catalog(request).get_table(request["identifier"])


def _read_ipc_schema(path: str) -> pa.Schema:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_file(source).schema


def _read_ipc_table(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _fields_json(table_schema: Any) -> list[Any]:
    return [field.to_dict() for field in table_schema.fields]


def _create_table(request: dict[str, Any]) -> Response:
    from pypaimon import Schema

    catalog = _catalog(request)
    database = request["identifier"].split(".", 1)[0]
    catalog.create_database(database, True)
    schema = Schema.from_pyarrow_schema(
        _read_ipc_schema(request["schema_path"]),
        partition_keys=list(request.get("partition_keys") or []),
        primary_keys=list(request.get("primary_keys") or []),
        options={str(k): str(v) for k, v in (request.get("options") or {}).items()},
    )
    catalog.create_table(request["identifier"], schema, False)
    table_schema = catalog.get_table(request["identifier"]).table_schema
    return {
        "schema_id": table_schema.id,
        "fields": _fields_json(table_schema),
        "partition_keys": list(table_schema.partition_keys),
        "primary_keys": list(table_schema.primary_keys),
        "options": dict(table_schema.options),
    }


def _write(request: dict[str, Any]) -> Response:
    table = _table(request)
    data = _read_ipc_table(request["data_path"])
    builder = table.new_batch_write_builder()
    mode = request.get("mode", "append")
    if mode == "overwrite":
        builder = builder.overwrite(request.get("partition"))
    elif mode != "append":
        raise ValueError(f"unknown write mode {mode!r}; expected 'append' or 'overwrite'")
    table_write = builder.new_write()
    table_commit = builder.new_commit()
    try:
        table_write.write_arrow(data)
        table_commit.commit(table_write.prepare_commit())
    finally:
        table_write.close()
        table_commit.close()
    # An empty commit may legitimately be skipped (snapshot.ignore-empty-commit); only a snapshot
    # carrying this builder's commit user is ours.
    latest = table.snapshot_manager().get_latest_snapshot()
    ours = latest is not None and latest.commit_user == builder.commit_user
    return {"snapshot_id": latest.id if ours else None}


def _update_by_row_id(request: dict[str, Any]) -> Response:
    """Data evolution: new values of some columns for rows named by ``_ROW_ID`` (partial-column files)."""
    table = _table(request)
    data = _read_ipc_table(request["data_path"])
    builder = table.new_batch_write_builder()
    update = builder.new_update().with_update_type(list(request["columns"]))
    table_commit = builder.new_commit()
    try:
        table_commit.commit(update.update_by_arrow_with_row_id(data))
    finally:
        table_commit.close()
    latest = table.snapshot_manager().get_latest_snapshot()
    return {"snapshot_id": None if latest is None else latest.id}


def _read(request: dict[str, Any]) -> Response:
    table = _table(request)
    snapshot_id = request.get("snapshot_id")
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(int(snapshot_id))})
    if request.get("tag") is not None:
        table = table.copy({"scan.tag-name": str(request["tag"])})
    builder = table.new_read_builder()
    columns = request.get("columns")
    if columns is not None:
        builder = builder.with_projection(list(columns))
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    with pa.OSFile(request["output_path"], "wb") as sink:
        with pa.ipc.new_file(sink, result.schema) as writer:
            writer.write_table(result)
    return {
        "rows": result.num_rows,
        "schema": [[field.name, str(field.type), field.nullable] for field in result.schema],
        "snapshot_id": snapshot_id,
    }


def _schema_change(change: dict[str, Any]) -> Any:
    from pypaimon.schema.data_types import PyarrowFieldParser
    from pypaimon.schema.schema_change import SchemaChange

    action = change["action"]
    if action == "add_column":
        field = _read_ipc_schema(change["schema_path"]).field(change["name"])
        data_type = PyarrowFieldParser.to_paimon_type(field.type, field.nullable)
        return SchemaChange.add_column(change["name"], data_type, change.get("comment"))
    if action == "rename_column":
        return SchemaChange.rename_column(change["name"], change["new_name"])
    if action == "drop_column":
        return SchemaChange.drop_column(change["name"])
    if action == "set_option":
        return SchemaChange.set_option(change["key"], str(change["value"]))
    if action == "remove_option":
        return SchemaChange.remove_option(change["key"])
    if action == "update_column_type":
        from pypaimon.schema.data_types import DataTypeParser

        return SchemaChange.update_column_type(change["name"], DataTypeParser.parse_data_type(change["type"]))
    raise ValueError(f"unknown alter action {action!r}")


def _alter(request: dict[str, Any]) -> Response:
    catalog = _catalog(request)
    if not callable(getattr(catalog, "alter_table", None)):
        raise UnsupportedByPyPaimon(f"{type(catalog).__name__} has no alter_table")
    changes = [_schema_change(change) for change in request["changes"]]
    try:
        catalog.alter_table(request["identifier"], changes, False)
    except NotImplementedError as e:
        raise UnsupportedByPyPaimon(f"pypaimon cannot alter this table: {e}") from e
    table_schema = catalog.get_table(request["identifier"]).table_schema
    return {"schema_id": table_schema.id, "fields": _fields_json(table_schema)}


def _snapshot(request: dict[str, Any]) -> Response:
    from pypaimon.common.json_util import JSON

    latest = _table(request).snapshot_manager().get_latest_snapshot()
    return {"snapshot": None if latest is None else json.loads(JSON.to_json(latest))}


def _create_tag(request: dict[str, Any]) -> Response:
    _table(request).create_tag(request["tag"], request.get("snapshot_id"), time_retained=request.get("time_retained"))
    return {}


def _list_tags(request: dict[str, Any]) -> Response:
    manager = _table(request).tag_manager()
    out = {}
    for name in _table(request).list_tags():
        tag = manager.get(name)
        retained = getattr(tag, "tag_time_retained", None)
        out[name] = {"snapshot_id": tag.id,
                     "tag_time_retained_s": None if retained is None else retained.total_seconds()}
    return {"tags": out}


_COMMANDS: dict[str, Callable[[dict[str, Any]], Response]] = {
    "create_tag": _create_tag,
    "list_tags": _list_tags,
    "create_table": _create_table,
    "write": _write,
    "update_by_row_id": _update_by_row_id,
    "read": _read,
    "alter": _alter,
    "snapshot": _snapshot,
}


def _dispatch(request_path: str) -> Response:
    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    command = request.get("command")
    handler = _COMMANDS.get(command)
    if handler is None:
        raise ValueError(f"unknown command {command!r}; expected one of {sorted(_COMMANDS)}")
    return handler(request)


def main(argv: list[str]) -> int:
    """Run one request; the JSON response is the only thing written to the real stdout."""
    # pypaimon (or a native library under it) may print; keep fd 1 clean for the response.
    response_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        if len(argv) != 2:
            raise ValueError("usage: pypaimon_driver.py <request.json>")
        response, code = _dispatch(argv[1]), 0
    except Exception as e:  # noqa: BLE001 - every failure must reach the caller as JSON
        response = {
            "error": type(e).__name__,
            "message": str(e),
            "traceback": traceback.format_exc(),
            "unsupported": isinstance(e, (UnsupportedByPyPaimon, NotImplementedError)),
        }
        code = 1
    sys.stdout.flush()
    with os.fdopen(response_fd, "w", encoding="utf-8") as out:
        json.dump(response, out, default=str)
        out.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
