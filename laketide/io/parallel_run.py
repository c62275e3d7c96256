"""Writing one large sorted run as several key-disjoint files encoded at once.

A Parquet file is encoded by one thread. A flush of one bucket that holds most of a write (a dynamic-bucket table
fills one bucket up to ``dynamic-bucket.target-row-num``, 2M rows by default) would leave the other cores idle,
while the same rows in fixed buckets are encoded bucket by bucket in parallel. So a run of at least two parts'
worth of bytes is cut at row boundaries into up to one part per core; the run is sorted with one row per key,
so the parts are key-disjoint, as the files a rolling writer cuts from one run are (Java's MergeTreeWriter rolls
a large flush into several level-0 files too). Each file keeps its own key range, key stats and min / max
sequence numbers from its rows.

Cost: each part is one more level-0 file (a sorted run for the compaction trigger), as when rolling.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from laketide.io.file_writer import RollingFileWriter

__all__ = ["write_sorted_run", "parts_for"]

# Below this many Arrow bytes per part, a thread's start-up and one more file cost more than they save.
MIN_PART_BYTES = 32 * 1024 * 1024


def parts_for(run: pa.Table, *, cores: int | None = None) -> int:
    """How many files to encode ``run`` as at once: one per core, each of at least MIN_PART_BYTES."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return int(max(1, min(cores, run.nbytes // MIN_PART_BYTES, run.num_rows)))


# Runs being written right now in this process: the cores are shared between them (buckets that flush in parallel
# already use the cores; a bucket flushing alone gets them all).
_active = 0
_active_lock = threading.Lock()


def write_sorted_run(writer: RollingFileWriter, run: pa.Table, *, parts: int | None = None) -> None:
    """Write ``run`` (sorted by key, one row per key) through ``writer`` and close its files; large runs as
    ``parts`` key-disjoint files encoded in parallel (default: the cores not busy with other runs). The files
    end in ``writer.written`` in key order."""
    global _active
    with _active_lock:
        _active += 1
        busy = _active
    try:
        n = parts if parts is not None else parts_for(run, cores=max(1, (os.cpu_count() or 1) // busy))
        _write(writer, run, n)
    finally:
        with _active_lock:
            _active -= 1


def _write(writer: RollingFileWriter, run: pa.Table, n: int) -> None:
    # External paths hand out roots in turn from one provider: those writes stay on one thread.
    if n <= 1 or writer.external_paths is not None:
        writer.write(run)
        writer.close()
        return
    writer.close()
    step = -(-run.num_rows // n)
    slices = [run.slice(start, step) for start in range(0, run.num_rows, step)]
    siblings = [writer.sibling() for _ in slices]

    def encode(i: int) -> None:
        siblings[i].write(slices[i])
        siblings[i].close()

    with ThreadPoolExecutor(max_workers=len(slices), thread_name_prefix="laketide-encode") as pool:
        futures = [pool.submit(encode, i) for i in range(len(slices))]
        errors = [f.exception() for f in futures]
    failed = next((e for e in errors if e is not None), None)
    if failed is not None:
        for s in siblings:
            s.abort()  # a failed flush leaves none of its files
        raise failed
    for s in siblings:
        writer.adopt(s)
