from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from laketide.exceptions import InvalidTypeError, SchemaError, UnsupportedFeatureError
from laketide.types import (
    BYTES,
    MAX_LENGTH,
    STRING,
    ArrayType,
    BigIntType,
    BinaryType,
    BooleanType,
    CharType,
    DataField,
    DataType,
    DateType,
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
    TimeType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    field_from_json,
    field_to_json,
    from_arrow_type,
    is_fixed_length,
    is_numeric,
    is_string,
    parse_type,
    row_type_from_arrow_schema,
    to_arrow_field,
    to_arrow_schema,
    to_arrow_type,
    type_from_json,
    type_to_json,
)

# (type string as Java's asSQLString() prints it, the type)
PRINTED = [
    ("BOOLEAN", BooleanType()),
    ("TINYINT", TinyIntType()),
    ("SMALLINT", SmallIntType()),
    ("INT", IntType()),
    ("INT NOT NULL", IntType(nullable=False)),
    ("BIGINT", BigIntType()),
    ("FLOAT", FloatType()),
    ("DOUBLE NOT NULL", DoubleType(nullable=False)),
    ("DECIMAL(10, 2)", DecimalType(10, 2)),
    ("DECIMAL(38, 0) NOT NULL", DecimalType(38, 0, nullable=False)),
    ("CHAR(3)", CharType(3)),
    ("VARCHAR(10)", VarCharType(10)),
    ("STRING", STRING),
    ("STRING NOT NULL", VarCharType(MAX_LENGTH, nullable=False)),
    ("BINARY(16)", BinaryType(16)),
    ("VARBINARY(7)", VarBinaryType(7)),
    ("BYTES", BYTES),
    ("DATE", DateType()),
    ("TIME(0)", TimeType()),
    ("TIME(3)", TimeType(3)),
    ("TIMESTAMP(6)", TimestampType()),
    ("TIMESTAMP(9) NOT NULL", TimestampType(9, nullable=False)),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", LocalZonedTimestampType(3)),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL", LocalZonedTimestampType(nullable=False)),
    ("ARRAY<INT NOT NULL>", ArrayType(IntType(nullable=False))),
    ("ARRAY<STRING> NOT NULL", ArrayType(STRING, nullable=False)),
    ("MULTISET<VARCHAR(3)>", MultisetType(VarCharType(3))),
    ("MAP<STRING, BIGINT>", MapType(STRING, BigIntType())),
    ("MAP<INT NOT NULL, ARRAY<DOUBLE>> NOT NULL",
     MapType(IntType(nullable=False), ArrayType(DoubleType()), nullable=False)),
    ("ROW<`a` INT, `b` STRING>", RowType((DataField(0, "a", IntType()), DataField(1, "b", STRING)))),
    (
        "ROW<`a b` INT NOT NULL COMMENT 'it''s', `c``d` ROW<`x` DATE>> NOT NULL",
        RowType(
            (
                DataField(0, "a b", IntType(nullable=False), "it's"),
                DataField(1, "c`d", RowType((DataField(2, "x", DateType()),))),
            ),
            nullable=False,
        ),
    ),
]


@pytest.mark.parametrize(("text", "dt"), PRINTED, ids=[p[0] for p in PRINTED])
def test_print_and_parse_round_trip(text: str, dt: DataType) -> None:
    assert str(dt) == text
    assert parse_type(text) == dt
    assert type_from_json(json.loads(json.dumps(type_to_json(dt)))) == dt


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("integer", IntType()),
        ("Int Not Null", IntType(nullable=False)),
        ("INT NULL", IntType()),
        ("string", STRING),
        ("bytes", BYTES),
        ("DEC(5, 1)", DecimalType(5, 1)),
        ("NUMERIC(7)", DecimalType(7, 0)),
        ("DECIMAL", DecimalType(10, 0)),
        ("VARCHAR", VarCharType(1)),
        ("CHAR", CharType(1)),
        ("VARBINARY", VarBinaryType(1)),
        ("DOUBLE PRECISION", DoubleType()),
        ("TIME", TimeType(0)),
        ("TIME(3) WITHOUT TIME ZONE", TimeType(3)),
        ("TIMESTAMP", TimestampType(6)),
        ("TIMESTAMP WITHOUT TIME ZONE", TimestampType(6)),
        ("TIMESTAMP(3) WITHOUT TIME ZONE NOT NULL", TimestampType(3, nullable=False)),
        ("TIMESTAMP WITH LOCAL TIME ZONE", LocalZonedTimestampType(6)),
        ("TIMESTAMP_LTZ(9)", LocalZonedTimestampType(9)),
        ("timestamp_ltz", LocalZonedTimestampType(6)),
        ("INT ARRAY", ArrayType(IntType())),
        ("INT NOT NULL MULTISET NOT NULL", MultisetType(IntType(nullable=False), nullable=False)),
        ("array < map < string , int > >", ArrayType(MapType(STRING, IntType()))),
        ("ROW<date DATE, `x` INT 'doc'>",
         RowType((DataField(0, "date", DateType()), DataField(1, "x", IntType(), "doc")))),
        ("ROW()", RowType(())),
    ],
)
def test_parse_aliases(text: str, expected: DataType) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "FOO", "INT INT", "DECIMAL(40, 2)", "DECIMAL(5, 6)", "VARCHAR(0)", "TIMESTAMP(10)", "ARRAY<INT", "MAP<INT>",
     "ROW<`a` INT, `a` STRING>", "CHAR(3", "TIMESTAMP WITH TIME ZONE", "`unterminated"],
)
def test_parse_errors_are_typed(text: str) -> None:
    with pytest.raises(InvalidTypeError):
        parse_type(text)


