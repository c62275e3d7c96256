"""Small-file compaction of append tables: which files to rewrite together.

Unaware-bucket tables (``bucket = -1``) pack the small files of a partition (smaller than
``target-file-size * compaction.small-file-ratio``) smallest first into groups worth two target files, and a last
group once it holds ``compaction.min.file-num`` files. Fixed-bucket append tables keep their rows in sequence
order, so they compact a contiguous window of small files (by sequence number) of at least
``compaction.min.file-num`` files.

A full compaction takes every small file (at least two) of the partition / bucket.

Paimon: append.AppendCompactCoordinator (SubCoordinator#pack, FileBin), append.BucketedAppendCompactManager
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from laketide.meta.manifest import DataFileMeta
from laketide.options import CoreOptions

__all__ = ["AppendCompactSettings", "pack_unaware", "pick_bucketed"]

_OPEN_FILE_COST = 4 << 20  # source.split.open-file-cost default


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendCompactSettings:
    target_file_size: int
    compaction_file_size: int  # files below this are "small"
    min_file_num: int
    open_file_cost: int = _OPEN_FILE_COST

    @staticmethod
    def from_options(options: CoreOptions) -> AppendCompactSettings:
        target = options.target_file_size(has_primary_key=False)
        return AppendCompactSettings(
            target_file_size=target,
            compaction_file_size=int(target * options.compaction_small_file_ratio),
            min_file_num=options.compaction_min_file_num,
        )


def pack_unaware(
    files: Sequence[DataFileMeta], settings: AppendCompactSettings, *, full: bool
) -> list[list[DataFileMeta]]:
    """Groups of small files of one partition to rewrite, each into files of about the target size."""
    small = sorted((f for f in files if f.file_size < settings.compaction_file_size), key=lambda f: f.file_size)
    if full:
        return [small] if len(small) > 1 else []
    groups: list[list[DataFileMeta]] = []
    bin_: list[DataFileMeta] = []
    size = 0
    for f in small:
        bin_.append(f)
        size += f.file_size + settings.open_file_cost
        if len(bin_) > 1 and size >= settings.target_file_size * 2:
            groups.append(bin_)
            bin_, size = [], 0
    if len(bin_) >= settings.min_file_num:
        groups.append(bin_)
    return groups


def pick_bucketed(files: Sequence[DataFileMeta], settings: AppendCompactSettings, *, full: bool) -> list[DataFileMeta]:
    """A window of consecutive small files (by sequence number) of one bucket, or nothing."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    if full:
        if len(ordered) > 1 and any(f.file_size < settings.compaction_file_size for f in ordered):
            return ordered
        return []
    window: list[DataFileMeta] = []
    for f in ordered:
        if f.file_size < settings.compaction_file_size:
            window.append(f)
            continue
        if len(window) >= settings.min_file_num:
            return window
        window = []
    return window if len(window) >= settings.min_file_num else []
