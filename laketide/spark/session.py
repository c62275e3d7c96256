"""Building a SparkSession that laketide can run on, and registering the "laketide" data source.

Paimon: paimon-spark's SparkCatalog setup (here a Python Data Source registered per session)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register", "session", "DEFAULT_CONF"]

# The confs laketide needs (filter pushdown into Python sources, Arrow transfers) and sensible local defaults.
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopTimeout": "30s",
}

# Only for local masters: small shuffles, no speculative copies of writer tasks.
LOCAL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "4",
    "spark.driver.memory": "2g",
    "spark.sql.streaming.minBatchesToRetain": "20",
}


def session(
    master: str | None = "local[2]",
    *,
    app_name: str = "laketide",
    warehouse: str | None = None,
    conf: Mapping[str, Any] | None = None,
) -> SparkSession:
    """A SparkSession with the laketide source registered (``master=None`` keeps whatever spark-submit set).

    ``warehouse`` becomes the default ``warehouse`` option of ``format("laketide")`` in this session.
    """
    from pyspark.sql import SparkSession

    # Executors must import laketide: run them on this interpreter unless the user chose one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    settings = dict(DEFAULT_CONF)
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local"):
            settings.update(LOCAL_CONF)
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key in ("spark.sql.python.filterPushdown.enabled", "spark.sql.execution.arrow.pyspark.enabled"):
        spark.conf.set(key, settings[key])  # an existing session keeps its confs otherwise
    register(spark, warehouse=warehouse)
    return spark


def register(spark: SparkSession, *, warehouse: str | None = None, **catalog_options: str) -> None:
    """Register the "laketide" data source with ``spark`` (default catalog options baked in)."""
    from laketide.spark.source import LaketideDataSource

    defaults = dict(catalog_options)
    if warehouse is not None:
        defaults["warehouse"] = warehouse
    source: type = LaketideDataSource
    if defaults:
        # A subclass carries the defaults to executors: cloudpickle ships dynamic classes by value.
        source = type("LaketideDataSource", (LaketideDataSource,), {"default_options": defaults})
    spark.dataSource.register(source)
    global _WAREHOUSE
    _WAREHOUSE = warehouse


_WAREHOUSE: str | None = None


def _registered_warehouse() -> str | None:
    """The warehouse the source was last registered with in this process (driver-side helpers use it)."""
    return _WAREHOUSE
