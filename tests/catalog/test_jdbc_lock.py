"""The JDBC catalog lock (lock.enabled) serializes snapshot publishing where the store cannot create atomically."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

import laketide
from laketide.catalog.jdbc import JdbcCatalog
from laketide.catalog.jdbc_lock import LockTimeoutError
from laketide.catalog.jdbc_tables import LOCKS
from laketide.exceptions import UnsupportedFeatureError
from tests.catalog import workers
from tests.catalog.postgres import PostgresServer

SCHEMA = workers.SCHEMA


def spec_sqlite(tmp_path: Path, **options: str) -> dict[str, str]:
    return {"warehouse": str(tmp_path / "wh"), "metastore": "jdbc",
            "uri": f"jdbc:sqlite:{tmp_path / 'meta.sqlite'}", **options}


def test_lock_table_is_created_only_when_enabled(tmp_path: Path) -> None:
    laketide.load_catalog(**spec_sqlite(tmp_path))
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'meta.sqlite'}")
    assert "paimon_distributed_locks" not in sa.inspect(engine).get_table_names()
    laketide.load_catalog(**spec_sqlite(tmp_path, **{"lock.enabled": "true"}))
    assert "paimon_distributed_locks" in sa.inspect(engine).get_table_names()
    engine.dispose()


def test_a_held_lock_times_out_and_an_expired_one_is_taken_over(tmp_path: Path) -> None:
    cat = laketide.load_catalog(**spec_sqlite(tmp_path, **{
        "lock.enabled": "true", "lock-acquire-timeout": "300 ms", "lock-check-max-sleep": "50 ms"}))
    assert isinstance(cat, JdbcCatalog)
    cat.create_database("d")
    cat.create_table("d.t", SCHEMA)
    lock = cat.commit_lock(laketide.Identifier("d", "t"))
    assert lock is not None and lock.lock_id == "jdbc.d.t"
    # Someone else holds it (a row that expires only in an hour): the commit gives up, changing nothing.
    with cat.engine.begin() as conn:
        conn.execute(sa.insert(LOCKS).values(lock_id="jdbc.d.t", expire_time_seconds=3600))
    with pytest.raises(LockTimeoutError, match="jdbc.d.t"):
        cat.table("d.t").write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert cat.table("d.t").latest_snapshot() is None
    # Its holder died long ago: the row has expired, the next commit clears it and goes through.
    with cat.engine.begin() as conn:
        conn.execute(sa.update(LOCKS).values(acquired_at=sa.text("'2000-01-01 00:00:00'"), expire_time_seconds=1))
    assert cat.table("d.t").write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)) == 1
    with cat.engine.connect() as conn:
        assert conn.execute(sa.select(LOCKS)).all() == []  # released after the commit


def test_without_the_lock_a_non_atomic_store_refuses_to_publish(tmp_path: Path) -> None:
    cat = laketide.load_catalog(**spec_sqlite(tmp_path))
    cat.create_database("d")
    cat.create_table("d.t", SCHEMA)
    plain = laketide.load_catalog(**spec_sqlite(tmp_path), file_io=workers.NoAtomicCreateIO.make())
    with pytest.raises(UnsupportedFeatureError):
        plain.table("d.t").write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    assert cat.table("d.t").latest_snapshot() is None


def two_writers_through_the_lock(spec: dict[str, str], commits: int) -> None:
    cat = laketide.load_catalog(**spec)
    cat.create_database("d")
    t = cat.create_table("d.t", SCHEMA)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            done = pool.starmap(workers.commit_many, [(spec, "d.t", w, commits, barrier) for w in (1, 2)])
    assert done == [commits, commits]
    # No commit lost: every row of both writers, once.
    ids = sorted(t.read().column("id").to_pylist())
    assert ids == sorted(w * 100_000 + i for w in (1, 2) for i in range(commits))
    # No snapshot id twice: 1..2n, each a distinct (user, identifier) commit, none overwritten by another.
    snap_dir = Path(t.path) / "snapshot"
    snaps = [json.loads((snap_dir / f"snapshot-{i}").read_text()) for i in range(1, 2 * commits + 1)]
    expected = sorted(f"snapshot-{i}" for i in range(1, 2 * commits + 1))
    assert sorted(p.name for p in snap_dir.glob("snapshot-*")) == expected
    assert len({(s["commitUser"], s["commitIdentifier"]) for s in snaps}) == 2 * commits
    assert t.latest_snapshot().id == 2 * commits


@pytest.mark.slow
def test_two_processes_commit_100_times_each_through_the_sqlite_lock(tmp_path: Path) -> None:
    two_writers_through_the_lock(spec_sqlite(tmp_path, **{"lock.enabled": "true"}), 100)


@pytest.mark.slow
def test_two_processes_commit_100_times_each_through_the_postgresql_lock(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    spec = {"warehouse": str(tmp_path / "wh"), "metastore": "jdbc", "uri": postgres_server.fresh_database_uri(),
            "jdbc.user": postgres_server.user, "lock.enabled": "true"}
    two_writers_through_the_lock(spec, 100)
