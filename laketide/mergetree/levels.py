"""The levels of one LSM bucket: level 0 holds one sorted run per file, every higher level one sorted run.

Level-0 files are ordered newest first (by max sequence number), so that ``level_sorted_runs()`` lists runs from
the newest to the oldest data - the order universal compaction reasons in.

Paimon: mergetree.Levels, mergetree.SortedRun, mergetree.LevelSortedRun
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from laketide.exceptions import CorruptMetadataError
from laketide.meta.manifest import DataFileMeta

__all__ = ["SortedRun", "LevelSortedRun", "Levels", "KeyOf"]

#: Decodes a BinaryRow key (a file's min_key / max_key) to a comparable tuple.
KeyOf = Callable[[bytes], tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class SortedRun:
    """Files whose key ranges do not overlap, ordered by key."""

    files: tuple[DataFileMeta, ...] = ()

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)

    def __bool__(self) -> bool:
        return bool(self.files)


@dataclass(frozen=True, slots=True)
class LevelSortedRun:
    level: int
    run: SortedRun


def _level0_order(f: DataFileMeta) -> tuple[int, int, int, str]:
    # Newest first; ties (two writers on one bucket) broken like Java: min sequence, creation time, name.
    return (-f.max_sequence_number, f.min_sequence_number, f.creation_time_ms or 0, f.file_name)


class Levels:
    """Mutable per-bucket state of a writer or a compaction job."""

    def __init__(self, files: Iterable[DataFileMeta], *, num_levels: int, key_of: KeyOf) -> None:
        files = list(files)
        restored = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if restored < 2:
            raise ValueError("Number of levels must be at least 2")
        self._key_of = key_of
        self._keys: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
        self._level0: list[DataFileMeta] = []
        self._runs: list[SortedRun] = [SortedRun() for _ in range(restored - 1)]
        self.update((), files)

    # -- shape -------------------------------------------------------------------------------------------------
    @property
    def number_of_levels(self) -> int:
        return len(self._runs) + 1

    @property
    def max_level(self) -> int:
        return len(self._runs)

    @property
    def level0(self) -> tuple[DataFileMeta, ...]:
        return tuple(self._level0)

    def run_of_level(self, level: int) -> SortedRun:
        if level <= 0:
            raise ValueError("Level 0 does not hold one sorted run")
        return self._runs[level - 1]

    def number_of_sorted_runs(self) -> int:
        return len(self._level0) + sum(1 for r in self._runs if r)

    def non_empty_highest_level(self) -> int:
        """The highest level holding files, or -1 when the bucket is empty."""
        for i in range(len(self._runs) - 1, -1, -1):
            if self._runs[i]:
                return i + 1
        return 0 if self._level0 else -1

    def total_file_size(self) -> int:
        return sum(f.file_size for f in self._level0) + sum(r.total_size for r in self._runs)

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        runs = [LevelSortedRun(0, SortedRun((f,))) for f in self._level0]
        runs += [LevelSortedRun(i + 1, r) for i, r in enumerate(self._runs) if r]
        return runs

    def all_files(self) -> list[DataFileMeta]:
        return [f for r in self.level_sorted_runs() for f in r.run.files]

    def key_range(self, f: DataFileMeta) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        rng = self._keys.get(f.file_name)
        if rng is None:
            rng = self._keys[f.file_name] = (self._key_of(f.min_key), self._key_of(f.max_key))
        return rng

    # -- changes -----------------------------------------------------------------------------------------------
    def add_level0_file(self, f: DataFileMeta) -> None:
        if f.level != 0:
            raise ValueError(f"File {f.file_name} is at level {f.level}, not 0")
        self.update((), (f,))

    def update(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]) -> None:
        """Replace ``before`` by ``after`` (each file goes to its own level)."""
        for level in sorted({f.level for f in (*before, *after)}):
            if level >= self.number_of_levels:
                raise CorruptMetadataError(
                    f"File at level {level} does not fit {self.number_of_levels} levels"
                )
            gone = {(f.file_name, f.level) for f in before if f.level == level}
            new = [f for f in after if f.level == level]
            if level == 0:
                kept = [f for f in self._level0 if (f.file_name, 0) not in gone]
                self._level0 = sorted(kept + new, key=_level0_order)
            else:
                files = [f for f in self._runs[level - 1].files if (f.file_name, level) not in gone] + new
                self._runs[level - 1] = self._sorted_run(files, level)

    def _sorted_run(self, files: list[DataFileMeta], level: int) -> SortedRun:
        files.sort(key=lambda f: self.key_range(f)[0])
        for prev, cur in zip(files, files[1:]):
            if self.key_range(cur)[0] <= self.key_range(prev)[1]:
                raise CorruptMetadataError(
                    f"Files {prev.file_name} and {cur.file_name} of level {level} overlap: a level above 0 must "
                    f"be one sorted run"
                )
        return SortedRun(tuple(files))
