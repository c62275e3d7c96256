"""Per-bucket compaction: the strategy, the levels, and a writer that compacts what it flushes.

Compaction here is synchronous and happens at two points, as a batch Paimon writer sees it:

- after a flush, only when the bucket has more than ``num-sorted-run.stop-trigger`` sorted runs (back-pressure:
  the writer compacts before it takes more rows);
- at ``prepare_commit``: one pick of the strategy (or a full compaction when asked, e.g. every
  ``full-compaction.delta-commits`` commits); where level 0 is invisible to readers (first-row, deletion
  vectors, lookup) until every level-0 file has moved up.

Files a compaction replaces become ``compact_before`` of the commit; files it writes ``compact_after``. A file
written and compacted away again before the commit is deleted at once (nobody ever saw it).

Paimon: mergetree.compact.MergeTreeCompactManager, MergeTreeCompactManagerFactory, mergetree.MergeTreeWriter
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from laketide.index.dv_maintainer import IndexFileChanges
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.compaction.full_changelog import FullCompactionChangelog
from laketide.mergetree.compaction.lookup_changelog import LookupChangelog
from laketide.mergetree.compaction.task import CompactResult, KeyValueRewriter, run_compact_unit
from laketide.mergetree.compaction.universal import (
    CompactStrategy,
    CompactUnit,
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
)
from laketide.mergetree.levels import Levels
from laketide.mergetree.writer import MergeTreeWriter
from laketide.options import ChangelogProducer, CoreOptions, MergeEngine

__all__ = ["CompactionSettings", "MergeTreeCompactManager", "CompactingMergeTreeWriter", "strategy_for"]



@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings:
    """What a bucket's compaction needs from the table options."""

    num_levels: int
    min_file_size: int  # smaller files are rewritten, bigger ones only upgraded (compaction.small-file-ratio)
    stop_trigger: int
    max_size_amp: int
    size_ratio: int
    run_trigger: int
    optimization_interval_ms: int | None
    force_level0: bool  # level 0 is invisible to readers: compact it away at every commit
    deletion_vectors: bool  # old rows are deleted by vector: retractions can go at any output level
    full_delta_commits: int | None
    # lookup-compact = gentle: level 0 is forced up only every this many compaction triggers (None: radical)
    lookup_compact_max_interval: int | None = None

    @staticmethod
    def from_options(options: CoreOptions) -> CompactionSettings:
        ratio = options.compaction_small_file_ratio
        dv = options.deletion_vectors_enabled
        lookup = (
            options.merge_engine is MergeEngine.FIRST_ROW
            or options.changelog_producer is ChangelogProducer.LOOKUP
            or options.force_lookup
            or options.compaction_force_up_level_0
        )
        return CompactionSettings(
            num_levels=options.num_levels,
            min_file_size=int(options.target_file_size(has_primary_key=True) * ratio),
            stop_trigger=options.num_sorted_run_stop_trigger,
            max_size_amp=options.compaction_max_size_amplification_percent,
            size_ratio=options.compaction_size_ratio,
            run_trigger=options.num_sorted_run_compaction_trigger,
            optimization_interval_ms=options.compaction_optimization_interval,
            force_level0=lookup or dv,
            deletion_vectors=dv,
            full_delta_commits=options.full_compaction_delta_commits,
            # Java's needLookup (not compaction.force-up-level-0 alone) decides whether gentle mode applies.
            lookup_compact_max_interval=(
                options.lookup_compact_max_interval
                if options.lookup_compact_gentle and (dv or (lookup and not _force_up_only(options))) else None
            ),
        )


def _force_up_only(options: CoreOptions) -> bool:
    return not (options.merge_engine is MergeEngine.FIRST_ROW or options.changelog_producer is ChangelogProducer.LOOKUP
                or options.force_lookup)


def _last_full_compaction_ms(files: Sequence[DataFileMeta], num_levels: int) -> int | None:
    # Java estimates it from the newest top-level file; creation times are local wall clock.
    top = [f.creation_time_ms for f in files if f.level == num_levels - 1 and f.creation_time_ms is not None]
    if not top:
        return None
    return max(top) - time.localtime().tm_gmtoff * 1000


def strategy_for(settings: CompactionSettings, restored: Sequence[DataFileMeta]) -> CompactStrategy:
    early = None
    if settings.optimization_interval_ms is not None:
        early = EarlyFullCompaction(
            settings.optimization_interval_ms, last_full_ms=_last_full_compaction_ms(restored, settings.num_levels)
        )
    universal = UniversalCompaction(
        max_size_amp=settings.max_size_amp, size_ratio=settings.size_ratio,
        num_run_compaction_trigger=settings.run_trigger, early_full=early,
    )
    if not settings.force_level0:
        return universal
    return ForceUpLevel0Compaction(universal, max_interval=settings.lookup_compact_max_interval)


