"""Keeping primary-key write buffers within ``write-buffer-size`` however large one ``write()`` call is.

Rows go to the buckets' buffers one (partition, bucket) group at a time, in pieces of about a quarter of the
budget each, copied from the input only when buffered, and the buffers are bounded after each piece (the biggest
flushes first, as Java's memory pool preempts its biggest owner). So laketide's copies of the rows (bucket
groups, key-value layout) never exceed the budget by more than one piece; before, a call first copied all of its
rows into bucket order and the buffers, and only then flushed: a full copy of the input whatever
``write-buffer-size`` said. Filling one bucket after the other also keeps the flushes as large as the budget
allows: a bucket that fits the budget is flushed once per write (one level-0 run), as before; rows spread over
all buckets at once would flush each of them every budget / buckets bytes, multiplying the level-0 runs and
bringing compaction into the write. A call whose rows fit in the budget less one piece is split in one go.
A one-shot write (write/flush_pipeline.py) keeps the same bound, counting the buckets whose flush is in flight.

Paimon: memory.MemoryPoolFactory (preemptMemory), mergetree.MergeTreeWriter (flushMemory)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeGuard, runtime_checkable

import pyarrow as pa

__all__ = ["BufferedWriter", "flush_biggest", "is_buffered", "piece_rows", "MIN_PIECE_ROWS", "PIECES_PER_BUDGET"]

# A piece is at most this fraction of the budget: buffers overshoot it by at most one piece.
PIECES_PER_BUDGET = 4
# ... but not fewer rows than this: a tiny budget must not turn each row into a flush of its own.
MIN_PIECE_ROWS = 4096


def piece_rows(table: pa.Table, budget: int) -> int | None:
    """Rows of ``table`` in about ``budget / PIECES_PER_BUDGET`` Arrow bytes (at least MIN_PIECE_ROWS); None when
    the whole table fits in the budget less one piece (then it is split in one go, as a single piece would be:
    one copy in bucket order, which is cheaper than a copy per group)."""
    limit = max(1, budget // PIECES_PER_BUDGET)
    size, n = int(table.nbytes), int(table.num_rows)
    if size <= budget - limit or n <= MIN_PIECE_ROWS:
        return None
    return max(MIN_PIECE_ROWS, n * limit // size)


@runtime_checkable
class BufferedWriter(Protocol):
    """A bucket writer with a write buffer (flushed to keep all buffers within write-buffer-size)."""

    @property
    def buffered_bytes(self) -> int: ...
    def flush(self) -> None: ...


_BUFFERED_TYPES: dict[type, bool] = {}


def is_buffered(writer: object) -> TypeGuard[BufferedWriter]:
    """``isinstance(writer, BufferedWriter)``, remembered per class (a runtime protocol check inspects every
    member: ~0.1 ms, and a write asks several times per group)."""
    known = _BUFFERED_TYPES.get(type(writer))
    if known is None:
        known = _BUFFERED_TYPES[type(writer)] = isinstance(writer, BufferedWriter)
    return known


def flush_biggest(buffers: Sequence[BufferedWriter], budget: int) -> None:
    """Flush the biggest of ``buffers`` until what the rest hold is within ``budget``."""
    total = sum(w.buffered_bytes for w in buffers)
    for w in sorted(buffers, key=lambda w: w.buffered_bytes, reverse=True):
        if total < budget:
            break
        total -= w.buffered_bytes
        w.flush()
