"""ALTER TABLE through a REST catalog: Paimon's AlterTableRequest goes to the server (laketide serve's API on a
real uvicorn on 127.0.0.1), which applies it with laketide's schema code; a second client, the served catalog and
reads / writes see the new schema; bad changes are typed errors that change nothing."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide
from laketide.catalog import Catalog
from laketide.catalog.base import Identifier
from laketide.catalog.rest import RestCatalog
from laketide.exceptions import (
    ColumnAlreadyExistsError,
    ColumnNotExistError,
    InvalidIdentifierError,
    InvalidOptionError,
    NoSuchTableError,
    SchemaChangeError,
    SystemTableError,
    UnsupportedFeatureError,
)
from laketide.fs.local import LocalFileIO
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
)
from laketide.table.table import Table
from tests.catalog import workers
from tests.catalog.conftest import Backend
from tests.catalog.rest_server import serving
from tests.catalog.test_rest import raw
from tests.tree import tree

TOKEN = "alter-t0ken"

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("dt", pa.string()),
    ("v", pa.string()),
    ("n", pa.int32()),
    pa.field("req", pa.int32(), nullable=False),
    ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("x", pa.string()),
])
ROWS = pa.table({"id": [1, 2], "dt": ["d1", "d2"], "v": ["a", "b"], "n": [10, None], "req": [5, 6],
                 "s": [{"a": 1, "b": "p"}, None], "x": ["gone", "gone"]}, schema=SCHEMA)
CREATE = {"primary_key": ["id", "dt"], "partition_keys": ["dt"],
          "options": {"bucket": "1", "commit.max-retries": "5"}, "comment": "at creation"}

# Every kind of change laketide has, in steps (one alter call each).
STEPS: list[tuple[Any, ...]] = [
    (SetOption("snapshot.num-retained.max", "70"), RemoveOption("commit.max-retries"), UpdateComment("altered")),
    (AddColumn(name="first", type="INT", move=Move.first()),
     AddColumn(name="after_v", type="STRING", comment="after v", move=Move.after("v")),
     AddColumn(name="before_n", type="DOUBLE", move=Move.before("n")),
     AddColumn(name="tail", type=pa.int64())),
    (RenameColumn("v", "v2"), DropColumn("x")),
    (UpdateColumnType("n", "BIGINT"), UpdateColumnType(("s", "a"), "BIGINT"),
     UpdateColumnType("req", "BIGINT NOT NULL"), UpdateColumnComment("v2", "the value")),
    (UpdateComment(None),),
]

FINAL_NAMES = ["first", "id", "dt", "v2", "after_v", "before_n", "n", "req", "s", "tail"]


def _served_catalog(kind: str, tmp_path: Path) -> Catalog:
    if kind == "filesystem":
        return laketide.load_catalog(str(tmp_path / "warehouse"))
    return laketide.load_catalog(str(tmp_path / "warehouse"), metastore="jdbc",
                                 uri=f"jdbc:sqlite:{tmp_path / 'server.sqlite'}")


@pytest.fixture(params=["filesystem", "jdbc"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Catalog]]:
    """(uri, the served catalog) with db.t holding ROWS; the server's own catalog is filesystem or JDBC."""
    cat = _served_catalog(request.param, tmp_path)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, **CREATE).write(ROWS)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious.txt").write_text("keep me")
    with serving(cat, token=TOKEN) as uri:
        yield uri, cat


def client(uri: str, **kwargs: Any) -> Catalog:
    return laketide.load_catalog("wh", metastore="rest", uri=uri, token=TOKEN, **kwargs)


def schema_json(table: Table) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(table.schema.to_json())
    del out["timeMillis"]
    return out


