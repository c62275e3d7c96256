"""Reading what changed between two snapshots: the delta files of the APPEND snapshots in between, per bucket.

COMPACT and OVERWRITE snapshots carry no new changes (as in Paimon without ``streaming-read-overwrite``).
A table with a changelog producer (``changelog-producer`` other than ``none``) is read from its changelog files
instead: those listed by each snapshot's changelog manifest list, whatever its kind.
Primary-key delta files are read as written, every row with its row kind (Paimon with changelog-producer
``none``). Rows of one (partition, bucket) come in sequence order, so the versions of a key arrive in order.
Spark's streaming source and ``Table.read_changes`` both plan and read through here.

Paimon: table.source.IncrementalSplit / DataTableStreamScan with DeltaFollowUpScanner, table.source.snapshot
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from laketide.exceptions import NoSuchSnapshotError
from laketide.meta.manifest import DataFileMeta, FileKind
from laketide.meta.snapshot import CommitKind, Snapshot
from laketide.options import ChangelogProducer
from laketide.io.kv import VALUE_KIND
from laketide.scan.split import DataSplit
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["BucketChanges", "DeltaFile", "IncrementalScan", "ROW_KINDS"]

ROW_KINDS = np.array(["+I", "-U", "+U", "-D"], dtype=object)
"""Paimon's short strings of the row kinds, indexed by their byte value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaFile:
    snapshot_id: int
    file: DataFileMeta
    path: str


@dataclass(frozen=True, slots=True)
class BucketChanges:
    """The changes of one (partition, bucket): optionally the full content of the start snapshot, then the delta
    files of later snapshots in commit order."""

    partition: bytes
    bucket: int
    full: DataSplit | None
    deltas: tuple[DeltaFile, ...]


