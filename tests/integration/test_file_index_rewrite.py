"""Table.rewrite_file_index: existing files get the indexes the options ask for now, in one snapshot; data files
stay; old sidecars live until the snapshots using them expire (Paimon's rewrite_file_index procedure)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from laketide.expr.predicate import col
from laketide.schema.changes import RemoveOption, SetOption
from laketide.table.table import Table
from tests.integration.test_file_index_write import INDEXES, SCHEMA, container_of, live_files, rows

PARTITIONED = pa.schema([*SCHEMA, ("dt", pa.string())])


def set_options(t: Table, options: dict[str, str]) -> Table:
    return t.alter(*(SetOption(k, v) for k, v in options.items()))


def index_types(t: Table) -> list[set[tuple[str, str]]]:
    return [{(e.column, e.index_type) for e in container_of(t, f).entries} if (f.embedded_index or f.extra_files)
            else set() for f in live_files(t)]


def test_adds_indexes_to_files_written_before(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):
        t.write(rows(100, start=i * 100))
    names = {f.file_name for f in live_files(t)}
    before = t.latest_snapshot()
    assert t.scan(where=col("grp") == 1).explain().file_index.files_with_index == 0
    t = set_options(t, INDEXES)
    sid = t.rewrite_file_index()
    assert sid is not None and t.latest_snapshot().commit_kind.value == "COMPACT"
    assert {f.file_name for f in live_files(t)} == names  # data files are not rewritten
    assert index_types(t) == [{("name", "bloom-filter"), ("grp", "bitmap"), ("amount", "bsi")}] * 3
    report = t.scan(where=col("amount") == 3 * 150).explain().file_index
    assert report.files_with_index == report.files_planned and report.rows_selected == 1
    assert t.read().sort_by("id").to_pylist() == rows(300).to_pylist()
    assert t.read(snapshot_id=before.id).num_rows == 300  # the snapshot before still reads
    assert t.rewrite_file_index() is None  # nothing changes a second time


def test_drops_indexes_no_longer_configured(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=INDEXES)
    t.write(rows(100))
    t = t.alter(RemoveOption("file-index.bloom-filter.columns"))
    t.rewrite_file_index()
    assert index_types(t) == [{("grp", "bitmap"), ("amount", "bsi")}]
    t = t.alter(RemoveOption("file-index.bitmap.columns"), RemoveOption("file-index.bsi.columns"))
    t.rewrite_file_index()
    [f] = live_files(t)
    assert f.embedded_index is None and f.extra_files == ()


def test_new_sidecar_name_and_old_one_expires_with_its_snapshot(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={"file-index.bitmap.columns": "grp",
                                                       "file-index.in-manifest-threshold": "1 b"})
    t.write(rows(100))
    [f] = live_files(t)
    assert f.extra_files == (f"{f.file_name}.index",)
    t = set_options(t, {"file-index.bsi.columns": "amount"})
    t.rewrite_file_index()
    [g] = live_files(t)
    assert g.file_name == f.file_name and g.extra_files == (f"{f.file_name}-1.index",)
    t = set_options(t, {"file-index.bloom-filter.columns": "name"})
    t.rewrite_file_index()
    [h] = live_files(t)
    assert h.extra_files == (f"{f.file_name}-2.index",)
    bucket = Path(t.path) / "bucket-0"
    assert (bucket / f"{f.file_name}.index").exists()  # older snapshots still use it
    t.expire_snapshots(retain_max=1, retain_min=1)
    left = sorted(p.name for p in bucket.iterdir())
    assert left == sorted([f.file_name, f"{f.file_name}-2.index"])
    assert t.read(where=col("name") == "name-7").column("id").to_pylist() == [7]


def test_only_the_given_partitions(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", PARTITIONED, partition_keys=["dt"])
    for dt in ("a", "b"):
        t.write(rows(50).append_column("dt", pa.array([dt] * 50)))
    t = set_options(t, {"file-index.bitmap.columns": "grp"})
    t.rewrite_file_index(partitions=[{"dt": "a"}])
    by_part = {}
    for e in t.file_scan().plan(t.latest_snapshot()):
        by_part[t.file_scan().partition_codec.values(e.partition)[0]] = e.file.embedded_index is not None
    assert by_part == {"a": True, "b": False}


def test_pk_table_with_deletion_vectors(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(200))
    t.write(rows(100, start=150))
    expected = t.read().sort_by("id").to_pylist()
    t = set_options(t, {"file-index.bitmap.columns": "grp"})
    t.rewrite_file_index()
    assert all(types == {("grp", "bitmap")} for types in index_types(t))
    assert t.read().sort_by("id").to_pylist() == expected
    got = t.read(where=col("grp") == 2).sort_by("id").to_pylist()
    assert got == [r for r in expected if r["grp"] == 2]


def test_empty_table_and_unknown_partition_key(catalog) -> None:  # noqa: ANN001
    from laketide.exceptions import SchemaError

    t = catalog.create_table("db.t", SCHEMA, options=INDEXES)
    assert t.rewrite_file_index() is None
    t.write(rows(10))
    with pytest.raises(SchemaError, match="nope"):
        t.rewrite_file_index(partitions=[{"nope": 1}])


def test_rewrite_losing_to_a_concurrent_compaction_leaves_nothing(catalog, monkeypatch) -> None:  # noqa: ANN001
    from laketide.exceptions import CommitConflictError

    t = catalog.create_table("db.t", SCHEMA, options={"file-index.in-manifest-threshold": "1 b"})
    for i in range(3):
        t.write(rows(50, start=i * 50))
    t = set_options(t, {"file-index.bitmap.columns": "grp"})
    other = catalog.table("db.t")  # another job compacts while the rewrite reads the files
    real_commit = t.commit

    def commit_after_a_compaction(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        other.compact(full=True)
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(t, "commit", commit_after_a_compaction)
    with pytest.raises(CommitConflictError):
        t.rewrite_file_index()
    live = {x for f in live_files(catalog.table("db.t")) for x in f.extra_files}  # the compaction's own index
    assert {p.name for p in Path(t.path).rglob("*.index")} == live  # the rewrite's sidecars are gone
    assert catalog.table("db.t").read().sort_by("id").to_pylist() == rows(150).to_pylist()
    monkeypatch.undo()
    fresh = catalog.table("db.t")
    assert index_types(fresh) == [{("grp", "bitmap")}]  # the compacted file was indexed when written
    assert fresh.rewrite_file_index() is None  # nothing left to rewrite