def test_every_change_kind_goes_through_the_server_and_is_seen_by_everyone(server, tmp_path: Path) -> None:  # noqa: ANN001
    uri, served = server
    ours, second = client(uri), client(uri)
    for step, changes in enumerate(STEPS, start=1):
        altered = ours.alter_table("db.t", *changes)
        assert altered.schema.id == step
        # A second client and the server's own catalog see the same schema.
        assert schema_json(second.table("db.t")) == schema_json(altered) == schema_json(served.table("db.t"))
    t = second.table("db.t")
    assert t.arrow_schema.names == FINAL_NAMES
    assert t.schema.comment is None
    assert t.schema.options == {"bucket": "1", "snapshot.num-retained.max": "70"}
    assert t.schema.primary_keys == ("id", "dt") and t.schema.partition_keys == ("dt",)
    fields = {f.name: f for f in t.schema.fields}
    assert str(fields["n"].type) == "BIGINT" and str(fields["req"].type) == "BIGINT NOT NULL"
    assert str(fields["s"].type) == "ROW<`a` BIGINT, `b` STRING>"
    assert fields["after_v"].description == "after v" and fields["v2"].description == "the value"
    # Rows written before read through the new schema; rows written after carry the new columns.
    old = t.read(columns=["id", "v2", "n", "first", "tail"]).sort_by("id").to_pydict()
    assert old == {"id": [1, 2], "v2": ["a", "b"], "n": [10, None], "first": [None, None], "tail": [None, None]}
    new_row = {"first": [7], "id": [3], "dt": ["d1"], "v2": ["c"], "after_v": ["av"], "before_n": [0.5],
               "n": [2**40], "req": [9], "s": [{"a": 2**40, "b": "q"}], "tail": [11]}
    t.write(pa.table(new_row, schema=t.arrow_schema))
    back = served.table("db.t").read().sort_by("id")
    assert back.num_rows == 3
    assert back.slice(2).to_pylist() == pa.table(new_row, schema=t.arrow_schema).to_pylist()


def test_table_alter_of_a_rest_table_asks_the_server(server, tmp_path: Path) -> None:  # noqa: ANN001
    """A table from the REST catalog alters through the server: its own file system may not even write schemas."""
    uri, served = server

    class NoSchemaWrites(LocalFileIO):
        def try_write_atomic(self, path: str, data: bytes) -> bool:
            if "/schema/" in path:
                raise PermissionError(f"this client may not write {path}")
            return super().try_write_atomic(path, data)

    t = client(uri, file_io=NoSchemaWrites()).table("db.t")
    same = t.alter(AddColumn(name="extra", type="INT"), SetOption("snapshot.num-retained.max", "90"))
    assert same is t and t.schema.id == 1 and "extra" in t.arrow_schema.names
    assert served.table("db.t").schema.options["snapshot.num-retained.max"] == "90"
    # A copy with dynamic options alters through the server too.
    t.copy({"scan.snapshot-id": "1"}).alter(DropColumn("extra"))
    assert "extra" not in served.table("db.t").arrow_schema.names
    assert t.refresh().schema.id == 2


def test_the_same_alter_through_the_filesystem_catalog_writes_the_same_schema_files(server, tmp_path: Path) -> None:  # noqa: ANN001
    uri, served = server
    direct = laketide.load_catalog(str(tmp_path / "direct"))
    direct.create_database("db")
    direct.create_table("db.t", SCHEMA, **CREATE)
    rest = client(uri)
    for changes in STEPS:
        rest.alter_table("db.t", *changes)
        direct.alter_table("db.t", *changes)
    via_rest, via_fs = served.table("db.t"), direct.table("db.t")
    assert via_rest.schema.id == via_fs.schema.id == len(STEPS)
    for schema_id in range(len(STEPS) + 1):
        a = json.loads(via_rest.schema_manager.file_io.read_bytes(via_rest.schema_manager.schema_path(schema_id)))
        b = json.loads(via_fs.schema_manager.file_io.read_bytes(via_fs.schema_manager.schema_path(schema_id)))
        a.pop("timeMillis")
        b.pop("timeMillis")
        assert a == b, schema_id


