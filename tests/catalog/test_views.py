"""Views in every catalog that keeps them (JDBC on SQLite and PostgreSQL, REST); the filesystem catalog refuses
them with a typed error, as Paimon's has none."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.catalog import Catalog, Identifier
from laketide.catalog.view import View
from laketide.exceptions import (
    DatabaseNotEmptyError,
    InvalidIdentifierError,
    NoSuchDatabaseError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ViewAlreadyExistsError,
)
from tests.catalog.conftest import Backend

SCHEMA = pa.schema([("id", pa.int64()), ("total", pa.float64())])
ORDERS = View.of(
    SCHEMA, "SELECT id, sum(amount) AS total FROM db.t GROUP BY id",
    dialects={"spark": "SELECT id, sum(amount) AS total FROM `db`.`t` GROUP BY id",
              "flink": "SELECT id, SUM(amount) AS total FROM db.t GROUP BY id"},
    comment="totals per id", options={"owner": "bi"},
)


@pytest.fixture()
def views(catalog: Catalog, backend_under_test: Backend) -> Catalog:
    if not backend_under_test.stores_views:
        pytest.fail("only for catalogs with views")  # never reached: tests check stores_views first
    catalog.create_database("db")
    catalog.create_database("other")
    catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    catalog.create_view("db.totals", ORDERS)
    return catalog


def needs_views(backend: Backend, catalog: Catalog) -> bool:
    """False (after checking the refusal) for a catalog without views."""
    if backend.stores_views:
        return True
    catalog.create_database("db")
    for call in (lambda: catalog.create_view("db.v", ORDERS), lambda: catalog.view("db.v"),
                 lambda: catalog.list_views("db"), lambda: catalog.drop_view("db.v"),
                 lambda: catalog.rename_view("db.v", "db.w")):
        with pytest.raises(UnsupportedFeatureError, match="views"):
            call()
    return False


@pytest.fixture()
def vcat(catalog: Catalog, backend_under_test: Backend, request: pytest.FixtureRequest) -> Catalog | None:
    if not needs_views(backend_under_test, catalog):
        return None
    return request.getfixturevalue("views")


def test_view_round_trip(vcat: Catalog | None, backend_under_test: Backend) -> None:
    if vcat is None:
        return
    got = backend_under_test.open().view("db.totals")
    assert got == ORDERS
    assert got.arrow_schema.names == ["id", "total"]
    assert got.query_for("spark").startswith("SELECT id, sum(amount) AS total FROM `db`")
    assert got.query_for("trino") == ORDERS.query  # no text for that dialect: the default query
    assert got.comment == "totals per id" and dict(got.options) == {"owner": "bi"}
    assert vcat.list_views("db") == ["totals"] and vcat.list_views("other") == []
    assert vcat.list_tables("db") == ["t"]  # views are not tables


def test_create_existing_view(vcat: Catalog | None) -> None:
    if vcat is None:
        return
    other = View.of(SCHEMA, "SELECT 1 AS id, 2.0 AS total")
    with pytest.raises(ViewAlreadyExistsError, match="db.totals"):
        vcat.create_view("db.totals", other)
    vcat.create_view("db.totals", other, exist_ok=True)
    assert vcat.view("db.totals") == ORDERS  # kept, not replaced


def test_missing_views(vcat: Catalog | None) -> None:
    if vcat is None:
        return
    with pytest.raises(NoSuchViewError, match="db.nope"):
        vcat.view("db.nope")
    with pytest.raises(NoSuchViewError, match="db.nope"):
        vcat.drop_view("db.nope")
    vcat.drop_view("db.nope", ignore_missing=True)
    with pytest.raises(NoSuchViewError):
        vcat.rename_view("db.nope", "db.x")
    vcat.rename_view("db.nope", "db.x", ignore_missing=True)
    with pytest.raises(NoSuchDatabaseError, match="ghost"):
        vcat.create_view("ghost.v", ORDERS)
    assert vcat.list_views("db") == ["totals"]


def test_drop_and_rename_views(vcat: Catalog | None) -> None:
    if vcat is None:
        return
    vcat.rename_view("db.totals", "other.totals2")
    assert vcat.list_views("db") == [] and vcat.list_views("other") == ["totals2"]
    assert vcat.view("other.totals2") == ORDERS
    vcat.create_view("db.totals", ORDERS)
    with pytest.raises(ViewAlreadyExistsError):
        vcat.rename_view("db.totals", "other.totals2")
    vcat.drop_view("other.totals2")
    assert vcat.list_views("other") == [] and vcat.list_views("db") == ["totals"]


def test_views_and_tables_share_one_namespace(vcat: Catalog | None) -> None:
    if vcat is None:
        return
    with pytest.raises(ViewAlreadyExistsError):
        vcat.create_view("db.t", ORDERS)
    with pytest.raises(TableAlreadyExistsError):
        vcat.create_table("db.totals", SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        vcat.rename_table("db.t", "db.totals")
    assert vcat.list_tables("db") == ["t"] and vcat.list_views("db") == ["totals"]


def test_a_view_keeps_its_database_from_being_dropped(vcat: Catalog | None) -> None:
    if vcat is None:
        return
    vcat.drop_table("db.t")
    with pytest.raises(DatabaseNotEmptyError):
        vcat.drop_database("db")
    assert vcat.list_views("db") == ["totals"]
    vcat.drop_database("db", cascade=True)
    assert not vcat.database_exists("db")
    vcat.create_database("db")
    assert vcat.list_views("db") == []


@pytest.mark.parametrize("name", ["..", "a/b", "", "../x"])
def test_bad_view_names(vcat: Catalog | None, name: str) -> None:
    if vcat is None:
        return
    with pytest.raises(InvalidIdentifierError):
        vcat.create_view(Identifier("db", name), ORDERS)
    assert vcat.list_views("db") == ["totals"]


def test_injection_looking_query_is_stored_verbatim(vcat: Catalog | None, backend_under_test: Backend) -> None:
    if vcat is None:
        return
    query = "SELECT 1; DROP TABLE paimon_views; --'\""
    vcat.create_view(Identifier("db", "v'; DELETE FROM paimon_views; --"), View.of(SCHEMA, query))
    again = backend_under_test.open()
    assert again.view(Identifier("db", "v'; DELETE FROM paimon_views; --")).query == query
    assert sorted(again.list_views("db")) == sorted(["totals", "v'; DELETE FROM paimon_views; --"])
