"""Catalog views (JDBC, REST) as Spark temporary views: ``spark.sql("SELECT * FROM `db.v`")``.

Each view runs its Spark dialect text (else its default query) as Spark SQL; the tables it reads must be
visible to Spark under the names it uses, e.g. registered first by :func:`laketide.spark.register_views`
(temporary views named ```db.t```).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from laketide.catalog.base import Catalog, Identifier
from laketide.exceptions import SchemaError, UnsupportedFeatureError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register_catalog_views"]


def register_catalog_views(spark: SparkSession, catalog: Catalog, *, databases: Sequence[str] | None = None,
                           dialect: str = "spark") -> list[str]:
    """Register every view of ``catalog`` as a Spark temporary view named ``db.v``; returns the names.

    A catalog without views (the filesystem catalog) registers none. A view whose query yields other columns
    than its stored schema is refused (SchemaError naming both), registering nothing for it.
    """
    names = []
    for db in databases or catalog.list_databases():
        try:
            views = catalog.list_views(db)
        except UnsupportedFeatureError:
            return []
        for v in views:
            view = catalog.view(Identifier(db, v))
            frame = spark.sql(view.query_for(dialect))
            expected = view.arrow_schema.names
            if frame.columns != expected:
                raise SchemaError(f"View {db}.{v}: its {dialect} query yields columns {frame.columns}, but the view's "
                                  f"schema has {expected}")
            frame.createOrReplaceTempView(f"`{db}.{v}`")
            names.append(f"{db}.{v}")
    return names