BAD_CHANGES: list[tuple[tuple[Any, ...], type[Exception], str]] = [
    ((DropColumn("nope"),), ColumnNotExistError, "nope"),
    ((RenameColumn("nope", "other"),), ColumnNotExistError, "nope"),
    ((UpdateColumnType("nope", "BIGINT"),), ColumnNotExistError, "nope"),
    ((UpdateColumnType(("s", "nope"), "BIGINT"),), ColumnNotExistError, "s.nope"),
    ((UpdateColumnComment("nope", "c"),), ColumnNotExistError, "nope"),
    ((AddColumn(name="z", type="INT", move=Move.after("nope")),), ColumnNotExistError, "nope"),
    ((AddColumn(name="v", type="INT"),), ColumnAlreadyExistsError, "'v'"),
    ((AddColumn(name="nn", type="INT NOT NULL"),), SchemaChangeError, "nn"),
    ((DropColumn("id"),), SchemaChangeError, "'id'"),
    ((DropColumn("dt"),), SchemaChangeError, "'dt'"),
    ((RenameColumn("dt", "day"),), SchemaChangeError, "'dt'"),
    ((UpdateColumnType("id", "INT"),), SchemaChangeError, "'id'"),
    ((UpdateColumnType("s", "BIGINT"),), SchemaChangeError, "s"),
    ((SetOption("bucket", "4"),), SchemaChangeError, "bucket"),
    ((SetOption("merge-engine", "aggregation"),), SchemaChangeError, "merge-engine"),
    ((SetOption("snapshot.num-retained.max", "many"),), InvalidOptionError, "snapshot.num-retained.max"),
    ((SetOption("buckett", "2"),), InvalidOptionError, "did you mean 'bucket'"),
    # A good change followed by a bad one: neither lands.
    ((AddColumn(name="fine", type="INT"), DropColumn("nope")), ColumnNotExistError, "nope"),
]


@pytest.mark.parametrize(("changes", "error", "match"), BAD_CHANGES)
def test_a_refused_change_is_the_filesystem_catalogs_typed_error_and_changes_nothing(
        server, tmp_path: Path, changes: tuple[Any, ...], error: type[Exception], match: str) -> None:  # noqa: ANN001
    uri, served = server
    before = tree(tmp_path / "warehouse")
    t = client(uri).table("db.t")
    with pytest.raises(error, match=match) as refused:
        t.alter(*changes)
    assert "db.t" in str(refused.value) and type(refused.value) is error
    # The filesystem catalog refuses the same change with the same type (and names the same column).
    with pytest.raises(error) as local:
        served.table("db.t").alter(*changes)
    assert type(local.value) is error
    assert getattr(refused.value, "column", None) == getattr(local.value, "column", None)
    if isinstance(local.value, (ColumnNotExistError, ColumnAlreadyExistsError)):
        assert local.value.column == match.strip("'")
    assert tree(tmp_path / "warehouse") == before
    assert t.schema.id == 0 and client(uri).table("db.t").schema.id == 0
    assert t.read().num_rows == 2


def test_missing_tables_system_tables_and_bad_names_are_refused(server, tmp_path: Path) -> None:  # noqa: ANN001
    uri, _ = server
    before = tree(tmp_path / "warehouse"), tree(tmp_path / "outside")
    c = client(uri)
    with pytest.raises(NoSuchTableError, match="db.missing"):
        c.alter_table("db.missing", SetOption("snapshot.num-retained.max", "30"))
    with pytest.raises(NoSuchTableError, match="nodb.t"):
        c.alter_table("nodb.t", SetOption("snapshot.num-retained.max", "30"))
    with pytest.raises(SystemTableError):
        c.alter_table("db.t$snapshots", SetOption("snapshot.num-retained.max", "30"))
    with pytest.raises(SystemTableError):
        c.alter_table("db.t$branch_b", SetOption("snapshot.num-retained.max", "30"))
    for name in ["db/../x.t", "db.t/..", "../outside.t", "db.a/b"]:
        with pytest.raises(InvalidIdentifierError):
            c.alter_table(name, SetOption("snapshot.num-retained.max", "30"))
    assert (tree(tmp_path / "warehouse"), tree(tmp_path / "outside")) == before


ALTER = {"changes": [{"action": "setOption", "key": "snapshot.num-retained.max", "value": "30"}]}


@pytest.mark.parametrize("path", [
    "/v1/databases/db/tables/..",
    "/v1/databases/db/tables/%2E%2E",
    "/v1/databases/db/tables/..%2F..%2Foutside",
    "/v1/databases/..%2Foutside/tables/t",
    "/v1/databases/%2E%2E/tables/outside",
    "/v1/databases/db/tables/t%24snapshots",
])
def test_raw_alter_requests_cannot_leave_the_warehouse(server, tmp_path: Path, path: str) -> None:  # noqa: ANN001
    uri, _ = server
    before = tree(tmp_path / "warehouse"), tree(tmp_path / "outside")
    status, error = raw(uri, "POST", path, ALTER, token=TOKEN)
    assert status in (400, 404), (status, error)
    assert (tree(tmp_path / "warehouse"), tree(tmp_path / "outside")) == before


