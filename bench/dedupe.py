"""Keep-last-per-key dedupe floors (no table format), and picking the faster of them as a workload's floor.

Two honest ways to merge a base batch and an upsert batch by key, last write wins:

- **sort**: concat, numpy stable argsort of the key (timsort: near-linear on two sorted runs), keep each key
  run's last row (``bench.pk_table.dedupe_floor``);
- **hash**: concat, a row-index column, Arrow's hash ``group_by(key).aggregate(max(index))``, ``take`` those rows.

Which is faster depends on the data (sorted runs favour the sort), so a suite measures both, interleaved, and
the faster becomes the floor under its own name; the other stays listed as a reference (``floor=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa

from bench.harness import Result, timed

INDEX = "__row_index"
SLOWER_NOTE = "the slower dedupe: reference, not the floor"


def hash_dedupe(base: pa.Table, upsert: pa.Table, *, key: str) -> pa.Table:
    """Last write wins per key through Arrow's hash aggregation (the row index is the write order)."""
    both = pa.concat_tables([base, upsert])
    index = pa.table({key: both.column(key), INDEX: pa.array(np.arange(both.num_rows, dtype=np.int64))})
    # Single-threaded group_by: the threaded one is slower on 2 cores and its output order is not stable.
    last = index.group_by(key, use_threads=False).aggregate([(INDEX, "max")]).column(f"{INDEX}_max")
    return both.take(last)


def fastest_floor(workload: str, rows: int, candidates: Mapping[str, Callable[[], object]], *, repeat: int,
                  notes: Mapping[str, str] | None = None) -> list[Result]:
    """Time every candidate ``repeat`` times, interleaved; the fastest (median) first, marked as the floor.

    A candidate that raises is recorded with its error (never the floor); the others still run.
    """
    results = {name: Result(workload, name, rows, note=(notes or {}).get(name)) for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            result = results[name]
            if result.error is not None:
                continue
            try:
                seconds, peak, _ = timed(fn)
            except Exception as e:  # noqa: BLE001 - a failing floor is reported, not fatal
                result.error, result.seconds = f"{type(e).__name__}: {e}"[:400], []
                continue
            result.add(seconds, peak)
    ranked = sorted(results.values(), key=lambda r: (not r.ok, r.median if r.ok else 0.0))
    for i, result in enumerate(ranked):
        result.floor = i == 0 and result.ok
        if i > 0 and result.ok:
            result.note = "; ".join(filter(None, [result.note, SLOWER_NOTE]))
    return ranked
