"""Schema evolution rules: every change is a new schema with ids preserved; unsafe changes are refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import SchemaChangeError, SchemaError
from laketide.schema.changes import (
    AddColumn,
    DropColumn,
    Move,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
    can_widen,
)
from laketide.schema.create import new_table_schema
from laketide.types import (
    ArrayType,
    BigIntType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    SmallIntType,
    TimestampType,
    VarCharType,
)


@pytest.fixture()
def base():  # noqa: ANN201
    schema = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string()), ("dt", pa.string())])
    return new_table_schema(schema, table_name="db.t", primary_key=["id", "dt"], partition_keys=["dt"],
                            options={"bucket": "2"})


def test_primary_keys_become_not_null(base) -> None:  # noqa: ANN001
    assert not base.field("id").type.nullable and not base.field("dt").type.nullable
    assert base.field("a").type.nullable


def test_add_column_positions_and_ids(base) -> None:  # noqa: ANN001
    s = apply_changes(base, [
        AddColumn(name="first", type=IntType(), move=Move.first()),
        AddColumn(name="after_a", type=IntType(), move=Move.after("a")),
        AddColumn(name="before_b", type=IntType(), comment="doc", move=Move.before("b")),
        AddColumn(name="last", type=IntType()),
    ])
    assert s.id == 1
    assert s.field_names == ["first", "id", "a", "after_a", "before_b", "b", "dt", "last"]
    assert [s.field(n).id for n in ("first", "after_a", "before_b", "last")] == [4, 5, 6, 7]
    assert s.highest_field_id == 7 and s.field("before_b").description == "doc"


def test_rename_drop_keep_ids_and_rename_field_options(base) -> None:  # noqa: ANN001
    with_opt = apply_changes(base, [SetOption("fields.a.stats-mode", "full")])
    s = apply_changes(with_opt, [RenameColumn("a", "alpha"), DropColumn("b")])
    assert s.field_names == ["id", "alpha", "dt"]
    assert s.field("alpha").id == 1
    assert s.options["fields.alpha.stats-mode"] == "full" and "fields.a.stats-mode" not in s.options
    # a dropped name can come back: as a new column with a new id
    again = apply_changes(s, [AddColumn(name="b", type=VarCharType(10))])
    assert again.field("b").id == 4


def test_options_and_comments(base) -> None:  # noqa: ANN001
    s = apply_changes(base, [SetOption("snapshot.num-retained.min", "5"), UpdateComment("orders"),
                             UpdateColumnComment("a", "quantity")])
    assert s.options["snapshot.num-retained.min"] == "5" and s.comment == "orders"
    assert s.field("a").description == "quantity"
    s = apply_changes(s, [RemoveOption("snapshot.num-retained.min")])
    assert "snapshot.num-retained.min" not in s.options


@pytest.mark.parametrize("change", [
    DropColumn("id"), DropColumn("dt"), RenameColumn("dt", "day"), DropColumn("missing"),
    RenameColumn("a", "b"), AddColumn(name="a", type=IntType()), AddColumn(name="nn", type=IntType(nullable=False)),
    # Java allows INT -> SMALLINT and STRING -> INT (explicit casts); it refuses these:
    UpdateColumnType("a", DateType()), UpdateColumnType("b", ArrayType(IntType())),
    UpdateColumnType("id", DoubleType()),
    SetOption("bucket", "4"), SetOption("merge-engine", "first-row"), RemoveOption("bucket"),
    AddColumn(name="x", type=IntType(), move=Move.after("nope")),
])
def test_unsafe_changes_are_refused(base, change) -> None:  # noqa: ANN001
    with pytest.raises(SchemaChangeError):
        apply_changes(base, [change])


def test_widening_rules() -> None:
    assert can_widen(IntType(), BigIntType())
    assert can_widen(SmallIntType(), IntType())
    assert not can_widen(BigIntType(), IntType())
    assert can_widen(FloatType(), DoubleType())
    assert can_widen(IntType(), DoubleType()) and not can_widen(BigIntType(), FloatType())
    assert can_widen(DecimalType(10, 2), DecimalType(12, 3)) and not can_widen(DecimalType(10, 2), DecimalType(10, 3))
    assert can_widen(IntType(), DecimalType(12, 2)) and not can_widen(IntType(), DecimalType(10, 2))
    assert can_widen(VarCharType(5), VarCharType(10)) and not can_widen(VarCharType(10), VarCharType(5))
    assert can_widen(TimestampType(3), TimestampType(6)) and not can_widen(TimestampType(6), TimestampType(3))


def test_creation_rules() -> None:
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    with pytest.raises(SchemaError, match="partition"):
        new_table_schema(schema, table_name="db.t", primary_key=["id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    with pytest.raises(SchemaError, match="do not exist"):
        new_table_schema(schema, table_name="db.t", primary_key=["nope"])
