"""Catalog verbs stay inside the warehouse and change only what they name (issue 14, defects 3, 4a, 7, 9).

Every refusal is checked the same way: the typed error, and a byte-identical directory tree around the
warehouse (its parent, so that an escape through '..' would show).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.catalog import Identifier
from laketide.cli import main as cli_main
from laketide.exceptions import (
    FileIOError,
    InvalidIdentifierError,
    NoSuchDatabaseError,
    NoSuchTableError,
    NoSuchWarehouseError,
    SchemaChangeError,
    SystemTableError,
    TableAlreadyExistsError,
    TableLocationNotEmptyError,
)
from laketide.schema.changes import AddColumn
from laketide.types import IntType
from tests.tree import tree

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"id": [1, 2], "v": ["a", "b"]})


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    """The warehouse's parent: what a '..' escape would reach."""
    return tmp_path


@pytest.fixture()
def filled(catalog, root: Path):  # noqa: ANN001, ANN201
    """A warehouse with db.t (two rows) and an empty database `other`."""
    catalog.create_table("db.t", SCHEMA).write(ROWS)
    catalog.create_database("other")
    # Something outside the warehouse that a path escape could damage.
    (root / "outside").mkdir()
    (root / "outside" / "precious.txt").write_text("keep me")
    return catalog


# -- names ---------------------------------------------------------------------------------------------------

