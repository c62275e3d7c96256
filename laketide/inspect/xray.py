"""The LSM x-ray: per bucket, its levels and sorted runs; per snapshot, what it added and removed.

A sorted run is one level-0 file, or all files of one level >= 1 (Paimon: mergetree.Levels, SortedRun).
Metadata only: manifests, index manifests and snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from laketide.inspect.metadata import FileRow, live_files
from laketide.meta.manifest import FileKind
from laketide.meta.paths import java_to_string
from laketide.meta.snapshot import Snapshot
from laketide.scan.file_scan import FileStoreScan
from laketide.table.table import Table

__all__ = ["BucketXRay", "SnapshotPoint", "SortedRun", "TableXRay", "snapshot_point", "timeline", "xray"]


@dataclass(frozen=True, slots=True)
class SortedRun:
    level: int
    files: list[FileRow]

    @property
    def size(self) -> int:
        return sum(f.entry.file.file_size for f in self.files)


@dataclass(frozen=True, slots=True)
class BucketXRay:
    partition: str
    bucket: int
    runs: list[SortedRun]

    @property
    def files(self) -> list[FileRow]:
        return [f for run in self.runs for f in run.files]


@dataclass(frozen=True, slots=True)
class SnapshotPoint:
    snapshot_id: int
    commit_kind: str
    time_millis: int
    files_added: int
    files_deleted: int
    records_added: int
    records_deleted: int


@dataclass(frozen=True, slots=True)
class TableXRay:
    table: str
    snapshot_id: int | None
    buckets: list[BucketXRay]
    timeline: list[SnapshotPoint] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "buckets": [
                {
                    "partition": b.partition, "bucket": b.bucket,
                    "runs": [{"level": r.level, "size": r.size, "files": [_file_json(f) for f in r.files]}
                             for r in b.runs],
                }
                for b in self.buckets
            ],
            "timeline": [vars_of(p) for p in self.timeline],
        }


def vars_of(p: SnapshotPoint) -> dict[str, Any]:
    return {k: getattr(p, k) for k in p.__slots__}


def _file_json(f: FileRow) -> dict[str, Any]:
    m = f.entry.file
    return {
        "file_name": m.file_name, "level": m.level, "file_size": m.file_size, "row_count": m.row_count,
        "min_key": f.min_key, "max_key": f.max_key, "min_sequence_number": m.min_sequence_number,
        "max_sequence_number": m.max_sequence_number, "deleted_rows_dv": f.dv_deleted,
        "dv_fill": dv_fill(f),
    }


def dv_fill(f: FileRow) -> float | None:
    """The share of the file's rows a deletion vector marks deleted."""
    if f.dv_deleted is None or not f.entry.file.row_count:
        return None
    return f.dv_deleted / f.entry.file.row_count


def sorted_runs(files: list[FileRow]) -> list[SortedRun]:
    """Level-0 files newest first (one run each), then levels 1.. (one run per level, files by min key)."""
    level0 = sorted((f for f in files if f.entry.file.level == 0),
                    key=lambda f: -f.entry.file.max_sequence_number)
    runs = [SortedRun(0, [f]) for f in level0]
    for level in sorted({f.entry.file.level for f in files} - {0}):
        members = [f for f in files if f.entry.file.level == level]
        members.sort(key=lambda f: (_orderable(f.min_key_values), f.entry.file.file_name))
        runs.append(SortedRun(level, members))
    return runs


def _orderable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, v) for v in values)


def _partition_matches(row: FileRow, wanted: dict[str, object] | None) -> bool:
    if not wanted:
        return True
    parts = dict(p.split("=", 1) for p in row.partition.split("/")) if row.partition else {}
    return all(parts.get(k) == ("null" if v is None else java_to_string(v)) for k, v in wanted.items())


def snapshot_point(table: Table, s: Snapshot, scan: FileStoreScan | None = None) -> SnapshotPoint:
    """Files and records snapshot ``s`` added and removed (from its delta manifests)."""
    scan = scan or table.file_scan()
    added = deleted = rows_added = rows_deleted = 0
    for m in scan.manifest_list(s.delta_manifest_list, s.delta_manifest_list_size):
        for e in scan.manifest(m.file_name, m.file_size):
            if e.kind is FileKind.ADD:
                added += 1
                rows_added += e.file.row_count
            else:
                deleted += 1
                rows_deleted += e.file.row_count
    return SnapshotPoint(s.id, s.commit_kind.value, s.time_millis, added, deleted, rows_added, rows_deleted)


def timeline(table: Table) -> list[SnapshotPoint]:
    """What each retained snapshot added and removed."""
    scan = table.file_scan()
    return [snapshot_point(table, s, scan) for s in table.snapshot_manager.snapshots()]


def xray(table: Table, *, partition: dict[str, object] | None = None, bucket: int | None = None,
         snapshot_id: int | None = None) -> TableXRay:
    snapshot = table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()
    rows = [r for r in live_files(table, snapshot)
            if (bucket is None or r.entry.bucket == bucket) and _partition_matches(r, partition)]
    groups: dict[tuple[str, int], list[FileRow]] = {}
    for r in rows:
        groups.setdefault((r.partition, r.entry.bucket), []).append(r)
    buckets = [BucketXRay(p, b, sorted_runs(files)) for (p, b), files in sorted(groups.items())]
    return TableXRay(table.name, snapshot.id if snapshot else None, buckets, timeline(table))
