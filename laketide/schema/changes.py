"""Schema changes: each applied change set becomes a new ``schema-N`` file.

Paimon: schema.SchemaChange, schema.SchemaManager#generateTableSchema
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from laketide.exceptions import SchemaChangeError
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    BigIntType,
    CharType,
    DataField,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarBinaryType,
    BinaryType,
    VarCharType,
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
    name: str
    type: DataType
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    name: str
    new_type: DataType


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    name: str
    comment: str | None


SchemaChange = (
    SetOption | RemoveOption | UpdateComment | AddColumn | RenameColumn | DropColumn | UpdateColumnType
    | UpdateColumnComment
)

# Options fixed at creation: changing them would make existing files unreadable or misplaced.
_IMMUTABLE_OPTIONS = {"bucket-key", "merge-engine", "sequence.field", "primary-key", "partition"}


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
        raise SchemaChangeError(f"Column {name!r} does not exist; columns are {[f.name for f in fields]}")

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
                raise SchemaChangeError(f"Column {ch.name!r} already exists")
            if not ch.type.nullable:
                # Existing rows have no value for it: Paimon refuses NOT NULL additions too.
                raise SchemaChangeError(f"Column {ch.name!r} is added as NOT NULL; added columns must be nullable")
            highest += 1
            new = DataField(id=highest, name=ch.name, type=ch.type, description=ch.comment)
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
                raise SchemaChangeError(f"Column {ch.new_name!r} already exists")
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
            i = index_of(ch.name)
            old = fields[i].type
            if ch.name in partition_keys or ch.name in primary_keys:
                raise SchemaChangeError(f"Cannot change the type of key column {ch.name!r}")
            new_type = ch.new_type.copy(nullable=old.nullable or ch.new_type.nullable)
            if not can_widen(old, new_type):
                raise SchemaChangeError(
                    f"Cannot change column {ch.name!r} from {old} to {ch.new_type}: only widening is safe"
                )
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
