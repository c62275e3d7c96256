"""Paimon data types: type strings, schema JSON and the Arrow mapping.

Paimon: org.apache.paimon.types.* (asSQLString, serializeJson), DataTypeJsonParser, and the Parquet/Arrow
conversions of paimon-format / pypaimon.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa

from laketide.exceptions import InvalidTypeError, SchemaError, UnsupportedFeatureError

__all__ = [
    "MAX_LENGTH",
    "ArrayType",
    "BigIntType",
    "BlobType",
    "BinaryType",
    "BooleanType",
    "BYTES",
    "CharType",
    "DataField",
    "DataType",
    "FIELD_ID_KEY",
    "as_arrow_schema",
    "as_data_type",
    "without_field_ids",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FloatType",
    "IntType",
    "LocalZonedTimestampType",
    "MapType",
    "MultisetType",
    "RowType",
    "SmallIntType",
    "STRING",
    "TimeType",
    "TimestampType",
    "TinyIntType",
    "VarBinaryType",
    "VarCharType",
    "VARIANT_ARROW_TYPE",
    "VariantType",
    "field_from_json",
    "field_to_json",
    "from_arrow_type",
    "is_binary",
    "is_fixed_length",
    "is_integral",
    "is_nested",
    "is_numeric",
    "is_string",
    "is_timestamp",
    "iter_types",
    "parse_type",
    "row_type_from_arrow_schema",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
    "type_from_json",
    "type_to_json",
]

MAX_LENGTH = 2_147_483_647
"""Java's Integer.MAX_VALUE: the length of STRING and BYTES."""

_T = TypeVar("_T", bound="DataType")