def test_constructor_validation() -> None:
    with pytest.raises(InvalidTypeError):
        DecimalType(0, 0)
    with pytest.raises(InvalidTypeError):
        TimestampType(-1)
    with pytest.raises(InvalidTypeError):
        BinaryType(0)


def test_copy_changes_only_nullability() -> None:
    dt = DecimalType(12, 3)
    assert dt.copy(nullable=False) == DecimalType(12, 3, nullable=False)
    assert dt.copy() is dt
    assert str(ArrayType(IntType()).copy(nullable=False)) == "ARRAY<INT> NOT NULL"


def test_json_shape_matches_java() -> None:
    row = RowType(
        (DataField(5, "k", IntType(nullable=False)), DataField(6, "v", MapType(STRING, ArrayType(BYTES)), "doc")),
        nullable=False,
    )
    assert type_to_json(row) == {
        "type": "ROW NOT NULL",
        "fields": [
            {"id": 5, "name": "k", "type": "INT NOT NULL"},
            {"id": 6, "name": "v",
             "type": {"type": "MAP", "key": "STRING", "value": {"type": "ARRAY", "element": "BYTES"}},
             "description": "doc"},
        ],
    }
    assert type_to_json(MultisetType(IntType(), nullable=False)) == {"type": "MULTISET NOT NULL", "element": "INT"}
    assert field_to_json(DataField(1, "x", STRING, default_value="'a'")) == {
        "id": 1, "name": "x", "type": "STRING", "defaultValue": "'a'"}


def test_json_without_ids_gets_java_counter_ids() -> None:
    obj = {
        "type": "ARRAY",
        "element": {"type": "ROW", "fields": [
            {"name": "a", "type": "BIGINT"},
            {"name": "b", "type": {"type": "ROW", "fields": [{"name": "c", "type": "INT"}]}},
        ]},
    }
    dt = type_from_json(obj)
    assert isinstance(dt, ArrayType) and isinstance(dt.element, RowType)
    assert [f.id for f in dt.element.fields] == [0, 1]
    inner = dt.element.fields[1].type
    assert isinstance(inner, RowType) and inner.fields[0].id == 2


@pytest.mark.parametrize("bad", [42, {"type": "NO_SUCH_TYPE"}, {"type": "ARRAY"}, {"name": "x"}])
def test_json_errors_are_typed(bad: object) -> None:
    with pytest.raises(InvalidTypeError):
        type_from_json(bad)


def test_paimon_types_laketide_cannot_read_yet_are_named() -> None:
    # VECTOR is a real Paimon type (not a corrupt schema): the error says it is unsupported, naming it.
    with pytest.raises(UnsupportedFeatureError, match="VECTOR"):
        type_from_json({"type": "VECTOR"})


def test_java_schema_files_round_trip(compat_dir: Path) -> None:
    schemas = sorted(compat_dir.glob("tables/*/*/schema/schema-*"))
    assert schemas
    for path in schemas:
        for f in json.loads(path.read_text())["fields"]:
            parsed = field_from_json(f)
            assert field_to_json(parsed) == f
    pk = json.loads((compat_dir / "tables/pk_09.db/pk_09/schema/schema-0").read_text())
    assert [field_from_json(f).type for f in pk["fields"]] == [
        VarCharType(MAX_LENGTH, nullable=False), IntType(nullable=False), IntType(nullable=False), DoubleType()
    ]


