"""A catalog create that fails says why, and leaves the warehouse as it was (issue 16, house-keeping).

Storage failures come from FailingFileIO over the local disk (failing before the write, or after it took effect:
a lost acknowledgement); the other causes are real: a file where a directory must go, a schema create refuses.
Each failing call is checked the same way: its typed error (never "already exists" unless something does) and a
byte-identical warehouse tree.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from laketide.catalog import FileSystemCatalog
from laketide.exceptions import (
    CatalogError,
    DatabaseAlreadyExistsError,
    FileAlreadyExistsError,
    FileIOError,
    InjectedFaultError,
    SchemaError,
    TableAlreadyExistsError,
)
from laketide.fs.failing import FailingFileIO
from laketide.fs.local import LocalFileIO
from tests.tree import tree

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"id": [1, 2], "v": ["a", "b"]})


def _catalog(warehouse: Path, **failing: object) -> tuple[FileSystemCatalog, FailingFileIO]:
    """A catalog whose storage fails every eligible operation once armed (it starts disarmed)."""
    io = FailingFileIO(LocalFileIO(), failure_rate=1.0, budget=0, seed=7, **failing)  # type: ignore[arg-type]
    cat = FileSystemCatalog(str(warehouse), file_io=io)
    cat.create_database("db")
    return cat, io


def _not_already_exists(error: BaseException) -> None:
    assert not isinstance(error, (TableAlreadyExistsError, DatabaseAlreadyExistsError, FileAlreadyExistsError))
    assert "already exists" not in str(error)


@pytest.mark.parametrize("op", ["atomic-write", "list", "exists"])
def test_a_storage_failure_is_reported_as_itself_and_leaves_nothing(tmp_path: Path, op: str) -> None:
    cat, io = _catalog(tmp_path / "wh", ops={op}, lost_acks=False)
    before = tree(tmp_path)
    io.arm(1)
    with pytest.raises(InjectedFaultError, match=f"'{op}'") as info:
        cat.create_table("db.t", SCHEMA)
    _not_already_exists(info.value)
    assert tree(tmp_path) == before  # not even an empty table directory
    # The retry is a plain create, not an "already exists".
    cat.create_table("db.t", SCHEMA).write(ROWS)
    assert cat.table("db.t").read().num_rows == 2


def test_a_failure_with_exist_ok_is_reported_too(tmp_path: Path) -> None:
    cat, io = _catalog(tmp_path / "wh", ops={"atomic-write"}, lost_acks=False)
    before = tree(tmp_path)
    io.arm(1)
    with pytest.raises(InjectedFaultError):
        cat.create_table("db.t", SCHEMA, exist_ok=True)
    assert tree(tmp_path) == before


def test_a_lost_acknowledgement_is_a_created_table(tmp_path: Path) -> None:
    # The schema landed, then the storage reported a failure: the create did happen, and says so.
    cat, io = _catalog(tmp_path / "wh", ops={"atomic-write"}, lost_ack_share=1.0)
    io.arm(1)
    table = cat.create_table("db.t", SCHEMA)
    assert io.injected == 1
    table.write(ROWS)
    assert cat.table("db.t").read().num_rows == 2
    assert [p.name for p in (tmp_path / "wh" / "db.db" / "t" / "schema").iterdir()] == ["schema-0"]
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("db.t", SCHEMA)


class _RacedFailingFileIO(FailingFileIO):
    """Another catalog creates db.t just before this storage fails our schema write."""

    def __init__(self, other: FileSystemCatalog, **kw: object) -> None:
        super().__init__(LocalFileIO(), **kw)  # type: ignore[arg-type]
        self.other = other

    def _gate(self, op: str, path: str, *, mutating: bool) -> object:
        if op == "atomic-write" and self.budget > 0 and not self.other.table_exists("db.t"):
            # Their schema differs (a comment): a byte-identical schema-0 would count as this create's own.
            self.other.create_table("db.t", SCHEMA, comment="theirs").write(ROWS)
        return super()._gate(op, path, mutating=mutating)


@pytest.mark.parametrize("exist_ok", [False, True])
def test_a_failure_while_another_process_creates_the_table(tmp_path: Path, exist_ok: bool) -> None:
    # Our write fails, and the schema-0 there is someone else's: that is a real "already exists" (or, with
    # exist_ok, their table), and their table is left alone.
    warehouse = tmp_path / "wh"
    other = FileSystemCatalog(str(warehouse))
    other.create_database("db")
    io = _RacedFailingFileIO(other, failure_rate=1.0, budget=0, ops={"atomic-write"}, lost_acks=False)
    cat = FileSystemCatalog(str(warehouse), file_io=io)
    io.arm(1)
    if exist_ok:
        assert cat.create_table("db.t", SCHEMA, exist_ok=True).read().num_rows == 2
    else:
        with pytest.raises(TableAlreadyExistsError, match="created concurrently") as info:
            cat.create_table("db.t", SCHEMA)
        assert isinstance(info.value.__cause__, InjectedFaultError)
    assert other.table("db.t").read().num_rows == 2


def test_a_file_where_the_schema_directory_goes_is_named(tmp_path: Path) -> None:
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    cat.create_database("db")
    (tmp_path / "wh" / "db.db" / "t").mkdir()
    (tmp_path / "wh" / "db.db" / "t" / "schema").write_text("not a directory")
    before = tree(tmp_path)
    with pytest.raises(FileIOError, match="is a file, not a directory") as info:
        cat.create_table("db.t", SCHEMA)
    _not_already_exists(info.value)
    assert tree(tmp_path) == before


def test_a_file_where_the_database_directory_goes_is_named(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    (tmp_path / "wh" / "db.db").write_text("not a database")
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    before = tree(tmp_path)
    for exist_ok in (False, True):
        with pytest.raises(CatalogError, match="is a file, not a database directory") as info:
            cat.create_database("db", exist_ok=exist_ok)
        _not_already_exists(info.value)
    assert tree(tmp_path) == before


def test_a_warehouse_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "wh").write_text("not a warehouse")
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    before = tree(tmp_path)
    with pytest.raises(FileIOError, match="Not a directory") as info:
        cat.create_database("db")
    _not_already_exists(info.value)
    assert tree(tmp_path) == before


def test_a_schema_create_refuses_writes_nothing(tmp_path: Path) -> None:
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    cat.create_database("db")
    before = tree(tmp_path)
    with pytest.raises(SchemaError, match="nope") as info:
        cat.create_table("db.t", SCHEMA, primary_key=["nope"])
    _not_already_exists(info.value)
    assert tree(tmp_path) == before
