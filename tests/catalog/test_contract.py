"""The catalog contract: every backend (filesystem, JDBC on SQLite and PostgreSQL, REST) behaves the same.

Refusals are checked twice: the typed error, and the catalog's visible state unchanged afterwards.
"""

from __future__ import annotations

import multiprocessing

import pyarrow as pa
import pytest

from laketide.catalog import Catalog, Identifier
from laketide.exceptions import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    InvalidIdentifierError,
    NoSuchDatabaseError,
    NoSuchTableError,
    SystemTableError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
)
from laketide.schema.changes import AddColumn, SetOption
from laketide.types import IntType
from tests.catalog import workers
from tests.catalog.conftest import Backend

SCHEMA = workers.SCHEMA
ROWS = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)
INJECTION = "x'; DROP TABLE paimon_tables; --"


def state(catalog: Catalog) -> dict[str, list[str]]:
    """Every database and its tables: what a refused call must leave alone."""
    return {db: catalog.list_tables(db) for db in catalog.list_databases()}


@pytest.fixture()
def filled(catalog: Catalog) -> Catalog:
    """db.t with three rows, db.u empty, and an empty database `other`."""
    catalog.create_database("db")
    catalog.create_database("other")
    catalog.create_table("db.t", SCHEMA).write(ROWS)
    catalog.create_table("db.u", SCHEMA)
    return catalog


# -- databases ------------------------------------------------------------------------------------------------
def test_create_list_and_exists_databases(catalog: Catalog) -> None:
    assert not catalog.database_exists("a")
    catalog.create_database("b")
    catalog.create_database("a")
    assert catalog.database_exists("a") and catalog.database_exists("b")
    assert sorted(catalog.list_databases()) == ["a", "b"]
    assert catalog.list_tables("a") == []


