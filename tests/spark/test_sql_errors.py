"""laketide.spark.sql on bad input: one typed error naming the object, and nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

import laketide.spark as lts
from laketide.exceptions import (
    InvalidOptionError,
    LaketideError,
    MergeSourceError,
    NoSuchProcedureError,
    NoSuchTableError,
    PredicateError,
    SqlError,
    TableAlreadyExistsError,
)


@pytest.fixture()
def filled(spark: Any, wh: str, cat: Any) -> Any:
    lts.sql(spark, "CREATE TABLE db.t (id BIGINT, v STRING) TBLPROPERTIES ('primary-key'='id', 'bucket'='1')",
            warehouse=wh)
    lts.sql(spark, "INSERT INTO db.t VALUES (1, 'a'), (2, 'b')", warehouse=wh)
    return cat


BAD: list[tuple[str, type[LaketideError], str]] = [
    ("SELEC * FROM db.t", SqlError, "syntax error"),
    ("", SqlError, "empty"),
    ("SELECT 1; SELECT 2", SqlError, "one statement"),
    ("CALL sys.no_such_proc(table => 'db.t')", NoSuchProcedureError, "create_tag"),
    ("CALL sys.create_tag(table => 'db.t', tagg => 'x')", InvalidOptionError, "tagg"),
    ("CALL sys.create_tag(table => 'db.t')", InvalidOptionError, "tag"),
    ("CALL sys.rollback(table => 'db.t', snapshot_id => 99)", LaketideError, "99"),
    ("INSERT INTO db.nope VALUES (1)", NoSuchTableError, "db.nope"),
    ("INSERT INTO db.t VALUES (1, 'a', 3)", SqlError, "db.t"),
    ("INSERT INTO db.t (id, nope) VALUES (1, 'a')", SqlError, "nope"),
    ("UPDATE db.t SET nope = 1", LaketideError, "nope"),
    ("DELETE FROM db.t WHERE nope = 1", LaketideError, "nope"),
    ("CREATE TABLE db.t (x INT)", TableAlreadyExistsError, "db.t"),
    ("CREATE TABLE db.u (x INT) TBLPROPERTIES ('primary-key'='y')", SqlError, "y"),
    ("CREATE TABLE db.u (x INT) USING parquet", SqlError, "parquet"),
    ("ALTER TABLE db.t DROP COLUMN nope", LaketideError, "nope"),
    ("ALTER TABLE db.t SET TBLPROPERTIES ('bucket'='zero')", LaketideError, "bucket"),
    ("DROP TABLE db.nope", NoSuchTableError, "db.nope"),
    ("DESCRIBE db.nope", NoSuchTableError, "db.nope"),
    ("SELECT * FROM db.t VERSION AS OF 42", LaketideError, "42"),
    ("MERGE INTO db.t t USING (SELECT 1 AS id, 'x' AS v UNION ALL SELECT 1, 'y') s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET *", MergeSourceError, "db.t"),
    # Spark-evaluated statements (functions laketide's expressions lack): Spark's analysis errors, typed.
    ("UPDATE db.t SET v = upper(nope)", PredicateError, "nope"),
    ("UPDATE db.t SET v = no_such_fn(v)", PredicateError, "NO_SUCH_FN"),
    ("UPDATE db.t SET v = concat(v, '!') WHERE length(nope) > 1", PredicateError, "nope"),
    ("UPDATE db.t SET id = abs(id)", LaketideError, "id"),
    ("MERGE INTO db.t t USING (SELECT 1 AS id, 'x' AS v UNION ALL SELECT 1, 'y') s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET v = upper(s.v)", MergeSourceError, "db.t"),
    ("MERGE INTO db.t t USING (SELECT 1 AS id, 'x' AS v) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET v = upper(s.nope)", PredicateError, "nope"),
    ("MERGE INTO db.t t USING (SELECT 3 AS id, 'x' AS v) s ON t.id = s.id "
     "WHEN NOT MATCHED THEN INSERT (id, nope) VALUES (s.id, upper(s.v))", LaketideError, "nope"),
]


@pytest.mark.parametrize(("statement", "error", "named"), BAD, ids=[b[0][:40] for b in BAD])
def test_bad_statement_changes_nothing(spark: Any, wh: str, filled: Any, statement: str,
                                       error: type[LaketideError], named: str) -> None:
    before = filled.table("db.t").latest_snapshot().id
    rows = sorted(filled.table("db.t").read().to_pylist(), key=lambda r: r["id"])
    with pytest.raises(error) as info:
        lts.sql(spark, statement, warehouse=wh).collect()
    assert named in str(info.value).splitlines()[0]  # the first line names the object
    assert filled.table("db.t").latest_snapshot().id == before
    assert sorted(filled.table("db.t").read().to_pylist(), key=lambda r: r["id"]) == rows
    assert not filled.table_exists("db.u")


def test_use_sql_binds_session_and_warehouse(spark: Any, wh: str, filled: Any) -> None:
    sql = lts.use_sql(spark, warehouse=wh)
    assert sorted(tuple(r) for r in sql("SELECT id FROM db.t").collect()) == [(1,), (2,)]
    assert spark.laketide_sql is sql
