"""Merge behaviour given only at read time (``Table.copy``) reads what a table created with it reads.

Both tables get the same writes with ``write-only`` (no compaction), so every merge happens in the read; the copy
of the plain table must return the rows of the table whose schema carries the option. Options Java fixes at
creation (``merge-engine``, the remove-record-on-delete switches) are refused with Java's message.
Paimon: AbstractFileStoreTable#copy, SchemaManager#checkAlterTableOption.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from laketide.table.table import Table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("ts", pa.int64())])


def t(k: list[int], v: list[int | None], ts: list[int]) -> pa.Table:
    return pa.table({"k": k, "v": v, "ts": ts}, schema=SCHEMA)


def by_key(table: pa.Table) -> dict:
    return {r["k"]: (r["v"], r["ts"]) for r in table.to_pylist()}


def pair(catalog, base: dict[str, str], override: dict[str, str]) -> tuple[Table, Table]:  # noqa: ANN001
    opts = {"bucket": "1", "write-only": "true", **base}
    plain = catalog.create_table("db.plain", SCHEMA, primary_key=["k"], options=opts)
    created = catalog.create_table("db.created", SCHEMA, primary_key=["k"], options={**opts, **override})
    return plain, created


def upserts(table: Table) -> None:
    table.write(t([1, 2, 3], [10, 20, 30], [5, 5, 5]))
    table.write(t([1, 2], [1, None], [9, 1]))     # k=2 arrives with an older ts and a null value
    table.write(t([1, 3], [100, 3], [7, 6]))


def deletes(table: Table) -> None:
    table.write(t([1, 2, 3], [10, 20, 30], [1, 1, 1]))
    w = table.new_write()
    w.delete(t([2, 3], [20, 30], [1, 1]))
    table.commit(w.prepare_commit())
    table.write(t([4], [40], [1]))


CASES: dict[str, tuple[dict[str, str], dict[str, str], Callable[[Table], None]]] = {
    "aggregate-function": ({"merge-engine": "aggregation"}, {"fields.v.aggregate-function": "sum"}, upserts),
    "aggregate-function-max": ({"merge-engine": "aggregation"},
                               {"fields.v.aggregate-function": "max", "fields.ts.aggregate-function": "min"}, upserts),
    "default-aggregate-function": ({"merge-engine": "aggregation"}, {"fields.default-aggregate-function": "sum"},
                                   upserts),
    "partial-update-aggregate": ({"merge-engine": "partial-update", "fields.ts.sequence-group": "v"},
                                 {"fields.v.aggregate-function": "sum"}, upserts),
    "sequence.field": ({}, {"sequence.field": "ts"}, upserts),
    "ignore-delete": ({}, {"ignore-delete": "true"}, deletes),
    "deduplicate.ignore-delete": ({}, {"deduplicate.ignore-delete": "true"}, deletes),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_option_given_at_read_time_reads_as_if_the_table_had_it(catalog, case: str) -> None:  # noqa: ANN001
    base, override, history = CASES[case]
    plain, created = pair(catalog, base, override)
    history(plain)
    history(created)
    expected = by_key(created.read())
    copied = plain.copy(override)
    assert by_key(copied.read()) == expected
    assert plain.schema.options == catalog.table("db.plain").schema.options  # nothing was written
    assert by_key(catalog.table("db.plain").read()) != expected  # the option does change the result


@pytest.mark.parametrize("key, value", [
    ("merge-engine", "aggregation"),
    ("partial-update.remove-record-on-delete", "true"),
    ("aggregation.remove-record-on-delete", "true"),
    ("rowkind.field", "ts"),
])
def test_options_java_fixes_at_creation_are_refused_at_read_time(catalog, key: str, value: str) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1"})
    with pytest.raises(UnsupportedOptionError, match=f"Change '{key}' is not supported yet"):
        table.copy({key: value})


def test_the_same_immutable_value_is_accepted(catalog) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1",
                                                                            "merge-engine": "aggregation"})
    table.write(t([1], [1], [1]))
    assert by_key(table.copy({"merge-engine": "aggregation"}).read()) == {1: (1, 1)}


@pytest.mark.parametrize("override, message", [
    ({"fields.v.aggregate-function": "no_such_fn"}, "no_such_fn"),
    ({"sequence.field": "ts", "fields.ts.aggregate-function": "sum"}, "sequence field"),
    ({"ignore-delete": "maybe"}, "ignore-delete"),
])
def test_a_bad_read_time_merge_option_is_refused(catalog, override, message) -> None:  # noqa: ANN001
    table = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1",
                                                                            "merge-engine": "aggregation"})
    with pytest.raises(InvalidOptionError, match=message):
        table.copy(override)


def test_the_copy_reads_with_the_option_while_the_table_keeps_its_own(tmp_path) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, primary_key=["k"], options={"bucket": "1", "write-only": "true",
                                                                        "merge-engine": "aggregation"})
    upserts(table)
    summed = table.copy({"fields.v.aggregate-function": "sum"})
    assert by_key(summed.read())[1][0] == 111
    assert by_key(table.read(options={"fields.v.aggregate-function": "sum"}))[1][0] == 111
    assert by_key(table.read())[1][0] == 100  # last_non_null_value, the schema's default
