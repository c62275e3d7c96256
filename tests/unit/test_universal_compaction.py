"""Universal compaction picks the runs and output level Paimon picks (cases from Java's UniversalCompactionTest)."""

from __future__ import annotations

import pytest

from laketide.meta.manifest import DataFileMeta, SimpleStats
from laketide.mergetree.compaction.universal import (
    EarlyFullCompaction,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
)
from laketide.mergetree.levels import LevelSortedRun, Levels, SortedRun


def file(size: int, *, name: str = "f", level: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=name, file_size=size, row_count=1, min_key=b"", max_key=b"", key_stats=SimpleStats.empty(),
        value_stats=SimpleStats.empty(), min_sequence_number=0, max_sequence_number=0, schema_id=0, level=level,
    )


def run(level: int, size: int) -> LevelSortedRun:
    return LevelSortedRun(level, SortedRun((file(size, level=level),)))


def runs(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    return [run(level, size) for level, size in spec]


def level0(*sizes: int) -> list[LevelSortedRun]:
    return [run(0, s) for s in sizes]


def universal(max_amp: int, ratio: int, trigger: int, early: EarlyFullCompaction | None = None) -> UniversalCompaction:
    return UniversalCompaction(max_size_amp=max_amp, size_ratio=ratio, num_run_compaction_trigger=trigger,
                               early_full=early)


@pytest.mark.parametrize(("count", "output"), [(1, 1), (2, 1), (3, 2), (4, 3), (5, 5)])
def test_output_level(count: int, output: int) -> None:
    levels = [run(level, 1) for level in (0, 0, 1, 3, 4)]
    assert universal(25, 1, 3).create_unit(levels, 5, count).output_level == output


# (num_levels, runs (level, size), picked sizes, output level); None = no compaction
PICK_CASES = [
    pytest.param(3, [(0, 1), (0, 2), (0, 3), (0, 3)], [1, 2, 3, 3], 2, id="size-amplification"),
    pytest.param(4, [(0, 1), (1, 1), (2, 1), (3, 50)], [1, 1, 1], 2, id="size-ratio"),
    pytest.param(4, [(0, 1), (1, 2), (2, 3), (3, 50)], [1, 2, 3], 2, id="file-num-then-size-ratio"),
    pytest.param(3, [(0, 1), (0, 1), (1, 1), (2, 50)], [1, 1, 1], 1, id="no-output-level-0"),
    pytest.param(3, [(0, 1), (0, 2), (1, 3), (2, 50)], [1, 2, 3], 1, id="no-output-level-0-file-num"),
    pytest.param(4, [(0, 1), (1, 100), (3, 1000)], None, None, id="below-trigger"),
]


@pytest.mark.parametrize(("num_levels", "spec", "picked", "output"), PICK_CASES)
def test_pick(num_levels: int, spec: list[tuple[int, int]], picked: list[int] | None, output: int | None) -> None:
    unit = universal(25, 1, 3).pick(num_levels, runs(*spec))
    if picked is None:
        assert unit is None
        return
    assert unit is not None
    assert [f.file_size for f in unit.files] == picked
    assert unit.output_level == output


def test_file_num_compaction_considers_level_2() -> None:
    unit = universal(200, 1, 3).pick(3, runs((0, 10), (0, 20), (1, 97), (2, 100)))
    assert unit is not None and len(unit.files) == 4 and unit.output_level == 2


def test_extreme_case_never_outputs_level_0() -> None:
    unit = universal(200, 1, 5).pick(6, level0(1, 1, 1, 1024, 1024 * 1024))
    assert unit is not None
    assert [f.file_size for f in unit.files] == [1, 1, 1, 1024, 1024 * 1024]
    assert unit.output_level == 5


def _append_and_pick_for_size_amp(u: UniversalCompaction, sizes: list[int]) -> list[int]:
    sizes = [1, *sizes]
    unit = u.pick_for_size_amp(3, level0(*sizes))
    return [sum(f.file_size for f in unit.files)] if unit is not None else sizes


def test_size_amplification_sequence() -> None:
    u = universal(25, 0, 1)
    expected = [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11], [14],
                [1, 14], [1, 1, 14], [1, 1, 1, 14], [18]]
    sizes = [1]
    for want in expected:
        sizes = _append_and_pick_for_size_amp(u, sizes)
        assert sizes == want


