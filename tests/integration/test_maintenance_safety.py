"""Maintenance never reaches outside the table, never walks foreign directories, and survives a kill anywhere.

Issue 14, defects 4c (paths from metadata trusted on delete), 4d (orphan cleanup walked foreign directories) and
5 (a crash inside expiration left listed but unreadable snapshots).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing as mp
import os
import shutil
import time
from datetime import timedelta

import pyarrow as pa
import pytest

import laketide
from laketide.fs.failing import CrashingFileIO, FaultPoint
from laketide.meta.manifest_io import encode_records, to_records
from laketide.meta.manifest_schema import MANIFEST_FILE_META
from laketide.schema.changes import SetOption
from laketide.table.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def rows(ids: range, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids)}, schema=SCHEMA)


def ids_of(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def make_table(warehouse: str, name: str = "db.t", **options: str) -> Table:
    cat = laketide.load_catalog(warehouse=warehouse)
    cat.create_database("db", exist_ok=True)
    opts = {"bucket": "2", "bucket-key": "id", "write-only": "true", "compaction.min.file-num": "2", **options}
    return cat.create_table(name, SCHEMA, partition_keys=["dt"], options=opts)


def history(t: Table) -> dict[int, list[int]]:
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 5), "a" if i % 2 else "b"))
    t.compact(full=True)
    t.write(rows(range(100, 103), "a"), mode="overwrite", partition={"dt": "a"})
    for i in range(3):
        t.write(rows(range(200 + i * 10, 205 + i * 10), "b"))
    return {sid: ids_of(t.read(snapshot_id=sid)) for sid in t.snapshot_manager.snapshot_ids()}


def tree(root: str) -> dict[str, bytes]:
    """Every file under ``root`` with its content."""
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


def relative_files(root: str) -> set[str]:
    return {os.path.relpath(p, root) for p in tree(root)}


def victim(tmp_path, name: str) -> str:  # noqa: ANN001
    p = str(tmp_path / name)
    with open(p, "wb") as f:
        f.write(b"precious, not the table's")
    return p


def edit_snapshot(t: Table, sid: int, **fields: object) -> None:
    path = t.snapshot_manager.snapshot_path(sid)
    with open(path) as f:
        doc = json.load(f)
    doc.update(fields)
    with open(path, "w") as f:
        json.dump(doc, f)


def read_every_snapshot(t: Table) -> dict[int, list[int]]:
    fresh = Table(name=t.name, path=t.path, file_io=t.file_io)
    return {sid: ids_of(fresh.read(snapshot_id=sid)) for sid in fresh.snapshot_manager.snapshot_ids()}


# -- 4c: paths read from metadata ----------------------------------------------------------------------------------
def test_expire_skips_a_changelog_manifest_list_outside_the_table(tmp_path, caplog) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    outside = victim(tmp_path, "victim")
    # snapshot-1 names a changelog manifest list four levels up from manifest/: the victim.
    rel = os.path.relpath(outside, f"{t.path}/manifest")
    assert rel.startswith("../")
    edit_snapshot(t, 1, changelogManifestList=rel)
    with caplog.at_level(logging.WARNING, logger="laketide.meta.deletion"):
        assert t.expire_snapshots(retain_min=3, retain_max=3) == 6
    assert os.path.exists(outside)
    assert any(rel in r.getMessage() and "outside table db.t" in r.getMessage() for r in caplog.records)
    for sid in (7, 8, 9):
        assert ids_of(t.read(snapshot_id=sid)) == expected[sid]


def test_expire_skips_a_manifest_named_outside_the_table(tmp_path, caplog) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    history(t)
    outside = victim(tmp_path, "victim2")
    scan = t.file_scan()
    s1 = t.snapshot(1)
    rel = os.path.relpath(outside, f"{t.path}/manifest")
    metas = [dataclasses.replace(m, file_name=rel) for m in scan.manifest_list(s1.delta_manifest_list)]
    data = encode_records(to_records(metas), MANIFEST_FILE_META, fmt=t.options.manifest_format,
                          compression=t.options.manifest_compression)
    with open(f"{t.path}/manifest/manifest-list-tampered-0", "wb") as f:
        f.write(data)
    edit_snapshot(t, 1, deltaManifestList="manifest-list-tampered-0")
    with caplog.at_level(logging.WARNING, logger="laketide.meta.deletion"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert os.path.exists(outside)
    assert any(rel in r.getMessage() for r in caplog.records)
    assert not os.path.exists(f"{t.path}/manifest/manifest-list-tampered-0")  # the table's own file did go


def _commit_with_external_path(t: Table, outside_dir: str, ids: range, dt: str) -> str:
    """Commit ``ids`` as a data file whose metadata names a copy outside the table (an external path)."""
    w = t.new_write()
    w.write(rows(ids, dt))
    msgs = w.prepare_commit()
    w.close()
    (m,) = msgs
    (f,) = m.new_files
    inside = next(os.path.join(d, n) for d, _, fs in os.walk(t.path) for n in fs if n == f.file_name)
    os.makedirs(outside_dir, exist_ok=True)
    external = os.path.join(outside_dir, f.file_name)
    shutil.move(inside, external)
    t.commit([dataclasses.replace(m, new_files=(dataclasses.replace(f, external_path=external),))])
    return external


@pytest.mark.parametrize("configured", [False, True], ids=["foreign-path", "configured-root"])
def test_expire_deletes_external_data_files_only_under_configured_roots(tmp_path, caplog, configured) -> None:  # noqa: ANN001
    outside_dir = str(tmp_path / "elsewhere")
    t = make_table(str(tmp_path / "wh"), bucket="1")
    external = _commit_with_external_path(t, outside_dir, range(0, 5), "a")
    assert ids_of(t.read()) == list(range(5))
    t.write(rows(range(50, 52), "a"), mode="overwrite", partition={"dt": "a"})  # replaces the external file
    if configured:
        # Configure the root the way Java's ALTER would (no laketide write validation), then expire.
        t.schema_manager.commit_changes([SetOption("data-file.external-paths", f"file://{outside_dir}")])
        t.refresh()
    with caplog.at_level(logging.WARNING, logger="laketide.meta.deletion"):
        assert t.expire_snapshots(retain_min=1, retain_max=1) == 1
    assert os.path.exists(external) is not configured
    assert any(external in r.getMessage() for r in caplog.records) is not configured
    assert ids_of(t.read()) == [50, 51]


def test_the_deleter_refuses_dot_dot_and_directories(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    history(t)
    d = t.deleter
    schema0 = f"{t.path}/schema/schema-0"
    assert not d.allows(f"{t.path}/manifest/../schema/schema-0")  # inside, but reached through ".."
    assert not d.allows(f"{t.path}/manifest/")  # a directory
    assert not d.allows(t.path)
    assert not d.allows(str(tmp_path / "wh" / "db.db" / "t2" / "x"))  # a sibling table sharing the prefix
    assert d.allows(f"file:{t.path}/manifest/x")
    assert not d.delete(f"{t.path}/manifest/../schema/schema-0")
    assert os.path.exists(schema0)


# -- 4d: orphan cleanup walks Paimon's layout only -----------------------------------------------------------------
def _age_all(root: str, days: float) -> None:
    old = time.time() - days * 86_400
    for d, _, fs in os.walk(root):
        for f in fs:
            os.utime(os.path.join(d, f), (old, old))


def test_orphan_cleanup_never_enters_foreign_directories(tmp_path) -> None:  # noqa: ANN001
    t = make_table(str(tmp_path / "wh"))
    expected = history(t)
    # A killed writer's leftover (an orphan) and a stray manifest: Paimon's, unreferenced.
    crashed = t.new_write()
    crashed.write(rows(range(900, 910), "a"))
    crashed.prepare_commit()
    stray = f"{t.path}/manifest/manifest-dead-0"
    with open(stray, "wb") as f:
        f.write(b"x")
    before = set(tree(t.path))
    # Foreign things inside the table directory: a user's notes, a table nested inside, a file in a partition
    # directory, a subdirectory of a bucket and of manifest/.
    nested = laketide.load_catalog(warehouse=str(tmp_path / "wh2"))
    nested.create_database("db", exist_ok=True)
    inner = nested.create_table("db.inner", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    inner.write(rows(range(3), "z"))
    shutil.copytree(inner.path, f"{t.path}/nested")
    shutil.copytree(inner.path, f"{t.path}/dt=a/bucket-0/nested")
    foreign = [f"{t.path}/notes/readme.txt", f"{t.path}/dt=a/notes.txt", f"{t.path}/manifest/keep/x",
               f"{t.path}/bucket-0/data-foreign.parquet", f"{t.path}/dt=b/other=1/bucket-0/f"]
    for p in foreign:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write("mine")
    foreign_files = set(tree(t.path)) - before
    _age_all(t.path, 2)
    removed = t.remove_orphan_files()
    orphans = set(removed.paths)
    assert stray in orphans and any("/dt=a/bucket-" in p for p in orphans)
    assert not orphans & foreign_files
    assert foreign_files <= set(tree(t.path))
    assert ids_of(Table(name="n", path=f"{t.path}/nested", file_io=t.file_io).read()) == [0, 1, 2]
    assert ids_of(t.read()) == expected[max(expected)]


def test_orphan_cleanup_of_an_unpartitioned_table_keeps_a_nested_one(tmp_path) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("d", exist_ok=True)
    outer = cat.create_table("d.outer", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    outer.write(rows(range(5), "x"))
    inner = cat.create_table("d.inner", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    inner.write(rows(range(7), "y"))
    shutil.copytree(inner.path, f"{outer.path}/inner")  # a table inside the other's directory
    _age_all(str(tmp_path / "wh"), 2)
    assert outer.remove_orphan_files().count == 0
    assert ids_of(Table(name="n", path=f"{outer.path}/inner", file_io=outer.file_io).read()) == list(range(7))


# -- 5: a kill anywhere inside expiration or rollback --------------------------------------------------------------
def _expire_job(warehouse: str, crash_at: int, at: str) -> None:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    crashing = Table(name=t.name, path=t.path, file_io=CrashingFileIO(t.file_io, crash_at=crash_at, at=FaultPoint(at)),
                     schema=t.schema)
    crashing.expire_snapshots(retain_min=2, retain_max=2)


def _rollback_job(warehouse: str, crash_at: int, at: str, target: object) -> None:
    t = laketide.load_catalog(warehouse=warehouse).table("db.t")
    crashing = Table(name=t.name, path=t.path, file_io=CrashingFileIO(t.file_io, crash_at=crash_at, at=FaultPoint(at)),
                     schema=t.schema)
    crashing.rollback_to(target)  # type: ignore[arg-type]


def _kill_points(steps: int) -> list[tuple[int, str]]:
    return [(k, at) for k in range(1, steps + 1) for at in ("before", "after")]


def _run_killed(target, *args) -> None:  # noqa: ANN001, ANN002
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["laketide.table.table", __name__])
    p = ctx.Process(target=target, args=args)
    p.start()
    p.join(120)
    assert p.exitcode == -9, (args, p.exitcode)


def test_a_kill_at_every_step_of_expiration_leaves_readable_snapshots(tmp_path) -> None:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    t = make_table(warehouse)
    expected = history(t)
    counting = CrashingFileIO(t.file_io)
    probe = shutil.copytree(t.path, str(tmp_path / "probe"))
    Table(name="p", path=probe, file_io=counting).expire_snapshots(retain_min=2, retain_max=2)
    steps = counting.mutations  # snapshot deletes, the hint, data files, manifests
    assert steps > 10
    pristine = str(tmp_path / "pristine")
    shutil.copytree(t.path, pristine)
    for k, at in _kill_points(steps):
        shutil.rmtree(t.path)
        shutil.copytree(pristine, t.path)
        _run_killed(_expire_job, warehouse, k, at)
        seen = read_every_snapshot(t)  # every listed snapshot reads, with its rows
        assert seen and all(seen[sid] == expected[sid] for sid in seen), (k, at)
        assert list(seen) == list(range(min(seen), 10))
        t.remove_orphan_files(older_than=timedelta(0))  # runs (a crash never breaks it) ...
        t.expire_snapshots(retain_min=2, retain_max=2)  # ... and expiration resumes
        assert t.snapshot_manager.snapshot_ids() == [8, 9]
        t.remove_orphan_files(older_than=timedelta(0))
        assert relative_files(t.path) == relative_files(probe), (k, at)  # no residue left
        assert ids_of(t.read()) == expected[9]


def test_a_kill_at_every_step_of_a_rollback_to_an_expired_tag_is_finished_by_running_it_again(tmp_path) -> None:  # noqa: ANN001
    warehouse = str(tmp_path / "wh")
    t = make_table(warehouse)
    expected = history(t)
    os.makedirs(f"{t.path}/tag")
    with open(f"{t.path}/tag/tag-release", "wb") as f:
        f.write(t.snapshot_manager.file_io.read_bytes(t.snapshot_manager.snapshot_path(3)))
    t.expire_snapshots(retain_min=4, retain_max=4)
    assert t.snapshot_manager.snapshot_ids() == [6, 7, 8, 9]
    counting = CrashingFileIO(t.file_io)
    probe = shutil.copytree(t.path, str(tmp_path / "probe"))
    Table(name="p", path=probe, file_io=counting).rollback_to("release")
    steps = counting.mutations
    pristine = shutil.copytree(t.path, str(tmp_path / "pristine"))
    for k, at in _kill_points(steps):
        shutil.rmtree(t.path)
        shutil.copytree(pristine, t.path)
        _run_killed(_rollback_job, warehouse, k, at, "release")
        seen = read_every_snapshot(t)
        assert seen and all(seen[sid] == expected[sid] for sid in seen), (k, at)
        assert t.snapshot_manager.latest_snapshot_id() in seen, (k, at)
        t.rollback_to("release")
        assert t.snapshot_manager.snapshot_ids() == [3]
        assert t.snapshot_manager.earliest_snapshot_id() == 3
        assert ids_of(t.read()) == expected[3]
