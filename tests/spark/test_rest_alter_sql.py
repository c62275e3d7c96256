"""Spark SQL ``ALTER TABLE`` on a laketide catalog backed by REST: every change goes to the server (a real uvicorn on
127.0.0.1), which applies it through its own catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import laketide.spark as lts
from laketide.catalog.filesystem import FileSystemCatalog
from laketide.exceptions import SchemaChangeError
from laketide.table.table import Table
from tests.catalog.rest_server import serving

TOKEN = "spark-alter-token"


class RecordingCatalog(FileSystemCatalog):
    """The served catalog, noting which tables the server altered (the proof that ALTER reached it)."""

    def __init__(self, warehouse: str) -> None:
        super().__init__(warehouse)
        self.altered: list[str] = []

    def alter_table(self, name: Any, *changes: Any) -> Table:
        self.altered.append(str(name))
        return super().alter_table(name, *changes)


def test_spark_sql_alter_table_on_a_rest_catalog_goes_through_the_server(spark, tmp_path: Path) -> None:  # noqa: ANN001
    served = RecordingCatalog(str(tmp_path / "warehouse"))
    served.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int32()),
                        ("x", pa.string())])
    served.create_table("db.t", schema, primary_key=["id"], options={"bucket": "1"}).write(
        pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, None], "x": ["p", "q"]}, schema=schema))
    statements = [
        "ALTER TABLE db.t ADD COLUMNS (tag STRING COMMENT 'a tag')",
        "ALTER TABLE db.t RENAME COLUMN v TO v2",
        "ALTER TABLE db.t ALTER COLUMN n TYPE BIGINT",
        "ALTER TABLE db.t SET TBLPROPERTIES ('snapshot.num-retained.max' = '50')",
        "ALTER TABLE db.t UNSET TBLPROPERTIES ('snapshot.num-retained.max')",
        "ALTER TABLE db.t DROP COLUMN x",
    ]
    # A REST catalog's warehouse is a name the server resolves, not a directory here.
    wh = "served"
    with serving(served, token=TOKEN) as uri:
        options = {"metastore": "rest", "catalog.uri": uri, "catalog.token": TOKEN}
        for statement in statements:
            lts.sql(spark, statement, warehouse=wh, options=options)
        assert served.altered == ["db.t"] * len(statements)
        t = served.table("db.t")
        assert isinstance(t, Table) and t.schema.id == len(statements)
        assert t.arrow_schema.names == ["id", "v2", "n", "tag"]
        assert str(t.schema.field("n").type) == "BIGINT" and t.schema.field("tag").description == "a tag"
        assert t.schema.options == {"bucket": "1"}
        # A refused change: the server's typed error, and no new schema.
        with pytest.raises(SchemaChangeError, match="id"):
            lts.sql(spark, "ALTER TABLE db.t DROP COLUMN id", warehouse=wh, options=options)
        assert served.table("db.t").schema.id == len(statements)
        rows = lts.sql(spark, "SELECT id, v2, n, tag FROM db.t ORDER BY id", warehouse=wh, options=options).collect()
        assert [tuple(r) for r in rows] == [(1, "a", 1, None), (2, "b", None, None)]