def test_create_existing_database_refused_unless_exist_ok(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(DatabaseAlreadyExistsError, match="db"):
        filled.create_database("db")
    filled.create_database("db", exist_ok=True)
    assert state(filled) == before
    assert filled.table("db.t").read().num_rows == 3


def test_drop_missing_database(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(NoSuchDatabaseError, match="nope"):
        filled.drop_database("nope")
    filled.drop_database("nope", ignore_missing=True)
    assert state(filled) == before


def test_drop_non_empty_database_needs_cascade(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(DatabaseNotEmptyError, match="db"):
        filled.drop_database("db")
    assert state(filled) == before
    filled.drop_database("db", cascade=True)
    assert not filled.database_exists("db")
    assert sorted(filled.list_databases()) == ["other"]
    with pytest.raises(NoSuchTableError):
        filled.table("db.t")


def test_drop_empty_database(filled: Catalog) -> None:
    filled.drop_database("other")
    assert not filled.database_exists("other")
    assert sorted(filled.list_databases()) == ["db"]


def test_dropped_database_comes_back_empty(filled: Catalog) -> None:
    filled.drop_database("db", cascade=True)
    filled.create_database("db")
    assert filled.list_tables("db") == []
    assert not filled.table_exists("db.t")
    filled.create_table("db.t", SCHEMA)
    assert filled.table("db.t").read().num_rows == 0


def test_list_tables_of_missing_database(catalog: Catalog) -> None:
    with pytest.raises(NoSuchDatabaseError, match="ghost"):
        catalog.list_tables("ghost")


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "/abs", "", " db", "a.b", "a:b", "a\\b", "a\x00b"])
def test_bad_database_names_refused(filled: Catalog, name: str) -> None:
    before = state(filled)
    for call in (
        lambda: filled.create_database(name),
        lambda: filled.create_database(name, exist_ok=True),
        lambda: filled.drop_database(name, ignore_missing=True, cascade=True),
        lambda: filled.list_tables(name),
        lambda: filled.database_exists(name),
        lambda: filled.create_table(Identifier(name, "t"), SCHEMA),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    assert state(filled) == before


def test_system_database_is_reserved(catalog: Catalog) -> None:
    catalog.create_database("a")
    with pytest.raises(SystemTableError, match="sys"):
        catalog.create_database("sys")
    assert "sys" not in catalog.list_databases()


def test_database_properties(catalog: Catalog, backend_under_test: Backend) -> None:
    props = {"owner": "team-a", INJECTION: "v'); DELETE FROM paimon_database_properties; --"}
    if not backend_under_test.stores_properties:
        with pytest.raises(UnsupportedFeatureError):
            catalog.create_database("p", properties=props)
        assert not catalog.database_exists("p")
        return
    catalog.create_database("p", properties=props)
    got = catalog.database_properties("p")
    assert {k: got[k] for k in props} == props  # verbatim, never executed
    assert backend_under_test.open().database_properties("p")[INJECTION] == props[INJECTION]
    with pytest.raises(NoSuchDatabaseError):
        catalog.database_properties("missing")


# -- tables ---------------------------------------------------------------------------------------------------
def test_create_write_and_read_table(filled: Catalog) -> None:
    t = filled.table("db.t")
    assert t.read().sort_by("id").equals(ROWS)
    assert t.arrow_schema.names == ["id", "v"]
    assert filled.table_exists("db.t") and filled.table_exists(Identifier("db", "t"))


def test_create_existing_table_refused_unless_exist_ok(filled: Catalog) -> None:
    other = pa.schema([("x", pa.int32())])
    with pytest.raises(TableAlreadyExistsError, match="db.t"):
        filled.create_table("db.t", other)
    kept = filled.create_table("db.t", other, exist_ok=True)
    assert kept.arrow_schema.names == ["id", "v"]  # the existing table, not replaced
    assert kept.read().num_rows == 3


def test_create_table_in_missing_database(catalog: Catalog) -> None:
    with pytest.raises(NoSuchDatabaseError, match="ghost"):
        catalog.create_table("ghost.t", SCHEMA)
    assert not catalog.database_exists("ghost")


def test_missing_table(filled: Catalog) -> None:
    assert not filled.table_exists("db.nope")
    with pytest.raises(NoSuchTableError, match="db.nope"):
        filled.table("db.nope")
    with pytest.raises(NoSuchTableError):
        filled.table("ghost.t")


def test_list_tables_sorted(filled: Catalog) -> None:
    filled.create_table("db.a", SCHEMA)
    assert filled.list_tables("db") == ["a", "t", "u"]
    assert filled.list_tables("other") == []


def test_drop_table(filled: Catalog) -> None:
    filled.drop_table("db.t")
    assert not filled.table_exists("db.t")
    assert filled.list_tables("db") == ["u"]
    filled.create_table("db.t", SCHEMA)  # the name is free again, and the old rows are gone
    assert filled.table("db.t").read().num_rows == 0


def test_drop_missing_table(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(NoSuchTableError, match="db.nope"):
        filled.drop_table("db.nope")
    filled.drop_table("db.nope", ignore_missing=True)
    filled.drop_table("ghost.nope", ignore_missing=True)
    assert state(filled) == before


def test_rename_table_keeps_data(filled: Catalog) -> None:
    filled.rename_table("db.t", "db.t2")
    assert filled.list_tables("db") == ["t2", "u"]
    assert filled.table("db.t2").read().num_rows == 3
    assert not filled.table_exists("db.t")
    filled.table("db.t2").write(ROWS)  # the renamed table still takes writes
    assert filled.table("db.t2").read().num_rows == 6


def test_rename_table_across_databases(filled: Catalog) -> None:
    filled.rename_table("db.t", "other.t")
    assert filled.list_tables("db") == ["u"]
    assert filled.list_tables("other") == ["t"]
    assert filled.table("other.t").read().num_rows == 3


def test_rename_onto_existing_table_refused(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(TableAlreadyExistsError, match="db.u"):
        filled.rename_table("db.t", "db.u")
    assert state(filled) == before
    assert filled.table("db.t").read().num_rows == 3


def test_rename_missing_table(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(NoSuchTableError, match="db.nope"):
        filled.rename_table("db.nope", "db.x")
    filled.rename_table("db.nope", "db.x", ignore_missing=True)
    assert state(filled) == before


def test_rename_into_missing_database(filled: Catalog) -> None:
    before = state(filled)
    with pytest.raises(NoSuchDatabaseError, match="ghost"):
        filled.rename_table("db.t", "ghost.t")
    assert state(filled) == before


def test_options_keys_and_comment_survive_reopening(catalog: Catalog, backend_under_test: Backend) -> None:
    catalog.create_database("db")
    catalog.create_table(
        "db.pk", pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())]),
        primary_key=["k", "p"], partition_keys=["p"], options={"bucket": "2", "my.option": "yes"},
        comment="orders, one row per key",
    )
    t = backend_under_test.open().table("db.pk")
    assert t.primary_keys == ("k", "p") and t.partition_keys == ("p",)
    assert t.schema.options["bucket"] == "2" and t.schema.options["my.option"] == "yes"
    assert t.schema.comment == "orders, one row per key"


def test_alter_table_through_the_catalog(filled: Catalog, backend_under_test: Backend) -> None:
    filled.alter_table("db.t", AddColumn(name="n", type=IntType()), SetOption(key="my.option", value="1"))
    t = backend_under_test.open().table("db.t")
    assert t.arrow_schema.names == ["id", "v", "n"]
    assert t.schema.options["my.option"] == "1"
    assert t.read().column("n").null_count == 3


def test_system_tables_read_but_never_change(filled: Catalog) -> None:
    snaps = filled.table("db.t$snapshots").read()
    assert snaps.num_rows == 1
    before = state(filled)
    for call in (
        lambda: filled.drop_table("db.t$snapshots"),
        lambda: filled.rename_table("db.t$snapshots", "db.x"),
        lambda: filled.create_table("db.x$files", SCHEMA),
    ):
        with pytest.raises(SystemTableError):
            call()
    assert state(filled) == before


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "", "a:b", "/abs"])
def test_bad_table_names_refused(filled: Catalog, name: str) -> None:
    before = state(filled)
    for call in (
        lambda: filled.create_table(Identifier("db", name), SCHEMA),
        lambda: filled.drop_table(Identifier("db", name), ignore_missing=True),
        lambda: filled.rename_table("db.t", Identifier("db", name)),
        lambda: filled.table(Identifier("db", name)),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    assert state(filled) == before
    assert filled.table("db.t").read().num_rows == 3


def test_injection_looking_names_are_stored_verbatim(catalog: Catalog, backend_under_test: Backend) -> None:
    db, table = "db' OR '1'='1", INJECTION
    catalog.create_database(db)
    catalog.create_database("victim")
    catalog.create_table("victim.t", SCHEMA).write(ROWS)
    catalog.create_table(Identifier(db, table), SCHEMA).write(ROWS)
    again = backend_under_test.open()
    assert sorted(again.list_databases()) == sorted([db, "victim"])
    assert again.list_tables(db) == [table]
    assert again.table(Identifier(db, table)).read().num_rows == 3
    assert again.table("victim.t").read().num_rows == 3  # nothing was executed
    again.rename_table(Identifier(db, table), Identifier(db, table + " 2"))
    again.drop_table(Identifier(db, table + " 2"))
    assert again.list_tables(db) == [] and again.list_tables("victim") == ["t"]


def test_injection_looking_options_and_comment_are_stored_verbatim(filled: Catalog,
                                                                   backend_under_test: Backend) -> None:
    options = {INJECTION: "v'); DELETE FROM paimon_tables; --", "quote\"key": "back\\slash"}
    filled.create_table("db.opts", SCHEMA, options=options, comment=INJECTION)
    t = backend_under_test.open().table("db.opts")
    assert {k: t.schema.options[k] for k in options} == options
    assert t.schema.comment == INJECTION
    assert filled.list_tables("db") == ["opts", "t", "u"]


def test_a_second_catalog_instance_sees_the_same_state(filled: Catalog, backend_under_test: Backend) -> None:
    other = backend_under_test.open()
    assert state(other) == state(filled)
    other.table("db.t").write(ROWS)
    assert filled.table("db.t").read().num_rows == 6
    other.drop_table("db.u")
    assert not filled.table_exists("db.u")


def test_concurrent_creates_from_two_processes_one_wins(filled: Catalog, backend_under_test: Backend) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            results = pool.starmap(
                workers.create_table,
                [(backend_under_test.spec, "db.race", tag, barrier) for tag in ("a", "b")],
            )
    assert sorted(results) == ["TableAlreadyExistsError", "created"], results
    winner = "a" if results[0] == "created" else "b"
    t = filled.table("db.race")
    assert t.arrow_schema.names == ["id", "v", f"from_{winner}"]
    t.write(ROWS.append_column(f"from_{winner}", pa.array([1, 2, 3], pa.int32())))
    assert t.read().num_rows == 3
    assert filled.list_tables("db") == ["race", "t", "u"]


def test_concurrent_database_creates_from_two_processes_one_wins(catalog: Catalog, backend_under_test: Backend) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            results = pool.starmap(workers.create_database, [(backend_under_test.spec, "race", barrier)] * 2)
    assert sorted(results) == ["DatabaseAlreadyExistsError", "created"], results
    assert catalog.list_databases() == ["race"]
