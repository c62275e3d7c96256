"""Splits: the unit of read work (one task), with everything an executor needs to read it.

Paimon: table.source.DataSplit, AppendOnlySplitGenerator (bin packing by source.split.target-size)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyroaring import FrozenBitMap

from laketide.meta.manifest import DataFileMeta, ManifestEntry
from laketide.meta.paths import FileStorePathFactory

__all__ = ["DataSplit", "generate_splits", "pack_files", "raw_convertible_bucket"]

SPLIT_TARGET_SIZE = 128 * 1024 * 1024
SPLIT_OPEN_FILE_COST = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletionFile:
    """Where the deletion vector of one data file lives (Paimon: table.source.DeletionFile)."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSplit:
    snapshot_id: int
    partition: bytes
    partition_values: tuple[object, ...]
    bucket: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    raw_convertible: bool = True  # files can be read as they are, no merge needed
    deletion_files: tuple[DeletionFile | None, ...] | None = None  # aligned with files
    # Row positions a file index (bitmap / BSI) selected, aligned with files; None: read every row.
    row_selections: tuple[FrozenBitMap | None, ...] | None = None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def per_file(self) -> list[DataSplit]:
        """A raw-convertible split as one split per file (each read on its own, in parallel); else itself."""
        if not self.raw_convertible or len(self.files) <= 1:
            return [self]
        return [replace(self, files=(f,),
                        deletion_files=None if self.deletion_files is None else (self.deletion_files[i],),
                        row_selections=None if self.row_selections is None else (self.row_selections[i],))
                for i, f in enumerate(self.files)]

    def joined(self, other: DataSplit) -> DataSplit:
        """This split and ``other`` (of the same bucket, planned after it) as one split: its files in order."""
        def aligned(mine: tuple[Any, ...] | None, theirs: tuple[Any, ...] | None, a: DataSplit,
                    b: DataSplit) -> tuple[Any, ...] | None:
            if mine is None and theirs is None:
                return None
            return (mine or (None,) * len(a.files)) + (theirs or (None,) * len(b.files))

        return replace(self, files=self.files + other.files,
                       raw_convertible=self.raw_convertible and other.raw_convertible,
                       deletion_files=aligned(self.deletion_files, other.deletion_files, self, other),
                       row_selections=aligned(self.row_selections, other.row_selections, self, other))

    def file_paths(self) -> list[str]:
        return [f.external_path or f"{self.bucket_path}/{f.file_name}" for f in self.files]


def generate_splits(
    entries: Sequence[ManifestEntry],
    *,
    snapshot_id: int,
    paths: FileStorePathFactory,
    target_size: int = SPLIT_TARGET_SIZE,
    open_file_cost: int = SPLIT_OPEN_FILE_COST,
    merge: bool = False,
    deletion_files: dict[tuple[bytes, int], dict[str, DeletionFile]] | None = None,
    row_selections: Mapping[str, FrozenBitMap] | None = None,
    whole_buckets: bool = False,
) -> list[DataSplit]:
    """Group files per (partition, bucket), ordered by sequence number, bin-packed to ``target_size``.

    With ``merge`` (primary-key tables without deletion vectors) a bucket is one split: its sorted runs must be
    merged together -- unless its files are all in one level above 0 with no retractions (nothing to merge).
    ``deletion_files`` makes every split raw-convertible (deletion-vector mode). Raw-convertible buckets are
    packed file by file up to ``target_size`` (``source.split.target-size``).

    ``row_selections`` (data file name -> row positions, from file indexes) travel with the splits.

    ``whole_buckets`` (data-evolution tables): a bucket is one split, so the files of one row-id range, which a
    read stitches together, are never split apart.

    Files of the postpone bucket (``bucket = -2`` tables: rows not yet compacted into a real bucket) are left out,
    as Java's batch scan does (``onlyReadRealBuckets``): they become visible once compaction moves them.
    """
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in entries:
        if e.bucket < 0:
            continue
        groups.setdefault((e.partition, e.bucket), []).append(e.file)
    splits: list[DataSplit] = []
    for (partition, bucket), files in groups.items():
        files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
        values = paths.partition_codec.values(partition)
        bucket_path = paths.bucket_dir(partition, bucket)
        if deletion_files is not None or (merge and raw_convertible_bucket(files)):
            # Files read one by one with no merge: pack them by size, like append files (Java:
            # MergeTreeSplitGenerator#splitForBatch, rawConvertible groups).
            dvs = deletion_files.get((partition, bucket), {}) if deletion_files is not None else None
            for group in pack_files(files, target_size=target_size, open_file_cost=open_file_cost):
                splits.append(DataSplit(
                    snapshot_id=snapshot_id, partition=partition, partition_values=values, bucket=bucket,
                    bucket_path=bucket_path, files=tuple(group),
                    deletion_files=None if dvs is None else tuple(dvs.get(f.file_name) for f in group),
                ))
            continue
        if merge or whole_buckets:
            raw = len(files) == 1 and not files[0].delete_row_count
            splits.append(DataSplit(
                snapshot_id=snapshot_id, partition=partition, partition_values=values, bucket=bucket,
                bucket_path=bucket_path, files=tuple(files), raw_convertible=raw,
            ))
            continue
        pack: list[DataFileMeta] = []
        weight = 0
        for f in files:
            w = max(f.file_size, open_file_cost)
            if pack and weight + w > target_size:
                splits.append(_split(snapshot_id, partition, values, bucket, bucket_path, pack))
                pack, weight = [], 0
            pack.append(f)
            weight += w
        if pack:
            splits.append(_split(snapshot_id, partition, values, bucket, bucket_path, pack))
    if not row_selections:
        return splits
    return [s if not any(f.file_name in row_selections for f in s.files)
            else replace(s, row_selections=tuple(row_selections.get(f.file_name) for f in s.files))
            for s in splits]


def raw_convertible_bucket(files: Sequence[DataFileMeta]) -> bool:
    """A primary-key bucket whose files need no merge: all in one level above 0 (which holds each key once) and
    none with a retraction (Java: MergeTreeSplitGenerator's ``rawConvertible && oneLevel``)."""
    return (bool(files) and all(f.level > 0 and f.delete_row_count == 0 for f in files)
            and len({f.level for f in files}) == 1)


def pack_files(files: Sequence[DataFileMeta], *, target_size: int, open_file_cost: int) -> list[list[DataFileMeta]]:
    """Consecutive files packed in order until a pack would pass ``target_size`` (Java: BinPacking.packForOrdered;
    a file weighs at least ``open_file_cost``)."""
    packs: list[list[DataFileMeta]] = []
    pack: list[DataFileMeta] = []
    weight = 0
    for f in files:
        w = max(f.file_size, open_file_cost)
        if pack and weight + w > target_size:
            packs.append(pack)
            pack, weight = [], 0
        pack.append(f)
        weight += w
    if pack:
        packs.append(pack)
    return packs


def _split(sid: int, partition: bytes, values: tuple[object, ...], bucket: int, path: str,
           files: list[DataFileMeta]) -> DataSplit:
    return DataSplit(snapshot_id=sid, partition=partition, partition_values=values, bucket=bucket,
                     bucket_path=path, files=tuple(files))