def _pick_for_size_ratio(u: UniversalCompaction, sizes: list[int]) -> list[int]:
    levels = [run(i, s) for i, s in enumerate(sizes)]
    unit = u.pick_for_size_ratio(len(sizes), levels)
    if unit is None:
        return sizes
    picked = [f.file_size for f in unit.files]
    rest = list(sizes)
    for p in picked:
        rest.remove(p)
    return [sum(picked), *rest]


def test_size_ratio_sequence() -> None:
    u = universal(25, 1, 5)
    expected = [[5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5], [1, 3, 4, 5],
                [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16], [1, 1, 1, 16], [4, 16], [1, 4, 16],
                [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16]]
    sizes = [1, 1, 1, 1]
    for want in expected:
        sizes = _pick_for_size_ratio(u, [1, *sizes])
        assert sizes == want


@pytest.mark.parametrize(("ratio", "expected"), [(10, [8, 9, 10]), (20, [27])])
def test_size_ratio_threshold(ratio: int, expected: list[int]) -> None:
    assert _pick_for_size_ratio(universal(25, ratio, 2), [8, 9, 10]) == expected


def test_optimization_interval_forces_full_compaction() -> None:
    now = [0]
    early = EarlyFullCompaction(1000, clock=lambda: now[0])
    u = universal(100, 1, 3, early)
    spec = [(0, 1), (1, 3), (2, 5)]
    assert [f.file_size for f in u.pick(3, runs(*spec)).files] == [1, 3, 5]  # type: ignore[union-attr]
    now[0] = 1001
    assert [f.file_size for f in u.pick(3, runs(*spec)).files] == [1, 3, 5]  # type: ignore[union-attr]
    assert u.pick(3, runs(*spec)) is None
    now[0] = 1500
    unit = u.pick(3, runs((0, 3), (1, 3), (2, 5)))  # size amplification, which resets the interval
    assert unit is not None and [f.file_size for f in unit.files] == [3, 3, 5]
    now[0] = 2001
    assert u.pick(3, runs(*spec)) is None


@pytest.mark.parametrize(("spec", "picked", "output"), [
    ([(0, 1), (0, 2), (0, 2), (0, 2)], [1, 2, 2, 2], 2),   # level 0 to the max level
    ([(0, 1), (1, 2), (2, 2)], [1, 2, 2], 2),              # level 0 forced up
    ([(0, 1), (2, 2)], [1], 1),                            # level 0 into an empty level
])
def test_force_up_level_0(spec: list[tuple[int, int]], picked: list[int], output: int) -> None:
    unit = ForceUpLevel0Compaction(universal(25, 1, 3)).pick(3, runs(*spec))
    assert unit is not None
    assert [f.file_size for f in unit.files] == picked and unit.output_level == output


def test_full_compaction_pick() -> None:
    assert pick_full_compaction(3, []) is None
    assert pick_full_compaction(3, runs((2, 10))) is None  # already one top-level run
    unit = pick_full_compaction(3, runs((0, 1), (1, 4)))
    assert unit is not None and unit.output_level == 2 and len(unit.files) == 2


def test_levels_order_runs_newest_first_and_reject_overlaps() -> None:
    def key_file(name: str, lo: int, hi: int, *, level: int, seq: int) -> DataFileMeta:
        f = file(10, name=name, level=level)
        from dataclasses import replace

        return replace(f, min_key=bytes([lo]), max_key=bytes([hi]), min_sequence_number=seq, max_sequence_number=seq)

    files = [key_file("a", 0, 5, level=0, seq=1), key_file("b", 0, 5, level=0, seq=7),
             key_file("c", 6, 9, level=2, seq=0), key_file("d", 0, 5, level=2, seq=0)]
    levels = Levels(files, num_levels=3, key_of=lambda raw: (raw[0],))
    assert [(r.level, [f.file_name for f in r.run.files]) for r in levels.level_sorted_runs()] == [
        (0, ["b"]), (0, ["a"]), (2, ["d", "c"])]
    assert levels.number_of_sorted_runs() == 3 and levels.non_empty_highest_level() == 2
    levels.update(files[:2], [key_file("e", 0, 5, level=1, seq=7)])
    assert levels.number_of_sorted_runs() == 2 and not levels.level0
    from laketide.exceptions import CorruptMetadataError

    with pytest.raises(CorruptMetadataError, match="overlap"):
        levels.update((), [key_file("x", 3, 4, level=1, seq=9)])
