"""Copying rows out of a table by ascending row numbers, chunk by chunk.

Arrow's ``take`` on a column of several chunks first concatenates the whole column (pyarrow 26 does so for
variable-width types), so each bucket's take out of a multi-chunk input copies the entire input column once more:
a 2M-row write into 4 buckets copied its string columns 4 extra times, and an 8M-row write, split into pieces
to stay within the write buffer, once per piece. Row numbers of a group are ascending, so each chunk's share is
one contiguous run of them: taken from that chunk alone, the result keeps one chunk per source chunk touched and
nothing beyond the group's rows is copied.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["take_ascending", "take_column", "take_rows"]

# More chunks than this (e.g. a stream of small batches): one Python call per chunk and column would cost more
# than Arrow's concatenation, so Arrow takes them.
MAX_CHUNKS = 64


def take_ascending(table: pa.Table, indices: np.ndarray) -> pa.Table:
    """``table.take(indices)`` for ascending ``indices``, without concatenating multi-chunk columns."""
    return pa.Table.from_arrays([take_column(c, indices) for c in table.columns], schema=table.schema)


def take_rows(table: pa.Table, indices: np.ndarray) -> pa.Table:
    """``table.take(indices)``: chunk by chunk when ``indices`` are ascending (the rows of one group or key set,
    a few of many: Arrow would first copy every multi-chunk column whole, once per call), else Arrow's take."""
    if len(indices) > 1 and not bool((indices[1:] >= indices[:-1]).all()):
        return table.take(indices)
    return take_ascending(table, indices)


def take_column(column: pa.ChunkedArray | pa.Array, indices: np.ndarray) -> pa.ChunkedArray | pa.Array:
    """``column.take(indices)`` for ascending ``indices``, chunk by chunk."""
    if not isinstance(column, pa.ChunkedArray) or column.num_chunks <= 1 or column.num_chunks > MAX_CHUNKS:
        return column.take(indices)
    lengths = np.fromiter((len(c) for c in column.chunks), dtype=np.int64, count=column.num_chunks)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    cuts = np.searchsorted(indices, bounds)
    pieces = []
    for i, chunk in enumerate(column.chunks):
        lo, hi = int(cuts[i]), int(cuts[i + 1])
        if hi > lo:
            pieces.append(chunk.take(indices[lo:hi] - bounds[i]))
    return pa.chunked_array(pieces, type=column.type)
