"""Python's own types at the API: row counts without columns, schemas from pyarrow / pandas / polars, plain
Arrow results, VARCHAR without a length."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from laketide import AddColumn
from laketide.exceptions import InvalidTypeError
from laketide.schema.changes import UpdateColumnType
from laketide.types import FIELD_ID_KEY, STRING, BigIntType, VarBinaryType, VarCharType, parse_type

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.float64()),
                    ("st", pa.struct([("a", pa.int32()), ("l", pa.list_(pa.string()))]))])


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "p": ["a" if i % 2 else "b" for i in ids], "v": [i / 2 for i in ids],
                     "st": [{"a": i, "l": [str(i)]} for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("layout", [{}, {"primary_key": ["id"], "options": {"bucket": "2"}},
                                    {"partition_keys": ["p"]}])
def test_read_no_columns_counts_rows(catalog, layout) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, **layout)
    assert t.read(columns=[]).num_rows == 0
    t.write(rows(list(range(10))))
    t.write(rows(list(range(5, 15))))
    expected = 15 if layout.get("primary_key") else 20
    counted = t.read(columns=[])
    assert counted.num_columns == 0 and counted.num_rows == expected
    assert t.read(columns=[], where="id >= 12").num_rows == (3 if layout.get("primary_key") else 3)


def has_field_ids(schema: pa.Schema) -> bool:
    def walk(f: pa.Field) -> bool:
        if f.metadata and FIELD_ID_KEY in f.metadata:
            return True
        t = f.type
        if pa.types.is_struct(t):
            return any(walk(t.field(i)) for i in range(t.num_fields))
        if pa.types.is_list(t):
            return walk(t.value_field)
        return False

    return any(walk(f) for f in schema)


def test_read_results_carry_no_field_ids(catalog) -> None:  # noqa: ANN001
    for layout in ({}, {"primary_key": ["id"], "options": {"bucket": "1"}}):
        t = catalog.create_table(f"db.t{len(layout)}", SCHEMA, **layout)
        t.write(rows([1, 2, 3]))
        for result in (t.read(), t.read(columns=["st", "id"]), pa.table(t), t.to_arrow_batch_reader().read_all()):
            assert not has_field_ids(result.schema)
        assert has_field_ids(t.arrow_schema)  # the table's own schema keeps the ids the files need


@pytest.mark.parametrize("make", [
    lambda: pd.DataFrame({"id": pd.Series([1], dtype="int64"), "name": ["x"], "score": [1.5]}),
    lambda: pl.DataFrame({"id": [1], "name": ["x"], "score": [1.5]}),
    lambda: pl.DataFrame({"id": [1], "name": ["x"], "score": [1.5]}).schema,
    lambda: pl.LazyFrame({"id": [1], "name": ["x"], "score": [1.5]}),
    lambda: pa.table({"id": [1], "name": ["x"], "score": [1.5]}),
    lambda: {"id": pa.int64(), "name": "STRING", "score": pa.float64()},
])
def test_create_table_from_frames_and_schemas(catalog, make) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", make())
    assert [(f.name, str(f.type)) for f in t.schema.fields] == [
        ("id", "BIGINT"), ("name", "STRING"), ("score", "DOUBLE")]
    t.write(pd.DataFrame({"id": [7], "name": ["y"], "score": [2.0]}))
    assert t.read().to_pylist() == [{"id": 7, "name": "y", "score": 2.0}]


def test_create_table_rejects_non_schemas(catalog) -> None:  # noqa: ANN001
    with pytest.raises(InvalidTypeError, match="Not a schema"):
        catalog.create_table("db.t", 42)
    with pytest.raises(InvalidTypeError, match="Not a column type"):
        catalog.create_table("db.t", {"a": 3.5})
    assert not catalog.table_exists("db.t")


def test_schema_changes_take_pyarrow_types(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", pa.schema([("id", pa.int32())]))
    t.alter(AddColumn(name="tags", type=pa.list_(pa.string())), AddColumn(name="n", type="INT"))
    t.alter(UpdateColumnType(name="id", new_type=pa.int64()))
    assert [str(f.type) for f in t.schema.fields] == ["BIGINT", "ARRAY<STRING>", "INT"]
    with pytest.raises(InvalidTypeError):
        AddColumn(name="x", type=object())  # type: ignore[arg-type]
    assert isinstance(t.schema.fields[0].type, BigIntType)


def test_varchar_without_length_is_string() -> None:
    assert VarCharType() == STRING and str(VarCharType()) == "STRING"
    assert str(VarBinaryType()) == "BYTES"
    assert str(VarCharType(10)) == "VARCHAR(10)"
    assert parse_type("VARCHAR") == VarCharType(1)  # the SQL text keeps SQL's rule, as Java
