"""Scan planning over metadata: snapshot -> manifest lists -> manifests -> live data files.

Pruning happens at three depths, cheapest first: manifest partition stats, the exact partition of each entry,
then each file's value stats. Nothing here reads a data file.

Paimon: operation.AbstractFileStoreScan, AppendOnlyFileStoreScan, manifest.FileEntry#mergeEntries
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from laketide.exceptions import CorruptMetadataError
from laketide.expr import FieldStats, Predicate, evaluate_exact, may_match, referenced_fields
from laketide.fs import FileIO
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.paths import FileStorePathFactory, PartitionCodec
from laketide.meta.manifest import FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats
from laketide.meta.manifest_cache import MANIFEST_CACHE
from laketide.meta.manifest_io import read_objects
from laketide.meta.snapshot import Snapshot
from laketide.scan.stats_test import StatsTest
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import DataType

__all__ = ["FileStoreScan", "max_sequence_per_bucket", "merge_entries", "PartitionCodec"]


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """ADD and DELETE entries of the same file cancel; what remains, in order (Paimon: FileEntry.mergeEntries)."""
    merged: dict[tuple[object, ...], ManifestEntry] = {}
    for e in entries:
        key = e.identifier
        if e.kind is FileKind.ADD:
            if key in merged and merged[key].kind is FileKind.ADD:
                raise CorruptMetadataError(f"File {e.file.file_name} is added twice in the manifests")
            merged[key] = e
        else:
            if key in merged and merged[key].kind is FileKind.ADD:
                del merged[key]
            else:
                merged[key] = e
    return list(merged.values())


def max_sequence_per_bucket(
    entries: Iterable[ManifestEntry], *, only: Iterable[tuple[bytes, int]] | None = None
) -> dict[tuple[bytes, int], int]:
    """The highest sequence number of each (partition, bucket) among ``entries`` (those in ``only``, if given)."""
    wanted = None if only is None else set(only)
    highest: dict[tuple[bytes, int], int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        if wanted is not None and key not in wanted:
            continue
        seq = e.file.max_sequence_number
        if key not in highest or seq > highest[key]:
            highest[key] = seq
    return highest


@dataclass(slots=True)
class FileStoreScan:
    file_io: FileIO
    table_path: str
    schema_manager: SchemaManager
    schema: TableSchema  # the schema predicates are written against
    # The table's path factory (from its FileStore); built from the schema when a caller has none.
    path_factory: FileStorePathFactory | None = None

    def __post_init__(self) -> None:
        if self.path_factory is None:
            self.path_factory = FileStorePathFactory.from_options(
                self.table_path, partition_keys=self.schema.partition_keys,
                partition_types=[f.type for f in self.schema.partition_fields], options=self.schema.core_options,
            )

    @property
    def partition_codec(self) -> PartitionCodec:
        assert self.path_factory is not None
        return self.path_factory.partition_codec

    @property
    def manifest_dir(self) -> str:
        return f"{self.table_path}/manifest"

    def manifest_list(self, name: str, size: int | None = None) -> list[ManifestFileMeta]:
        """The manifest file metas of manifest list ``name``; ``size`` (its recorded size) lets the process's
        manifest cache answer (laketide.meta.manifest_cache)."""
        path = f"{self.manifest_dir}/{name}"
        return MANIFEST_CACHE.get_or_load(
            path, size, lambda: read_objects(self.file_io.read_bytes, path, ManifestFileMeta.from_record))

    def manifest(self, name: str, size: int | None = None) -> list[ManifestEntry]:
        """Every entry (ADD and DELETE) of manifest ``name``; ``size`` as for ``manifest_list``."""
        path = f"{self.manifest_dir}/{name}"
        return MANIFEST_CACHE.get_or_load(
            path, size, lambda: read_objects(self.file_io.read_bytes, path, ManifestEntry.from_record))

    def index_manifest(self, name: str) -> list[IndexManifestEntry]:
        """Every entry (ADD and DELETE) of index manifest ``name``."""
        return read_objects(self.file_io.read_bytes, f"{self.manifest_dir}/{name}", IndexManifestEntry.from_record)

    def index_entries(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        """Live index files (hash indexes, deletion vectors) of ``snapshot``."""
        if not snapshot.index_manifest:
            return []
        entries = self.index_manifest(snapshot.index_manifest)
        live: dict[tuple[bytes, int, str], IndexManifestEntry] = {}
        for e in entries:
            key = (e.partition, e.bucket, e.index_file.file_name)
            if e.kind is FileKind.ADD:
                live[key] = e
            else:
                live.pop(key, None)
        return list(live.values())

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return (self.manifest_list(snapshot.base_manifest_list, snapshot.base_manifest_list_size)
                + self.manifest_list(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size))

    def plan(
        self,
        snapshot: Snapshot,
        *,
        predicate: Predicate | None = None,
        buckets: set[int] | None = None,
        manifests: list[ManifestFileMeta] | None = None,
        prune_by_values: bool = False,
    ) -> list[ManifestEntry]:
        """The live files of ``snapshot`` that may hold rows matching ``predicate``.

        ``prune_by_values``: a primary-key file may be dropped by value stats too (deletion-vector reads: an
        older version is deleted by vector, so dropping a newer one cannot resurrect it; Java's value filter).
        """
        part_names = set(self.schema.partition_keys)
        part_pred = _pick(predicate, part_names)
        entries: list[ManifestEntry] = []
        for m in manifests if manifests is not None else self.data_manifests(snapshot):
            if part_pred is not None and not self._manifest_may_match(m, part_pred):
                continue
            for e in self.manifest(m.file_name, m.file_size):
                if buckets is not None and e.bucket not in buckets:
                    continue
                if part_pred is not None and not evaluate_exact(part_pred, self.partition_codec.as_dict(e.partition)):
                    continue
                entries.append(e)
        live = [e for e in merge_entries(entries) if e.kind is FileKind.ADD]
        if predicate is not None:
            # A PK file holds old versions too: only key predicates may drop it (a value predicate could drop
            # the file with the newest version and resurrect an older one).
            keyed = self.schema.primary_keys and not prune_by_values
            prunable = set(self.schema.primary_keys) if keyed else set(self.schema.field_names)
            value_pred = _pick(predicate, prunable)
            if value_pred is not None:
                value_test = StatsTest(value_pred)
                live = [e for e in live if self._file_may_match(e, value_test)]
            key_pred = _pick(predicate, set(self.schema.trimmed_primary_keys)) if self.schema.primary_keys else None
            if key_pred is not None:
                # The key stats are written whatever metadata.stats-mode says: they prune when value stats cannot.
                key_test = StatsTest(key_pred)
                live = [e for e in live if self._key_may_match(e, key_test)]
        return live

    def _key_may_match(self, e: ManifestEntry, test: StatsTest) -> bool:
        f = e.file
        file_schema = self.schema if f.schema_id == self.schema.id else self.schema_manager.schema(f.schema_id)
        by_id = {fld.id: fld.name for fld in self.schema.fields}
        needed = referenced_fields(test.predicate)
        names: list[str | None] = []
        types, keep = [], []
        for key in file_schema.trimmed_primary_keys:
            fld = file_schema.field(key)
            current = by_id.get(fld.id)
            names.append(current)
            types.append(fld.type)
            keep.append(current is not None and current in needed and fld.type == self.schema.field(current).type)
        if not any(keep):
            return True
        stats = _decode_stats(f.key_stats, names, types, keep=keep) or {}
        first = names[0]
        if keep[0] and first is not None and (first not in stats or stats[first].min is None):
            # No key stats (metadata.stats-mode=none): the file's key range still bounds its first key column.
            try:
                lo = deserialize_binary_row(f.min_key, types)[0]
                hi = deserialize_binary_row(f.max_key, types)[0]
            except Exception:  # noqa: BLE001 - an unreadable key range never prunes
                lo = hi = None
            if lo is not None and hi is not None:
                stats[first] = FieldStats(min=lo, max=hi, null_count=0)
        return not stats or test.may_match(stats, f.row_count)

    def _manifest_may_match(self, m: ManifestFileMeta, pred: Predicate) -> bool:
        stats = _decode_stats(m.partition_stats, self.partition_codec.names, self.partition_codec.types)
        if stats is None:
            return True
        return may_match(pred, stats, m.num_added_files + m.num_deleted_files)

    def _file_may_match(self, e: ManifestEntry, test: StatsTest) -> bool:
        f = e.file
        file_schema = self.schema if f.schema_id == self.schema.id else self.schema_manager.schema(f.schema_id)
        file_fields = [file_schema.field(c) for c in f.stats_columns(file_schema.field_names)]
        by_id = {fld.id: fld.name for fld in self.schema.fields}
        needed = referenced_fields(test.predicate)
        names, types, keep = [], [], []
        for fld in file_fields:
            current = by_id.get(fld.id)
            names.append(current)
            types.append(fld.type)
            keep.append(current is not None and current in needed and fld.type == self.schema.field(current).type)
        if not any(keep):
            return True
        stats = _decode_stats(f.value_stats, names, types, keep=keep)
        if stats is None:
            return True
        return test.may_match(stats, f.row_count)


def _pick(pred: Predicate | None, allowed: set[str]) -> Predicate | None:
    if pred is None:
        return None
    from laketide.expr import pick_fields

    return pick_fields(pred, allowed)


def _decode_stats(
    stats: SimpleStats, names: Sequence[str | None], types: Sequence[DataType], *, keep: Sequence[bool] | None = None
) -> dict[str, FieldStats] | None:
    if not types:
        return None
    try:
        mins = deserialize_binary_row(stats.min_values, types)
        maxs = deserialize_binary_row(stats.max_values, types)
    except Exception:  # noqa: BLE001 - stats are an optimisation; unreadable stats never prune
        return None
    counts = stats.null_counts
    out: dict[str, FieldStats] = {}
    for i, name in enumerate(names):
        if name is None or (keep is not None and not keep[i]):
            continue
        nc = counts[i] if counts is not None and i < len(counts) else None
        out[name] = FieldStats(min=mins[i], max=maxs[i], null_count=nc)
    return out
