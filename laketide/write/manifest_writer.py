"""Writing manifests and manifest lists, and merging small manifests so planning follows live files.

Paimon: manifest.ManifestFile (RollingFileWriter of entries), manifest.ManifestList,
operation.ManifestFileMerger (minor merge by manifest.merge-min-count / target size, full compaction past
manifest.full-compaction-threshold-size)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from laketide.fs import FileIO
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.manifest import FileKind, ManifestEntry, ManifestFileMeta, SimpleStats
from laketide.meta.manifest_cache import MANIFEST_CACHE
from laketide.meta.manifest_io import encode_records, to_records
from laketide.meta.manifest_schema import MANIFEST_ENTRY, MANIFEST_FILE_META
from laketide.meta.paths import TablePaths
from laketide.scan.file_scan import PartitionCodec, merge_entries

__all__ = ["ManifestWriter"]


@dataclass(slots=True)
class ManifestWriter:
    file_io: FileIO
    paths: TablePaths
    partition_codec: PartitionCodec
    schema_id: int
    fmt: str
    compression: str
    target_size: int
    merge_min_count: int
    full_compaction_threshold: int
    written: list[str] | None = None  # every file this writer created (to clean up a failed commit)

    def __post_init__(self) -> None:
        self.written = []

    # -- manifests ---------------------------------------------------------------------------------------------
    def write_manifests(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifest files of about ``target_size`` each."""
        if not entries:
            return []
        data = encode_records(to_records(entries), MANIFEST_ENTRY, fmt=self.fmt, compression=self.compression)
        chunks = max(1, math.ceil(len(data) / self.target_size))
        if chunks == 1:
            return [self._publish_manifest(entries, data)]
        out = []
        step = math.ceil(len(entries) / chunks)
        for i in range(0, len(entries), step):
            part = entries[i : i + step]
            out.append(self._publish_manifest(
                part, encode_records(to_records(part), MANIFEST_ENTRY, fmt=self.fmt, compression=self.compression)
            ))
        return out

    def _publish_manifest(self, entries: Sequence[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self.paths.new_manifest_name()
        path = f"{self.paths.manifest_dir}/{name}"
        self.file_io.write_bytes(path, data)
        assert self.written is not None
        self.written.append(path)
        MANIFEST_CACHE.put(path, len(data), entries)  # the next plan, restore or commit check reads it from here
        added = sum(1 for e in entries if e.kind is FileKind.ADD)
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self._partition_stats(entries),
            schema_id=self.schema_id,
            min_bucket=min(e.bucket for e in entries),
            max_bucket=max(e.bucket for e in entries),
            min_level=min(e.file.level for e in entries),
            max_level=max(e.file.level for e in entries),
        )

    def _partition_stats(self, entries: Sequence[ManifestEntry]) -> SimpleStats:
        codec = self.partition_codec
        if not codec.types:
            return SimpleStats.empty()
        n = len(codec.types)
        mins: list[object] = [None] * n
        maxs: list[object] = [None] * n
        nulls = [0] * n
        counts: dict[bytes, int] = {}
        for e in entries:
            counts[e.partition] = counts.get(e.partition, 0) + 1
        for part, count in counts.items():
            for i, v in enumerate(codec.values(part)):
                if v is None:
                    nulls[i] += count
                    continue
                if mins[i] is None or v < mins[i]:  # type: ignore[operator]
                    mins[i] = v
                if maxs[i] is None or v > maxs[i]:  # type: ignore[operator]
                    maxs[i] = v
        return SimpleStats(
            min_values=serialize_binary_row(mins, codec.types),
            max_values=serialize_binary_row(maxs, codec.types),
            null_counts=tuple(nulls),
        )

    # -- manifest lists ----------------------------------------------------------------------------------------
    def write_manifest_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        data = encode_records(to_records(metas), MANIFEST_FILE_META, fmt=self.fmt, compression=self.compression)
        name = self.paths.new_manifest_list_name()
        path = f"{self.paths.manifest_dir}/{name}"
        self.file_io.write_bytes(path, data)
        assert self.written is not None
        self.written.append(path)
        MANIFEST_CACHE.put(path, len(data), metas)
        return name, len(data)

    # -- merging -----------------------------------------------------------------------------------------------
    def merge(
        self, metas: list[ManifestFileMeta], read_manifest: Callable[[str, int | None], list[ManifestEntry]]
    ) -> list[ManifestFileMeta]:
        """Merge small manifests (minor) or rewrite all of them (full) when small ones pile up."""
        small_total = sum(m.file_size for m in metas if m.file_size < self.target_size)
        if small_total >= self.full_compaction_threshold:
            entries = merge_entries(e for m in metas for e in read_manifest(m.file_name, m.file_size))
            return self.write_manifests([e for e in entries if e.kind is FileKind.ADD])
        result: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        size = 0
        for m in metas:
            candidates.append(m)
            size += m.file_size
            if size >= self.target_size:
                result.extend(self._merge_group(candidates, read_manifest))
                candidates, size = [], 0
        if len(candidates) >= self.merge_min_count:
            result.extend(self._merge_group(candidates, read_manifest))
        else:
            result.extend(candidates)
        return result

    def _merge_group(
        self, group: list[ManifestFileMeta], read_manifest: Callable[[str, int | None], list[ManifestEntry]]
    ) -> list[ManifestFileMeta]:
        if len(group) == 1:
            return group
        # DELETE entries whose ADD lives in an older manifest outside this group must survive the merge.
        return self.write_manifests(merge_entries(e for m in group for e in read_manifest(m.file_name, m.file_size)))

    def cleanup(self) -> None:
        assert self.written is not None
        for p in self.written:
            self.file_io.delete(p)
        self.written.clear()
