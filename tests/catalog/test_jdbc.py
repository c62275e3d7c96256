"""The JDBC catalog beyond the contract: URI spellings, Paimon's metastore rows, and pypaimon on one metastore."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

import laketide
from laketide.catalog.jdbc_url import metastore_url
from laketide.exceptions import InvalidOptionError, NoSuchTableError, UnsupportedFeatureError
from tests.catalog.postgres import PostgresServer
from tests.catalog.pypaimon_runner import PyPaimonCatalog, PyPaimonCatalogError, pypaimon_python

FIELDS = [["id", "int64"], ["v", "string"]]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def test_paimon_and_sqlalchemy_uri_spellings() -> None:
    assert metastore_url("jdbc:sqlite:/tmp/x.db", {}).render_as_string() == "sqlite:////tmp/x.db"
    assert metastore_url("sqlite:////tmp/x.db", {}).database == "/tmp/x.db"
    pg = metastore_url("jdbc:postgresql://h:5433/meta?sslmode=disable",
                       {"jdbc.user": "u", "jdbc.password": "p@ss/word"})
    assert (pg.drivername, pg.host, pg.port, pg.database, pg.username, pg.password) == (
        "postgresql+psycopg", "h", 5433, "meta", "u", "p@ss/word")
    assert pg.query == {"sslmode": "disable"}
    assert metastore_url("postgresql://a@h/db", {}).drivername == "postgresql+psycopg"
    with pytest.raises(UnsupportedFeatureError, match="jdbc:oracle"):
        metastore_url("jdbc:oracle:thin:@h:1521:x", {})
    with pytest.raises(InvalidOptionError, match="uri"):
        metastore_url("", {})
    with pytest.raises(InvalidOptionError, match="not-a-url"):
        metastore_url("not-a-url", {})


def test_bad_catalog_options_are_named(tmp_path: Path) -> None:
    uri = f"jdbc:sqlite:{tmp_path / 'c.db'}"
    with pytest.raises(InvalidOptionError, match="lock.enabled"):
        laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=uri, **{"lock.enabled": "maybe"})
    with pytest.raises(InvalidOptionError, match="uri"):
        laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc")
    with pytest.raises(InvalidOptionError, match="uri"):
        laketide.load_catalog(str(tmp_path / "wh"), metastore="rest")
    with pytest.raises(InvalidOptionError, match="lock-acquire-timeout"):
        laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=uri, **{"lock-acquire-timeout": "soon"})


def test_metastore_rows_are_paimons(tmp_path: Path) -> None:
    db_file = tmp_path / "c.db"
    cat = laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=f"sqlite:///{db_file}",
                                **{"catalog-key": "k1"})
    cat.create_database("d", properties={"owner": "me"})
    cat.create_table("d.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    engine = sa.create_engine(f"sqlite:///{db_file}")
    with engine.connect() as conn:
        tables = sorted(sa.inspect(conn).get_table_names())
        rows = conn.execute(sa.text("SELECT catalog_key, database_name, table_name FROM paimon_tables")).all()
        props = dict(conn.execute(sa.text(
            "SELECT property_key, property_value FROM paimon_database_properties")).all())
        tprops = dict(conn.execute(sa.text(
            "SELECT property_key, property_value FROM paimon_table_properties")).all())
    engine.dispose()
    assert tables == ["paimon_database_properties", "paimon_table_properties", "paimon_tables", "paimon_views"]
    assert rows == [("k1", "d", "t")]
    assert props == {"exists": "true", "owner": "me", "location": f"{tmp_path / 'wh'}/d.db"}
    assert tprops["primary-key"] == "id" and tprops["bucket"] == "2"
    # Another catalog key in the same database is another catalog.
    other = laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=f"sqlite:///{db_file}")
    assert other.list_databases() == []
    with pytest.raises(NoSuchTableError):
        other.table("d.t")


def test_too_long_values_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    cat = laketide.load_catalog(str(tmp_path / "wh"), metastore="jdbc", uri=f"jdbc:sqlite:{tmp_path / 'c.db'}")
    with pytest.raises(InvalidOptionError, match="owner"):
        cat.create_database("d", properties={"owner": "x" * 1001})
    assert cat.list_databases() == []
    cat.create_database("d")
    with pytest.raises(InvalidOptionError, match="my.option"):
        cat.create_table("d.t", SCHEMA, options={"my.option": "x" * 1001})
    assert cat.list_tables("d") == [] and not (tmp_path / "wh" / "d.db" / "t").exists()


# -- pypaimon on the same metastore ---------------------------------------------------------------------------
def shared_catalogs(tmp_path: Path, uri: str, **extra: str) -> tuple[laketide.Catalog, PyPaimonCatalog]:
    warehouse = str(tmp_path / "warehouse")
    ours = laketide.load_catalog(warehouse, metastore="jdbc", uri=uri, **extra)
    theirs = PyPaimonCatalog(pypaimon_python(), {"metastore": "jdbc", "uri": uri, "warehouse": warehouse, **extra},
                             tmp_path / "pypaimon")
    return ours, theirs


def check_both_ways(ours: laketide.Catalog, theirs: PyPaimonCatalog) -> None:
    # laketide creates and writes; pypaimon lists, reads and appends.
    ours.create_database("lt", properties={"owner": "laketide"})
    ours.create_table("lt.orders", SCHEMA, primary_key=["id"], options={"bucket": "1"}, comment="from laketide")
    ours.table("lt.orders").write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    listed_dbs, listed, read, schema = theirs.run(
        {"op": "list_databases"}, {"op": "list_tables", "database": "lt"}, {"op": "read", "name": "lt.orders"},
        {"op": "schema", "name": "lt.orders"},
    )
    assert "lt" in listed_dbs and listed == ["orders"]
    assert sorted(zip(read["id"], read["v"], strict=True)) == [(1, "a"), (2, "b")]
    assert schema["primary_keys"] == ["id"] and schema["comment"] == "from laketide"
    theirs.one("write", name="lt.orders", fields=FIELDS, rows={"id": [2, 3], "v": ["B", "c"]})
    got = ours.table("lt.orders").read().sort_by("id")
    assert got.to_pydict() == {"id": [1, 2, 3], "v": ["a", "B", "c"]}

    # pypaimon creates and writes; laketide lists, reads, appends, renames and drops.
    theirs.run(
        {"op": "create_database", "name": "pp"},
        {"op": "create_table", "name": "pp.events", "fields": FIELDS, "partition_keys": ["v"]},
        {"op": "write", "name": "pp.events", "fields": FIELDS, "rows": {"id": [10, 11], "v": ["x", "y"]}},
    )
    assert "pp" in ours.list_databases() and ours.list_tables("pp") == ["events"]
    t = ours.table("pp.events")
    assert t.partition_keys == ("v",)
    assert sorted(t.read().column("id").to_pylist()) == [10, 11]
    t.write(pa.table({"id": [12], "v": ["x"]}, schema=SCHEMA))
    assert sorted(theirs.one("read", name="pp.events")["id"]) == [10, 11, 12]
    ours.rename_table("pp.events", "pp.events2")
    assert theirs.one("list_tables", database="pp") == ["events2"]
    assert sorted(theirs.one("read", name="pp.events2")["id"]) == [10, 11, 12]
    theirs.one("drop_table", name="lt.orders")
    assert ours.list_tables("lt") == []
    # Their create refuses a name ours took, and the other way round.
    ours.create_table("pp.taken", SCHEMA)
    with pytest.raises(PyPaimonCatalogError, match="(?i)exist"):
        theirs.one("create_table", name="pp.taken", fields=FIELDS)


def test_pypaimon_and_laketide_share_a_sqlite_metastore(tmp_path: Path) -> None:
    ours, theirs = shared_catalogs(tmp_path, f"jdbc:sqlite:{tmp_path / 'shared.sqlite'}")
    check_both_ways(ours, theirs)


def test_pypaimon_and_laketide_share_a_postgresql_metastore(tmp_path: Path, postgres_server: PostgresServer) -> None:
    uri = postgres_server.fresh_database_uri()
    ours, theirs = shared_catalogs(tmp_path, uri, **{"jdbc.user": postgres_server.user})
    check_both_ways(ours, theirs)
