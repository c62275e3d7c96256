"""Tables altered with Paimon's type casts: old files read as Java reads them, refused changes change nothing."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest

import laketide
from laketide import AddColumn, RenameColumn, SetOption, UpdateColumnType
from laketide.exceptions import CastError, InvalidOptionError, SchemaChangeError, UnsupportedFeatureError
from laketide.types import (
    STRING,
    ArrayType,
    BigIntType,
    BooleanType,
    CharType,
    DataField,
    DateType,
    DecimalType,
    DoubleType,
    IntType,
    LocalZonedTimestampType,
    MapType,
    RowType,
    SmallIntType,
    TimestampType,
    VarCharType,
    VariantType,
)

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("qty", pa.string()),
    ("flag", pa.string()),
    ("price", pa.float64()),
    ("amount", pa.decimal128(5, 2)),
    ("day", pa.date32()),
    ("at", pa.timestamp("us")),
    ("big", pa.int64()),
    ("point", pa.struct([("x", pa.int32()), ("label", pa.string())])),
    ("tags", pa.list_(pa.int32())),
    ("attrs", pa.map_(pa.string(), pa.int32())),
])


def _rows() -> pa.Table:
    return pa.table({
        "id": [1, 2, 3],
        "qty": ["100", "-12.7", None],
        "flag": ["True", "nO", "y"],
        "price": [3.7, -3.7, 1e20],
        "amount": [Decimal("0.02"), Decimal("333.35"), Decimal("-1.25")],
        "day": [dt.date(1970, 1, 5), dt.date(1969, 11, 18), None],
        "at": [dt.datetime(2024, 11, 26, 6, 38, 56, 1001), dt.datetime(1969, 12, 31, 23, 59, 58, 500000), None],
        "big": [2**40 + 5, 300, -1],
        "point": [{"x": 1, "label": "a"}, None, {"x": None, "label": "c"}],
        "tags": [[1, 2], None, []],
        "attrs": [[("k", 1)], None, [("z", None)]],
    }, schema=SCHEMA)


@pytest.fixture(params=["parquet", "orc", "avro"])
def table(catalog, request):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.evolve", SCHEMA, options={"file.format": request.param})
    t.write(_rows())
    return t


def _by_id(table: pa.Table) -> dict[int, dict[str, object]]:
    return {row.pop("id"): row for row in table.to_pylist()}


def test_old_files_read_through_java_casts(table) -> None:  # noqa: ANN001
    table.alter(
        UpdateColumnType("qty", IntType()),
        UpdateColumnType("flag", BooleanType()),
        UpdateColumnType("price", IntType()),
        UpdateColumnType("amount", DecimalType(4, 1)),
        UpdateColumnType("day", TimestampType(3)),
        UpdateColumnType("at", STRING),
        UpdateColumnType("big", SmallIntType()),
        UpdateColumnType(("point", "x"), STRING),
        UpdateColumnType(("tags", "element"), BigIntType()),
        UpdateColumnType(("attrs", "value"), DoubleType()),
    )
    rows = _by_id(table.read())
    assert rows[1] == {
        "qty": 100, "flag": True, "price": 3, "amount": Decimal("0.0"), "day": dt.datetime(1970, 1, 5),
        "at": "2024-11-26 06:38:56.001001", "big": 5, "point": {"x": "1", "label": "a"}, "tags": [1, 2],
        "attrs": [("k", 1.0)],
    }
    assert rows[2] == {
        "qty": -12, "flag": False, "price": -3, "amount": Decimal("333.4"), "day": dt.datetime(1969, 11, 18),
        "at": "1969-12-31 23:59:58.500000", "big": 300, "point": None, "tags": None, "attrs": None,
    }
    assert rows[3] == {
        "qty": None, "flag": True, "price": 2**31 - 1, "amount": Decimal("-1.3"), "day": None, "at": None,
        "big": -1, "point": {"x": None, "label": "c"}, "tags": [], "attrs": [("z", None)],
    }
    # new rows are written in the new types; a read mixes both
    current = table.read().schema
    new_row = {name: [None] for name in current.names}
    new_row.update({"id": [4], "qty": [7], "flag": [False], "price": [1], "amount": [Decimal("9.9")], "big": [1]})
    table.write(pa.table(new_row, schema=current))
    rows = _by_id(table.read(columns=["id", "qty", "amount", "at"]))
    assert rows[4] == {"qty": 7, "amount": Decimal("9.9"), "at": None}
    assert rows[1]["qty"] == 100


def test_a_chain_of_changes_casts_once_from_the_file_type(table) -> None:  # noqa: ANN001
    # Java casts a file's type straight to the current one: "-12.7" -> BIGINT is -12, whatever came between.
    table.alter(UpdateColumnType("qty", DoubleType()))
    table.alter(UpdateColumnType("qty", BigIntType()))
    assert _by_id(table.read(columns=["id", "qty"])) == {1: {"qty": 100}, 2: {"qty": -12}, 3: {"qty": None}}
    # renaming on top keeps the id: still the same column
    table.alter(RenameColumn("qty", "quantity"))
    assert table.read(columns=["quantity"]).column(0).to_pylist() == [100, -12, None]


def test_time_travel_reads_the_old_types(table) -> None:  # noqa: ANN001
    table.alter(UpdateColumnType("qty", IntType()))
    assert table.read(snapshot_id=1, columns=["qty"]).column(0).to_pylist() == ["100", "-12.7", None]


def test_refused_changes_are_typed_and_write_no_schema(table, warehouse) -> None:  # noqa: ANN001
    schema_dir = os.path.join(warehouse, "db.db", "evolve", "schema")
    before = sorted(os.listdir(schema_dir))
    refused = [
        UpdateColumnType("day", IntType()),  # DATE -> INT: no cast in DataTypeCasts
        UpdateColumnType("at", DecimalType(20, 0)),  # TIMESTAMP -> DECIMAL: allowed by the types, no rule
        UpdateColumnType("day", VarCharType(10)),  # DateToString targets STRING only
        UpdateColumnType("price", TimestampType(3)),  # no rule from DOUBLE
        UpdateColumnType("tags", ArrayType(BigIntType())),  # a whole ARRAY: change ("tags", "element")
        UpdateColumnType("point", RowType((DataField(0, "x", BigIntType()), DataField(1, "label", STRING)))),
        UpdateColumnType(("point", "nope"), IntType()),
        UpdateColumnType(("tags", "value"), IntType()),
        UpdateColumnType(("price", "x"), IntType()),
        UpdateColumnType("missing", IntType()),
        UpdateColumnType(("attrs", "value"), DateType()),
    ]
    for change in refused:
        with pytest.raises(SchemaChangeError):
            table.alter(change)
    # a refused change in a batch leaves the others unapplied too
    with pytest.raises(SchemaChangeError):
        table.alter(UpdateColumnType("qty", IntType()), UpdateColumnType("day", IntType()))
    with pytest.raises(UnsupportedFeatureError):
        table.alter(UpdateColumnType("flag", VariantType()))
    assert sorted(os.listdir(schema_dir)) == before
    assert table.read().num_rows == 3
    assert table.read(columns=["qty"]).column(0).to_pylist() == ["100", "-12.7", None]


def test_disable_explicit_type_casting_allows_widening_only(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.strict", pa.schema([("a", pa.int32()), ("b", pa.int64()), ("c", pa.string())]),
                             options={"disable-explicit-type-casting": "true"})
    t.write(pa.table({"a": [1], "b": [2], "c": ["3"]}))
    t.alter(UpdateColumnType("a", BigIntType()), UpdateColumnType("c", VarCharType(2_147_483_647)))
    for change in (UpdateColumnType("b", IntType()), UpdateColumnType("c", IntType()),
                   UpdateColumnType("a", STRING)):
        with pytest.raises(SchemaChangeError, match="disable-explicit-type-casting"):
            t.alter(change)
    t.alter(SetOption("disable-explicit-type-casting", "false"))
    t.alter(UpdateColumnType("c", IntType()))
    assert t.read().to_pylist() == [{"a": 1, "b": 2, "c": 3}]


def test_an_unchanged_type_is_no_change(catalog) -> None:  # noqa: ANN001
    # Java has no BOOLEAN -> BOOLEAN cast rule; repeating a column's type must still be harmless.
    t = catalog.create_table("db.same", pa.schema([("a", pa.bool_()), ("d", pa.date32())]))
    t.alter(UpdateColumnType("a", BooleanType()), UpdateColumnType("d", DateType()))
    assert t.schema.field("a").type == BooleanType()


def test_default_values_must_read_as_the_new_type(catalog) -> None:  # noqa: ANN001
    schema = laketide.types.RowType((
        DataField(0, "a", STRING, default_value="'12'"), DataField(1, "b", STRING, default_value="abc"),
    ))
    t = catalog.create_table("db.defaults", schema)
    t.alter(UpdateColumnType("a", IntType()))
    with pytest.raises(SchemaChangeError, match="default value"):
        t.alter(UpdateColumnType("b", IntType()))


def test_an_unparsable_value_fails_the_read_naming_column_and_file(catalog) -> None:  # noqa: ANN001
    # Java's read throws on it too (NumberFormatException); the alter itself is legal.
    t = catalog.create_table("db.bad", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write(pa.table({"id": [1, 2], "v": ["1", "one"]}))
    t.alter(UpdateColumnType("v", IntType()))
    with pytest.raises(CastError, match=r"column 'v' of data file .*data-.*\.parquet: Cannot cast 'one' to INT"):
        t.read()
    assert t.read(columns=["id"]).num_rows == 2  # other columns still read


def test_primary_key_table_merges_across_schemas(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", pa.schema([("k", pa.int64()), ("v", pa.string()), ("w", pa.float64())]),
                             primary_key=["k"], options={"bucket": "1"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["10", "20", "30"], "w": [1.5, 2.5, 3.5]}))
    t.alter(UpdateColumnType("v", BigIntType()), UpdateColumnType("w", IntType()))
    t.write(pa.table({"k": [2], "v": [200], "w": [9]}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": 10, "w": 1}, {"k": 2, "v": 200, "w": 9}, {"k": 3, "v": 30, "w": 3},
    ]
    with pytest.raises(SchemaChangeError, match="key column"):
        t.alter(UpdateColumnType("k", IntType()))


def test_local_time_zone_option(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.zones", pa.schema([("at", pa.timestamp("ms")), ("n", pa.int32())]))
    t.write(pa.table({"at": [dt.datetime(1970, 1, 1)], "n": [0]}, schema=t.read().schema))
    t.alter(UpdateColumnType("at", LocalZonedTimestampType(3)), UpdateColumnType("n", LocalZonedTimestampType(3)))
    utc = dt.timezone.utc
    epoch = dt.datetime(1970, 1, 1, tzinfo=utc)
    assert t.read().to_pylist() == [{"at": epoch, "n": epoch}]
    t.alter(SetOption("local-time-zone", "Asia/Shanghai"))
    assert t.read().to_pylist() == [{"at": dt.datetime(1969, 12, 31, 16, tzinfo=utc),
                                     "n": dt.datetime(1970, 1, 1, 8, tzinfo=utc)}]
    with pytest.raises(InvalidOptionError, match="local-time-zone"):
        t.alter(SetOption("local-time-zone", "Mars/Olympus"))


def test_added_row_columns_get_fresh_nested_ids(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.ids", pa.schema([("a", pa.int32()), ("b", pa.int32())]))
    t.alter(AddColumn(name="r", type=RowType((DataField(0, "x", IntType()), DataField(1, "y", RowType((
        DataField(0, "z", IntType()),)))))))
    r = t.schema.field("r")
    # Java's ReassignFieldId: the column takes the next id, nested fields after it, children before parents
    assert r.id == 2
    assert [(f.name, f.id) for f in r.type.fields] == [("x", 3), ("y", 5)]
    assert r.type.fields[1].type.fields[0].id == 4
    assert t.schema.highest_field_id == 5


def test_variant_columns_are_not_written(catalog) -> None:  # noqa: ANN001
    schema = laketide.types.RowType((DataField(0, "v", VariantType()),))
    with pytest.raises(UnsupportedFeatureError, match="VARIANT"):
        catalog.create_table("db.variant", schema)
    t = catalog.create_table("db.novariant", pa.schema([("a", pa.int32())]))
    with pytest.raises(UnsupportedFeatureError, match="VARIANT"):
        t.alter(AddColumn(name="m", type=MapType(IntType(nullable=False), VariantType())))


def test_char_padding_applies_to_old_rows_only_through_the_cast(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.chars", pa.schema([("s", pa.string())]))
    t.write(pa.table({"s": ["ab", "abcdef", None]}))
    t.alter(UpdateColumnType("s", CharType(4)))
    assert t.read().column(0).to_pylist() == ["ab  ", "abcd", None]
