"""Schema changes as Paimon's REST API carries them (``AlterTableRequest {"changes": [...]}``).

Each change is one JSON object discriminated by ``action`` (Jackson's ``@JsonTypeInfo`` on Java's
SchemaChange), columns are named by a ``fieldNames`` path and types use the schema files' JSON.
:func:`change_to_json` is the client side; :func:`changes_from_json` the server side, which also accepts Java's
kinds laketide has no class for when they map onto one (``updateColumnNullability`` to nullable) and refuses the
others with UnsupportedFeatureError (HTTP 501, as Paimon's server answers what it does not implement).

Paimon: schema.SchemaChange (JSON annotations), rest.requests.AlterTableRequest
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from laketide.exceptions import ColumnNotExistError, SchemaChangeError, UnsupportedFeatureError
from laketide.schema.changes import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
)
from laketide.schema.table_schema import TableSchema
from laketide.types import ArrayType, DataType, MapType, RowType, type_from_json, type_to_json

__all__ = ["change_to_json", "changes_from_json"]

# Java's SchemaChange.Actions
SET_OPTION = "setOption"
REMOVE_OPTION = "removeOption"
UPDATE_COMMENT = "updateComment"
ADD_COLUMN = "addColumn"
RENAME_COLUMN = "renameColumn"
DROP_COLUMN = "dropColumn"
UPDATE_COLUMN_TYPE = "updateColumnType"
UPDATE_COLUMN_NULLABILITY = "updateColumnNullability"
UPDATE_COLUMN_COMMENT = "updateColumnComment"
UPDATE_COLUMN_DEFAULT_VALUE = "updateColumnDefaultValue"
UPDATE_COLUMN_POSITION = "updateColumnPosition"
DROP_PRIMARY_KEY = "dropPrimaryKey"

# Java's kinds that laketide's schema code cannot apply (yet): refused as unsupported, never ignored.
_UNSUPPORTED = {
    UPDATE_COLUMN_DEFAULT_VALUE: "changing a column's default value",
    UPDATE_COLUMN_POSITION: "moving an existing column",
    DROP_PRIMARY_KEY: "dropping the primary key",
}


# -- client: laketide change -> JSON -------------------------------------------------------------------------------
def change_to_json(change: SchemaChange) -> dict[str, Any]:
    """The JSON object Java's Jackson writes for the same change (``action`` first)."""
    if isinstance(change, SetOption):
        return {"action": SET_OPTION, "key": change.key, "value": change.value}
    if isinstance(change, RemoveOption):
        return {"action": REMOVE_OPTION, "key": change.key}
    if isinstance(change, UpdateComment):
        return {"action": UPDATE_COMMENT, "comment": change.comment}
    if isinstance(change, AddColumn):
        return {"action": ADD_COLUMN, "fieldNames": [change.name], "dataType": type_to_json(change.type),
                "comment": change.comment, "move": _move_to_json(change.name, change.move)}
    if isinstance(change, RenameColumn):
        return {"action": RENAME_COLUMN, "fieldNames": [change.old_name], "newName": change.new_name}
    if isinstance(change, DropColumn):
        return {"action": DROP_COLUMN, "fieldNames": [change.name]}
    if isinstance(change, UpdateColumnType):
        path = [change.name] if isinstance(change.name, str) else list(change.name)
        # laketide never makes a column NOT NULL by a type change: a NOT NULL target keeps the column's
        # nullability (Java's keepNullability), a nullable one makes it nullable (as Java does without it).
        return {"action": UPDATE_COLUMN_TYPE, "fieldNames": path, "newDataType": type_to_json(change.new_type),
                "keepNullability": not change.new_type.nullable}
    if isinstance(change, UpdateColumnComment):
        return {"action": UPDATE_COLUMN_COMMENT, "fieldNames": [change.name], "newComment": change.comment}
    raise SchemaChangeError(f"Not a schema change: {change!r}")


def _move_to_json(column: str, move: Move | None) -> dict[str, Any] | None:
    if move is None:
        return None
    return {"fieldName": column, "referenceFieldName": move.reference, "type": move.kind.upper()}


# -- server: JSON -> laketide change -------------------------------------------------------------------------------
def changes_from_json(items: Any, schema: TableSchema, *, table_name: str) -> list[SchemaChange]:
    """The laketide changes of an AlterTableRequest's ``changes`` against ``schema`` (the table's latest).

    Kinds that depend on the column's current type (nullability) are resolved against the schema as the earlier
    changes of the same request leave it. SchemaChangeError for a malformed change, UnsupportedFeatureError for a
    kind laketide cannot apply; both name the table and the change.
    """
    if not isinstance(items, list):
        raise SchemaChangeError(f"Alter table {table_name}: 'changes' must be a list, got {items!r}")
    out: list[SchemaChange] = []
    current = schema
    for position, item in enumerate(items):
        where = f"Alter table {table_name}, change #{position + 1}"
        converted = _change_from_json(item, current, where)
        if converted is None:
            continue
        out.append(converted)
        if position + 1 < len(items):
            current = apply_changes(current, [converted])
    return out


