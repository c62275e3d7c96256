"""laketide on Apache Spark: the "laketide" Python data source and DataFrame helpers.

The only package that imports pyspark (install with ``pip install 'laketide[spark]'``; Spark needs Java 17+).
"""

from __future__ import annotations

# ``laketide.spark.sql`` is the function (the package of the same name holds it): importing the package binds
# the attribute to the module, which this import then replaces with the function.
from laketide.spark.api import read, read_stream, register_views, with_buckets, write, write_stream
from laketide.spark.sql import sql, use_sql
from laketide.spark.catalog_views import register_catalog_views
from laketide.spark.compact import compact
from laketide.spark.session import register, session
from laketide.spark.source import LaketideDataSource

__all__ = [
    "LaketideDataSource",
    "compact",
    "read",
    "read_stream",
    "register",
    "register_catalog_views",
    "register_views",
    "session",
    "sql",
    "use_sql",
    "with_buckets",
    "write",
    "write_stream",
]