def test_row_type_helpers() -> None:
    row = RowType((DataField(0, "a", IntType()), DataField(3, "b", STRING), DataField(7, "c", DoubleType())))
    assert row.field_names == ["a", "b", "c"]
    assert row.field("b").id == 3
    assert row.field_by_id(7).name == "c"
    assert row.field_index("c") == 2
    assert row.project(["c", "a"]).field_names == ["c", "a"]
    assert row.contains("a") and not row.contains("z")
    with pytest.raises(SchemaError):
        row.field("z")
    with pytest.raises(SchemaError):
        row.field_by_id(1)
    # A list is accepted at runtime and frozen into a tuple.
    assert RowType([DataField(0, "a", IntType())]).fields == (DataField(0, "a", IntType()),)  # type: ignore[arg-type]


def test_predicates() -> None:
    assert is_numeric(DecimalType(3, 1)) and is_numeric(TinyIntType()) and not is_numeric(STRING)
    assert is_string(CharType(2)) and not is_string(BYTES)
    assert is_fixed_length(DecimalType(18, 2)) and not is_fixed_length(DecimalType(19, 2))
    assert is_fixed_length(TimestampType(3)) and not is_fixed_length(LocalZonedTimestampType(4))
    assert not is_fixed_length(STRING)


ARROW = [
    (BooleanType(), pa.bool_()),
    (TinyIntType(), pa.int8()),
    (SmallIntType(), pa.int16()),
    (IntType(), pa.int32()),
    (BigIntType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (DecimalType(38, 10), pa.decimal128(38, 10)),
    (STRING, pa.string()),
    (BYTES, pa.binary()),
    (DateType(), pa.date32()),
    (TimestampType(0), pa.timestamp("s")),
    (TimestampType(3), pa.timestamp("ms")),
    (TimestampType(6), pa.timestamp("us")),
    (TimestampType(9), pa.timestamp("ns")),
    (LocalZonedTimestampType(0), pa.timestamp("s", tz="UTC")),
    (LocalZonedTimestampType(3), pa.timestamp("ms", tz="UTC")),
    (LocalZonedTimestampType(6), pa.timestamp("us", tz="UTC")),
    (LocalZonedTimestampType(9), pa.timestamp("ns", tz="UTC")),
    (TimeType(3), pa.time32("ms")),
]


@pytest.mark.parametrize(("dt", "arrow"), ARROW, ids=[str(a[0]) for a in ARROW])
def test_arrow_round_trip(dt: DataType, arrow: pa.DataType) -> None:
    assert to_arrow_type(dt) == arrow
    assert from_arrow_type(arrow) == dt
    assert from_arrow_type(arrow, nullable=False) == dt.copy(nullable=False)


@pytest.mark.parametrize(
    ("dt", "arrow"),
    [
        (TimestampType(1), pa.timestamp("ms")),
        (TimestampType(5), pa.timestamp("us")),
        (LocalZonedTimestampType(7), pa.timestamp("ns", tz="UTC")),
        (CharType(4), pa.string()),
        (VarCharType(4), pa.string()),
        (BinaryType(4), pa.binary()),
        (TimeType(0), pa.time32("ms")),
        (TimeType(9), pa.time32("ms")),
        (MultisetType(STRING), pa.map_(pa.string(), pa.field("value", pa.int32(), nullable=False))),
    ],
)
def test_arrow_lossy_mappings(dt: DataType, arrow: pa.DataType) -> None:
    assert to_arrow_type(dt) == arrow


@pytest.mark.parametrize(
    ("arrow", "dt"),
    [
        (pa.large_string(), STRING),
        (pa.string_view(), STRING),
        (pa.large_binary(), BYTES),
        (pa.binary_view(), BYTES),
        (pa.binary(5), BinaryType(5)),
        (pa.timestamp("us", tz="Europe/Paris"), LocalZonedTimestampType(6)),
        (pa.time64("us"), TimeType(6)),
        (pa.large_list(pa.int64()), ArrayType(BigIntType())),
        (pa.dictionary(pa.int32(), pa.string()), STRING),
    ],
)
def test_from_arrow_accepts_variants(arrow: pa.DataType, dt: DataType) -> None:
    assert from_arrow_type(arrow) == dt


@pytest.mark.parametrize("arrow", [pa.null(), pa.uint32(), pa.float16(), pa.duration("s"), pa.decimal256(50, 2)])
def test_from_arrow_rejects_unsupported(arrow: pa.DataType) -> None:
    with pytest.raises(InvalidTypeError):
        from_arrow_type(arrow)


def test_nested_arrow_round_trip_and_field_ids() -> None:
    row = RowType(
        (
            DataField(0, "id", BigIntType(nullable=False)),
            DataField(1, "tags", ArrayType(STRING)),
            DataField(2, "attrs", MapType(STRING.copy(nullable=False), DoubleType())),
            DataField(3, "point",
                      RowType((DataField(4, "x", DoubleType()), DataField(5, "y", DoubleType(nullable=False))))),
        )
    )
    schema = to_arrow_schema(row)
    assert schema.field("id").nullable is False
    assert schema.field("id").metadata[b"PARQUET:field_id"] == b"0"
    point = schema.field("point").type
    assert point.field("x").metadata[b"PARQUET:field_id"] == b"4"
    assert point.field("y").nullable is False
    # Java's Parquet ids for nested list/map children: SpecialFields.getArrayElementFieldId & co.
    field_id = b"PARQUET:field_id"
    assert schema.field("tags").type.value_field.metadata[field_id] == str(2147483647 // 4 + 1 * 1024 + 1).encode()
    assert schema.field("attrs").type.key_field.metadata[field_id] == str(2147483647 // 4 - 2 * 1024 - 1).encode()
    assert row_type_from_arrow_schema(schema) == row
    assert to_arrow_field(row.fields[0]).type == pa.int64()


def test_row_type_from_arrow_schema_assigns_ids_like_java() -> None:
    schema = pa.schema([("a", pa.int32()), ("b", pa.struct([("x", pa.int32()), ("y", pa.string())])),
                        ("c", pa.int32())])
    row = row_type_from_arrow_schema(schema, first_id=10)
    assert [f.id for f in row.fields] == [10, 11, 14]
    b = row.field("b").type
    assert isinstance(b, RowType) and [f.id for f in b.fields] == [12, 13]
    with_doc = pa.schema([pa.field("d", pa.int8(), metadata={b"description": b"hello"})])
    assert row_type_from_arrow_schema(with_doc).fields[0].description == "hello"


_atomic = st.sampled_from(
    [BooleanType(), IntType(), BigIntType(), DoubleType(), STRING, BYTES, DateType(), DecimalType(20, 4),
     TimestampType(3), LocalZonedTimestampType(9), VarCharType(5), CharType(2), TimeType(3), TinyIntType(),
     SmallIntType(), FloatType()]
)


def _with_nullability(dt: DataType) -> st.SearchStrategy[DataType]:
    return st.booleans().map(lambda n: dt.copy(nullable=n))


def _types() -> st.SearchStrategy[DataType]:
    def extend(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
        names = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3, unique=True)
        rows = st.tuples(names, st.lists(children, min_size=3, max_size=3)).map(
            lambda nc: RowType(tuple(DataField(i, n, t) for i, (n, t) in enumerate(zip(nc[0], nc[1], strict=False))))
        )
        return st.one_of(
            children.map(ArrayType), children.map(MultisetType),
            st.tuples(children, children).map(lambda kv: MapType(*kv)), rows,
        ).flatmap(_with_nullability)

    return st.recursive(_atomic.flatmap(_with_nullability), extend, max_leaves=6)


def _renumber(dt: DataType) -> DataType:
    # parse_type numbers ROW fields 0, 1, 2... in pre-order; make the generated ids follow that.
    counter = iter(range(10_000))

    def walk(t: DataType) -> DataType:
        if isinstance(t, ArrayType):
            return ArrayType(walk(t.element), nullable=t.nullable)
        if isinstance(t, MultisetType):
            return MultisetType(walk(t.element), nullable=t.nullable)
        if isinstance(t, MapType):
            return MapType(walk(t.key), walk(t.value), nullable=t.nullable)
        if isinstance(t, RowType):
            fields = []
            for f in t.fields:
                fid = next(counter)
                fields.append(f.copy(id=fid, type=walk(f.type)))
            return RowType(tuple(fields), nullable=t.nullable)
        return t

    return walk(dt)


@given(_types())
def test_random_types_round_trip(dt: DataType) -> None:
    dt = _renumber(dt)
    assert parse_type(str(dt)) == dt
    assert type_from_json(json.loads(json.dumps(type_to_json(dt)))) == dt
