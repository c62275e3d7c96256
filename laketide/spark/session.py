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
    """Register the "laketide" data source with ``spark`` (default catalog options baked in).

    A relative ``warehouse`` is made absolute here: executors run in other directories. Every session has the
    source without defaults too (laketide ships it as the ``pyspark_laketide`` data source package), so a
    session laketide never saw finds ``format("laketide")`` and asks for the ``warehouse`` option.
    """
    from laketide.spark.options import absolute_warehouse
    from laketide.spark.source import LaketideDataSource

    defaults = {k.lower(): str(v) for k, v in catalog_options.items()}
    if warehouse is not None:
        defaults["warehouse"] = absolute_warehouse(warehouse)
    source: type = LaketideDataSource
    if defaults:
        # A subclass carries the defaults to executors: cloudpickle ships dynamic classes by value.
        source = type("LaketideDataSource", (LaketideDataSource,), {"default_options": defaults})
    spark.dataSource.register(source)
    _DEFAULTS[_session_key(spark)] = defaults
    global _WAREHOUSE
    if "warehouse" in defaults:
        _WAREHOUSE = defaults["warehouse"]


# The catalog defaults each session was registered with (the helpers pass them explicitly: Spark looks a
# Python source up in the *active* session, which may be another one).
_DEFAULTS: dict[int, dict[str, str]] = {}
_WAREHOUSE: str | None = None


def _session_key(spark: SparkSession) -> int:
    return int(spark._jsparkSession.hashCode())  # type: ignore[attr-defined]


def session_defaults(spark: SparkSession) -> dict[str, str]:
    """The catalog options ``spark`` was registered with (the last registered warehouse if none)."""
    found = _DEFAULTS.get(_session_key(spark))
    if found is not None:
        return dict(found)
    return {"warehouse": _WAREHOUSE} if _WAREHOUSE is not None else {}


def ensure_registered(spark: SparkSession) -> None:
    """Make ``spark`` the active session with the source registered (Spark looks Python sources up in the
    active session: a second session, or another thread's, would not find it)."""
    jvm: Any = spark._jvm  # type: ignore[attr-defined]
    jsession = spark._jsparkSession  # type: ignore[attr-defined]
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(jsession)
    if _session_key(spark) not in _DEFAULTS:
        register(spark, **session_defaults(spark))


def registered_warehouse() -> str | None:
    """The warehouse the source was last registered with in this process."""
    return _WAREHOUSE