def test_alter_needs_the_token(server, tmp_path: Path) -> None:  # noqa: ANN001
    uri, _ = server
    before = tree(tmp_path / "warehouse")
    for token in (None, "wrong"):
        assert raw(uri, "POST", "/v1/databases/db/tables/t", ALTER, token=token)[0] == 401
    assert tree(tmp_path / "warehouse") == before


# Requests as Java's or pypaimon's RESTCatalog sends them, including kinds laketide has no class for.
def _post(uri: str, *changes: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return raw(uri, "POST", "/v1/databases/db/tables/t", {"changes": list(changes)}, token=TOKEN)


def test_java_kinds_map_onto_laketide_changes(server) -> None:  # noqa: ANN001
    uri, served = server
    # keepNullability keeps the column's NOT NULL; without it a nullable target makes the column nullable.
    assert _post(uri, {"action": "updateColumnType", "fieldNames": ["req"], "newDataType": "BIGINT",
                       "keepNullability": True})[0] == 200
    assert str(served.table("db.t").schema.field("req").type) == "BIGINT NOT NULL"
    assert _post(uri, {"action": "updateColumnNullability", "fieldNames": ["req"], "newNullability": True})[0] == 200
    assert str(served.table("db.t").schema.field("req").type) == "BIGINT"
    # Nested paths, a move object as Java writes it, a null comment.
    status, _ = _post(
        uri,
        {"action": "updateColumnType", "fieldNames": ["s", "a"], "newDataType": "BIGINT", "keepNullability": False},
        {"action": "addColumn", "fieldNames": ["k"], "dataType": {"type": "ARRAY", "element": "INT"},
         "comment": None, "move": {"fieldName": "k", "referenceFieldName": "v", "type": "BEFORE"}},
        {"action": "updateColumnNullability", "fieldNames": ["k"], "newNullability": True},  # already nullable
        {"action": "updateColumnComment", "fieldNames": ["k"], "newComment": "ints"},
    )
    assert status == 200
    t = served.table("db.t")
    assert t.schema.id == 3
    assert t.arrow_schema.names == ["id", "dt", "k", "v", "n", "req", "s", "x"]
    assert str(t.schema.field("s").type) == "ROW<`a` BIGINT, `b` STRING>"
    assert t.schema.field("k").description == "ints"


@pytest.mark.parametrize(("change", "column", "status"), [
    ({"action": "dropColumn", "fieldNames": ["nope"]}, "nope", 400),
    ({"action": "renameColumn", "fieldNames": ["nope"], "newName": "other"}, "nope", 400),
    ({"action": "updateColumnType", "fieldNames": ["s", "nope"], "newDataType": "BIGINT"}, "s.nope", 400),
    ({"action": "addColumn", "fieldNames": ["v"], "dataType": "INT"}, "v", 409),
    ({"action": "renameColumn", "fieldNames": ["k"], "newName": "v"}, "v", 409),
])
def test_column_errors_name_the_column(
        server, tmp_path: Path, change: dict[str, Any], column: str, status: int) -> None:  # noqa: ANN001
    """A taken column is 409 COLUMN, as Java's server answers (Java's client raises ColumnAlreadyExistException). A
    missing one is 400, not Java's 404: pypaimon reads any 404 on alter as a missing table, and with
    ignore_if_not_exists as success. Both bodies name the column."""
    uri, _ = server
    before = tree(tmp_path / "warehouse")
    got, error = _post(uri, change)
    assert (got, error["resourceType"], error["resourceName"], error["code"]) == (status, "COLUMN", column, status)
    assert tree(tmp_path / "warehouse") == before


@pytest.mark.parametrize(("change", "status", "match"), [
    ({"action": "updateColumnPosition", "move": {"fieldName": "v", "type": "FIRST"}}, 501, "moving"),
    ({"action": "dropPrimaryKey"}, 501, "primary key"),
    ({"action": "updateColumnDefaultValue", "fieldNames": ["n"], "newDefaultValue": "1"}, 501, "default"),
    ({"action": "addColumn", "fieldNames": ["s", "c"], "dataType": "INT"}, 501, "nested"),
    ({"action": "frobnicate"}, 400, "frobnicate"),
    ({"action": "dropColumn"}, 400, "fieldNames"),
    ({"action": "setOption", "key": "a"}, 400, "value"),
    ({"action": "addColumn", "fieldNames": ["z"], "dataType": "NOSUCHTYPE"}, 400, "NOSUCHTYPE"),
    ({"action": "addColumn", "fieldNames": ["z"], "dataType": "INT", "move": {"type": "AFTER"}}, 400,
     "referenceFieldName"),
    ({"action": "updateColumnNullability", "fieldNames": ["n"], "newNullability": False}, 400, "NOT NULL"),
    ({"action": "updateColumnType", "fieldNames": ["n"], "newDataType": "BIGINT NOT NULL"}, 400, "NOT NULL"),
    ({"action": "updateColumnNullability", "fieldNames": ["id"], "newNullability": True}, 400, "'id'"),
    ("not an object", 400, "action"),
])
def test_bad_or_unsupported_requests_are_refused_and_change_nothing(
        server, tmp_path: Path, change: Any, status: int, match: str) -> None:  # noqa: ANN001
    uri, served = server
    before = tree(tmp_path / "warehouse")
    got, error = _post(uri, {"action": "setOption", "key": "snapshot.num-retained.max", "value": "40"}, change)
    assert got == status, error
    assert match in error["message"]
    assert tree(tmp_path / "warehouse") == before
    assert served.table("db.t").schema.id == 0


@pytest.mark.parametrize("body", [{"changes": "x"}, {}, [ALTER]])
def test_a_malformed_request_body_is_a_400(server, tmp_path: Path, body: Any) -> None:  # noqa: ANN001
    uri, _ = server
    before = tree(tmp_path / "warehouse")
    status, error = raw(uri, "POST", "/v1/databases/db/tables/t", body, token=TOKEN)
    assert status == 400 and "changes" in error["message"], error
    assert tree(tmp_path / "warehouse") == before


def test_an_unsupported_kind_reaches_the_client_as_a_typed_error(server) -> None:  # noqa: ANN001
    uri, _ = server
    c = client(uri)
    assert isinstance(c, RestCatalog)
    ident = Identifier("db", "t")
    # What a laketide client would get from a server that cannot apply a kind (HTTP 501).
    with pytest.raises(UnsupportedFeatureError, match="db.t"):
        c._call("POST", c._tb(ident), {"changes": [{"action": "dropPrimaryKey"}]})
    with pytest.raises(SchemaChangeError, match="nope"):
        c.alter_table("db.t", DropColumn("nope"))


def test_an_empty_alter_writes_the_next_schema_as_the_filesystem_catalog_does(server, tmp_path: Path) -> None:  # noqa: ANN001
    uri, served = server
    assert client(uri).alter_table("db.t").schema.id == 1
    direct = served.table("db.t")
    assert direct.schema.id == 1
    first = json.loads(direct.schema_manager.schema(0).to_json())
    assert schema_json(direct) == {k: v for k, v in first.items() if k != "timeMillis"} | {"id": 1}


@pytest.mark.parametrize("backend_under_test", ["filesystem", "rest"], indirect=True)
def test_concurrent_alters_from_two_processes_all_land(backend_under_test: Backend) -> None:
    """Both processes' changes land, one on top of the other (the filesystem catalog retries a lost race on the
    latest schema; through REST the server's catalog does)."""
    catalog = backend_under_test.open()
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            outcomes = pool.starmap(workers.add_columns,
                                    [(backend_under_test.spec, "db.t", tag, 4, barrier) for tag in ("a", "b")])
    assert outcomes == [["altered"] * 4] * 2
    t = catalog.table("db.t")
    assert t.schema.id == 8
    assert sorted(t.arrow_schema.names) == ["a_0", "a_1", "a_2", "a_3", "b_0", "b_1", "b_2", "b_3", "id"]
    assert t.schema_manager.list_ids() == list(range(9))
    # Each process's own columns keep their order, whatever the interleaving.
    names = t.arrow_schema.names
    for tag in "ab":
        mine = [n for n in names if n.startswith(tag)]
        assert mine == [f"{tag}_{i}" for i in range(4)]


# -- pypaimon's REST catalog alters through `laketide serve` ---------------------------------------------------
def test_pypaimon_alters_through_laketide_serve_as_laketide_does(tmp_path: Path) -> None:
    from tests.catalog.pypaimon_runner import PyPaimonCatalog, PyPaimonCatalogError, pypaimon_python
    from tests.catalog.test_rest import TOKEN as SERVE_TOKEN
    from tests.catalog.test_rest import laketide_serve_process

    simple = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32()),
                        ("x", pa.string())])
    rows = pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, None], "x": ["p", "q"]}, schema=simple)
    theirs_changes = [
        {"kind": "set_option", "kwargs": {"key": "snapshot.num-retained.max", "value": "50"}},
        {"kind": "remove_option", "kwargs": {"key": "commit.max-retries"}},
        {"kind": "update_comment", "kwargs": {"comment": "by pypaimon"}},
        # pypaimon 2.1.0 cannot serialize a Move (its MoveType enum is not JSON serializable): columns go last.
        {"kind": "add_column", "kwargs": {"field_name": "c", "data_type": "INT", "comment": "new"}},
        {"kind": "add_column", "kwargs": {"field_name": "f", "data_type": "DOUBLE"}},
        {"kind": "rename_column", "kwargs": {"field_name": "v", "new_name": "v2"}},
        {"kind": "update_column_type", "kwargs": {"field_name": "n", "new_data_type": "BIGINT"}},
        {"kind": "update_column_comment", "kwargs": {"field_name": "v2", "comment": "renamed"}},
        {"kind": "drop_column", "kwargs": {"field_name": "x"}},
        {"kind": "update_column_nullability", "kwargs": {"field_name": "n", "new_nullability": True}},
    ]
    ours_changes = [
        SetOption("snapshot.num-retained.max", "50"), RemoveOption("commit.max-retries"), UpdateComment("by pypaimon"),
        AddColumn(name="c", type="INT", comment="new"), AddColumn(name="f", type="DOUBLE"), RenameColumn("v", "v2"),
        UpdateColumnType("n", "BIGINT"),
        UpdateColumnComment("v2", "renamed"), DropColumn("x"),
    ]
    with laketide_serve_process(tmp_path / "warehouse") as uri:
        ours = laketide.load_catalog("wh", metastore="rest", uri=uri, token=SERVE_TOKEN)
        ours.create_database("pp")
        for name in ("pp.theirs", "pp.ours"):
            ours.create_table(name, simple, primary_key=["id"],
                              options={"bucket": "1", "commit.max-retries": "4"}).write(rows)
        theirs = PyPaimonCatalog(pypaimon_python(), {"metastore": "rest", "uri": uri, "warehouse": "wh",
                                                     "token.provider": "bear", "token": SERVE_TOKEN},
                                 tmp_path / "pypaimon")
        theirs.one("alter_table", name="pp.theirs", changes=theirs_changes)
        ours.alter_table("pp.ours", *ours_changes)
        by_them, by_us = ours.table("pp.theirs"), ours.table("pp.ours")
        assert by_them.schema.id == 1
        assert schema_json(by_them) == schema_json(by_us)
        assert by_them.arrow_schema.names == ["id", "v2", "n", "c", "f"]
        # pypaimon reads the altered table back through the server: the old rows under the new schema.
        read = theirs.one("read", name="pp.theirs")
        assert sorted(zip(read["id"], read["v2"], read["n"], read["c"], strict=True)) == [
            (1, "a", 1, None), (2, "b", None, None)]
        # A missing table, and a kind laketide cannot apply: pypaimon gets an error, nothing changes.
        with pytest.raises(PyPaimonCatalogError) as missing:
            theirs.one("alter_table", name="pp.nope", changes=theirs_changes[:1])
        assert missing.value.type == "TableNotExistException"
        with pytest.raises(PyPaimonCatalogError, match="(?i)not supported by laketide") as unsupported:
            theirs.one("alter_table", name="pp.theirs", changes=[
                {"kind": "update_column_default_value", "kwargs": {"field_names": ["n"], "default_value": "1"}}])
        assert unsupported.value.type == "NotImplementedException"  # HTTP 501, as Paimon's server answers
        # A missing column fails pypaimon's alter even with ignore_if_not_exists (pypaimon reads a 404 as a missing
        # table and would report success); a taken column is Java's 409.
        for ignore in (False, True):
            with pytest.raises(PyPaimonCatalogError, match="nope") as no_column:
                theirs.one("alter_table", name="pp.theirs", ignore_if_not_exists=ignore,
                           changes=[{"kind": "drop_column", "kwargs": {"field_name": "nope"}}])
            assert no_column.value.type != "TableNotExistException"
        with pytest.raises(PyPaimonCatalogError) as taken:
            theirs.one("alter_table", name="pp.theirs",
                       changes=[{"kind": "add_column", "kwargs": {"field_name": "c", "data_type": "INT"}}])
        assert taken.value.type == "AlreadyExistsException"
        assert ours.table("pp.theirs").schema.id == 1


