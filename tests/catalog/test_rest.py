"""The REST catalog server: bearer auth, identifiers kept inside the warehouse, and pypaimon's REST catalog as the
client of ``laketide serve`` (a real subprocess on 127.0.0.1)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.catalog.rest import RestCatalogError
from laketide.exceptions import InvalidIdentifierError, InvalidOptionError
from tests.catalog.pypaimon_runner import PyPaimonCatalog, pypaimon_python
from tests.catalog.rest_server import serving
from tests.tree import tree

TOKEN = "t0ken-for-tests"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
FIELDS = [["id", "int64"], ["v", "string"]]


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, laketide.Catalog]]:
    """A filesystem warehouse with db.t (2 rows), served with a token; yields (uri, the served catalog)."""
    cat = laketide.load_catalog(str(tmp_path / "root" / "warehouse"))
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA).write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    (tmp_path / "root" / "outside").mkdir()
    (tmp_path / "root" / "outside" / "precious.txt").write_text("keep me")
    with serving(cat, token=TOKEN) as uri:
        yield uri, cat


def raw(uri: str, method: str, path: str, body: object = None, token: str | None = TOKEN) -> tuple[int, dict]:
    """One HTTP request with the path sent exactly as given (no client-side normalization of '..')."""
    host, port = uri.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, (json.loads(data) if data else {})


MUTATIONS = [
    ("POST", "/v1/databases", {"name": "new"}),
    ("DELETE", "/v1/databases/db", None),
    ("DELETE", "/v1/databases/db/tables/t", None),
    ("POST", "/v1/databases/db/tables", {"identifier": {"database": "db", "object": "x"},
                                          "schema": {"fields": [{"id": 0, "name": "a", "type": "INT"}]}}),
    ("POST", "/v1/tables/rename", {"source": {"database": "db", "object": "t"},
                                   "destination": {"database": "db", "object": "t2"}}),
]


@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", ""])
def test_requests_without_the_right_token_get_401_and_change_nothing(served, tmp_path: Path, token) -> None:  # noqa: ANN001
    uri, cat = served
    before = tree(tmp_path / "root")
    for method, path, body in [("GET", "/v1/config", None), ("GET", "/v1/databases", None), *MUTATIONS]:
        status, error = raw(uri, method, path, body, token=token)
        assert status == 401, (method, path, status, error)
        assert "databases" not in error  # no data leaks with the refusal
    assert tree(tmp_path / "root") == before
    with pytest.raises(RestCatalogError) as e:
        laketide.load_catalog("wh", metastore="rest", uri=uri, token=token)
    assert e.value.status == 401
    assert cat.list_tables("db") == ["t"]


def test_the_right_token_works(served) -> None:  # noqa: ANN001
    uri, _ = served
    assert raw(uri, "GET", "/v1/databases") == (200, {"databases": ["db"], "nextPageToken": None})
    client = laketide.load_catalog("wh", metastore="rest", uri=uri, token=TOKEN)
    assert client.table("db.t").read().num_rows == 2


ESCAPES = [
    ("POST", "/v1/databases", {"name": ".."}),
    ("POST", "/v1/databases", {"name": "../outside"}),
    ("POST", "/v1/databases", {"name": "a/b"}),
    ("DELETE", "/v1/databases/..", None),
    ("DELETE", "/v1/databases/%2E%2E", None),
    ("DELETE", "/v1/databases/db/tables/..", None),
    ("DELETE", "/v1/databases/db/tables/%2E%2E", None),
    ("DELETE", "/v1/databases/..%2Foutside", None),
    ("GET", "/v1/databases/db/tables/..%2F..%2Foutside", None),
    ("POST", "/v1/databases/db/tables", {"identifier": {"database": "db", "object": "../../outside/x"},
                                          "schema": {"fields": [{"id": 0, "name": "a", "type": "INT"}]}}),
    ("POST", "/v1/tables/rename", {"source": {"database": "db", "object": "t"},
                                   "destination": {"database": "..", "object": "outside"}}),
    ("POST", "/v1/tables/rename", {"source": {"database": "db", "object": "t"},
                                   "destination": {"database": "db", "object": "../../outside/t"}}),
]


@pytest.mark.parametrize(("method", "path", "body"), ESCAPES)
def test_identifiers_cannot_escape_the_warehouse(served, tmp_path: Path, method, path, body) -> None:  # noqa: ANN001
    uri, cat = served
    before = tree(tmp_path / "root")
    status, error = raw(uri, method, path, body)
    assert status in (400, 404), (status, error)
    assert tree(tmp_path / "root") == before
    assert cat.table("db.t").read().num_rows == 2


def test_client_refuses_bad_names_and_options(served) -> None:  # noqa: ANN001
    uri, _ = served
    client = laketide.load_catalog("wh", metastore="rest", uri=uri, token=TOKEN)
    with pytest.raises(InvalidIdentifierError):
        client.create_database("../x")
    with pytest.raises(InvalidOptionError, match="uri"):
        laketide.load_catalog("wh", metastore="rest", uri="ftp://x")


# -- pypaimon against `laketide serve` ------------------------------------------------------------------------
@contextmanager
def laketide_serve_process(warehouse: Path, *extra: str) -> Iterator[str]:
    """``laketide --warehouse W serve`` as a subprocess on a free port; the URI it prints once listening."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "laketide.cli", "--warehouse", str(warehouse), "serve",
         "--host", "127.0.0.1", "--port", "0", "--token", TOKEN, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if "listening on" not in line:
            proc.kill()
            _, err = proc.communicate(timeout=60)
            pytest.fail(f"laketide serve did not start: {line!r}\n{err}")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


