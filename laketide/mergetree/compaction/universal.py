"""Which sorted runs to compact, and into which level: Paimon's universal compaction.

Runs are listed newest first (level 0 files, then levels 1..max). In order of precedence a strategy picks:

0. everything, when ``compaction.optimization-interval`` has passed since the last full compaction;
1. everything, when the runs above the oldest one amplify its size by more than
   ``compaction.max-size-amplification-percent``;
2. a prefix of runs whose accumulated size keeps up with the next run (``compaction.size-ratio`` flexibility);
3. enough runs to get back to ``num-sorted-run.compaction-trigger``, extended by size ratio.

The output goes one level below the next run left out, never to level 0; everything goes to the top level.

Paimon: mergetree.compact.UniversalCompaction, EarlyFullCompaction, ForceUpLevel0Compaction, CompactStrategy,
compact.CompactUnit
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.levels import LevelSortedRun

__all__ = [
    "CompactUnit",
    "CompactStrategy",
    "UniversalCompaction",
    "EarlyFullCompaction",
    "ForceUpLevel0Compaction",
    "pick_full_compaction",
]


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to compact together and the level their result goes to."""

    output_level: int
    files: tuple[DataFileMeta, ...]

    @staticmethod
    def from_level_runs(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return CompactUnit(output_level, tuple(f for r in runs for f in r.run.files))


class CompactStrategy(Protocol):
    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None: ...


def pick_full_compaction(num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
    """Everything to the top level; nothing when the bucket already is one top-level run."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return CompactUnit.from_level_runs(max_level, runs)


class EarlyFullCompaction:
    """Full compaction every ``interval_ms`` (``compaction.optimization-interval``), for read-optimized reads."""

    def __init__(
        self, interval_ms: int, *, last_full_ms: int | None = None, clock: Callable[[], int] | None = None
    ) -> None:
        self.interval_ms = interval_ms
        self.last_full_ms = last_full_ms
        self._clock = clock or (lambda: int(time.time() * 1000))

    def try_full_compact(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) == 1:
            return None
        if self.last_full_ms is None or self._clock() - self.last_full_ms > self.interval_ms:
            self.update_last_full_compaction()
            return CompactUnit.from_level_runs(num_levels - 1, runs)
        return None

    def update_last_full_compaction(self) -> None:
        self.last_full_ms = self._clock()


@dataclass(slots=True)
class UniversalCompaction:
    max_size_amp: int  # compaction.max-size-amplification-percent
    size_ratio: int  # compaction.size-ratio
    num_run_compaction_trigger: int  # num-sorted-run.compaction-trigger
    early_full: EarlyFullCompaction | None = None

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        if self.early_full is not None:
            unit = self.early_full.try_full_compact(num_levels, runs)
            if unit is not None:
                return unit
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.num_run_compaction_trigger:
            candidates = len(runs) - self.num_run_compaction_trigger + 1
            return self._pick_for_size_ratio(max_level, runs, candidates)
        return None

    def force_pick_l0(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        """All level-0 runs (and what size ratio adds) out of level 0."""
        count = 0
        for r in runs:
            if r.level > 0:
                break
            count += 1
        return None if count == 0 else self._pick_for_size_ratio(num_levels - 1, runs, count, force=True)

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        candidate_size = sum(r.run.total_size for r in runs[:-1])
        earliest = runs[-1].run.total_size
        if candidate_size * 100 > self.max_size_amp * earliest:
            if self.early_full is not None:
                self.early_full.update_last_full_compaction()
            return CompactUnit.from_level_runs(max_level, runs)
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.num_run_compaction_trigger:
            return None
        return self._pick_for_size_ratio(max_level, runs, 1)

    def _pick_for_size_ratio(
        self, max_level: int, runs: Sequence[LevelSortedRun], count: int, *, force: bool = False
    ) -> CompactUnit | None:
        size = sum(r.run.total_size for r in runs[:count])
        triggered = force or count > 1
        for nxt in runs[count:]:
            if size * (100.0 + self.size_ratio) / 100.0 < nxt.run.total_size:
                # A level-0/1 run that does not keep up still joins once a compaction is on (Java does the same).
                if not triggered or nxt.level > 1:
                    break
            size += nxt.run.total_size
            count += 1
            triggered = True
        return self.create_unit(runs, max_level, count) if triggered else None

    def create_unit(self, runs: Sequence[LevelSortedRun], max_level: int, count: int) -> CompactUnit:
        if count == len(runs):
            output = max_level
        else:
            output = max(0, runs[count].level - 1)
        if output == 0:
            # Never write level 0: take in runs up to the first one above level 0 and go to its level.
            for nxt in runs[count:]:
                count += 1
                if nxt.level != 0:
                    output = nxt.level
                    break
        if count == len(runs):
            if self.early_full is not None:
                self.early_full.update_last_full_compaction()
            output = max_level
        return CompactUnit.from_level_runs(output, runs[:count])


@dataclass(slots=True)
class ForceUpLevel0Compaction:
    """Universal compaction that, when it picks nothing, still moves every level-0 file up.

    Used where level 0 is invisible to readers (first-row, deletion vectors, lookup changelog). With
    ``max_interval`` (``lookup-compact = gentle``) level 0 is forced up only at every ``max_interval``-th pick
    that universal compaction leaves empty.
    """

    universal: UniversalCompaction
    max_interval: int | None = None
    _triggers: int = 0

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        if self.max_interval is None:
            return self.universal.force_pick_l0(num_levels, runs)
        self._triggers += 1
        if self._triggers < self.max_interval:
            return None
        self._triggers = 0
        return self.universal.force_pick_l0(num_levels, runs)
