"""How Spark cuts the rows it hands laketide's writer tasks into Arrow batches.

Since 4.1 Spark caps each Arrow batch it sends a Python process at ``spark.sql.execution.arrow.maxBytesPerBatch``
(64 MB by default) as well as at ``maxRecordsPerBatch`` (10k rows), and checks the cap after every row: it asks
the batch being filled for its size (``ArrowWriter.sizeInBytes``), which walks every column vector. For a writer
task that is ~30% of the JVM's samples while it hands rows to Python (JFR, a 500k-row write of 6 columns), and
0.3-0.4 s of JVM CPU per such write on local[2], most of what writing through Python costs on top of Spark's own
Parquet writer. At ``Int.MaxValue`` Spark skips the check, and batches are ``maxRecordsPerBatch`` rows, as before
4.1.

So a laketide write lifts the cap for the time its job runs, unless the session sets the cap itself (kept: the
user chose it) or the rows have binary columns (BLOBs, files: rows where a byte cap can matter). The writer tasks
gather 262k rows before writing anyway (laketide.spark.writer.WRITE_CHUNK_ROWS), so the cap bought them no
bound on their memory. The cap is a session setting: other queries of the session that run at the same time
also get batches without it; concurrent laketide writes share one lift (the last one to finish restores).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["MAX_BYTES_PER_BATCH", "uncapped_arrow_batches"]

MAX_BYTES_PER_BATCH = "spark.sql.execution.arrow.maxBytesPerBatch"
_NO_CAP = str(2**31 - 1)  # Int.MaxValue: Spark's "no byte cap", which skips the per-row size check

_LOCK = threading.Lock()
_LIFTED: dict[int, int] = {}  # id of a JVM session -> laketide writes in flight that lifted its cap


@contextmanager
def uncapped_arrow_batches(df: DataFrame) -> Iterator[None]:
    """Run a write of ``df`` (inside the block) with Spark's per-row Arrow byte check off, where that applies."""
    if any("binary" in f.dataType.simpleString() for f in df.schema.fields):  # nested ones too
        yield
        return
    spark = df.sparkSession
    key = int(spark._jsparkSession.hashCode())  # type: ignore[attr-defined]
    with _LOCK:
        lifted = _LIFTED.get(key, 0)
        if lifted == 0:
            if spark.conf.get(MAX_BYTES_PER_BATCH, None) is not None:  # the session's own cap: kept
                lifted = -1
            else:
                spark.conf.set(MAX_BYTES_PER_BATCH, _NO_CAP)
        if lifted >= 0:
            _LIFTED[key] = lifted + 1
    try:
        yield
    finally:
        if lifted >= 0:
            with _LOCK:
                _LIFTED[key] -= 1
                if _LIFTED[key] == 0:
                    del _LIFTED[key]
                    spark.conf.unset(MAX_BYTES_PER_BATCH)
