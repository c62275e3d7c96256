"""Schema changes: each applied change set becomes a new ``schema-N`` file.

Paimon: schema.SchemaChange, schema.SchemaManager#generateTableSchema
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from laketide.exceptions import (
    CastError,
    ColumnAlreadyExistsError,
    ColumnNotExistError,
    SchemaChangeError,
    UnsupportedFeatureError,
)
from laketide.schema.cast_rules import can_cast
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    STRING,
    as_data_type,
    ArrayType,
    BigIntType,
    CharType,
    DataField,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    BinaryType,
    VarCharType,
    VariantType,
    is_nested,
    iter_types,
)

__all__ = [
    "SchemaChange",
    "SetOption",
    "RemoveOption",
    "UpdateComment",
    "AddColumn",
    "RenameColumn",
    "DropColumn",
    "UpdateColumnType",
    "UpdateColumnComment",
    "Move",
    "apply_changes",
]


@dataclass(frozen=True, slots=True)
class Move:
    """Where an added column goes: ``Move.first()``, ``Move.after("c")``, ``Move.before("c")``."""

    kind: str  # "first" | "after" | "before" | "last"
    reference: str | None = None

    @classmethod
    def first(cls) -> Move:
        return cls("first")

    @classmethod
    def after(cls, column: str) -> Move:
        return cls("after", column)

    @classmethod
    def before(cls, column: str) -> Move:
        return cls("before", column)


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str


@dataclass(frozen=True, slots=True)
class UpdateComment:
    comment: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AddColumn:
    """Add column ``name``; ``type`` may be a laketide type, a pyarrow type or a type string ("BIGINT")."""

    name: str
    type: DataType
    comment: str | None = None
    move: Move | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", as_data_type(self.type))


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """Change a column's type to any type Java's ``ALTER TABLE ... MODIFY`` accepts (DataTypeCasts plus a cast
    rule; ``disable-explicit-type-casting`` limits it to widening). ``name`` may be a path into a nested column:
    ``("s", "a")`` is field ``a`` of ROW column ``s``, ``("arr", "element")`` the elements of an ARRAY,
    ``("m", "value")`` the values of a MAP. Older files read through the cast (laketide.schema.casts)."""

    name: str | tuple[str, ...]
    new_type: DataType

    def __post_init__(self) -> None:
        object.__setattr__(self, "new_type", as_data_type(self.new_type))


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    name: str
    comment: str | None


SchemaChange = (
    SetOption | RemoveOption | UpdateComment | AddColumn | RenameColumn | DropColumn | UpdateColumnType
    | UpdateColumnComment
)

# Options fixed at creation: changing them would make existing files unreadable or misplaced.
_IMMUTABLE_OPTIONS = {
    "bucket-key", "merge-engine", "sequence.field", "primary-key", "partition",
    # Where files live: changing either would lose every file written before (Java: @Immutable).
    "data-file.path-directory", "index-file-in-data-file-dir",
}


def apply_changes(schema: TableSchema, changes: list[SchemaChange] | tuple[SchemaChange, ...]) -> TableSchema:
    """The next schema (id + 1) after ``changes``; a SchemaChangeError leaves nothing changed."""
    fields = list(schema.fields)
    options = dict(schema.options)
    comment = schema.comment
    highest = schema.highest_field_id
    partition_keys = list(schema.partition_keys)
    primary_keys = list(schema.primary_keys)

    def index_of(name: str) -> int:
        for i, f in enumerate(fields):
            if f.name == name:
                return i
        raise ColumnNotExistError(f"Column {name!r} does not exist; columns are {[f.name for f in fields]}", name)

    for ch in changes:
        if isinstance(ch, SetOption):
            if ch.key in _IMMUTABLE_OPTIONS and options.get(ch.key) != ch.value:
                raise SchemaChangeError(f"Option {ch.key!r} cannot be changed after the table is created")
            if ch.key == "bucket" and options.get("bucket", "-1") != ch.value:
                raise SchemaChangeError(
                    "Option 'bucket' cannot be changed with a schema change; rescale the table instead"
                )
            options[ch.key] = ch.value
        elif isinstance(ch, RemoveOption):
            if ch.key in _IMMUTABLE_OPTIONS or ch.key == "bucket":
                raise SchemaChangeError(f"Option {ch.key!r} cannot be removed")
            options.pop(ch.key, None)
        elif isinstance(ch, UpdateComment):
            comment = ch.comment
        elif isinstance(ch, AddColumn):
            if any(f.name == ch.name for f in fields):
                raise ColumnAlreadyExistsError(f"Column {ch.name!r} already exists", ch.name)
            if not ch.type.nullable:
                # Existing rows have no value for it: Paimon refuses NOT NULL additions too.
                raise SchemaChangeError(f"Column {ch.name!r} is added as NOT NULL; added columns must be nullable")
            if any(isinstance(t, VariantType) for t in iter_types(ch.type)):
                raise UnsupportedFeatureError(
                    f"Cannot add column {ch.name!r} of type {ch.type}: laketide reads VARIANT columns but does not "
                    "write them"
                )
            highest += 1
            column_id = highest
            # Nested fields get fresh ids after the column's own (Paimon: ReassignFieldId), so that they never
            # collide with ids the table used before.
            counter = [highest]
            new_type = _reassign_nested_ids(ch.type, counter)
            highest = counter[0]
            new = DataField(id=column_id, name=ch.name, type=new_type, description=ch.comment)
            move = ch.move or Move("last")
            if move.kind == "first":
                fields.insert(0, new)
            elif move.kind == "after":
                fields.insert(index_of(move.reference or "") + 1, new)
            elif move.kind == "before":
                fields.insert(index_of(move.reference or ""), new)
            else:
                fields.append(new)
        elif isinstance(ch, RenameColumn):
            if ch.old_name in partition_keys:
                raise SchemaChangeError(f"Cannot rename partition column {ch.old_name!r}")
            if any(f.name == ch.new_name for f in fields):
                raise ColumnAlreadyExistsError(f"Column {ch.new_name!r} already exists", ch.new_name)
            i = index_of(ch.old_name)
            fields[i] = replace(fields[i], name=ch.new_name)
            primary_keys = [ch.new_name if k == ch.old_name else k for k in primary_keys]
            _rename_in_options(options, ch.old_name, ch.new_name)
        elif isinstance(ch, DropColumn):
            if ch.name in partition_keys or ch.name in primary_keys:
                raise SchemaChangeError(f"Cannot drop partition or primary key column {ch.name!r}")
            fields.pop(index_of(ch.name))
            if not fields:
                raise SchemaChangeError("Cannot drop every column of a table")
        elif isinstance(ch, UpdateColumnType):
            path = (ch.name,) if isinstance(ch.name, str) else tuple(ch.name)
            if not path:
                raise SchemaChangeError("UpdateColumnType needs a column name")
            i = index_of(path[0])
            if len(path) == 1 and (path[0] in partition_keys or path[0] in primary_keys):
                raise SchemaChangeError(f"Cannot change the type of key column {path[0]!r}")
            allow_explicit = options.get("disable-explicit-type-casting", "false").strip().lower() != "true"
            new_type = _retype(fields[i].type, path, 1, ch.new_type, allow_explicit=allow_explicit)
            _check_default(fields[i], new_type, path)
            fields[i] = replace(fields[i], type=new_type)
        elif isinstance(ch, UpdateColumnComment):
            i = index_of(ch.name)
            fields[i] = replace(fields[i], description=ch.comment)
        else:  # pragma: no cover - exhaustive
            raise SchemaChangeError(f"Unknown schema change {ch!r}")

    return replace(
        schema,
        id=schema.id + 1,
        fields=tuple(fields),
        highest_field_id=highest,
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=options,
        comment=comment,
        time_millis=_now_ms(),
    )


def _retype(current: DataType, path: tuple[str, ...], depth: int, new: DataType, *, allow_explicit: bool) -> DataType:
    """``current`` with the type at ``path[depth:]`` replaced by ``new`` (Paimon: SchemaManager's nested
    column modifier; ARRAY / MAP levels are named ``element`` / ``value``)."""
    name = ".".join(path)
    if depth == len(path):
        # Changing a type never makes a column NOT NULL here: rows already written may hold nulls.
        target = new.copy(nullable=current.nullable or new.nullable)
        if current.copy(nullable=True) == target.copy(nullable=True):
            return target  # no change (Java has no BOOLEAN -> BOOLEAN rule; an unchanged type never asks)
        if isinstance(target, VariantType):
            raise UnsupportedFeatureError(f"Cannot change column {name!r} to VARIANT: laketide does not write VARIANT")
        if not can_cast(current, target, allow_explicit=allow_explicit):
            how = "" if allow_explicit else " ('disable-explicit-type-casting' is set)"
            raise SchemaChangeError(
                f"Column type {name}[{current}] cannot be converted to {target}{how}: Paimon has no cast for it"
                + (" (change the nested field instead)" if is_nested(current) and is_nested(target) else "")
            )
        return target
    step = path[depth]
    if isinstance(current, RowType):
        for k, f in enumerate(current.fields):
            if f.name == step:
                changed = f.copy(type=_retype(f.type, path, depth + 1, new, allow_explicit=allow_explicit))
                return replace(current, fields=current.fields[:k] + (changed,) + current.fields[k + 1:])
        missing = ".".join(path[:depth + 1])
        raise ColumnNotExistError(f"Column {missing!r} does not exist; {path[depth - 1]!r} has fields "
                                  f"{current.field_names}", missing)
    if isinstance(current, ArrayType) and step == "element":
        return replace(current, element=_retype(current.element, path, depth + 1, new, allow_explicit=allow_explicit))
    if isinstance(current, MapType) and step == "value":
        return replace(current, value=_retype(current.value, path, depth + 1, new, allow_explicit=allow_explicit))
    expected = {ArrayType: "'element'", MapType: "'value'"}.get(type(current), "nothing: it is not nested")
    raise SchemaChangeError(f"Cannot change {name!r}: {'.'.join(path[:depth])} is {current}; the path can go on "
                            f"with {expected}")


def _reassign_nested_ids(dt: DataType, counter: list[int]) -> DataType:
    # Java's RowType.Builder numbers a field after visiting its type: children before their parent.
    if isinstance(dt, RowType):
        fields = []
        for f in dt.fields:
            child = _reassign_nested_ids(f.type, counter)
            counter[0] += 1
            fields.append(f.copy(id=counter[0], type=child))
        return replace(dt, fields=tuple(fields))
    if isinstance(dt, ArrayType):
        return replace(dt, element=_reassign_nested_ids(dt.element, counter))
    if isinstance(dt, MultisetType):
        return replace(dt, element=_reassign_nested_ids(dt.element, counter))
    if isinstance(dt, MapType):
        return replace(dt, key=_reassign_nested_ids(dt.key, counter), value=_reassign_nested_ids(dt.value, counter))
    return dt


def _check_default(field: DataField, new_type: DataType, path: tuple[str, ...]) -> None:
    # Paimon keeps the default value through a type change, so it must still read as the new type.
    if field.default_value is None or len(path) > 1 or is_nested(new_type):
        return
    from laketide.schema.casts import cast_array

    text = field.default_value
    if len(text) >= 2 and text.startswith("'") and text.endswith("'"):
        text = text[1:-1]
    try:
        cast_array(pa.array([text], pa.string()), STRING, new_type)
    except (CastError, UnsupportedFeatureError) as e:
        raise SchemaChangeError(
            f"Column {field.name!r}: its default value {field.default_value!r} does not read as {new_type}: {e}"
        ) from e


def _rename_in_options(options: dict[str, str], old: str, new: str) -> None:
    for key in [k for k in options if k.startswith(f"fields.{old}.")]:
        options[f"fields.{new}." + key[len(f"fields.{old}.") :]] = options.pop(key)


_INT_ORDER = (TinyIntType, SmallIntType, IntType, BigIntType)


def can_widen(old: DataType, new: DataType) -> bool:
    """Whether every value of ``old`` converts to ``new`` without loss (Paimon: DataTypeCasts implicit casts)."""
    if old.copy(nullable=True) == new.copy(nullable=True):
        return True
    if isinstance(old, _INT_ORDER) and isinstance(new, _INT_ORDER):
        return _INT_ORDER.index(type(old)) <= _INT_ORDER.index(type(new))
    if isinstance(old, _INT_ORDER) and isinstance(new, (FloatType, DoubleType)):
        return isinstance(new, DoubleType) or _INT_ORDER.index(type(old)) <= 1
    if isinstance(old, FloatType) and isinstance(new, DoubleType):
        return True
    if isinstance(old, _INT_ORDER) and isinstance(new, DecimalType):
        digits = {TinyIntType: 3, SmallIntType: 5, IntType: 10, BigIntType: 19}[type(old)]
        return new.precision - new.scale >= digits
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    if isinstance(old, (CharType, VarCharType)) and isinstance(new, VarCharType):
        return new.length >= old.length
    if isinstance(old, (BinaryType, VarBinaryType)) and isinstance(new, VarBinaryType):
        return new.length >= old.length
    if isinstance(old, TimestampType) and isinstance(new, TimestampType):
        return new.precision >= old.precision
    if isinstance(old, LocalZonedTimestampType) and isinstance(new, LocalZonedTimestampType):
        return new.precision >= old.precision
    return False


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
