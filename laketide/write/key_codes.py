"""Distinct keys of a batch and where they sit in a key index, for cross-partition routing.

Arrow's hash kernels (``dictionary_encode``, ``index_in``) build a hash table of every key: at 8M keys that is
hundreds of MB of fresh memory per call, filled by random writes. An integer key whose values span a range not
much wider than the batch (ids, sequences: the usual primary key) needs no hashing: a table indexed by
``key - min`` answers both questions in a few linear passes. Other keys go through Arrow as before; both paths
give the same answer (distinct keys in order of first arrival).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["EncodedKeys", "count_ids", "encode_keys", "gather", "has_duplicate_ints", "positions_in", "present_ids"]

# A direct table is used when the key range is at most this many times the number of keys (plus a constant).
RANGE_PER_KEY = 4
RANGE_SLACK = 1 << 16


@dataclass(frozen=True, slots=True)
class EncodedKeys:
    codes: np.ndarray  # int64: each row's key id
    keys: pa.Array  # the distinct keys, in order of first arrival (key id = position)
    first: np.ndarray  # int64: the row where each distinct key first arrives

    @property
    def distinct(self) -> bool:
        """Whether every row holds a key of its own (then codes and first are the row numbers)."""
        return len(self.keys) == len(self.codes)


def _int_range(values: np.ndarray, n: int) -> tuple[int, int] | None:
    """(min, span) of integer values when a direct table over them is small enough."""
    if len(values) == 0:
        return None
    lo, hi = int(values.min()), int(values.max())
    span = hi - lo + 1
    return (lo, span) if span <= RANGE_PER_KEY * n + RANGE_SLACK else None


# Rows per pass over a key column: each temporary (key - min) stays well under glibc's 32 MB mmap threshold, so it
# reuses freed memory instead of faulting in fresh pages at every call.
CHUNK_ROWS = 1 << 20


def _seen(values: np.ndarray, lo: int, span: int) -> np.ndarray:
    """A table over ``[lo, lo + span)``: True where a value occurs."""
    seen = np.zeros(span, dtype=bool)
    for start in range(0, len(values), CHUNK_ROWS):
        chunk = values[start:start + CHUNK_ROWS]
        seen[chunk - lo if lo else chunk] = True
    return seen


def present_ids(ids: np.ndarray, length: int) -> np.ndarray:
    """The ids in ``[0, length)`` that occur, ascending (``np.unique`` of small ids without a sort, nor an int64
    count per id)."""
    return np.flatnonzero(_seen(ids, 0, length))


def count_ids(ids: np.ndarray, length: int) -> np.ndarray:
    """``np.bincount(ids, minlength=length)`` a chunk at a time: bincount first copies non-intp ids to intp (a
    long count table is made once instead, rather than once per chunk)."""
    if length > CHUNK_ROWS:
        return np.bincount(ids, minlength=length)
    counts = np.zeros(length, dtype=np.int64)
    for start in range(0, len(ids), CHUNK_ROWS):
        counts += np.bincount(ids[start:start + CHUNK_ROWS], minlength=length)
    return counts


def gather(values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values[ids]`` a chunk at a time: fancy indexing first copies non-intp ids to intp."""
    out = np.empty(len(ids), dtype=values.dtype)
    for start in range(0, len(ids), CHUNK_ROWS):
        np.take(values, ids[start:start + CHUNK_ROWS], out=out[start:start + CHUNK_ROWS])
    return out


def has_duplicate_ints(values: np.ndarray) -> bool | None:
    """Whether an integer value occurs twice, through a table over the values' range (None: the range is too
    wide for one; sort instead)."""
    found = _int_range(values, len(values))
    if found is None:
        return None
    return int(np.count_nonzero(_seen(values, *found))) < len(values)


def encode_keys(kb: pa.Array) -> EncodedKeys:
    """Dictionary-encode one key column (``cross_partition.key_bytes``): ids in order of first arrival."""
    n = len(kb)
    if pa.types.is_integer(kb.type) and kb.null_count == 0:
        values = kb.to_numpy()
        found = _int_range(values, n)
        if found is not None:
            lo, span = found
            if int(np.count_nonzero(_seen(values, lo, span))) == n:  # every key once (a first write, most upserts)
                ident = np.arange(n, dtype=np.int64)
                ident.flags.writeable = False  # codes and first are the same array
                return EncodedKeys(ident, kb, ident)
            rel = values - lo
            rows = np.arange(n, dtype=np.int64)
            first_of = np.full(span, n, dtype=np.int64)
            np.minimum.at(first_of, rel, rows)
            first = np.flatnonzero(first_of[rel] == rows)  # ascending: order of first arrival
            id_of = np.empty(span, dtype=np.int64)
            id_of[rel[first]] = np.arange(len(first), dtype=np.int64)
            return EncodedKeys(id_of[rel], kb.take(pa.array(first)), first)
    encoded = pc.dictionary_encode(kb)
    codes = encoded.indices.to_numpy().astype(np.int64)
    first = np.full(len(encoded.dictionary), n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    return EncodedKeys(codes, encoded.dictionary, first)


def positions_in(keys: pa.Array, index: pa.Array) -> np.ndarray:
    """The position of each of ``keys`` (distinct) in ``index`` (distinct), -1 where absent (int64)."""
    if len(index) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    if pa.types.is_integer(keys.type) and keys.type == index.type and keys.null_count == 0 and index.null_count == 0:
        values = keys.to_numpy()
        found = _int_range(values, len(values))
        if found is not None:
            lo, span = found
            known = index.to_numpy()
            hi = lo + span - 1  # (lo + span may not fit int64)
            pos_of = np.full(span, -1, dtype=np.int64)
            for start in range(0, len(known), CHUNK_ROWS):  # an index of many keys: no index-sized temporaries
                part = known[start:start + CHUNK_ROWS]
                inside = np.flatnonzero((part >= lo) & (part <= hi))
                pos_of[part[inside] - lo] = inside + start
            out: np.ndarray = pos_of[values - lo]
            return out
    return np.asarray(pc.fill_null(pc.index_in(keys, value_set=index), -1).to_numpy(), dtype=np.int64)