def test_an_object_table_is_not_altered(tmp_path: Path) -> None:
    served = _served_catalog("jdbc", tmp_path)
    served.create_database("db")
    (tmp_path / "objects").mkdir()
    served.create_object_table("db.objs", str(tmp_path / "objects"))
    with serving(served, token=TOKEN) as uri:
        with pytest.raises(UnsupportedFeatureError, match="db.objs"):
            client(uri).alter_table("db.objs", SetOption("snapshot.num-retained.max", "30"))
    assert "snapshot.num-retained.max" not in served.table("db.objs").schema.options


# -- the JSON itself ---------------------------------------------------------------------------------------------
def test_changes_are_written_with_javas_field_names() -> None:
    from laketide.schema.change_json import change_to_json

    assert change_to_json(AddColumn(name="c", type="INT", comment="k", move=Move.after("v"))) == {
        "action": "addColumn", "fieldNames": ["c"], "dataType": "INT", "comment": "k",
        "move": {"fieldName": "c", "referenceFieldName": "v", "type": "AFTER"}}
    assert change_to_json(UpdateColumnType(("s", "a"), "BIGINT NOT NULL")) == {
        "action": "updateColumnType", "fieldNames": ["s", "a"], "newDataType": "BIGINT NOT NULL",
        "keepNullability": True}
    assert change_to_json(UpdateColumnComment("v", None)) == {
        "action": "updateColumnComment", "fieldNames": ["v"], "newComment": None}
    assert change_to_json(RenameColumn("a", "b")) == {"action": "renameColumn", "fieldNames": ["a"], "newName": "b"}
    assert change_to_json(AddColumn(name="r", type=pa.struct([("q", pa.int32())])))["dataType"] == {
        "type": "ROW", "fields": [{"id": 0, "name": "q", "type": "INT"}]}


