"""The edges of a merge section that need no merge: rows of one run whose keys no other run can hold.

In a section of overlapping sorted runs, the run starting lowest holds every key below the next-lowest run's
first key on its own, and the run ending highest every key above the next-highest run's last key (Paimon's
IntervalPartition makes the same argument per file). Those rows are already sorted and unique, so when the merge
engine keeps a lone row as it is they are passed through without the merge - and without decoding the
``_SEQUENCE_NUMBER`` column, nor ``_VALUE_KIND`` when the file holds no retraction. A typical upsert (new keys
at the top of the key space) leaves most of the base run at the head edge.

Files are placed by their min / max keys; inside a file that straddles an edge bound, whole Parquet row groups by
the statistics of the first key column (integers only: values Python compares exactly as Java does). A part whose
statistics are unknown stays in the merge, which is always right. A section of one run is all head.

Paimon: mergetree.compact.IntervalPartition (sections), MergeTreeReaders (a run needing no merge read as is)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from laketide.expr import FieldStats

__all__ = ["Part", "RunEdges", "edge_part", "run_edges"]

T = TypeVar("T")
Key = tuple[Any, ...]
StatsOf = Callable[[str], "FieldStats | None"]


class Part(Enum):
    """Where a row group (or file) of a section goes."""

    HEAD = "head"  # before the merge, passed through
    MERGE = "merge"
    TAIL = "tail"  # after the merge, passed through


@dataclass(frozen=True, slots=True)
class RunEdges:
    """Rows of ``runs[head_run]`` with key < ``head_below`` and of ``runs[tail_run]`` with key > ``tail_above``
    overlap no other run of the section."""

    head_run: int
    head_below: Key | None  # None: the only run of its section, all of it passes through
    tail_run: int
    tail_above: Key | None


def run_edges(runs: Sequence[Sequence[T]], key_range: Callable[[T], tuple[Key, Key]]) -> RunEdges | None:
    """The edges of a section of non-empty runs (each a key-ordered chain of files); a lone run is all head."""
    if not runs or any(not run for run in runs):
        return None
    if len(runs) == 1:
        return RunEdges(head_run=0, head_below=None, tail_run=0, tail_above=None)
    lows = [key_range(run[0])[0] for run in runs]
    highs = [key_range(run[-1])[1] for run in runs]
    head = min(range(len(runs)), key=lambda i: lows[i])
    tail = max(range(len(runs)), key=lambda i: highs[i])
    # Strict bounds: a key equal to another run's first / last key must be merged (ties at the boundary).
    head_below = min(lows[i] for i in range(len(runs)) if i != head)
    tail_above = max(highs[i] for i in range(len(runs)) if i != tail)
    return RunEdges(head_run=head, head_below=head_below, tail_run=tail, tail_above=tail_above)


def file_part(edges: RunEdges, run: int, lo: Key, hi: Key) -> Part | None:
    """A whole file's part, or None when it straddles an edge bound (decided per row group)."""
    if edges.head_below is None:
        return Part.HEAD
    assert edges.tail_above is not None
    head = run == edges.head_run and lo < edges.head_below
    tail = run == edges.tail_run and hi > edges.tail_above
    if head and hi < edges.head_below:
        return Part.HEAD
    if tail and lo > edges.tail_above:
        return Part.TAIL
    return None if head or tail else Part.MERGE


def edge_part(edges: RunEdges, run: int, stats: FieldStats | None) -> Part:
    """A row group's part from its first-key-column statistics (integer keys); unknown statistics merge."""
    if edges.head_below is None:
        return Part.HEAD
    assert edges.tail_above is not None
    if stats is None or not isinstance(stats.min, int) or not isinstance(stats.max, int):
        return Part.MERGE
    if run == edges.head_run and stats.max < edges.head_below[0]:
        return Part.HEAD
    if run == edges.tail_run and stats.min > edges.tail_above[0]:
        return Part.TAIL
    return Part.MERGE
