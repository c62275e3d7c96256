"""Table.write(schema_mode='merge'): new columns added, missing nullable ones filled, widening only as alter allows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, SchemaError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int32()), ("s", pa.string())])

LAYOUTS = {
    "append": {},
    "pk": {"primary_key": ["id"], "options": {"bucket": "1"}},
}


@pytest.fixture(params=sorted(LAYOUTS))
def table(request, catalog):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.t", SCHEMA, **LAYOUTS[request.param])
    t.write(pa.table({"id": [1, 2], "v": [10, 20], "s": ["a", "b"]}, schema=SCHEMA))
    return t


def state(t) -> tuple[int, int | None, list[dict]]:  # noqa: ANN001
    t.refresh()
    snap = t.latest_snapshot()
    return t.schema.id, snap.id if snap else None, t.read().sort_by("id").to_pylist()


def test_new_column_is_added_and_old_rows_read_null(table, catalog) -> None:  # noqa: ANN001
    schema_before = table.schema.id
    table.write(pa.table({"id": [3], "v": [30], "s": ["c"], "w": [1.5]}), schema_mode="merge")
    assert table.schema.id == schema_before + 1  # one schema change for the write
    assert table.arrow_schema.field("w").type == pa.float64() and table.arrow_schema.field("w").nullable
    assert table.read().sort_by("id").column("w").to_pylist() == [None, None, 1.5]
    again = catalog.table("db.t")  # another handle sees the evolved schema and the rows
    assert again.read().sort_by("id").column("w").to_pylist() == [None, None, 1.5]


def test_missing_nullable_columns_are_filled_with_nulls(table) -> None:  # noqa: ANN001
    schema_before = table.schema.id
    table.write(pa.table({"id": [3]}), schema_mode="merge")
    assert table.schema.id == schema_before  # nothing to add: no schema change
    assert table.read().sort_by("id").to_pylist()[-1] == {"id": 3, "v": None, "s": None}


def test_missing_not_null_column_is_refused_and_nothing_changes(table) -> None:  # noqa: ANN001
    before = state(table)
    with pytest.raises(SchemaError, match=r"lacks NOT NULL columns \['id'\]"):
        table.write(pa.table({"v": [1], "w": ["new"]}), schema_mode="merge")
    assert state(table) == before


def test_values_that_do_not_fit_widen_the_column(table) -> None:  # noqa: ANN001
    fits = pa.table({"id": [3], "v": pa.array([7], pa.int64())})
    schema_before = table.schema.id
    table.write(fits, schema_mode="merge")
    assert table.schema.id == schema_before and table.arrow_schema.field("v").type == pa.int32()
    big = pa.table({"id": [4], "v": pa.array([2**40], pa.int64())})
    table.write(big, schema_mode="merge")
    assert table.arrow_schema.field("v").type == pa.int64()
    assert table.read().sort_by("id").column("v").to_pylist() == [10, 20, 7, 2**40]


def test_a_type_alter_would_not_widen_to_is_refused(table) -> None:  # noqa: ANN001
    before = state(table)
    with pytest.raises(SchemaError, match="neither fits it nor widens it"):
        table.write(pa.table({"id": [3], "v": ["not a number"], "w": [1]}), schema_mode="merge")
    assert state(table) == before


def test_a_bad_value_for_the_new_schema_changes_nothing(table) -> None:  # noqa: ANN001
    before = state(table)
    with pytest.raises(SchemaError, match="NOT NULL but the data has nulls"):
        table.write(pa.table({"id": pa.array([None], pa.int64()), "w": [1]}), schema_mode="merge")
    assert state(table) == before  # the new column was not added either


def test_strict_is_the_default(table) -> None:  # noqa: ANN001
    before = state(table)
    with pytest.raises(SchemaError, match=r"unknown columns \['w'\]"):
        table.write(pa.table({"id": [3], "v": [1], "s": ["x"], "w": [1]}))
    with pytest.raises(InvalidOptionError, match="'strict' or 'merge'"):
        table.write(pa.table({"id": [3], "v": [1], "s": ["x"]}), schema_mode="overwrite")  # type: ignore[arg-type]
    assert state(table) == before


def test_merge_with_empty_data_adds_the_columns_only(table) -> None:  # noqa: ANN001
    snap_before = table.latest_snapshot().id
    table.write(pa.table({"id": pa.array([], pa.int64()), "w": pa.array([], pa.string())}), schema_mode="merge")
    assert "w" in table.arrow_schema.names
    assert table.latest_snapshot().id == snap_before


def test_merge_with_dynamic_overwrite(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.p", pa.schema([("p", pa.string()), ("v", pa.int64())]), partition_keys=["p"])
    t.write(pa.table({"p": ["a", "b"], "v": [1, 2]}))
    t.write(pa.table({"p": ["b"], "v": [3], "w": [True]}), mode="overwrite", partition_overwrite="dynamic",
            schema_mode="merge")
    assert t.read().sort_by("p").to_pylist() == [{"p": "a", "v": 1, "w": None}, {"p": "b", "v": 3, "w": True}]
