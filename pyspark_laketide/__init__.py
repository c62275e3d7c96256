"""The "laketide" Spark data source as a Python data source package.

PySpark registers the ``DefaultSource`` of every importable ``pyspark_*`` module in each SparkSession when the
session first uses a Python data source, so ``format("laketide")`` works in any session (a second
``SparkSession``, one laketide never saw) without ``laketide.spark.register``; such a session has no default
warehouse: pass ``option("warehouse", ...)``.
"""

from laketide.spark.source import LaketideDataSource as DefaultSource

__all__ = ["DefaultSource"]
