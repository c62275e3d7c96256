"""Running one compaction unit: merge overlapping sections, upgrade what overlaps nothing.

The unit's files are split into sections of overlapping key ranges. A section of several runs must be merged; a
section of one run is upgraded file by file (only its level changes, nothing is rewritten) unless the file is
small (then it is rewritten with its small neighbours) or it carries retractions that the top level must not
keep. Adjacent sections that are rewritten go through one rolling writer, so small files coalesce.

Merging streams the runs with :func:`laketide.mergetree.sort_merge.merge_sorted_runs` (at most
``sort-spill-threshold`` runs read straight from their files, the others spilled; key-range steps of bounded size)
and writes the merged rows straight to the output writer: memory stays bounded whatever the bucket's size.

Paimon: mergetree.compact.MergeTreeCompactTask, MergeTreeCompactRewriter, AbstractCompactRewriter,
compact.CompactResult
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from laketide.meta.manifest import DataFileMeta
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, to_kv_table
from laketide.mergetree.lookup import LookupLevels
from laketide.mergetree.merge import MergeFunction, drop_retracts, partition_runs
from laketide.mergetree.compaction.universal import CompactUnit
from laketide.mergetree.sort_merge import RunSource, SortMergeSettings, merge_sorted_runs, reader_memory
from laketide.io.file_writer import RollingFileWriter

__all__ = ["CompactResult", "KeyValueRewriter", "run_compact_unit"]

KeyRange = Callable[[DataFileMeta], tuple[tuple[Any, ...], tuple[Any, ...]]]


@dataclass(frozen=True, slots=True)
class CompactResult:
    """Files a compaction removed from the bucket and files it put in (an upgraded file is in both)."""

    before: tuple[DataFileMeta, ...] = ()
    after: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()  # changelog files it produced (changelog-producer = lookup)

    def __add__(self, other: CompactResult) -> CompactResult:
        return CompactResult(self.before + other.before, self.after + other.after, self.changelog + other.changelog)

    def is_empty(self) -> bool:
        return not self.before and not self.after and not self.changelog


@dataclass(slots=True)
class KeyValueRewriter:
    """Merges sections of sorted runs of one bucket into new key-value files at an output level."""

    # A file's rows in batches of at most the given rows: value columns, _SEQUENCE_NUMBER, _VALUE_KIND.
    read_file: Callable[[DataFileMeta, int], Iterator[pa.Table]]
    new_writer: Callable[[int], RollingFileWriter]  # a rolling writer for an output level
    merge: MergeFunction
    kv_schema: pa.Schema
    sort: SortMergeSettings  # how many runs are read directly, how much a merge may hold
    lookup: LookupLevels | None = None  # the bucket's lookup files (deletion vectors, lookup changelog)

    def must_rewrite(self, f: DataFileMeta, output_level: int, *, max_level: int) -> bool:
        """Whether ``f`` is rewritten even where it could only be upgraded (deletion vectors: see there)."""
        return False

    def upgrade(self, f: DataFileMeta, output_level: int) -> CompactResult:
        """``f`` moves to ``output_level`` as it is: only its level changes."""
        return CompactResult((f,), (f.upgrade(output_level),))

    def files_replaced(self, names: Sequence[str]) -> None:
        """Files that left the bucket after a compaction (what the rewriter keeps per file can go)."""
        if self.lookup is not None:
            for name in names:
                self.lookup.forget(name)

    def close(self) -> None:
        """Release local resources (lookup files)."""
        if self.lookup is not None:
            self.lookup.close()

    def rewrite(
        self, output_level: int, *, drop_delete: bool, sections: Sequence[Sequence[Sequence[DataFileMeta]]]
    ) -> CompactResult:
        writer = self.new_writer(output_level)
        try:
            for section in sections:
                runs = [RunSource(size=sum(f.file_size for f in run), read=self._reader(run),
                                  memory=reader_memory([f.file_size for f in run], columns=len(self.kv_schema)))
                        for run in section]
                for merged in merge_sorted_runs(runs, self.merge, settings=self.sort):
                    if drop_delete:
                        merged = drop_retracts(merged)
                    if merged.num_rows:
                        writer.write(self._to_kv(merged))
            after = writer.close()
        except BaseException:  # even an interrupt: delete the half-written outputs, then re-raise
            writer.abort()
            raise
        before = tuple(f for section in sections for run in section for f in run)
        return CompactResult(before, tuple(after))

    def _reader(self, files: Sequence[DataFileMeta]) -> Callable[[int], Iterator[pa.Table]]:
        def read(batch_rows: int) -> Iterator[pa.Table]:
            for f in files:  # one file open at a time: the run's files do not overlap
                yield from self.read_file(f, batch_rows)

        return read

    def _to_kv(self, merged: pa.Table) -> pa.Table:
        seq = merged.column(SEQUENCE_NUMBER).to_numpy()
        kinds = merged.column(VALUE_KIND).to_numpy()
        return to_kv_table(merged, self.merge.spec.key_names, seq, kinds, self.kv_schema)


def _may_hold_deletes(f: DataFileMeta) -> bool:
    return f.delete_row_count is None or f.delete_row_count > 0


def run_compact_unit(
    unit: CompactUnit,
    *,
    rewriter: KeyValueRewriter,
    key_range: KeyRange,
    min_file_size: int,
    drop_delete: bool,
    max_level: int,
) -> CompactResult:
    """Compact ``unit``; files at least ``min_file_size`` big that overlap nothing are only upgraded."""
    out = unit.output_level
    result = CompactResult()
    candidate: list[list[list[DataFileMeta]]] = []

    def upgrade(f: DataFileMeta) -> CompactResult:
        if (out == max_level and _may_hold_deletes(f)) or rewriter.must_rewrite(f, out, max_level=max_level):
            # The top level must not keep retractions: nothing below could use them.
            return rewriter.rewrite(out, drop_delete=drop_delete, sections=[[[f]]])
        if f.level != out:
            return rewriter.upgrade(f, out)
        return CompactResult()

    def flush() -> CompactResult:
        nonlocal candidate
        sections, candidate = candidate, []
        if not sections:
            return CompactResult()
        if len(sections) == 1 and len(sections[0]) == 1:
            res = CompactResult()
            for f in sections[0][0]:
                res += upgrade(f)
            return res
        return rewriter.rewrite(out, drop_delete=drop_delete, sections=sections)

    # Sections come in key order; an intermediate file may not be skipped, or the output would not be sorted.
    for section in partition_runs(unit.files, key_range):
        if len(section) > 1:
            candidate.append(section)
            continue
        for f in section[0]:
            if f.file_size < min_file_size:
                candidate.append([[f]])
            else:
                result += flush()
                result += upgrade(f)
    result += flush()
    return result
