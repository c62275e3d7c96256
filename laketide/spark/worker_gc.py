"""Keep Spark's per-task garbage collection off the long-lived objects of a reused Python worker.

A reused PySpark worker (``pyspark.daemon``, ``spark.python.worker.reuse``, the default) runs a full
``gc.collect()`` after every task and every planner call. With pyarrow, pandas and laketide imported that walks
~90k long-lived objects (module dicts, functions, classes): ~40 ms of CPU each time, about as much as a small
write task's own work, and on the critical path of the next task the worker takes. ``freeze_long_lived`` moves
what is alive at the start of a laketide entry point into the permanent generation (``gc.freeze``), so those
collections walk only what the tasks create.

It freezes again only when modules were imported since (so at most a handful of times per process). What a
freeze catches besides modules is what the current task holds then (its command, its input stream); should
that become cyclic garbage it stays in memory: a few objects, a bounded number of times. Outside a reused
Spark worker (the user's driver, tests, pytest) it does nothing.
"""

from __future__ import annotations

import gc
import os
import sys

__all__ = ["freeze_long_lived", "in_reused_worker"]

_frozen_modules = 0  # len(sys.modules) at this process's last freeze


def in_reused_worker() -> bool:
    """Whether this process is a Spark Python worker the daemon keeps (and collects after each task)."""
    return (os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER"
            and os.environ.get("SPARK_REUSE_WORKER", "") not in ("", "0", "false"))


def freeze_long_lived() -> None:
    """Freeze this worker's live objects if modules were imported since its last freeze (see the module)."""
    global _frozen_modules
    loaded = len(sys.modules)
    if loaded == _frozen_modules or not in_reused_worker():
        return
    gc.freeze()
    _frozen_modules = loaded
