"""Spark-evaluated UPDATE / MERGE (laketide.spark.sql.spark_eval): one commit, conflict-checked against the
snapshot the statement planned, and nothing changed (no snapshot, no leftover files) when it conflicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide.spark as lts
from laketide.exceptions import CommitConflictError

PK = "TBLPROPERTIES ('primary-key'='id', 'bucket'='1')"


def _files(table: Any) -> set[str]:
    return {str(p) for p in Path(table.path.replace("file:", "")).rglob("*") if p.is_file()
            and "bucket-" in str(p)}


def _rows(table: Any) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.read().to_pylist())


def _filled(sql: Any, cat: Any, name: str, props: str) -> Any:
    sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, v STRING) {props}")
    sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    sql(f"INSERT INTO {name} VALUES (3, 'c')")  # a second file: compaction has something to replace
    return cat.table(name)


def test_pk_change_conflicts_with_a_write_after_its_snapshot(spark: Any, wh: str, cat: Any) -> None:
    from laketide.spark.sql.context import SqlContext
    from laketide.spark.sql.spark_eval import _write_pk

    sql = lts.use_sql(spark, warehouse=wh)
    table = _filled(sql, cat, "db.pk", PK)
    planned = table.latest_snapshot().id
    sql("INSERT INTO db.pk VALUES (2, 'concurrent')")  # another writer, same bucket, after the plan
    before, rows, files = table.latest_snapshot().id, _rows(table), _files(table)
    assert files
    changed = spark.sql("SELECT CAST(2 AS BIGINT) AS id, upper('b') AS v")
    ctx = SqlContext(spark, {"warehouse": wh}, cat)
    with pytest.raises(CommitConflictError, match=f"snapshot {planned}"):
        _write_pk(ctx, table, "db.pk", planned, changed, kinds=None, counts=None, verb="update")
    assert table.latest_snapshot().id == before
    assert _rows(table) == rows
    assert _files(table) == files  # the Spark tasks' files were removed


def test_pk_change_commits_after_a_compaction(spark: Any, wh: str, cat: Any) -> None:
    from laketide.spark.sql.context import SqlContext
    from laketide.spark.sql.spark_eval import _write_pk

    sql = lts.use_sql(spark, warehouse=wh)
    table = _filled(sql, cat, "db.pk", PK)
    planned = table.latest_snapshot().id
    table.compact(full=True)  # rows unchanged: not a conflict
    changed = spark.sql("SELECT CAST(2 AS BIGINT) AS id, upper('b') AS v")
    ctx = SqlContext(spark, {"warehouse": wh}, cat)
    result = _write_pk(ctx, table, "db.pk", planned, changed, kinds=None, counts=None, verb="update")
    assert result.rows_updated == 1 and result.snapshot_id == table.latest_snapshot().id
    assert _rows(table) == [(1, "a"), (2, "B"), (3, "c")]


def test_append_rewrite_conflicts_with_a_compaction_of_its_files(spark: Any, wh: str, cat: Any) -> None:
    from laketide.table.precomputed import POSITION, rewrite_append, target_rows

    sql = lts.use_sql(spark, warehouse=wh)
    table = _filled(sql, cat, "db.ap", "")
    target = target_rows(table, verb="update")
    table.compact(full=True)  # replaces the files the change read
    before, rows, files = table.latest_snapshot().id, _rows(table), _files(table)
    assert files
    new = target.rows.filter(pa.compute.equal(target.rows.column("id"), 2)).drop_columns([POSITION])
    new = new.set_column(1, "v", pa.array(["B"]))
    changed = target.rows.column(POSITION).filter(pa.compute.equal(target.rows.column("id"), 2)).to_numpy()
    with pytest.raises(CommitConflictError):
        rewrite_append(table, target, changed, new, updated=1, deleted=0, inserted=0)
    assert table.latest_snapshot().id == before
    assert _rows(table) == rows
    assert _files(table) == files


def test_keyed_driver_write_conflicts(spark: Any, wh: str, cat: Any) -> None:
    """The driver-side path (cross-partition tables) refuses the same way."""
    from laketide.table.precomputed import write_keyed

    sql = lts.use_sql(spark, warehouse=wh)
    table = _filled(sql, cat, "db.pk", PK)
    planned = table.latest_snapshot().id
    sql("INSERT INTO db.pk VALUES (1, 'concurrent')")
    before, files = table.latest_snapshot().id, _files(table)
    assert files
    upserts = pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]})
    with pytest.raises(CommitConflictError):
        write_keyed(table, planned, upserts, upserts.slice(0, 0), updated=1, inserted=0, verb="merge")
    assert table.latest_snapshot().id == before
    assert _files(table) == files


@pytest.mark.parametrize("props", ["", PK, "TBLPROPERTIES ('primary-key'='id', 'bucket'='-1')"])
def test_empty_target_and_nothing_matching(spark: Any, wh: str, cat: Any, props: str) -> None:
    sql = lts.use_sql(spark, warehouse=wh)
    sql(f"CREATE TABLE db.e (id BIGINT NOT NULL, v STRING) {props}")
    table = cat.table("db.e")
    assert sql("UPDATE db.e SET v = upper(v)").collect()[0].num_affected_rows == 0
    assert table.latest_snapshot() is None
    merged = sql("MERGE INTO db.e t USING (SELECT 1 AS id, 'x' AS v) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET v = upper(s.v) "
                 "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, concat(s.v, '!'))").collect()[0]
    assert merged.num_inserted_rows == 1
    assert _rows(table) == [(1, "x!")]
    sid = table.latest_snapshot().id
    assert sql("UPDATE db.e SET v = upper(v) WHERE length(v) > 5").collect()[0].num_affected_rows == 0
    assert table.latest_snapshot().id == sid  # nothing matched: no snapshot
    # The same statement again: now it matches and updates (a retry is a new statement).
    for _ in range(2):
        sql("MERGE INTO db.e t USING (SELECT 1 AS id, 'y' AS v) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = concat(t.v, s.v)")
    assert _rows(table) == [(1, "x!yy")]


@pytest.mark.parametrize("props", ["", PK])
def test_bad_values_at_run_time_are_typed_and_change_nothing(spark: Any, wh: str, cat: Any, props: str) -> None:
    from laketide.exceptions import LaketideError

    sql = lts.use_sql(spark, warehouse=wh)
    sql(f"CREATE TABLE db.nn (id BIGINT NOT NULL, v STRING NOT NULL) {props}")
    sql("INSERT INTO db.nn VALUES (1, 'a'), (2, 'b')")
    table = cat.table("db.nn")
    before, rows, files = table.latest_snapshot().id, _rows(table), _files(table)
    bad = [
        # NULL into a NOT NULL column, computed by a Spark function
        ("UPDATE db.nn SET v = nullif(v, 'a')", "v"),
        ("MERGE INTO db.nn t USING (SELECT 3 AS id, 'x' AS v) s ON t.id = s.id "
         "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, nullif(s.v, 'x'))", "v"),
        # a cast Spark refuses at run time (ANSI mode)
        ("UPDATE db.nn SET v = CAST(CAST(v AS INT) AS STRING)", "db.nn"),
    ]
    for statement, named in bad:
        with pytest.raises(LaketideError) as info:
            sql(statement)
        assert named in str(info.value).splitlines()[0]
        assert table.latest_snapshot().id == before
        assert _rows(table) == rows
        assert _files(table) == files