class MergeTreeCompactManager:
    """Picks and runs compactions of one bucket, keeping its :class:`Levels` up to date."""

    def __init__(
        self, levels: Levels, *, strategy: CompactStrategy, rewriter: KeyValueRewriter, settings: CompactionSettings,
        changelog: LookupChangelog | None = None,
        full_changelog: FullCompactionChangelog | None = None,
    ) -> None:
        self.levels = levels
        self.strategy = strategy
        self.rewriter = rewriter
        self.settings = settings
        self.changelog = changelog
        self.full_changelog = full_changelog

    def add_new_file(self, f: DataFileMeta) -> None:
        self.levels.add_level0_file(f)

    def should_wait(self) -> bool:
        """Too many sorted runs: compact before taking more writes (num-sorted-run.stop-trigger)."""
        return self.levels.number_of_sorted_runs() > self.settings.stop_trigger

    def pick(self, *, full: bool) -> CompactUnit | None:
        runs = self.levels.level_sorted_runs()
        n = self.levels.number_of_levels
        if full:
            unit = pick_full_compaction(n, runs)
            if unit is None and self.settings.deletion_vectors:
                # One top-level run already: still fold in its deletion vectors (Java's pickFullCompaction).
                with_vectors = tuple(f for f in self.levels.all_files()
                                     if self.rewriter.must_rewrite(f, n - 1, max_level=n - 1))
                unit = CompactUnit(n - 1, with_vectors) if with_vectors else None
            return unit
        unit = self.strategy.pick(n, runs)
        if unit is None or not unit.files:
            return None
        if len(unit.files) == 1 and unit.files[0].level == unit.output_level:
            return None
        return unit

    def compact(self, *, full: bool = False) -> CompactResult | None:
        """Run one compaction if the strategy (or ``full``) picks one; the levels reflect its result."""
        unit = self.pick(full=full)
        if unit is None:
            return None
        # Retractions may go only when nothing older can remain below the output.
        drop_delete = unit.output_level != 0 and (
            self.settings.deletion_vectors or unit.output_level >= self.levels.non_empty_highest_level()
        )
        # The changelog compares against the levels as they are before this unit is compacted.
        changelog = tuple(self.changelog.produce(unit)) if self.changelog is not None else ()
        try:
            result = run_compact_unit(
                unit, rewriter=self.rewriter, key_range=self.levels.key_range,
                min_file_size=self.settings.min_file_size, drop_delete=drop_delete, max_level=self.levels.max_level,
            )
        except BaseException:
            for f in changelog:
                self.changelog.delete_file(f)  # type: ignore[union-attr]
            raise
        if self.full_changelog is not None:
            changelog += tuple(self.full_changelog.produce(unit, result))
        result = CompactResult(result.before, result.after, changelog)
        self.levels.update(result.before, result.after)
        kept = {f.file_name for f in result.after}
        self.rewriter.files_replaced([f.file_name for f in result.before if f.file_name not in kept])
        return result


@dataclass(slots=True)
class CompactingMergeTreeWriter:
    """A bucket's LSM writer that also compacts: wraps :class:`MergeTreeWriter` with a compaction manager."""

    writer: MergeTreeWriter
    manager: MergeTreeCompactManager
    delete_file: Callable[[DataFileMeta], None]
    # Writes the bucket's changed index files (deletion vectors) at prepare_commit; None: the bucket has none.
    write_index: Callable[[], IndexFileChanges] | None = None
    _compact_before: dict[str, DataFileMeta] = field(default_factory=dict)
    _compact_after: list[DataFileMeta] = field(default_factory=list)
    _compact_changelog: list[DataFileMeta] = field(default_factory=list)
    _commits: int = 0

    def write(self, rows: pa.Table) -> None:
        self.writer.write(rows)

    @property
    def buffered_bytes(self) -> int:
        return self.writer.buffered_bytes

    def flush(self) -> None:
        written = self.writer.file_writer.written
        known = len(written)
        self.writer.flush()
        for f in written[known:]:
            self.manager.add_new_file(f)
        while self.manager.should_wait():
            if not self._compact(full=False):
                break

    def prepare_commit(self, *, full_compaction: bool = False) -> list[DataFileMeta]:
        """Flush, compact (always ``full_compaction``; else every full-compaction.delta-commits commits, or
        what the strategy picks) and hand over the new files; the compaction is drained separately."""
        self.flush()
        self._commits += 1
        every = self.manager.settings.full_delta_commits
        if full_compaction or (every is not None and self._commits % every == 0):
            self._compact(full=True)
        else:
            self._compact(full=False)
        if self.manager.settings.force_level0 and self.manager.settings.lookup_compact_max_interval is None:
            while self.manager.levels.level0 and self._compact(full=False):
                pass
        return self.writer.prepare_commit()

    def drain_compaction(self) -> tuple[tuple[DataFileMeta, ...], tuple[DataFileMeta, ...]]:
        """(compact_before, compact_after) since the last call."""
        before, after = tuple(self._compact_before.values()), tuple(self._compact_after)
        self._compact_before.clear()
        self._compact_after.clear()
        return before, after

    def drain_changelog(self) -> list[DataFileMeta]:
        return self.writer.drain_changelog()

    def drain_compact_changelog(self) -> list[DataFileMeta]:
        """Changelog files the compactions since the last call produced (changelog-producer = lookup)."""
        out = list(self._compact_changelog)
        self._compact_changelog.clear()
        return out

    def drain_index_files(self) -> IndexFileChanges:
        """The index files written for this commit (new ones and the ones they replace)."""
        return self.write_index() if self.write_index is not None else IndexFileChanges()

    def abort(self) -> None:
        self.writer.abort()
        for f in self._compact_after:
            if f.file_name not in self._compact_before:  # an upgraded file belongs to the table already
                self.delete_file(f)
        for f in self._compact_changelog:
            self.delete_file(f)
        self._compact_before.clear()
        self._compact_after.clear()
        self._compact_changelog.clear()

    def _compact(self, *, full: bool) -> bool:
        result = self.manager.compact(full=full)
        if result is None:
            return False
        after_names = {f.file_name for f in result.after}
        for f in result.before:
            if f in self._compact_after:
                # Written by an earlier compaction of this commit and already replaced: no snapshot holds it.
                self._compact_after.remove(f)
                if f.file_name not in self._compact_before and f.file_name not in after_names:
                    self.delete_file(f)
            else:
                self._compact_before[f.file_name] = f
        self._compact_after.extend(result.after)
        self._compact_changelog.extend(result.changelog)
        return True
