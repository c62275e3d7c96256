"""Table.write(mode='overwrite'): by partition predicate (replaceWhere) and dynamic partition overwrite."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, PredicateError, SchemaError
from laketide.meta.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64())])

LAYOUTS = {
    "append": {"partition_keys": ["p"]},
    "pk": {"primary_key": ["id", "p"], "partition_keys": ["p"], "options": {"bucket": "2"}},
    "pk-dynamic": {"primary_key": ["id", "p"], "partition_keys": ["p"], "options": {"bucket": "-1"}},
}


def rows(ids: list[int], p: list[str], v: int) -> pa.Table:
    return pa.table({"id": ids, "p": p, "v": [v] * len(ids)}, schema=SCHEMA)


def content(t) -> list[tuple]:  # noqa: ANN001
    out = t.read().sort_by([("p", "ascending"), ("id", "ascending")])
    return list(zip(*[out.column(c).to_pylist() for c in ("id", "p", "v")]))


@pytest.fixture(params=sorted(LAYOUTS))
def table(request, catalog):  # noqa: ANN001, ANN201
    t = catalog.create_table("db.t", SCHEMA, **LAYOUTS[request.param])
    t.write(rows([1, 2, 3, 4, 5, 6], ["a", "a", "b", "b", "c", "c"], 0))
    return t


def test_where_replaces_only_matching_partitions(table) -> None:  # noqa: ANN001
    sid = table.write(rows([10, 11], ["a", "b"], 1), mode="overwrite", where="p IN ('a', 'b')")
    assert table.snapshot(sid).commit_kind is CommitKind.OVERWRITE
    assert content(table) == [(10, "a", 1), (11, "b", 1), (5, "c", 0), (6, "c", 0)]


def test_where_with_no_rows_empties_the_matching_partitions(table) -> None:  # noqa: ANN001
    table.write(rows([], [], 1), mode="overwrite", where="p = 'c'")
    assert content(table) == [(1, "a", 0), (2, "a", 0), (3, "b", 0), (4, "b", 0)]


def test_rows_outside_the_predicate_are_refused_and_nothing_changes(table) -> None:  # noqa: ANN001
    before = table.latest_snapshot().id
    with pytest.raises(SchemaError, match=r"1 of 2 rows do not match"):
        table.write(rows([10, 11], ["a", "c"], 1), mode="overwrite", where="p = 'a'")
    assert table.refresh().latest_snapshot().id == before
    assert len(content(table)) == 6


def test_where_on_a_non_partition_column_is_refused(table) -> None:  # noqa: ANN001
    with pytest.raises(PredicateError, match=r"only name partition columns.*\['v'\]"):
        table.write(rows([10], ["a"], 1), mode="overwrite", where="p = 'a' AND v > 0")
    assert len(content(table)) == 6


def test_dynamic_replaces_only_partitions_in_the_data(table) -> None:  # noqa: ANN001
    table.write(rows([7, 8], ["b", "d"], 2), mode="overwrite", partition_overwrite="dynamic")
    assert content(table) == [(1, "a", 0), (2, "a", 0), (7, "b", 2), (5, "c", 0), (6, "c", 0), (8, "d", 2)]


def test_dynamic_with_empty_data_changes_nothing(table) -> None:  # noqa: ANN001
    before = table.latest_snapshot().id
    assert table.write(rows([], [], 2), mode="overwrite", partition_overwrite="dynamic") is None
    assert table.refresh().latest_snapshot().id == before
    assert len(content(table)) == 6


def test_table_option_makes_overwrite_dynamic(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.o", SCHEMA, partition_keys=["p"], options={"dynamic-partition-overwrite": "true"})
    t.write(rows([1, 2], ["a", "b"], 0))
    t.write(rows([3], ["b"], 1), mode="overwrite")
    assert content(t) == [(1, "a", 0), (3, "b", 1)]
    t.write(rows([4], ["b"], 2), mode="overwrite", partition_overwrite="static")  # explicit: the whole table
    assert content(t) == [(4, "b", 2)]


def test_non_partitioned_table(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.n", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(rows([1, 2], ["a", "b"], 0))
    t.write(rows([3], ["x"], 1), mode="overwrite", partition_overwrite="dynamic")  # one partition: all of it
    assert content(t) == [(3, "x", 1)]
    with pytest.raises(PredicateError, match="only name partition columns"):
        t.write(rows([4], ["x"], 1), mode="overwrite", where="id = 4")
    assert content(t) == [(3, "x", 1)]


def test_argument_combinations_are_refused(table) -> None:  # noqa: ANN001
    data = rows([9], ["a"], 1)
    with pytest.raises(InvalidOptionError, match="only apply to mode='overwrite'"):
        table.write(data, where="p = 'a'")
    with pytest.raises(InvalidOptionError, match="not both"):
        table.write(data, mode="overwrite", where="p = 'a'", partition={"p": "a"})
    with pytest.raises(InvalidOptionError, match="cannot be combined"):
        table.write(data, mode="overwrite", where="p = 'a'", partition_overwrite="dynamic")
    with pytest.raises(InvalidOptionError, match="'static' or 'dynamic'"):
        table.write(data, mode="overwrite", partition_overwrite="auto")  # type: ignore[arg-type]
    with pytest.raises(PredicateError, match="empty"):
        table.write(data, mode="overwrite", where="  ")
    assert len(content(table)) == 6


def test_a_concurrent_writer_of_another_partition_keeps_its_rows(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.c", SCHEMA, partition_keys=["p"])
    t.write(rows([1, 2], ["a", "b"], 0))
    other = catalog.table("db.c")  # a second writer, its files written before the overwrite commits
    w = other.new_write()
    w.write(rows([3], ["b"], 9))
    pending = w.prepare_commit()
    t.write(rows([4], ["a"], 1), mode="overwrite", partition_overwrite="dynamic")
    other.commit(pending)
    assert content(t) == [(4, "a", 1), (2, "b", 0), (3, "b", 9)]
    t.write(rows([5], ["a"], 2), mode="overwrite", where="p = 'a'")  # and the other way round
    assert content(t.refresh()) == [(5, "a", 2), (2, "b", 0), (3, "b", 9)]
