"""Group-by kernels over key-sorted rows: each key is a contiguous segment, reduced with numpy ``reduceat``.

Merge engines sort a batch by (key, sequence), cut it into one segment per key and reduce every column with one
of these kernels; "which row of the segment wins" is an index per segment, so any Arrow type (strings, nested)
is gathered with a single ``take``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.io.kv import VALUE_KIND
from laketide.mergetree.merge import MergeSpec, last_of_groups, sort_for_merge

__all__ = ["Segments", "sorted_segments", "take_or_null", "valid_mask", "row_kinds", "keep_single_versions"]


@dataclass(frozen=True, slots=True)
class Segments:
    """The key segments of a key-sorted table of ``n`` rows."""

    starts: np.ndarray  # first row of each segment
    ids: np.ndarray  # segment of each row
    n: int

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def ends(self) -> np.ndarray:
        """Last row of each segment."""
        out = np.empty(self.count, dtype=np.int64)
        out[:-1] = self.starts[1:] - 1
        out[-1] = self.n - 1
        return out

    @classmethod
    def from_last_mask(cls, last: np.ndarray) -> Segments:
        n = len(last)
        ends = np.flatnonzero(last)
        starts = np.empty(len(ends), dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        ids = np.repeat(np.arange(len(ends), dtype=np.int64), np.diff(np.append(starts, n)))
        return cls(starts=starts, ids=ids, n=n)

    def last_index(self, mask: np.ndarray) -> np.ndarray:
        """Per segment, the last row where ``mask`` holds, else -1."""
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), -1)
        return np.maximum.reduceat(idx, self.starts)

    def first_index(self, mask: np.ndarray) -> np.ndarray:
        """Per segment, the first row where ``mask`` holds, else -1."""
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), self.n)
        first = np.minimum.reduceat(idx, self.starts)
        return np.where(first == self.n, -1, first)

    def count_true(self, mask: np.ndarray) -> np.ndarray:
        return np.add.reduceat(mask.astype(np.int64), self.starts)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask, self.starts)

    def broadcast(self, per_segment: np.ndarray) -> np.ndarray:
        """A per-segment value repeated on every row of its segment."""
        per_row: np.ndarray = per_segment[self.ids]
        return per_row


def sorted_segments(rows: pa.Table, spec: MergeSpec) -> tuple[pa.Table, Segments]:
    """``rows`` sorted by key, then oldest to newest, and its key segments."""
    ordered = sort_for_merge(rows, spec)
    keys = ordered.select(list(spec.key_names))
    last = last_of_groups(keys, spec.key_names).to_numpy(zero_copy_only=False)
    return ordered, Segments.from_last_mask(np.asarray(last, dtype=bool))


def take_or_null(values: pa.Array | pa.ChunkedArray, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` with null where ``idx`` is -1."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    missing = idx < 0
    indices = pa.array(np.where(missing, 0, idx), pa.int64(), mask=missing if missing.any() else None)
    if len(values) == 0:
        return pa.nulls(len(idx), values.type)
    return values.take(indices)


def valid_mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where a value is not null."""
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), dtype=bool)


def row_kinds(table: pa.Table) -> np.ndarray:
    return np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)


def keep_single_versions(ordered: pa.Table, segs: Segments, merged: pa.Table) -> pa.Table:
    """Keys with one version keep that version unchanged, retractions included (Paimon: ReducerMergeFunctionWrapper).

    This keeps merges associative across the write buffer, merge-on-read and compaction: a lone -U / -D still
    retracts what older files hold when it meets them later, instead of being folded against nothing.
    """
    single = segs.starts == segs.ends
    if not single.any():
        return merged
    positions = np.arange(segs.count, dtype=np.int64)
    positions[single] = segs.count + np.arange(int(single.sum()))
    lone = ordered.take(pa.array(segs.starts[single]))
    return pa.concat_tables([merged, lone.cast(merged.schema)]).take(pa.array(positions))
