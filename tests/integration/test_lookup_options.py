"""Lookup file options: ``local-temp-dir`` (where the writers' lookup files go), ``lookup.cache-max-disk-size``
(least recently used files dropped beyond it), ``lookup.cache-file-retention`` (files nothing read expire),
``lookup.cache-spill-compression`` and ``lookup.local-file-type`` (checked and accepted); the lookup files outliving
one write, for the next."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.mergetree.lookup_files import LocalLookupFiles, drop_writer_lookup_files, writer_lookup_files
from laketide.schema.changes import AddColumn
from laketide.types import BigIntType

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


def _rows(keys: range, v: int) -> pa.Table:
    return pa.table({"k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _lookup_files(root: Path) -> list[Path]:
    return [p for d in root.glob("laketide-lookup-*") for p in d.iterdir()]


@pytest.fixture
def catalog(tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def _long_lived_writes(t, rounds: int, *, check_dir: Path | None = None) -> tuple[dict[int, int], int]:  # noqa: ANN001
    """Rounds of overlapping upserts through one writer; returns the oracle and the most lookup files seen."""
    w = t.new_write()
    oracle = {k: -1 for k in range(400)}
    most = 0
    try:
        w.write(_rows(range(400), -1))
        t.commit(w.prepare_commit())
        for i in range(rounds):
            keys = range(i * 37 % 300, i * 37 % 300 + 100)
            w.write(_rows(keys, i))
            t.commit(w.prepare_commit())
            oracle.update({k: i for k in keys})
            if check_dir is not None:
                most = max(most, len(_lookup_files(check_dir)))
    finally:
        w.close()
    return oracle, most


@pytest.mark.parametrize("mode", [{"deletion-vectors.enabled": "true"}, {"changelog-producer": "lookup"}])
def test_lookup_files_go_to_local_temp_dir_and_stay_within_the_disk_budget(catalog, tmp_path, mode) -> None:  # noqa: ANN001
    unbounded_dir, bounded_dir = tmp_path / "unbounded", tmp_path / "bounded"
    base = {"bucket": "1", "target-file-size": "2 kb", **mode}
    free = catalog.create_table("db.free", SCHEMA, primary_key=["k"],
                                options={**base, "local-temp-dir": str(unbounded_dir)})
    oracle, most_free = _long_lived_writes(free, 5, check_dir=unbounded_dir)
    assert most_free > 1, "several data files above level 0 should have been looked up"
    tight = catalog.create_table("db.tight", SCHEMA, primary_key=["k"],
                                 options={**base, "local-temp-dir": str(bounded_dir),
                                          "lookup.cache-max-disk-size": "1 b"})
    oracle_tight, most_tight = _long_lived_writes(tight, 5, check_dir=bounded_dir)
    assert most_tight == 1, "a one-byte budget keeps only the lookup file in use"
    got = {r["k"]: r["v"] for r in tight.read().to_pylist()}
    assert got == oracle_tight == oracle
    assert {r["k"]: r["v"] for r in free.read().to_pylist()} == oracle
    # Closed writers leave their lookup files to the table's next writer; dropping the table removes them.
    assert _lookup_files(unbounded_dir)
    catalog.drop_table("db.free")
    catalog.drop_table("db.tight")
    assert _lookup_files(unbounded_dir) == [] and _lookup_files(bounded_dir) == []


def _levels(t) -> dict[str, int]:  # noqa: ANN001
    return {e.file.file_name: e.file.level for e in t.file_scan().plan(t.latest_snapshot())}


@pytest.mark.parametrize("mode", [{"deletion-vectors.enabled": "true"}, {"changelog-producer": "lookup"},
                                  {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}])
def test_later_writes_look_up_in_the_files_earlier_writes_built(catalog, tmp_path, mode) -> None:  # noqa: ANN001
    """Each ``Table.write`` is a writer of its own (as a streaming micro-batch is): the lookup files of the data
    files it does not replace are kept, so no data file is read into a lookup file twice, and the rows stay right."""
    local = tmp_path / "local"
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(local), "compaction.max-size-amplification-percent": "100000", **mode})
    t.write(_rows(range(1000), -1))
    oracle = {k: -1 for k in range(1000)}
    (base,) = _levels(t)
    files = writer_lookup_files(t.path, local_dir=str(local), max_disk_size=None, retention_ms=3_600_000)
    ever_looked_in, base_local = set(), None
    for i in range(6):
        ever_looked_in |= {name for name, level in _levels(t).items() if level > 0}
        keys = range(i * 10, i * 10 + 20)  # ten keys of the last write, ten only the base holds
        t.write(_rows(keys, i))
        oracle.update({k: i for k in keys})
        (path,) = [p for p in _lookup_files(local) if p.name.startswith(base)]
        stat = path.stat()
        base_local = base_local or (stat.st_ino, stat.st_mtime_ns)
        assert (stat.st_ino, stat.st_mtime_ns) == base_local, "the base file's lookup file was built again"
    assert base in _levels(t)
    assert files.builds <= len(ever_looked_in)  # one build per data file at most (each write built them anew)
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == oracle


def test_a_schema_change_builds_lookup_files_in_the_new_layout(catalog, tmp_path) -> None:  # noqa: ANN001
    """A lookup file holds a data file's rows evolved to the writer's schema: after a new column, the next write
    builds its own (the old layout's are not read as the new one's)."""
    local = tmp_path / "local"
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(local), "changelog-producer": "lookup", "merge-engine": "partial-update",
        "compaction.max-size-amplification-percent": "100000"})
    t.write(_rows(range(20000), 0))  # a base much larger than the updates: no compaction rewrites it
    t.write(_rows(range(10), 1))
    before = {p.name for p in _lookup_files(local)}
    t = catalog.alter_table("db.t", AddColumn(name="w", type=BigIntType()))
    t.write(pa.table({"k": range(5, 15), "v": [None] * 10, "w": [7] * 10},
                     schema=pa.schema([*SCHEMA, pa.field("w", pa.int64())])))
    new = {p.name for p in _lookup_files(local)} - before
    assert new and all("-s1-rows" in name for name in new)
    got = {r["k"]: (r["v"], r["w"]) for r in t.read().to_pylist()}
    assert got == {k: (1 if k < 10 else 0, 7 if 5 <= k < 15 else None) for k in range(20000)}


def test_lookup_files_nothing_read_expire_after_the_retention() -> None:
    """``lookup.cache-file-retention``: a file unread for longer is dropped at the next access (an injected clock,
    no sleep); one read keeps it another full retention."""
    now = [0.0]
    files = LocalLookupFiles(retention=10.0, clock=lambda: now[0])
    try:
        files.put("a", [pa.table({"x": [1]})])
        files.put("b", [pa.table({"x": [2]})])
        now[0] = 8.0
        assert files.get("a") is not None  # read at 8: kept until 18
        now[0] = 15.0
        assert files.get("b") is None and "b" not in files  # unread since 0: expired
        assert files.get("a").column("x").to_pylist() == [1]
        now[0] = 24.0
        assert files.get("a") is not None  # read at 15: kept until 25; read again, until 34
        now[0] = 35.0
        assert files.get("a") is None and files.disk_size == 0
    finally:
        files.close()


def test_a_file_dropped_as_soon_as_it_is_built_still_gives_its_rows() -> None:
    """An expiry (or another thread's eviction) may unlink a file before its builder reads it back: the builder
    still gets the rows it wrote, never an empty table (a lookup would miss every key of the file)."""
    ticks = iter(range(0, 10**6, 100))
    files = LocalLookupFiles(retention=10.0, clock=lambda: float(next(ticks)))  # each look at the clock: 100 s on
    try:
        rows = files.put("a", [pa.table({"x": [1, 2, 3]})])
        assert rows.column("x").to_pylist() == [1, 2, 3]
        assert "a" not in files and files.get("a") is None  # expired at once, as the clock says
    finally:
        files.close()


def test_lookup_files_of_a_table_no_longer_written_expire(catalog, tmp_path) -> None:  # noqa: ANN001
    """Expiry does not wait for the table's own next write: any table's write expires the others' idle files."""
    idle_dir, busy_dir = tmp_path / "idle", tmp_path / "busy"
    idle = catalog.create_table("db.idle", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(idle_dir), "deletion-vectors.enabled": "true",
        "lookup.cache-file-retention": "1 ms"})
    busy = catalog.create_table("db.busy", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(busy_dir), "deletion-vectors.enabled": "true"})
    for t in (idle, busy):
        t.write(_rows(range(100), 0))
        t.write(_rows(range(10), 1))
    assert _lookup_files(busy_dir)
    assert _lookup_files(idle_dir) == []  # unread for longer than 1 ms when the busy table's write looked
    assert {r["k"]: r["v"] for r in idle.read().to_pylist()} == {k: int(k < 10) for k in range(100)}


