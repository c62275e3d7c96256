"""laketide.spark.sql: a table-driven suite of Paimon-style Spark SQL statements, each effect read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


import laketide.spark as lts


def rows(spark: Any, wh: str, query: str) -> list[tuple]:
    return sorted(tuple(r) for r in lts.sql(spark, query, warehouse=wh).collect())


def table_rows(cat: Any, name: str, columns: list[str] | None = None) -> list[tuple]:
    t = cat.table(name)
    data = t.read().to_pylist()
    cols = columns or [f.name for f in t.arrow_schema]
    return sorted(tuple(r[c] for c in cols) for r in data)


def snapshots(cat: Any, name: str) -> int:
    s = cat.table(name).latest_snapshot()
    return 0 if s is None else s.id


Check = Callable[[Any, Any, str], None]


def expect_rows(name: str, expected: list[tuple], columns: list[str] | None = None) -> Check:
    def check(spark: Any, cat: Any, wh: str) -> None:
        assert table_rows(cat, name, columns) == sorted(expected)
    return check


def expect_query(query: str, expected: list[tuple]) -> Check:
    def check(spark: Any, cat: Any, wh: str) -> None:
        assert rows(spark, wh, query) == sorted(expected)
    return check


def expect(fn: Callable[[Any], bool]) -> Check:
    def check(spark: Any, cat: Any, wh: str) -> None:
        assert fn(cat)
    return check


# (statement, check of its effect): run in order against one warehouse.
STATEMENTS: list[tuple[str, Check]] = [
    ("CREATE DATABASE IF NOT EXISTS sq", expect(lambda c: "sq" in c.list_databases())),
    ("CREATE DATABASE IF NOT EXISTS sq", expect(lambda c: "sq" in c.list_databases())),
    ("CREATE TABLE sq.pk (id BIGINT, v STRING, n INT) TBLPROPERTIES ('primary-key'='id', 'bucket'='2')",
     expect(lambda c: c.table("sq.pk").primary_keys == ("id",) and c.table("sq.pk").options.bucket == 2)),
    ("CREATE TABLE IF NOT EXISTS sq.pk (x INT)", expect(lambda c: len(c.table("sq.pk").arrow_schema) == 3)),
    ("CREATE TABLE sq.part (id BIGINT NOT NULL, v STRING, dt STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
     "USING paimon PARTITIONED BY (dt) COMMENT 'partitioned' TBLPROPERTIES ('bucket'='1')",
     expect(lambda c: c.table("sq.part").partition_keys == ("dt",)
            and c.table("sq.part").primary_keys == ("id", "dt"))),
    ("CREATE TABLE sq.app (id INT, name STRING, score DOUBLE) USING paimon",
     expect(lambda c: not c.table("sq.app").primary_keys)),
    ("CREATE TABLE sq.dyn (id BIGINT, v STRING) TBLPROPERTIES ('primary-key'='id', 'bucket'='-1')",
     expect(lambda c: c.table("sq.dyn").store.bucket_mode == "dynamic")),
    ("INSERT INTO sq.pk VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
     expect_rows("sq.pk", [(1, "a", 10), (2, "b", 20), (3, "c", 30)])),
    ("INSERT INTO sq.pk VALUES (2, 'B', 21)", expect_rows("sq.pk", [(1, "a", 10), (2, "B", 21), (3, "c", 30)])),
    ("INSERT INTO sq.pk (id, v) VALUES (4, 'd')", expect_rows("sq.pk", [(1, "a", 10), (2, "B", 21), (3, "c", 30),
                                                                        (4, "d", None)])),
    ("SELECT * FROM sq.pk WHERE id > 2", expect_query("SELECT id FROM sq.pk WHERE id > 2", [(3,), (4,)])),
    ("SELECT count(*) FROM sq.pk", expect_query("SELECT count(*) FROM sq.pk", [(4,)])),
    ("SELECT p.id, a.name FROM sq.pk p JOIN sq.app a ON p.id = a.id",
     expect_query("SELECT count(*) FROM sq.pk p JOIN sq.app a ON p.id = a.id", [(0,)])),
    ("UPDATE sq.pk SET n = n + 1 WHERE id <= 2", expect_rows("sq.pk", [(1, "a", 11), (2, "B", 22), (3, "c", 30),
                                                                       (4, "d", None)])),
    ("UPDATE sq.pk SET v = 'z' WHERE n IS NULL", expect_rows("sq.pk", [(1, "a", 11), (2, "B", 22), (3, "c", 30),
                                                                       (4, "z", None)])),
    ("DELETE FROM sq.pk WHERE id = 3", expect_rows("sq.pk", [(1, "a", 11), (2, "B", 22), (4, "z", None)])),
    ("DELETE FROM sq.pk WHERE v IN ('nothing')", expect_rows("sq.pk", [(1, "a", 11), (2, "B", 22), (4, "z", None)])),
    ("INSERT INTO sq.app SELECT id, v, CAST(n AS DOUBLE) FROM sq.pk",
     expect_rows("sq.app", [(1, "a", 11.0), (2, "B", 22.0), (4, "z", None)])),
    ("INSERT INTO sq.app VALUES (5, 'e', 0.5)",
     expect_rows("sq.app", [(1, "a", 11.0), (2, "B", 22.0), (4, "z", None), (5, "e", 0.5)])),
    ("UPDATE sq.app SET score = 1.5 WHERE name = 'e'",
     expect_rows("sq.app", [(1, "a", 11.0), (2, "B", 22.0), (4, "z", None), (5, "e", 1.5)])),
    ("DELETE FROM sq.app WHERE score IS NULL", expect_rows("sq.app", [(1, "a", 11.0), (2, "B", 22.0), (5, "e", 1.5)])),
    ("MERGE INTO sq.pk t USING (SELECT * FROM VALUES (1, 'm', 100), (7, 'n', 70) AS s(id, v, n)) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
     expect_rows("sq.pk", [(1, "m", 100), (2, "B", 22), (4, "z", None), (7, "n", 70)])),
    ("MERGE INTO sq.pk AS t USING sq.app AS s ON t.id = s.id "
     "WHEN MATCHED AND s.score > 20 THEN DELETE "
     "WHEN MATCHED THEN UPDATE SET v = s.name "
     "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.name, 5) "
     "WHEN NOT MATCHED BY SOURCE AND t.n IS NULL THEN DELETE",
     expect_rows("sq.pk", [(1, "a", 100), (5, "e", 5), (7, "n", 70)])),
    ("MERGE INTO sq.app t USING (SELECT 1 AS id, 'one' AS name, 1.0 AS score) s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED BY SOURCE THEN UPDATE SET score = 0.0",
     expect_rows("sq.app", [(1, "one", 11.0), (2, "B", 0.0), (5, "e", 0.0)])),
    ("INSERT INTO sq.part VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')",
     expect_rows("sq.part", [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")])),
    ("INSERT OVERWRITE sq.part PARTITION (dt='d1') VALUES (9, 'x')",
     expect_rows("sq.part", [(9, "x", "d1"), (3, "c", "d2")])),
    ("INSERT OVERWRITE sq.part PARTITION (dt='d3') SELECT id, v FROM sq.pk WHERE id = 1",
     expect_rows("sq.part", [(9, "x", "d1"), (3, "c", "d2"), (1, "a", "d3")])),
    ("SET spark.sql.sources.partitionOverwriteMode=dynamic",
     expect(lambda c: True)),
    ("INSERT OVERWRITE sq.part VALUES (4, 'y', 'd2')",
     expect_rows("sq.part", [(9, "x", "d1"), (4, "y", "d2"), (1, "a", "d3")])),
    ("SET spark.sql.sources.partitionOverwriteMode=static", expect(lambda c: True)),
    ("UPDATE sq.part SET v = 'u' WHERE dt = 'd1'", expect_rows("sq.part", [(9, "u", "d1"), (4, "y", "d2"),
                                                                             (1, "a", "d3")])),
    ("DELETE FROM sq.part WHERE dt = 'd3'", expect_rows("sq.part", [(9, "u", "d1"), (4, "y", "d2")])),
    ("INSERT OVERWRITE sq.part VALUES (5, 'w', 'd5')", expect_rows("sq.part", [(5, "w", "d5")])),
    ("INSERT INTO sq.dyn VALUES (1, 'a'), (2, 'b')", expect_rows("sq.dyn", [(1, "a"), (2, "b")])),
    ("MERGE INTO sq.dyn t USING (SELECT 2 AS id, 'B' AS v UNION ALL SELECT 3, 'c') s ON t.id = s.id "
     "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
     expect_rows("sq.dyn", [(1, "a"), (2, "B"), (3, "c")])),
    ("SELECT snapshot_id FROM sq.`dyn$snapshots`",
     expect_query("SELECT count(*) FROM sq.`dyn$snapshots`", [(2,)])),
    ("SELECT * FROM sq.dyn VERSION AS OF 1", expect_query("SELECT * FROM sq.dyn VERSION AS OF 1",
                                                          [(1, "a"), (2, "b")])),
    ("CALL sys.create_tag(table => 'sq.dyn', tag => 'first', snapshot_id => 1)",
     expect(lambda c: c.table("sq.dyn").tags.names() == ["first"])),
    ("SELECT * FROM sq.dyn VERSION AS OF 'first'",
     expect_query("SELECT id FROM sq.dyn VERSION AS OF 'first'", [(1,), (2,)])),
    ("SELECT /*+ OPTIONS('scan.snapshot-id'='1') */ * FROM sq.dyn",
     expect_query("SELECT /*+ OPTIONS('scan.snapshot-id'='1') */ id FROM sq.dyn", [(1,), (2,)])),
    ("SELECT * FROM sq.dyn TIMESTAMP AS OF '2099-01-01 00:00:00'",
     expect_query("SELECT id FROM sq.dyn TIMESTAMP AS OF '2099-01-01 00:00:00'", [(1,), (2,), (3,)])),
    ("SET spark.paimon.scan.snapshot-id=1", expect_query("SELECT id FROM sq.dyn", [(1,), (2,)])),
    ("RESET spark.paimon.scan.snapshot-id", expect_query("SELECT id FROM sq.dyn", [(1,), (2,), (3,)])),
    ("SELECT tag_name FROM sq.`dyn$tags`", expect_query("SELECT tag_name FROM sq.`dyn$tags`", [("first",)])),
    ("CALL sys.rename_tag(table => 'sq.dyn', tag => 'first', target_tag => 'one')",
     expect(lambda c: c.table("sq.dyn").tags.names() == ["one"])),
    ("CALL sys.create_tag('sq.dyn', 'latest')", expect(lambda c: c.table("sq.dyn").tags.names() == ["latest", "one"])),
    ("CALL sys.delete_tag(table => 'sq.dyn', tag => 'latest')",
     expect(lambda c: c.table("sq.dyn").tags.names() == ["one"])),
    # (writing a branch of a dynamic-bucket table is refused by the core: branches on the fixed-bucket sq.pk)
    ("CALL sys.create_branch(table => 'sq.pk', branch => 'b1')",
     expect(lambda c: c.table("sq.pk").branches.names() == ["b1"])),
    ("INSERT INTO sq.`pk$branch_b1` VALUES (10, 'br', 1)", expect_rows("sq.pk$branch_b1", [(10, "br", 1)])),
    ("SELECT * FROM sq.`pk$branch_b1`", expect_query("SELECT id FROM sq.`pk$branch_b1`", [(10,)])),
    ("CALL sys.create_branch(table => 'sq.dyn', branch => 'b2', tag => 'one')",
     expect(lambda c: c.table("sq.dyn").branches.names() == ["b2"])),
    ("CALL sys.delete_branch(table => 'sq.dyn', branch => 'b2')",
     expect(lambda c: c.table("sq.dyn").branches.names() == [])),
    ("CALL sys.reset_consumer(table => 'sq.dyn', consumer_id => 'c1', next_snapshot_id => 1)",
     expect(lambda c: c.table("sq.dyn").consumers.get("c1") == 1)),
    ("CALL sys.reset_consumer(table => 'sq.dyn', consumer_id => 'c1')",
     expect(lambda c: c.table("sq.dyn").consumers.get("c1") is None)),
    ("CALL sys.compact(table => 'sq.pk')",
     expect(lambda c: c.table("sq.pk").latest_snapshot().commit_kind.value == "COMPACT")),
    ("CALL sys.expire_snapshots(table => 'sq.pk', retain_max => 2, retain_min => 1)",
     expect(lambda c: len(list(c.table("sq.pk").snapshot_manager.snapshot_ids())) <= 2)),
    ("CALL sys.rollback(table => 'sq.part', snapshot_id => 1)",
     expect_rows("sq.part", [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")])),
    ("CALL sys.remove_orphan_files(table => 'sq.part', older_than => '2000-01-01 00:00:00')",
     expect_rows("sq.part", [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2")])),
    ("CALL sys.mark_partition_done(table => 'sq.part', partitions => 'dt=d1')",
     expect(lambda c: set(json.loads(Path(c.table("sq.part").path.replace("file://", ""), "dt=d1",
                                          "_SUCCESS").read_text())) == {"creationTime", "modificationTime"})),
    ("ALTER TABLE sq.app ADD COLUMNS (tag STRING COMMENT 'a tag')",
     expect(lambda c: c.table("sq.app").arrow_schema.names == ["id", "name", "score", "tag"])),
    ("ALTER TABLE sq.app ADD COLUMN extra INT",
     expect(lambda c: c.table("sq.app").arrow_schema.names[-1] == "extra")),
    ("ALTER TABLE sq.app RENAME COLUMN tag TO label",
     expect(lambda c: "label" in c.table("sq.app").arrow_schema.names)),
    ("ALTER TABLE sq.app DROP COLUMN extra", expect(lambda c: "extra" not in c.table("sq.app").arrow_schema.names)),
    ("ALTER TABLE sq.app ALTER COLUMN id TYPE BIGINT",
     expect(lambda c: str(c.table("sq.app").arrow_schema.field("id").type) == "int64")),
    ("ALTER TABLE sq.app SET TBLPROPERTIES ('snapshot.num-retained.max'='20')",
     expect(lambda c: c.table("sq.app").schema.options.get("snapshot.num-retained.max") == "20")),
    ("ALTER TABLE sq.app UNSET TBLPROPERTIES ('snapshot.num-retained.max')",
     expect(lambda c: "snapshot.num-retained.max" not in c.table("sq.app").schema.options)),
    ("INSERT INTO sq.app VALUES (6, 'f', 6.0, 'lab')",
     expect_rows("sq.app", [(1, "one", 11.0, None), (2, "B", 0.0, None), (5, "e", 0.0, None), (6, "f", 6.0, "lab")])),
    ("CREATE TABLE sq.ctas TBLPROPERTIES ('primary-key'='id', 'bucket'='1') AS SELECT id, v FROM sq.dyn",
     expect_rows("sq.ctas", [(1, "a"), (2, "B"), (3, "c")])),
    ("ALTER TABLE sq.ctas RENAME TO sq.ctas2", expect(lambda c: c.table_exists("sq.ctas2")
                                                      and not c.table_exists("sq.ctas"))),
    ("SHOW DATABASES", expect_query("SHOW DATABASES", [("default",), ("sq",)])),
    ("SHOW TABLES IN sq", expect(lambda c: sorted(c.list_tables("sq")) == ["app", "ctas2", "dyn", "part", "pk"])),
    ("DESCRIBE sq.part", expect_query("DESCRIBE sq.part", [("# Partition Information", "", None), ("dt", "", None),
                                                            ("dt", "string", None), ("id", "bigint", None),
                                                            ("v", "string", None)])),
    ("DROP TABLE sq.ctas2", expect(lambda c: not c.table_exists("sq.ctas2"))),
    ("DROP TABLE IF EXISTS sq.ctas2", expect(lambda c: not c.table_exists("sq.ctas2"))),
]


def test_statements_table(spark: Any, wh: str, pypaimon: Any) -> None:
    import laketide

    laketide.load_catalog(warehouse=wh).create_database("default", exist_ok=True)
    cat = laketide.load_catalog(warehouse=wh)
    for statement, check in STATEMENTS:
        lts.sql(spark, statement, warehouse=wh).collect()
        try:
            check(spark, cat, wh)
        except Exception as e:
            raise AssertionError(f"after {statement!r}: {e!r}") from e
    assert len(STATEMENTS) >= 60
    for name in ("sq.pk", "sq.part", "sq.app", "sq.dyn"):  # pypaimon reads what the SQL left behind
        ours = cat.table(name).read()
        theirs = pypaimon.read(wh, name)
        key = [(c, "ascending") for c in ours.column_names]
        assert theirs.select(ours.column_names).sort_by(key).to_pylist() == ours.sort_by(key).to_pylist(), name


def test_show_create_table_round_trips(spark: Any, wh: str, cat: Any) -> None:
    lts.sql(spark, "CREATE TABLE db.src (id BIGINT NOT NULL COMMENT 'the key', v DECIMAL(10, 2), dt STRING, "
                   "ts TIMESTAMP, tags ARRAY<STRING>) PARTITIONED BY (dt) COMMENT 'a table' "
                   "TBLPROPERTIES ('primary-key'='id,dt', 'bucket'='3', 'file.format'='parquet')", warehouse=wh)
    text = lts.sql(spark, "SHOW CREATE TABLE db.src", warehouse=wh).first()[0]
    lts.sql(spark, text.replace("CREATE TABLE db.src", "CREATE TABLE db.copy"), warehouse=wh)
    a, b = cat.table("db.src"), cat.table("db.copy")
    assert a.arrow_schema.equals(b.arrow_schema, check_metadata=True)
    assert (a.primary_keys, a.partition_keys, a.schema.options, a.schema.comment) == (
        b.primary_keys, b.partition_keys, b.schema.options, b.schema.comment)