@pytest.fixture()
def laketide_serve(tmp_path: Path) -> Iterator[str]:
    with laketide_serve_process(tmp_path / "warehouse") as uri:
        yield uri


def test_pypaimon_creates_writes_reads_and_lists_through_laketide_serve(laketide_serve: str, tmp_path: Path) -> None:
    options = {"metastore": "rest", "uri": laketide_serve, "warehouse": "wh", "token.provider": "bear",
               "token": TOKEN}
    theirs = PyPaimonCatalog(pypaimon_python(), options, tmp_path / "pypaimon")
    _, _, _, read, dbs, tables = theirs.run(
        {"op": "create_database", "name": "pp"},
        {"op": "create_table", "name": "pp.events", "fields": FIELDS, "primary_keys": ["id"],
         "options": {"bucket": "1"}, "comment": "through REST"},
        {"op": "write", "name": "pp.events", "fields": FIELDS, "rows": {"id": [1, 2, 3], "v": ["a", "b", "c"]}},
        {"op": "read", "name": "pp.events"},
        {"op": "list_databases"},
        {"op": "list_tables", "database": "pp"},
    )
    assert sorted(zip(read["id"], read["v"], strict=True)) == [(1, "a"), (2, "b"), (3, "c")]
    assert dbs == ["pp"] and tables == ["events"]
    # A second commit on top (the server publishes snapshot 2), then laketide reads what pypaimon wrote.
    theirs.one("write", name="pp.events", fields=FIELDS, rows={"id": [3, 4], "v": ["C", "d"]})
    ours = laketide.load_catalog("wh", metastore="rest", uri=laketide_serve, token=TOKEN)
    t = ours.table("pp.events")
    assert t.primary_keys == ("id",) and t.schema.comment == "through REST"
    assert t.read().sort_by("id").to_pydict() == {"id": [1, 2, 3, 4], "v": ["a", "b", "C", "d"]}
    assert t.latest_snapshot().id == 2
    # And the other way: laketide writes through the same server, pypaimon reads it.
    ours.create_table("pp.from_laketide", SCHEMA).write(pa.table({"id": [7], "v": ["z"]}, schema=SCHEMA))
    assert theirs.one("read", name="pp.from_laketide") == {"id": [7], "v": ["z"]}
    # The files are where the served warehouse keeps them.
    assert (tmp_path / "warehouse" / "pp.db" / "events" / "snapshot" / "snapshot-2").is_file()
    # A wrong token: pypaimon is refused too.
    wrong = PyPaimonCatalog(pypaimon_python(), {**options, "token": "nope"}, tmp_path / "pypaimon-wrong")
    with pytest.raises(Exception, match="(?i)not ?authori|401"):
        wrong.one("list_databases")


def test_pypaimon_reads_an_object_table_through_laketide_serve_over_jdbc(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    (objects / "sub").mkdir(parents=True)
    (objects / "a.bin").write_bytes(b"12345")
    (objects / "sub" / "b.txt").write_bytes(b"xy")
    meta = f"jdbc:sqlite:{tmp_path / 'meta.sqlite'}"
    with laketide_serve_process(tmp_path / "warehouse", "--metastore", "jdbc", "--uri", meta) as uri:
        ours = laketide.load_catalog("wh", metastore="rest", uri=uri, token=TOKEN)
        ours.create_database("db")
        ours.create_object_table("db.objs", str(objects))
        assert ours.table("db.objs").read().column("path").to_pylist() == ["a.bin", "sub/b.txt"]
        theirs = PyPaimonCatalog(pypaimon_python(), {"metastore": "rest", "uri": uri, "warehouse": "wh",
                                                     "token.provider": "bear", "token": TOKEN}, tmp_path / "pp")
        read = theirs.one("read", name="db.objs")
        assert sorted(zip(read["path"], read["length"], strict=True)) == [("a.bin", 5), ("sub/b.txt", 2)]
    # The server's JDBC metastore holds the table as Java's JdbcCatalog does.
    jdbc = laketide.load_catalog(str(tmp_path / "warehouse"), metastore="jdbc", uri=meta)
    assert jdbc.list_tables("db") == ["objs"]
    assert jdbc.table("db.objs").schema.options["type"] == "object-table"


def test_pypaimon_and_laketide_share_a_format_table_through_laketide_serve(tmp_path: Path) -> None:
    meta = f"jdbc:sqlite:{tmp_path / 'meta.sqlite'}"
    fields = [["id", "int64"], ["dt", "string"]]
    with laketide_serve_process(tmp_path / "warehouse", "--metastore", "jdbc", "--uri", meta) as uri:
        theirs = PyPaimonCatalog(pypaimon_python(), {"metastore": "rest", "uri": uri, "warehouse": "wh",
                                                     "token.provider": "bear", "token": TOKEN}, tmp_path / "pp")
        theirs.run(
            {"op": "create_database", "name": "db"},
            {"op": "create_table", "name": "db.plain", "fields": fields, "partition_keys": ["dt"],
             "options": {"type": "format-table", "file.format": "parquet"}},
            {"op": "write", "name": "db.plain", "fields": fields, "rows": {"id": [1, 2, 3], "dt": ["a", "a", "b"]}},
        )
        ours = laketide.load_catalog("wh", metastore="rest", uri=uri, token=TOKEN)
        t = ours.table("db.plain")
        assert sorted(zip(*t.read().to_pydict().values(), strict=True)) == [(1, "a"), (2, "a"), (3, "b")]
        assert t.read(partition={"dt": "b"}).column("id").to_pylist() == [3]
        t.write(pa.table({"id": [4], "dt": ["c"]}))
        read = theirs.one("read", name="db.plain")
        assert sorted(zip(read["id"], read["dt"], strict=True)) == [(1, "a"), (2, "a"), (3, "b"), (4, "c")]
