"""Views stored in a JDBC catalog, queried from Spark SQL as temporary views (their Spark dialect text)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import laketide
import laketide.spark as ls
from laketide.catalog.view import View
from laketide.exceptions import SchemaError


def test_jdbc_catalog_views_are_spark_temp_views(spark, tmp_path: Path) -> None:  # noqa: ANN001
    wh = str(tmp_path / "warehouse")
    cat = laketide.load_catalog(wh, metastore="jdbc", uri=f"jdbc:sqlite:{tmp_path / 'meta.sqlite'}")
    cat.create_database("db")
    cat.create_table("db.orders", pa.schema([("id", pa.int64()), ("amount", pa.float64())])).write(
        pa.table({"id": [1, 1, 2], "amount": [1.5, 2.5, 4.0]}))
    schema = pa.schema([("id", pa.int64()), ("total", pa.float64())])
    cat.create_view("db.totals", View.of(
        schema, "SELECT id, SUM(amount) AS total FROM db.orders GROUP BY id",  # the default (Flink) text
        dialects={"spark": "SELECT id, sum(amount) AS total FROM `db.orders` GROUP BY id"}))
    cat.create_view("db.wrong", View.of(schema, "SELECT id FROM `db.orders`"))

    assert "db.orders" in ls.register_views(spark, warehouse=wh)  # the table, as Spark sees it
    with pytest.raises(SchemaError, match="db.wrong"):
        ls.register_catalog_views(spark, cat)
    cat.drop_view("db.wrong")
    assert ls.register_catalog_views(spark, cat) == ["db.totals"]
    got = {r["id"]: r["total"] for r in spark.sql("SELECT * FROM `db.totals`").collect()}
    assert got == {1: 4.0, 2: 4.0}
    # A filesystem catalog keeps no views: nothing to register.
    assert ls.register_catalog_views(spark, laketide.load_catalog(wh)) == []