class DataType:
    """Base of every Paimon type; subclasses are frozen dataclasses with a keyword-only ``nullable``."""

    __slots__ = ()
    nullable: bool

    def copy(self: _T, *, nullable: bool | None = None) -> _T:
        """This type, with nullability changed when ``nullable`` is given."""
        if nullable is None:
            return self
        return dataclasses.replace(self, nullable=nullable)  # type: ignore[type-var]

    def _sql(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        text = self._sql()
        return text if self.nullable else f"{text} NOT NULL"


def _nullable() -> Any:
    return field(default=True, kw_only=True)


def _check_range(kind: str, what: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidTypeError(f"{kind} {what} must be between {low} and {high} (both inclusive), got {value!r}")


@dataclass(frozen=True, slots=True)
class BooleanType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "BOOLEAN"


@dataclass(frozen=True, slots=True)
class TinyIntType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "TINYINT"


@dataclass(frozen=True, slots=True)
class SmallIntType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "SMALLINT"


@dataclass(frozen=True, slots=True)
class IntType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "INT"


@dataclass(frozen=True, slots=True)
class BigIntType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "BIGINT"


@dataclass(frozen=True, slots=True)
class FloatType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "FLOAT"


@dataclass(frozen=True, slots=True)
class DoubleType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "DOUBLE"


@dataclass(frozen=True, slots=True)
class DecimalType(DataType):
    precision: int = 10
    scale: int = 0
    nullable: bool = _nullable()

    MAX_PRECISION = 38
    MAX_COMPACT_PRECISION = 18

    def __post_init__(self) -> None:
        _check_range("DECIMAL", "precision", self.precision, 1, 38)
        _check_range("DECIMAL", "scale", self.scale, 0, self.precision)

    @property
    def is_compact(self) -> bool:
        """Whether values fit a long (precision <= 18), which decides their BinaryRow layout."""
        return self.precision <= 18

    def _sql(self) -> str:
        return f"DECIMAL({self.precision}, {self.scale})"


@dataclass(frozen=True, slots=True)
class CharType(DataType):
    length: int = 1
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("CHAR", "length", self.length, 1, MAX_LENGTH)

    def _sql(self) -> str:
        return f"CHAR({self.length})"


@dataclass(frozen=True, slots=True)
class VarCharType(DataType):
    """VARCHAR(length). Without a length it is STRING (unbounded), not SQL's VARCHAR(1): a Python caller writing
    ``VarCharType()`` means a string column. The type-string parser keeps SQL's rule ("VARCHAR" = VARCHAR(1))."""

    length: int = MAX_LENGTH
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("VARCHAR", "length", self.length, 1, MAX_LENGTH)

    def _sql(self) -> str:
        return "STRING" if self.length == MAX_LENGTH else f"VARCHAR({self.length})"


@dataclass(frozen=True, slots=True)
class BinaryType(DataType):
    length: int = 1
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("BINARY", "length", self.length, 1, MAX_LENGTH)

    def _sql(self) -> str:
        return f"BINARY({self.length})"


@dataclass(frozen=True, slots=True)
class VarBinaryType(DataType):
    """VARBINARY(length); without a length it is BYTES (unbounded), like ``VarCharType()``."""

    length: int = MAX_LENGTH
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("VARBINARY", "length", self.length, 1, MAX_LENGTH)

    def _sql(self) -> str:
        return "BYTES" if self.length == MAX_LENGTH else f"VARBINARY({self.length})"


@dataclass(frozen=True, slots=True)
class DateType(DataType):
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "DATE"


@dataclass(frozen=True, slots=True)
class TimeType(DataType):
    precision: int = 0
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("TIME", "precision", self.precision, 0, 9)

    def _sql(self) -> str:
        return f"TIME({self.precision})"


@dataclass(frozen=True, slots=True)
class TimestampType(DataType):
    precision: int = 6
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("TIMESTAMP", "precision", self.precision, 0, 9)

    @property
    def is_compact(self) -> bool:
        """Whether values are stored as plain epoch millis (precision <= 3) in a BinaryRow."""
        return self.precision <= 3

    def _sql(self) -> str:
        return f"TIMESTAMP({self.precision})"


@dataclass(frozen=True, slots=True)
class LocalZonedTimestampType(DataType):
    precision: int = 6
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        _check_range("TIMESTAMP_LTZ", "precision", self.precision, 0, 9)

    @property
    def is_compact(self) -> bool:
        """Whether values are stored as plain epoch millis (precision <= 3) in a BinaryRow."""
        return self.precision <= 3

    def _sql(self) -> str:
        return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"


@dataclass(frozen=True, slots=True)
class VariantType(DataType):
    """Semi-structured data in the Variant binary encoding (Paimon: types.VariantType).

    Arrow form: ``struct<value: binary NOT NULL, metadata: binary NOT NULL>`` (the unshredded layout Java writes
    to Parquet and pypaimon reads); laketide does not decode or shred the bytes.
    """

    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "VARIANT"


@dataclass(frozen=True, slots=True)
class BlobType(DataType):
    """Large binary objects stored in ``.blob`` files beside the data files (Paimon: types.BlobType).

    Arrow form: ``large_binary``. laketide reads blob columns of data-evolution append tables; it writes none.
    """

    nullable: bool = _nullable()

    def _sql(self) -> str:
        return "BLOB"


@dataclass(frozen=True, slots=True)
class ArrayType(DataType):
    element: DataType
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return f"ARRAY<{self.element}>"


@dataclass(frozen=True, slots=True)
class MultisetType(DataType):
    element: DataType
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return f"MULTISET<{self.element}>"


@dataclass(frozen=True, slots=True)
class MapType(DataType):
    key: DataType
    value: DataType
    nullable: bool = _nullable()

    def _sql(self) -> str:
        return f"MAP<{self.key}, {self.value}>"


def _escape(text: str, quote: str) -> str:
    return text.replace(quote, quote + quote)


@dataclass(frozen=True, slots=True)
class DataField:
    """A named, id-carrying field of a row type (Paimon: org.apache.paimon.types.DataField)."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = field(default=None, kw_only=True)

    def copy(self, **changes: Any) -> DataField:
        """This field with some attributes replaced (id, name, type, description, default_value)."""
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        text = f"`{_escape(self.name, '`')}` {self.type}"
        if self.description:
            text += f" COMMENT '{_escape(self.description, chr(39))}'"
        if self.default_value is not None:
            text += f" DEFAULT {self.default_value}"
        return text


@dataclass(frozen=True, slots=True)
class RowType(DataType):
    fields: tuple[DataField, ...] = ()
    nullable: bool = _nullable()

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise InvalidTypeError(f"Field names must be unique. Found duplicates: {dupes}")

    def _sql(self) -> str:
        return f"ROW<{', '.join(str(f) for f in self.fields)}>"

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def field_types(self) -> list[DataType]:
        return [f.type for f in self.fields]

    def __len__(self) -> int:
        return len(self.fields)

    def field_index(self, name: str) -> int:
        """Position of the field called ``name``; SchemaError if absent."""
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise SchemaError(f"No field named {name!r} in {self}")

    def field(self, name: str) -> DataField:
        """The field called ``name``; SchemaError if absent."""
        return self.fields[self.field_index(name)]

    def field_by_id(self, field_id: int) -> DataField:
        """The top-level field with id ``field_id``; SchemaError if absent."""
        for f in self.fields:
            if f.id == field_id:
                return f
        raise SchemaError(f"No field with id {field_id} in {self}")

    def contains(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def project(self, names: Iterable[str]) -> RowType:
        """A row type of the named fields, in the order given."""
        return RowType(tuple(self.field(n) for n in names), nullable=self.nullable)


STRING = VarCharType(MAX_LENGTH)
BYTES = VarBinaryType(MAX_LENGTH)


# ------------------------------------------------------------------------------------------------
# predicates used by other layers
# ------------------------------------------------------------------------------------------------

_INTEGRAL = (TinyIntType, SmallIntType, IntType, BigIntType)


def is_integral(dt: DataType) -> bool:
    return isinstance(dt, _INTEGRAL)


def is_numeric(dt: DataType) -> bool:
    return isinstance(dt, (*_INTEGRAL, FloatType, DoubleType, DecimalType))


def is_string(dt: DataType) -> bool:
    return isinstance(dt, (CharType, VarCharType))


def is_binary(dt: DataType) -> bool:
    return isinstance(dt, (BinaryType, VarBinaryType))


def is_timestamp(dt: DataType) -> bool:
    return isinstance(dt, (TimestampType, LocalZonedTimestampType))


def is_nested(dt: DataType) -> bool:
    return isinstance(dt, (ArrayType, MultisetType, MapType, RowType))


def iter_types(dt: DataType) -> Iterable[DataType]:
    """``dt`` and every type nested in it (row fields, elements, keys, values), depth first."""
    yield dt
    if isinstance(dt, RowType):
        for f in dt.fields:
            yield from iter_types(f.type)
    elif isinstance(dt, (ArrayType, MultisetType)):
        yield from iter_types(dt.element)
    elif isinstance(dt, MapType):
        yield from iter_types(dt.key)
        yield from iter_types(dt.value)


def is_fixed_length(dt: DataType) -> bool:
    """Whether a BinaryRow stores the value wholly in its 8-byte slot (Paimon: BinaryRow.isInFixedLengthPart)."""
    if isinstance(dt, (DecimalType, TimestampType, LocalZonedTimestampType)):
        return dt.is_compact
    return isinstance(dt, (BooleanType, *_INTEGRAL, FloatType, DoubleType, DateType, TimeType))


# ------------------------------------------------------------------------------------------------
# type strings (Paimon: DataTypeJsonParser, extended with ARRAY<>/MAP<>/MULTISET<>/ROW<> in text)
# ------------------------------------------------------------------------------------------------

_KEYWORDS = frozenset(
    "CHAR VARCHAR STRING BOOLEAN BINARY VARBINARY BYTES DECIMAL NUMERIC DEC TINYINT SMALLINT INT INTEGER "
    "BIGINT FLOAT DOUBLE PRECISION DATE TIME WITH WITHOUT LOCAL ZONE TIMESTAMP TIMESTAMP_LTZ ARRAY MULTISET "
    "MAP ROW NULL NOT COMMENT DEFAULT VARIANT BLOB".split()
)
# Types current Paimon has that laketide does not model yet: a clear refusal instead of a parse error.
_UNSUPPORTED_TYPES = frozenset({"VECTOR", "GEOMETRY", "GEOGRAPHY"})
_SYMBOLS = "<>(),"


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "kw", "ident", "int", "str", or the symbol itself
    value: str
    pos: int
    text: str = ""


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _SYMBOLS:
            tokens.append(_Token(ch, ch, i))
            i += 1
        elif ch in "`'":
            start, i, buf = i, i + 1, []
            while True:
                if i >= n:
                    raise InvalidTypeError(f"Unterminated {ch} at position {start} in type string {text!r}")
                if text[i] == ch:
                    if i + 1 < n and text[i + 1] == ch:
                        buf.append(ch)
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(text[i])
                i += 1
            tokens.append(_Token("ident" if ch == "`" else "str", "".join(buf), start))
        elif ch.isdigit():
            start = i
            while i < n and text[i].isdigit():
                i += 1
            tokens.append(_Token("int", text[start:i], start))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _SYMBOLS and text[i] not in "`'":
                i += 1
            word = text[start:i]
            upper = word.upper()
            keyword = upper in _KEYWORDS
            tokens.append(_Token("kw" if keyword else "ident", upper if keyword else word, start, word))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.next_id = 0

    def error(self, cause: str) -> InvalidTypeError:
        pos = self.tokens[self.i].pos if self.i < len(self.tokens) else len(self.text)
        return InvalidTypeError(f"Could not parse type at position {pos}: {cause}. Input type string: {self.text!r}")

    def peek(self, offset: int = 0) -> _Token | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def at(self, kind: str, value: str | None = None, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.kind == kind and (value is None or tok.value == value)

    def take(self, kind: str, value: str | None = None) -> _Token:
        tok = self.peek()
        if tok is None:
            raise self.error(f"expected {value or kind} but the input ended")
        if tok.kind != kind or (value is not None and tok.value != value):
            raise self.error(f"expected {value or kind} but found {tok.value!r}")
        self.i += 1
        return tok

    def take_int(self) -> int:
        return int(self.take("int").value)

    def parse(self) -> DataType:
        dt = self.type_with_nullability()
        if self.peek() is not None:
            raise self.error(f"unexpected token {self.peek().value!r}")  # type: ignore[union-attr]
        return dt

    def nullability(self) -> bool:
        if self.at("kw", "NOT") and self.at("kw", "NULL", 1):
            self.i += 2
            return False
        if self.at("kw", "NULL"):
            self.i += 1
        return True

    def type_with_nullability(self) -> DataType:
        dt = self.type_by_keyword()
        dt = dt.copy(nullable=self.nullability())
        # Suffix notation, e.g. "INT ARRAY" (kept from Java's parser).
        if self.at("kw", "ARRAY"):
            self.i += 1
            return ArrayType(dt, nullable=self.nullability())
        if self.at("kw", "MULTISET"):
            self.i += 1
            return MultisetType(dt, nullable=self.nullability())
        return dt

    def optional_int(self, default: int) -> int:
        if self.at("("):
            self.i += 1
            value = self.take_int()
            self.take(")")
            return value
        return default

    def type_by_keyword(self) -> DataType:
        tok = self.peek()
        if tok is None:
            raise self.error("a type was expected but the input ended")
        if tok.kind != "kw":
            if str(tok.value).upper() in _UNSUPPORTED_TYPES:
                raise UnsupportedFeatureError(
                    f"Paimon type {str(tok.value).upper()} is not supported by laketide yet (in {self.text!r})"
                )
            raise self.error(f"unknown type {tok.value!r}")
        self.i += 1
        kw = tok.value
        simple: dict[str, type[DataType]] = {
            "BOOLEAN": BooleanType,
            "TINYINT": TinyIntType,
            "SMALLINT": SmallIntType,
            "INT": IntType,
            "INTEGER": IntType,
            "BIGINT": BigIntType,
            "FLOAT": FloatType,
            "DATE": DateType,
            "VARIANT": VariantType,
            "BLOB": BlobType,
        }
        if kw in simple:
            return simple[kw]()
        if kw == "STRING":
            return STRING
        if kw == "BYTES":
            return BYTES
        if kw in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            length = self.optional_int(1)
            return {"CHAR": CharType, "VARCHAR": VarCharType, "BINARY": BinaryType, "VARBINARY": VarBinaryType}[
                kw
            ](length)
        if kw in ("DECIMAL", "NUMERIC", "DEC"):
            precision, scale = 10, 0
            if self.at("("):
                self.i += 1
                precision = self.take_int()
                if self.at(","):
                    self.i += 1
                    scale = self.take_int()
                self.take(")")
            return DecimalType(precision, scale)
        if kw == "DOUBLE":
            if self.at("kw", "PRECISION"):
                self.i += 1
            return DoubleType()
        if kw == "TIME":
            precision = self.optional_int(0)
            self.without_time_zone()
            return TimeType(precision)
        if kw == "TIMESTAMP":
            precision = self.optional_int(6)
            if self.at("kw", "WITH"):
                self.i += 1
                self.take("kw", "LOCAL")
                self.take("kw", "TIME")
                self.take("kw", "ZONE")
                return LocalZonedTimestampType(precision)
            self.without_time_zone()
            return TimestampType(precision)
        if kw == "TIMESTAMP_LTZ":
            return LocalZonedTimestampType(self.optional_int(6))
        if kw in ("ARRAY", "MULTISET"):
            self.take("<")
            element = self.type_with_nullability()
            self.take(">")
            return ArrayType(element) if kw == "ARRAY" else MultisetType(element)
        if kw == "MAP":
            self.take("<")
            key = self.type_with_nullability()
            self.take(",")
            value = self.type_with_nullability()
            self.take(">")
            return MapType(key, value)
        if kw == "ROW":
            return self.row()
        raise self.error(f"unsupported type {kw}")

    def without_time_zone(self) -> None:
        if self.at("kw", "WITHOUT"):
            self.i += 1
            self.take("kw", "TIME")
            self.take("kw", "ZONE")

    def row(self) -> RowType:
        close = ">" if self.at("<") else ")"
        self.take("<" if close == ">" else "(")
        fields: list[DataField] = []
        if self.at(close):
            self.i += 1
            return RowType(())
        while True:
            tok = self.peek()
            if tok is None or tok.kind not in ("ident", "kw"):
                raise self.error("a field name was expected")
            self.i += 1
            field_id = self.next_id
            self.next_id += 1
            dt = self.type_with_nullability()
            description = None
            if self.at("kw", "COMMENT"):
                self.i += 1
                description = self.take("str").value
            elif self.at("str"):
                description = self.take("str").value
            # A bare word that happens to be a keyword (e.g. `date`) is still a field name: keep its spelling.
            fields.append(DataField(field_id, tok.text or tok.value, dt, description))
            if self.at(","):
                self.i += 1
                continue
            self.take(close)
            return RowType(tuple(fields))


def parse_type(text: str) -> DataType:
    """Parse a Paimon type string (``INT NOT NULL``, ``DECIMAL(10, 2)``, ``ROW<`a` INT>``...).

    Nested ROW fields get ids 0, 1, 2... in the order they appear.
    """
    if not isinstance(text, str):
        raise InvalidTypeError(f"A type string was expected, got {type(text).__name__}")
    return _Parser(text).parse()


# ------------------------------------------------------------------------------------------------
# schema JSON (Paimon: DataType.serializeJson, DataTypeJsonParser.parseDataType)
# ------------------------------------------------------------------------------------------------


def _nested_tag(name: str, dt: DataType) -> str:
    return name if dt.nullable else f"{name} NOT NULL"


def type_to_json(dt: DataType) -> str | dict[str, Any]:
    """The JSON value Paimon writes for a type in schema files: a string for atomic types, else an object."""
    if isinstance(dt, ArrayType):
        return {"type": _nested_tag("ARRAY", dt), "element": type_to_json(dt.element)}
    if isinstance(dt, MultisetType):
        return {"type": _nested_tag("MULTISET", dt), "element": type_to_json(dt.element)}
    if isinstance(dt, MapType):
        return {"type": _nested_tag("MAP", dt), "key": type_to_json(dt.key), "value": type_to_json(dt.value)}
    if isinstance(dt, RowType):
        return {"type": _nested_tag("ROW", dt), "fields": [field_to_json(f) for f in dt.fields]}
    return str(dt)


def field_to_json(f: DataField) -> dict[str, Any]:
    """The JSON object Paimon writes for a field; description/defaultValue only when set."""
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


class _IdCounter:
    """Java's AtomicInteger(-1) for nested fields written without ids."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = -1

    def next(self) -> int:
        self.value += 1
        return self.value


def type_from_json(obj: Any) -> DataType:
    """Inverse of :func:`type_to_json`."""
    return _type_from_json(obj, _IdCounter())


def field_from_json(d: Any) -> DataField:
    """Inverse of :func:`field_to_json`."""
    return _field_from_json(d, _IdCounter())


def _field_from_json(d: Any, ids: _IdCounter) -> DataField:
    if not isinstance(d, dict) or "name" not in d or "type" not in d:
        raise InvalidTypeError(f"A field object with 'name' and 'type' was expected, got {d!r}")
    field_id = int(d["id"]) if "id" in d else ids.next()
    description = d.get("description")
    default_value = d.get("defaultValue")
    return DataField(
        field_id,
        str(d["name"]),
        _type_from_json(d["type"], ids),
        None if description is None else str(description),
        default_value=None if default_value is None else str(default_value),
    )


def _type_from_json(obj: Any, ids: _IdCounter) -> DataType:
    if isinstance(obj, str):
        return parse_type(obj)
    if isinstance(obj, dict) and isinstance(obj.get("type"), str):
        tag = obj["type"]
        nullable = "NOT NULL" not in tag
        try:
            if tag.startswith("ARRAY"):
                return ArrayType(_type_from_json(obj["element"], ids), nullable=nullable)
            if tag.startswith("MULTISET"):
                return MultisetType(_type_from_json(obj["element"], ids), nullable=nullable)
            if tag.startswith("MAP"):
                key = _type_from_json(obj["key"], ids)
                return MapType(key, _type_from_json(obj["value"], ids), nullable=nullable)
            if tag.startswith("ROW"):
                fields = tuple(_field_from_json(f, ids) for f in obj["fields"])
                return RowType(fields, nullable=nullable)
            if tag.split()[0] in _UNSUPPORTED_TYPES:
                raise UnsupportedFeatureError(f"Paimon type {tag.split()[0]} is not supported by laketide yet")
        except KeyError as e:
            raise InvalidTypeError(f"Type object {obj!r} lacks {e}") from e
    raise InvalidTypeError(f"Can not parse type: {obj!r}")


# ------------------------------------------------------------------------------------------------
# Arrow
# ------------------------------------------------------------------------------------------------

FIELD_ID_KEY = b"PARQUET:field_id"
_DESCRIPTION_KEY = b"description"
# Paimon: SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE / STRUCTURED_TYPE_FIELD_DEPTH_LIMIT
_NESTED_ID_BASE = MAX_LENGTH // 4
_NESTED_DEPTH_LIMIT = 1 << 10
# Paimon: Variant.VALUE / Variant.METADATA, both REQUIRED binary in Java's Parquet schema.
VARIANT_ARROW_TYPE = pa.struct(
    [pa.field("value", pa.binary(), nullable=False), pa.field("metadata", pa.binary(), nullable=False)]
)
_UNITS = ("s", "ms", "ms", "ms", "us", "us", "us", "ns", "ns", "ns")
_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _id_meta(field_id: int | None, description: str | None = None) -> dict[bytes, bytes] | None:
    meta: dict[bytes, bytes] = {}
    if field_id is not None:
        meta[FIELD_ID_KEY] = str(field_id).encode()
    if description:
        meta[_DESCRIPTION_KEY] = description.encode()
    return meta or None


def to_arrow_type(dt: DataType) -> pa.DataType:
    """The Arrow type laketide uses for a Paimon type (same mapping as pypaimon)."""
    return _to_arrow(dt, None, 0)


def _to_arrow(dt: DataType, field_id: int | None, depth: int) -> pa.DataType:
    match dt:
        case BooleanType():
            return pa.bool_()
        case TinyIntType():
            return pa.int8()
        case SmallIntType():
            return pa.int16()
        case IntType():
            return pa.int32()
        case BigIntType():
            return pa.int64()
        case FloatType():
            return pa.float32()
        case DoubleType():
            return pa.float64()
        case DecimalType(precision=p, scale=s):
            return pa.decimal128(p, s)
        case CharType() | VarCharType():
            return pa.string()
        case BinaryType() | VarBinaryType():
            return pa.binary()
        case DateType():
            return pa.date32()
        case TimeType():
            # Paimon keeps TIME as int millis of day at any precision, and Java writes Parquet TIME_MILLIS.
            return pa.time32("ms")
        case TimestampType(precision=p):
            return pa.timestamp(_UNITS[p])
        case LocalZonedTimestampType(precision=p):
            return pa.timestamp(_UNITS[p], tz="UTC")
        case VariantType():
            return VARIANT_ARROW_TYPE
        case BlobType():
            return pa.large_binary()
        case ArrayType(element=element):
            return pa.list_(_nested_field("element", element, field_id, depth, _element_id))
        case MultisetType(element=element):
            key = _nested_field("key", element.copy(nullable=False), field_id, depth, _key_id)
            value = _nested_field("value", IntType(nullable=False), field_id, depth, _element_id)
            return pa.map_(key, value)
        case MapType(key=key, value=value):
            key_field = _nested_field("key", key.copy(nullable=False), field_id, depth, _key_id)
            return pa.map_(key_field, _nested_field("value", value, field_id, depth, _element_id))
        case RowType(fields=fields):
            return pa.struct([to_arrow_field(f) for f in fields])
    raise InvalidTypeError(f"No Arrow type for Paimon type {dt}")


def _element_id(field_id: int, depth: int) -> int:
    return _int32(_NESTED_ID_BASE + field_id * _NESTED_DEPTH_LIMIT + depth)


def _key_id(field_id: int, depth: int) -> int:
    return _int32(_NESTED_ID_BASE - field_id * _NESTED_DEPTH_LIMIT - depth)


def _nested_field(name: str, dt: DataType, field_id: int | None, depth: int, make_id: Any) -> pa.Field:
    # Java's Parquet writer gives list elements and map keys/values ids derived from the owning field.
    child_id = None if field_id is None else make_id(field_id, depth + 1)
    return pa.field(name, _to_arrow(dt, field_id, depth + 1), nullable=dt.nullable, metadata=_id_meta(child_id))


def to_arrow_field(f: DataField) -> pa.Field:
    """Arrow field of a Paimon field; the field id goes to metadata ``PARQUET:field_id``."""
    return pa.field(
        f.name, _to_arrow(f.type, f.id, 0), nullable=f.type.nullable, metadata=_id_meta(f.id, f.description)
    )


def without_field_ids(schema: pa.Schema) -> pa.Schema:
    """``schema`` without the ``PARQUET:field_id`` metadata (nested fields too): what users get from a read; the
    ids only matter to the files."""
    return pa.schema([_strip_field(f) for f in schema], metadata=schema.metadata)


def _strip_field(f: pa.Field) -> pa.Field:
    meta = {k: v for k, v in (f.metadata or {}).items() if k != FIELD_ID_KEY}
    return pa.field(f.name, _strip_type(f.type), nullable=f.nullable, metadata=meta or None)


def _strip_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_strip_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_strip_field(t.key_field), _strip_field(t.item_field))
    if pa.types.is_large_list(t):
        return pa.large_list(_strip_field(t.value_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(_strip_field(t.value_field), t.list_size)
    if pa.types.is_list(t):
        return pa.list_(_strip_field(t.value_field))
    return t


def to_arrow_schema(row_type: RowType) -> pa.Schema:
    """Arrow schema of a Paimon row type, with field ids in field metadata."""
    return pa.schema([to_arrow_field(f) for f in row_type.fields])


def from_arrow_type(t: pa.DataType, *, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type; nested struct fields get ids 0, 1, 2... depth first."""
    return _reassign_ids(_from_arrow(t, nullable), _IdCounter())


def _from_arrow(t: pa.DataType, nullable: bool) -> DataType:
    types = pa.types
    if types.is_boolean(t):
        return BooleanType(nullable=nullable)
    if types.is_int8(t):
        return TinyIntType(nullable=nullable)
    if types.is_int16(t):
        return SmallIntType(nullable=nullable)
    if types.is_int32(t):
        return IntType(nullable=nullable)
    if types.is_int64(t):
        return BigIntType(nullable=nullable)
    if types.is_float32(t):
        return FloatType(nullable=nullable)
    if types.is_float64(t):
        return DoubleType(nullable=nullable)
    if types.is_decimal(t) and t.precision <= DecimalType.MAX_PRECISION:
        return DecimalType(t.precision, t.scale, nullable=nullable)
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return VarCharType(MAX_LENGTH, nullable=nullable)
    if types.is_fixed_size_binary(t):
        return BinaryType(t.byte_width, nullable=nullable)
    if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
        return VarBinaryType(MAX_LENGTH, nullable=nullable)
    if types.is_date32(t):
        return DateType(nullable=nullable)
    if types.is_time(t):
        return TimeType(_UNIT_PRECISION[t.unit], nullable=nullable)
    if types.is_timestamp(t):
        precision = _UNIT_PRECISION[t.unit]
        if t.tz is None:
            return TimestampType(precision, nullable=nullable)
        return LocalZonedTimestampType(precision, nullable=nullable)
    if types.is_map(t):
        key = _from_arrow(t.key_type, t.key_field.nullable)
        return MapType(key, _from_arrow(t.item_type, t.item_field.nullable), nullable=nullable)
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t) or types.is_list_view(t):
        return ArrayType(_from_arrow(t.value_type, t.value_field.nullable), nullable=nullable)
    if types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
        fields = tuple(DataField(0, c.name, _from_arrow(c.type, c.nullable)) for c in children)
        return RowType(fields, nullable=nullable)
    if types.is_dictionary(t):
        return _from_arrow(t.value_type, nullable)
    raise InvalidTypeError(f"Arrow type {t} has no Paimon equivalent")


def _reassign_ids(dt: DataType, ids: _IdCounter) -> DataType:
    # Paimon: ReassignFieldId — pre-order, one running counter for every nested row field.
    match dt:
        case ArrayType(element=element):
            return dataclasses.replace(dt, element=_reassign_ids(element, ids))
        case MultisetType(element=element):
            return dataclasses.replace(dt, element=_reassign_ids(element, ids))
        case MapType(key=key, value=value):
            return dataclasses.replace(dt, key=_reassign_ids(key, ids), value=_reassign_ids(value, ids))
        case RowType(fields=fields):
            new_fields = []
            for f in fields:
                field_id = ids.next()
                new_fields.append(f.copy(id=field_id, type=_reassign_ids(f.type, ids)))
            return dataclasses.replace(dt, fields=tuple(new_fields))
    return dt


def as_data_type(value: DataType | pa.DataType | str) -> DataType:
    """A Paimon type from a Paimon type, a pyarrow type (nullable) or a type string ("INT NOT NULL")."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, pa.DataType):
        return from_arrow_type(value)
    if isinstance(value, str):
        return parse_type(value)
    raise InvalidTypeError(f"Not a column type: {value!r} ({type(value).__name__}); give a laketide type, a pyarrow "
                           f"type or a type string such as 'BIGINT'")


def as_arrow_schema(value: Any) -> pa.Schema | RowType:
    """The Arrow schema of what a user calls a schema: a pyarrow schema (or RowType, kept), a pyarrow / pandas /
    polars table or frame (its schema), a polars schema, a ``{name: type}`` mapping, or any object speaking the
    Arrow PyCapsule schema protocol. pandas and polars are never imported unless the value is theirs."""
    if isinstance(value, (pa.Schema, RowType)):
        return value
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        return value.schema
    module = type(value).__module__.split(".")[0]
    if module == "pandas" and hasattr(value, "dtypes"):
        return pa.Schema.from_pandas(value.head(0), preserve_index=False)
    if module == "polars":
        import importlib

        pl = importlib.import_module("polars")
        if hasattr(value, "collect_schema"):  # DataFrame or LazyFrame
            value = value.collect_schema()
        schema: pa.Schema = pl.DataFrame(schema=value).to_arrow().schema
        return schema
    if hasattr(value, "__arrow_c_schema__"):
        return pa.schema(value)
    if isinstance(value, Mapping):
        return pa.schema([pa.field(str(k), to_arrow_type(as_data_type(v))) for k, v in value.items()])
    raise InvalidTypeError(f"Not a schema: {type(value).__name__}; give a pyarrow schema, a pandas or polars "
                           f"DataFrame (or its schema) or a {{name: type}} mapping")


def row_type_from_arrow_schema(schema: pa.Schema, *, first_id: int = 0) -> RowType:
    """Paimon row type of an Arrow schema; top-level ids from ``first_id`` on, nested ids after their parent."""
    ids = _IdCounter()
    ids.value = first_id - 1
    fields: list[DataField] = []
    for pa_field in schema:
        field_id = ids.next()
        dt = _reassign_ids(_from_arrow(pa_field.type, pa_field.nullable), ids)
        meta = pa_field.metadata or {}
        description = meta[_DESCRIPTION_KEY].decode() if _DESCRIPTION_KEY in meta else None
        fields.append(DataField(field_id, pa_field.name, dt, description))
    return RowType(tuple(fields))