def test_a_killed_processs_lookup_files_are_removed_by_the_next_process(catalog, tmp_path) -> None:  # noqa: ANN001
    """A process killed before its exit hooks (Spark stops its Python workers with SIGHUP) leaves its lookup
    directory; the next process making lookup files there removes it, and never a live process's."""
    local = tmp_path / "local"
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(local), "deletion-vectors.enabled": "true",
        "compaction.max-size-amplification-percent": "100000"})
    t.write(_rows(range(20000), 0))  # much larger than the updates: they never compact it away
    script = textwrap.dedent(f"""
        import os, signal, pyarrow as pa, laketide
        t = laketide.load_catalog(warehouse={str(tmp_path / "wh")!r}).table("db.t")
        t.write(pa.table({{"k": list(range(50)), "v": [1] * 50}}, schema=t.arrow_schema))
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as pyspark's workers have it (nohup makes it inherited SIG_IGN)
        os.kill(os.getpid(), signal.SIGHUP)
    """)
    killed = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert killed.returncode == -signal.SIGHUP
    (orphan,) = [d for d in local.iterdir() if d.name.startswith("laketide-lookup-")]
    assert list(orphan.iterdir()), "the killed writer's lookup files are still there"
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        # A live process's directory (named as laketide names them) is left alone.
        live_dir = local / f"laketide-lookup-{socket.gethostname()}-{alive.pid}-x"
        live_dir.mkdir()
        t.write(_rows(range(100, 150), 2))  # this process's first lookup files in that directory
        assert not orphan.exists() and live_dir.exists()
    finally:
        alive.communicate(b"")
    assert [d for d in local.iterdir() if d.name.startswith("laketide-lookup-") and d != live_dir]
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == {k: 1 if k < 50 else 2 if 100 <= k < 150 else 0
                                                              for k in range(20000)}


