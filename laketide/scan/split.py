"""Splits: the unit of read work (one task), with everything an executor needs to read it.

Paimon: table.source.DataSplit, AppendOnlySplitGenerator (bin packing by source.split.target-size)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pyroaring import FrozenBitMap

from laketide.meta.manifest import DataFileMeta, ManifestEntry
from laketide.meta.paths import FileStorePathFactory

__all__ = ["DataSplit", "generate_splits"]

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
    merged together. ``deletion_files`` makes every split raw-convertible (deletion-vector mode).

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
        if deletion_files is not None:
            dvs = deletion_files.get((partition, bucket), {})
            splits.append(DataSplit(
                snapshot_id=snapshot_id, partition=partition, partition_values=values, bucket=bucket,
                bucket_path=bucket_path, files=tuple(files),
                deletion_files=tuple(dvs.get(f.file_name) for f in files),
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


def _split(sid: int, partition: bytes, values: tuple[object, ...], bucket: int, path: str,
           files: list[DataFileMeta]) -> DataSplit:
    return DataSplit(snapshot_id=sid, partition=partition, partition_values=values, bucket=bucket,
                     bucket_path=path, files=tuple(files))