BAD_NAMES = ["", " ", " a", "a ", ".", "..", "../x", "a/b", "a\\b", "a\x00b", "a\nb", "a\tb", "a\x7fb", "a:b",
             "a.b", "/abs"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_identifier_refuses_bad_table_names_like_strings(name: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        Identifier("db", name)
    with pytest.raises(InvalidIdentifierError):
        Identifier.parse(f"db.{name}")


@pytest.mark.parametrize("name", [*BAD_NAMES, "a$b"])
def test_identifier_refuses_bad_database_names(name: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        Identifier(name, "t")


def test_identifier_splits_system_tables_and_branches_like_java() -> None:
    assert Identifier("db", "t$snapshots") == Identifier.parse("db.t$snapshots") == Identifier("db", "t", "snapshots")
    b = Identifier.parse("db.t$branch_b1$files")
    assert (b.table, b.branch, b.system_table, str(b)) == ("t", "b1", "files", "db.t$branch_b1$files")
    assert Identifier.parse("db.t$branch_b1").branch == "b1"
    for bad in ("db.t$", "db.$snapshots", "db.t$a$b", "db.t$branch_$files", "db.t$branch_x$a$b"):
        with pytest.raises(InvalidIdentifierError):
            Identifier.parse(bad)
    with pytest.raises(InvalidIdentifierError):
        Identifier("db", "t$files", "snapshots")
    with pytest.raises(InvalidIdentifierError):
        Identifier.parse(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["..", "../../x", "a/b", "o/snapshot", ".", ""])
def test_table_verbs_refuse_path_escapes(filled, root: Path, name: str) -> None:  # noqa: ANN001
    before = tree(root)
    for call in (
        lambda: filled.create_table(Identifier("db", name), SCHEMA),
        lambda: filled.create_table(f"db.{name}", SCHEMA, exist_ok=True),
        lambda: filled.drop_table(Identifier("db", name)),
        lambda: filled.drop_table(f"db.{name}", ignore_missing=True),
        lambda: filled.rename_table("db.t", Identifier("db", name)),
        lambda: filled.rename_table(Identifier("db", name), "db.t2"),
        lambda: filled.table(Identifier("db", name)),
        lambda: filled.table_exists(Identifier("db", name)),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    assert tree(root) == before
    assert filled.table("db.t").read().num_rows == 2


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "", " db", "a.b", "a:b"])
def test_database_verbs_refuse_bad_names(filled, root: Path, name: str) -> None:  # noqa: ANN001
    before = tree(root)
    for call in (
        lambda: filled.create_database(name),
        lambda: filled.create_database(name, exist_ok=True),
        lambda: filled.drop_database(name, cascade=True),
        lambda: filled.drop_database(name, ignore_missing=True, cascade=True),
        lambda: filled.list_tables(name),
        lambda: filled.database_exists(name),
        lambda: filled.create_table(Identifier(name, "t"), SCHEMA),
    ):
        with pytest.raises(InvalidIdentifierError):
            call()
    assert tree(root) == before


def test_drop_of_dotdot_keeps_the_warehouse(filled, root: Path) -> None:  # noqa: ANN001
    # Before: drop_table(Identifier("d", "..")) deleted <warehouse>/d.db/.. = the whole warehouse.
    before = tree(root)
    with pytest.raises(InvalidIdentifierError):
        filled.drop_table(Identifier("db", ".."))
    assert tree(root) == before


def test_a_slash_in_a_table_name_does_not_nest_tables(filled, root: Path) -> None:  # noqa: ANN001
    before = tree(root)
    with pytest.raises(InvalidIdentifierError):
        filled.create_table("db.t/bucket-0", SCHEMA)
    with pytest.raises(InvalidIdentifierError):
        filled.drop_table("db.t/snapshot")
    assert tree(root) == before
    assert filled.table("db.t").read().num_rows == 2


def test_valid_names_still_work(catalog) -> None:  # noqa: ANN001
    for name in ("t_1", "T-2", "ünïcode", "with space", "_leading"):
        ident = Identifier("db", name)
        t = catalog.create_table(ident, SCHEMA)
        t.write(ROWS)
        assert catalog.table(ident).read().num_rows == 2
    assert catalog.list_tables("db") == sorted(["t_1", "T-2", "ünïcode", "with space", "_leading"])
    catalog.rename_table(Identifier("db", "with space"), Identifier("db", "renamed"))
    catalog.drop_table(Identifier("db", "renamed"))
    assert "renamed" not in catalog.list_tables("db")


# -- system tables and branches in mutating verbs -------------------------------------------------------------

SYSTEM_NAMES = ["db.t$snapshots", "db.t$branch_x", "db.t$branch_x$files", "db.t$schemas", "db.t$ro"]


@pytest.mark.parametrize("name", SYSTEM_NAMES)
def test_mutating_verbs_refuse_system_tables_and_branches(filled, root: Path, name: str) -> None:  # noqa: ANN001
    before = tree(root)
    for call in (
        lambda: filled.drop_table(name),
        lambda: filled.drop_table(name, ignore_missing=True),
        lambda: filled.drop_table(Identifier.parse(name)),
        lambda: filled.rename_table(name, "db.t2"),
        lambda: filled.rename_table("db.t", name),
        lambda: filled.rename_table(name, "db.t2", ignore_missing=True),
        lambda: filled.alter_table(name, AddColumn(name="c", type=IntType())),
        lambda: filled.create_table(name, SCHEMA),
        lambda: filled.create_table(name, SCHEMA, exist_ok=True),
    ):
        with pytest.raises(SystemTableError):
            call()
    assert tree(root) == before
    assert filled.table("db.t").read().num_rows == 2
    assert filled.list_tables("db") == ["t"]


def test_system_tables_still_read_and_missing_branches_are_refused_on_read(filled) -> None:  # noqa: ANN001
    assert filled.table("db.t$snapshots").read().num_rows == 1
    assert filled.table_exists("db.t$snapshots")
    assert not filled.table_exists("db.t$branch_x")
    with pytest.raises(NoSuchTableError, match="branch 'x'"):
        filled.table("db.t$branch_x")


def test_system_database_is_reserved(catalog, root: Path) -> None:  # noqa: ANN001
    before = tree(root)
    with pytest.raises(SystemTableError):
        catalog.create_database("sys")
    with pytest.raises(SystemTableError):
        catalog.create_table("sys.t", SCHEMA)
    assert tree(root) == before


def test_alter_table_of_a_data_table_still_works(filled) -> None:  # noqa: ANN001
    t = filled.alter_table("db.t", AddColumn(name="c", type=IntType()))
    assert t.schema.field_names == ["id", "v", "c"]


# -- create_table over leftovers, create failures --------------------------------------------------------------

def test_create_over_snapshots_without_schema_is_refused(filled, warehouse: str, root: Path) -> None:  # noqa: ANN001
    table_dir = Path(warehouse) / "db.db" / "t"
    for f in (table_dir / "schema").iterdir():
        f.unlink()  # what a drop that stopped half-way leaves
    before = tree(root)
    with pytest.raises(TableLocationNotEmptyError, match=str(table_dir / "snapshot")):
        filled.create_table("db.t", SCHEMA)
    with pytest.raises(TableLocationNotEmptyError):
        filled.create_table("db.t", SCHEMA, exist_ok=True)
    assert tree(root) == before


def test_create_into_an_empty_directory_still_works(catalog, warehouse: str) -> None:  # noqa: ANN001
    (Path(warehouse) / "db.db" / "t" / "snapshot").mkdir(parents=True)
    catalog.create_table("db.t", SCHEMA).write(ROWS)
    assert catalog.table("db.t").read().num_rows == 2


def test_a_failing_create_is_not_reported_as_already_exists(catalog, monkeypatch) -> None:  # noqa: ANN001
    def broken(path: str, data: bytes) -> bool:
        raise FileIOError(f"disk on fire while writing {path}")

    monkeypatch.setattr(catalog.file_io, "try_write_atomic", broken)
    with pytest.raises(FileIOError, match="disk on fire"):
        catalog.create_table("db.t", SCHEMA)
    with pytest.raises(FileIOError, match="disk on fire"):
        catalog.create_table("db.t", SCHEMA, exist_ok=True)


def test_a_concurrent_create_is_reported_as_already_exists(catalog, monkeypatch) -> None:  # noqa: ANN001
    catalog.create_table("db.t", SCHEMA).write(ROWS)
    # Another process created the table after our existence check: the schema-0 write loses the race.
    monkeypatch.setattr(type(catalog), "table_exists", lambda self, name: False)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", SCHEMA)
    assert catalog.create_table("db.t", SCHEMA, exist_ok=True).read().num_rows == 2


def test_alter_refusal_is_a_typed_error(filled) -> None:  # noqa: ANN001
    with pytest.raises(SchemaChangeError):
        filled.alter_table("db.t", AddColumn(name="id", type=IntType()))


# -- read-only calls create nothing ----------------------------------------------------------------------------

def test_read_only_calls_do_not_create_the_warehouse(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    cat = laketide.load_catalog(warehouse=str(typo))
    with pytest.raises(NoSuchWarehouseError, match=str(typo)):
        cat.list_databases()
    assert not cat.database_exists("db")
    assert not cat.table_exists("db.t")
    with pytest.raises(NoSuchDatabaseError, match="warehouse directory does not exist"):
        cat.list_tables("db")
    with pytest.raises(NoSuchTableError, match="warehouse directory does not exist"):
        cat.table("db.t")
    with pytest.raises(NoSuchTableError):
        cat.table("db.t$snapshots")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("db.t")
    cat.drop_table("db.t", ignore_missing=True)
    cat.drop_database("db", ignore_missing=True)
    with pytest.raises(NoSuchDatabaseError):
        cat.create_table("db.t", SCHEMA)
    assert not typo.exists()
    assert tree(tmp_path) == {}


def test_first_database_creates_the_warehouse(tmp_path: Path) -> None:
    wh = tmp_path / "deep" / "warehouse"
    cat = laketide.load_catalog(warehouse=str(wh))
    cat.create_database("db")
    assert cat.list_databases() == ["db"]
    cat.create_table("db.t", SCHEMA).write(ROWS)
    assert laketide.load_catalog(warehouse=str(wh)).table("db.t").read().num_rows == 2


def test_cli_reports_a_missing_warehouse(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    typo = tmp_path / "typo"
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--warehouse", str(typo), "databases"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "does not exist" in err and str(typo) in err
    for argv in (["tables", "db"], ["read", "db.t"], ["snapshots", "db.t"]):
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["--warehouse", str(typo), *argv])
        assert exit_info.value.code == 1
    assert not typo.exists()


def test_cli_still_lists_and_reads(filled, warehouse: str, capsys) -> None:  # noqa: ANN001
    cli_main(["--warehouse", warehouse, "databases"])
    assert capsys.readouterr().out.split() == ["db", "other"]
    cli_main(["--warehouse", warehouse, "tables", "db"])
    assert capsys.readouterr().out.split() == ["t"]
    cli_main(["--warehouse", warehouse, "read", "db.t"])
    assert "a" in capsys.readouterr().out