def test_another_process_does_not_see_this_processs_lookup_files(catalog, tmp_path) -> None:  # noqa: ANN001
    """The kept files are one process's: a second process writing the same table builds its own, removes them
    at exit, and both see each other's data (files the other compacted away are never asked)."""
    local = tmp_path / "local"
    t = catalog.create_table("db.t", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "local-temp-dir": str(local), "deletion-vectors.enabled": "true"})
    t.write(_rows(range(200), 0))
    t.write(_rows(range(50), 1))
    mine = {p.name for p in _lookup_files(local)}
    assert mine
    script = textwrap.dedent(f"""
        import pyarrow as pa, laketide
        t = laketide.load_catalog(warehouse={str(tmp_path / "wh")!r}).table("db.t")
        t.write(pa.table({{"k": list(range(40, 120)), "v": [2] * 80}}, schema=t.arrow_schema))
        t.compact(full=True)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert {p.name for p in _lookup_files(local)} == mine  # the other process's files went with it
    t.write(_rows(range(100, 150), 3))  # this process's kept files name data files the full compaction replaced
    oracle = {k: 3 if 100 <= k < 150 else 2 if 40 <= k < 120 else 1 if k < 50 else 0 for k in range(200)}
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == oracle
    drop_writer_lookup_files(t.path)
    assert _lookup_files(local) == []


@pytest.mark.parametrize("key, value", [
    ("lookup.cache-max-disk-size", "0"),
    ("lookup.cache-file-retention", "soon"),
    ("lookup.cache-max-disk-size", "lots"),
    ("lookup.cache-spill-compression", "snappy"),
    ("lookup.local-file-type", "btree"),
    ("local-temp-dir", "relative/dir"),
    ("local-temp-dir", "/tmp/../etc"),
])
def test_bad_lookup_options_are_refused(catalog, key: str, value: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={"bucket": "1", key: value})
    assert "bad" not in catalog.list_tables("db")


@pytest.mark.parametrize("file_type", ["sort", "hash", "SORT"])
@pytest.mark.parametrize("compression", ["zstd", "none", "lz4", "lzo"])
def test_accepted_lookup_layout_options(catalog, file_type: str, compression: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.ok", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "lookup.local-file-type": file_type,
        "lookup.cache-spill-compression": compression})
    t.write(_rows(range(10), 0))
    t.write(_rows(range(5), 1))
    assert sorted(r["v"] for r in t.read().to_pylist()) == [0] * 5 + [1] * 5


def test_unusable_local_temp_dir_fails_the_write_with_a_typed_error(catalog, tmp_path) -> None:  # noqa: ANN001
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "local-temp-dir": str(blocker / "sub")})
    t.write(_rows(range(10), 0))  # nothing above level 0 yet: no lookup
    before = t.latest_snapshot().id
    with pytest.raises(InvalidOptionError, match="local-temp-dir"):
        t.write(_rows(range(5), 1))
    assert t.latest_snapshot().id == before
    assert sorted(r["v"] for r in t.read().to_pylist()) == [0] * 10
    assert os.path.isfile(blocker)