ROUND_TRIP = [change for step in STEPS for change in step] + [
    AddColumn(name="last", type="INT", move=Move("last")), AddColumn(name="b4", type="INT", move=Move.before("v")),
    UpdateColumnType("n", "BIGINT NOT NULL"), UpdateColumnComment("v", None), UpdateComment("c"),
]


@pytest.mark.parametrize("change", ROUND_TRIP, ids=repr)
def test_every_change_survives_the_json_round_trip(change: Any, tmp_path: Path) -> None:
    from laketide.schema.change_json import change_to_json, changes_from_json

    cat = laketide.load_catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", SCHEMA, **CREATE)
    assert changes_from_json([json.loads(json.dumps(change_to_json(change)))], table.schema,
                             table_name="db.t") == [change]


def test_javas_column_errors_map_to_typed_column_errors(server) -> None:  # noqa: ANN001
    """Paimon's server answers a missing column with 404 and a taken one with 409, resource type COLUMN: those
    are column errors (schema change errors), not a missing or existing table."""
    uri, _ = server
    c = client(uri)
    assert isinstance(c, RestCatalog)
    path = "/v1/databases/db/tables/t"
    for status, message, kind in [(404, "Column nope does not exist", ColumnNotExistError),
                                  (409, "Column v already exists", ColumnAlreadyExistsError)]:
        body = json.dumps({"message": message, "code": status, "resourceType": "COLUMN", "resourceName": "v"})
        error = c._error("POST", path, status, body.encode())
        assert type(error) is kind and isinstance(error, SchemaChangeError) and str(error) == message
        assert error.column == "v"
    table = json.dumps({"message": "Table db.t does not exist", "code": 404, "resourceType": "TABLE"}).encode()
    assert type(c._error("POST", path, 404, table)) is NoSuchTableError
