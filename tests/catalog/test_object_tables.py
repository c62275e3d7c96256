"""Object tables: the files under a directory, listed at every read (JDBC and REST keep them; the filesystem
catalog refuses them, as Paimon's does)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from laketide.catalog import Catalog
from laketide.exceptions import NoSuchTableError, ReadOnlyTableError, UnsupportedFeatureError
from laketide.table.object_table import ObjectTable
from tests.catalog.conftest import Backend


def make_files(root: Path) -> dict[str, bytes]:
    files = {"a.txt": b"hello", "img/cat.png": b"\x89PNG....", "img/deep/x.bin": b"", "b c'; --.csv": b"1,2\n"}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_object_table_lists_exactly_the_files_present(catalog: Catalog, backend_under_test: Backend,
                                                     tmp_path: Path) -> None:
    root = tmp_path / "objects"
    files = make_files(root)
    catalog.create_database("db")
    if backend_under_test.kind == "filesystem":
        with pytest.raises(UnsupportedFeatureError, match="type"):
            catalog.create_object_table("db.objs", str(root))
        assert catalog.list_tables("db") == []
        return
    catalog.create_object_table("db.objs", str(root), comment="raw files")
    t = backend_under_test.open().table("db.objs")
    assert isinstance(t, ObjectTable)
    got = t.read()
    assert got.column_names == ["path", "name", "length", "mtime", "atime", "owner"]
    assert got.column("path").to_pylist() == sorted(files)
    assert got.column("name").to_pylist() == [p.rsplit("/", 1)[-1] for p in sorted(files)]
    assert got.column("length").to_pylist() == [len(files[p]) for p in sorted(files)]
    assert got.column("mtime").to_pylist() == [os.stat(root / p).st_mtime_ns // 1_000_000 for p in sorted(files)]
    assert t.schema.comment == "raw files"
    # Every read lists again: a new file appears, a deleted one is gone.
    (root / "img" / "new.gif").write_bytes(b"GIF89a")
    (root / "a.txt").unlink()
    again = t.read(columns=["path", "length"])
    assert again.to_pydict() == {"path": sorted([*files, "img/new.gif"][1:]),
                                 "length": [len(files["b c'; --.csv"]), 8, 0, 6]}
    with pytest.raises(ReadOnlyTableError, match="db.objs"):
        t.write()
    with pytest.raises(NoSuchTableError):
        catalog.table("db.objs$snapshots")
    assert catalog.list_tables("db") == ["objs"]
    catalog.drop_table("db.objs")
    assert (root / "img" / "cat.png").is_file()  # dropping the table leaves the listed files alone


def test_object_table_of_its_own_directory(catalog: Catalog, backend_under_test: Backend) -> None:
    catalog.create_database("db")
    if backend_under_test.kind == "filesystem":
        with pytest.raises(UnsupportedFeatureError, match="type"):
            catalog.create_object_table("db.own")
        assert not catalog.table_exists("db.own")
        return
    t = catalog.create_object_table("db.own")
    assert t.read().column("path").to_pylist() == ["schema/schema-0"]  # the table directory holds its schema