def _change_from_json(item: Any, schema: TableSchema, where: str) -> SchemaChange | None:
    if not isinstance(item, dict) or not isinstance(item.get("action"), str):
        raise SchemaChangeError(f"{where}: a schema change is an object with an 'action', got {item!r}")
    action = item["action"]
    if action in _UNSUPPORTED:
        raise UnsupportedFeatureError(f"{where}: {action!r} ({_UNSUPPORTED[action]}) is not supported by laketide")
    if action == SET_OPTION:
        return SetOption(_text(item, "key", where), _text(item, "value", where))
    if action == REMOVE_OPTION:
        return RemoveOption(_text(item, "key", where))
    if action == UPDATE_COMMENT:
        return UpdateComment(_optional_text(item, "comment", where))
    if action == ADD_COLUMN:
        name = _top_level(item, where, action)
        return AddColumn(name=name, type=type_from_json(_required(item, "dataType", where)),
                         comment=_optional_text(item, "comment", where), move=_move_from_json(item.get("move"), where))
    if action == RENAME_COLUMN:
        return RenameColumn(_top_level(item, where, action), _text(item, "newName", where))
    if action == DROP_COLUMN:
        return DropColumn(_top_level(item, where, action))
    if action == UPDATE_COLUMN_COMMENT:
        return UpdateColumnComment(_top_level(item, where, action), _optional_text(item, "newComment", where))
    if action == UPDATE_COLUMN_TYPE:
        path = _path(item, where)
        new_type = type_from_json(_required(item, "newDataType", where))
        if _flag(item, "keepNullability", where):
            new_type = new_type.copy(nullable=False)  # laketide then keeps the column's own nullability
        else:
            _check_not_null(_type_at(schema, path, where), new_type.nullable, path, where)
        return UpdateColumnType(path[0] if len(path) == 1 else tuple(path), new_type)
    if action == UPDATE_COLUMN_NULLABILITY:
        path = _path(item, where)
        nullable = _flag(item, "newNullability", where)
        current = _type_at(schema, path, where)
        _check_not_null(current, nullable, path, where)
        if current.nullable == nullable:
            return None  # nothing to change
        return UpdateColumnType(path[0] if len(path) == 1 else tuple(path), current.copy(nullable=True))
    raise SchemaChangeError(f"{where}: unknown schema change action {action!r}")


def _check_not_null(current: DataType, nullable: bool, path: Sequence[str], where: str) -> None:
    # Java refuses it too unless 'alter-column-null-to-not-null.disabled' = false: rows already written may hold
    # nulls. laketide does not offer that option.
    if current.nullable and not nullable:
        raise SchemaChangeError(
            f"{where}: cannot make column {'.'.join(path)!r} NOT NULL: rows already written may hold nulls"
        )


def _type_at(schema: TableSchema, path: Sequence[str], where: str) -> DataType:
    names = [f.name for f in schema.fields]
    if path[0] not in names:
        raise ColumnNotExistError(f"{where}: column {path[0]!r} does not exist; columns are {names}", path[0])
    current: DataType = schema.field(path[0]).type
    for depth, step in enumerate(path[1:], start=1):
        if isinstance(current, RowType) and step in current.field_names:
            current = next(f.type for f in current.fields if f.name == step)
        elif isinstance(current, ArrayType) and step == "element":
            current = current.element
        elif isinstance(current, MapType) and step == "value":
            current = current.value
        else:
            missing = ".".join(path[:depth + 1])
            raise ColumnNotExistError(f"{where}: column {missing!r} does not exist ({'.'.join(path[:depth])} is "
                                      f"{current})", missing)
    return current


def _move_from_json(move: Any, where: str) -> Move | None:
    if move is None:
        return None
    if not isinstance(move, dict):
        raise SchemaChangeError(f"{where}: 'move' must be an object, got {move!r}")
    kind = str(move.get("type") or "").lower()
    if kind not in ("first", "after", "before", "last"):
        raise SchemaChangeError(f"{where}: move type must be FIRST, AFTER, BEFORE or LAST, got {move.get('type')!r}")
    reference = move.get("referenceFieldName")
    if kind in ("after", "before") and not isinstance(reference, str):
        raise SchemaChangeError(f"{where}: a move {kind.upper()} needs a 'referenceFieldName'")
    return Move(kind, reference if kind in ("after", "before") else None)


def _required(item: dict[str, Any], key: str, where: str) -> Any:
    if item.get(key) is None:
        raise SchemaChangeError(f"{where} ({item['action']}): {key!r} is missing")
    return item[key]


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = _required(item, key, where)
    if not isinstance(value, str):
        raise SchemaChangeError(f"{where} ({item['action']}): {key!r} must be a string, got {value!r}")
    return value


def _optional_text(item: dict[str, Any], key: str, where: str) -> str | None:
    return None if item.get(key) is None else _text(item, key, where)


def _flag(item: dict[str, Any], key: str, where: str) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise SchemaChangeError(f"{where} ({item['action']}): {key!r} must be true or false, got {value!r}")
    return value


def _path(item: dict[str, Any], where: str) -> list[str]:
    names = item.get("fieldNames")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise SchemaChangeError(
            f"{where} ({item['action']}): 'fieldNames' must be a non-empty list of column names, got {names!r}")
    return names


def _top_level(item: dict[str, Any], where: str, action: str) -> str:
    path = _path(item, where)
    if len(path) > 1:
        raise UnsupportedFeatureError(
            f"{where}: {action} of the nested column {'.'.join(path)!r} is not supported by laketide "
            "(top-level columns only)")
    return path[0]