class IncrementalScan:
    """Plans and reads the changes of a table between snapshots; picklable parts only in its plans."""

    def __init__(self, table: Table, *, read_schema: TableSchema | None = None, source: str | None = None) -> None:
        """Rows come evolved to ``read_schema`` (default: the table's current schema). ``source``: ``"delta"``
        (the data files of APPEND snapshots), ``"changelog"`` (the changelog files) or None: the changelog of a
        primary-key table with a ``changelog-producer``, else the deltas (Java's incremental scan modes)."""
        if source not in (None, "delta", "changelog"):
            raise ValueError(f"source must be 'delta', 'changelog' or None, got {source!r}")
        self.table = table
        self.read_schema = read_schema or table.schema
        self.source = source

    def __repr__(self) -> str:
        source = "changelog files" if self._from_changelog else "data file deltas"
        return f"<IncrementalScan of {self.table.name}: changes from {source}, schema {self.read_schema.id}>"

    def snapshot_cost(self, snapshot_id: int) -> tuple[int, int]:
        """(files, rows) snapshot ``snapshot_id`` adds to a stream of changes; (0, 0) if it adds none or is gone."""
        try:
            snap = self.table.snapshot(snapshot_id)
        except NoSuchSnapshotError:
            kept = self.table.store.changelog_manager.try_changelog(snapshot_id) if self._from_changelog else None
            if kept is None:
                return (0, 0)
            snap = kept
        if self._from_changelog:
            if not snap.changelog_manifest_list:
                return (0, 0)
            scan = self.table.file_scan()
            metas = scan.manifest_list(snap.changelog_manifest_list, snap.changelog_manifest_list_size)
            return (sum(m.num_added_files for m in metas), max(snap.changelog_record_count or 0, 0))
        if snap.commit_kind is not CommitKind.APPEND:
            return (0, 0)
        metas = self.table.file_scan().manifest_list(snap.delta_manifest_list, snap.delta_manifest_list_size)
        return (sum(m.num_added_files for m in metas), max(snap.delta_record_count, 0))

    @property
    def _from_changelog(self) -> bool:
        if self.source is not None:
            return self.source == "changelog"
        return bool(self.table.primary_keys) and self.table.options.changelog_producer is not ChangelogProducer.NONE

    def _change_files(self, snap: Snapshot) -> str | None:
        """The manifest list of the files that carry ``snap``'s changes for this table (None: no changes)."""
        if self._from_changelog:
            return snap.changelog_manifest_list or None
        return snap.delta_manifest_list if snap.commit_kind is CommitKind.APPEND else None

    def plan(self, start: int, end: int, *, full_start: bool = False) -> list[BucketChanges]:
        """Changes committed after snapshot ``start`` up to ``end``; with ``full_start``, the whole content of
        ``start`` comes first. Snapshots expired meanwhile are skipped."""
        table = self.table
        groups: dict[tuple[bytes, int], tuple[DataSplit | None, list[DeltaFile]]] = {}
        if full_start and start > 0:
            for split in table.scan(snapshot_id=start).plan():
                # A bucket may be planned as several splits (packs of files read without a merge): one per bucket.
                earlier = groups.get((split.partition, split.bucket))
                joined = split if earlier is None or earlier[0] is None else earlier[0].joined(split)
                groups[(split.partition, split.bucket)] = (joined, [])
        scan = table.file_scan()
        paths = table.store.path_factory
        for sid in range(start + 1, end + 1):
            try:
                snap: Snapshot = table.snapshot(sid)
            except NoSuchSnapshotError:
                kept = table.store.changelog_manager.try_changelog(sid) if self._from_changelog else None
                if kept is None:
                    continue  # expired before we got to it
                snap = kept  # the snapshot expired, its changelog was kept (decoupled changelog retention)
            listed = self._change_files(snap)
            if listed is None:
                continue
            for meta in scan.manifest_list(listed):
                for e in scan.manifest(meta.file_name, meta.file_size):
                    if e.kind is not FileKind.ADD:
                        continue
                    path = paths.data_file_paths(e.partition, e.bucket, e.file)[0]
                    group = groups.setdefault((e.partition, e.bucket), (None, []))
                    group[1].append(DeltaFile(snapshot_id=sid, file=e.file, path=path))
        out = []
        for (partition, bucket), (full, deltas) in groups.items():
            deltas.sort(key=lambda d: (d.snapshot_id, d.file.min_sequence_number, d.file.file_name))
            out.append(BucketChanges(partition, bucket, full, tuple(deltas)))
        return out

    def plan_diff(self, start: Snapshot | None, end: Snapshot) -> list[BucketChanges]:
        """The files live in ``end`` but not in ``start`` (Paimon's ``diff`` incremental mode), for a range whose
        snapshots have expired (tags). Exact for append tables; a primary-key file rewritten by compaction shows
        its rows again."""
        scan = self.table.file_scan()
        paths = self.table.store.path_factory
        before = {e.file.file_name for e in scan.plan(start)} if start is not None else set()
        groups: dict[tuple[bytes, int], list[DeltaFile]] = {}
        for e in scan.plan(end):
            if e.file.file_name in before:
                continue
            path = paths.data_file_paths(e.partition, e.bucket, e.file)[0]
            groups.setdefault((e.partition, e.bucket), []).append(DeltaFile(snapshot_id=end.id, file=e.file, path=path))
        out = []
        for (partition, bucket), deltas in groups.items():
            deltas.sort(key=lambda d: (d.file.min_sequence_number, d.file.file_name))
            out.append(BucketChanges(partition, bucket, None, tuple(deltas)))
        return out

    def to_arrow_changes(
        self, changes: list[BucketChanges], *, columns: Sequence[str] | None = None,
        row_kind_column: str | None = "rowkind",
    ) -> pa.Table:
        """``changes`` (from ``plan`` or ``plan_diff``) as one table, as ``to_arrow`` gives them."""
        return self._collect(changes, columns=columns, row_kind_column=row_kind_column)

    def read(
        self,
        changes: BucketChanges,
        *,
        columns: Sequence[str] | None = None,
        retractions: bool = False,
    ) -> Iterator[tuple[pa.RecordBatch, np.ndarray | None]]:
        """Batches of ``changes`` with each row's kind (int8 values of RowKind; None: every row is an insert).

        Without ``retractions``, -U and -D rows are dropped (what a plain read of the table would show).
        """
        table = self.table
        reader = table.store.new_read(read_schema=self.read_schema, columns=columns)
        names = reader.output_names
        if changes.full is not None:
            for batch in reader.read(changes.full):
                yield batch, None
        for d in changes.deltas:
            if not table.primary_keys:
                for batch in reader.read_file(d.file, d.path):
                    yield batch.select(names), None
                continue
            # Key-value files as written: every row with its _VALUE_KIND, no merge.
            for batch in reader.read_kv_file(d.file, d.path):
                kinds = batch.column(VALUE_KIND).to_numpy(zero_copy_only=False)
                if not retractions:
                    keep = (kinds == 0) | (kinds == 2)
                    batch = batch.filter(pa.array(keep))
                    kinds = kinds[keep]
                if batch.num_rows:
                    yield batch.select(names), kinds

    def to_arrow(
        self, start: int, end: int, *, full_start: bool = False, columns: Sequence[str] | None = None,
        row_kind_column: str | None = "rowkind",
    ) -> pa.Table:
        """Every change after ``start`` up to ``end`` as one table; ``row_kind_column`` (first) holds +I / -U /
        +U / -D (None: drop it, and the retractions with it)."""
        return self._collect(self.plan(start, end, full_start=full_start), columns=columns,
                             row_kind_column=row_kind_column)

    def _collect(
        self, planned: list[BucketChanges], *, columns: Sequence[str] | None, row_kind_column: str | None
    ) -> pa.Table:
        reader_names = self.table.store.new_read(read_schema=self.read_schema, columns=columns).output_names
        batches = []
        for changes in planned:
            for batch, kinds in self.read(changes, columns=columns, retractions=row_kind_column is not None):
                if row_kind_column is not None:
                    rk = ROW_KINDS[kinds] if kinds is not None else np.full(batch.num_rows, "+I", dtype=object)
                    batch = pa.RecordBatch.from_arrays([pa.array(rk, pa.string()), *batch.columns],
                                                       names=[row_kind_column, *batch.schema.names])
                batches.append(batch)
        if batches:
            return pa.Table.from_batches(batches)
        schema = to_arrow_schema(self.read_schema.row_type)
        fields = [schema.field(n) for n in reader_names]
        if row_kind_column is not None:
            fields.insert(0, pa.field(row_kind_column, pa.string()))
        return pa.schema(fields).empty_table()
