"""The store under a table: everything one (table, schema, branch) needs, built once and handed out.

A ``FileStore`` holds the parsed options, the schema's layouts, the one path factory and the snapshot / schema
managers, and makes the scan, read, write and commit objects of the layers below. ``Table`` is a facade over it;
maintenance (compaction, expiration, orphan clean-up, rollback) and the engines reach files through it.

Paimon: FileStore, AbstractFileStore, KeyValueFileStore, AppendOnlyFileStore
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.expr import Predicate
from laketide.fs import FileIO
from laketide.meta.changelog_manager import ChangelogManager
from laketide.meta.deletion import TableFileDeleter
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import MAIN_BRANCH, POSTPONE_BUCKET, FileStorePathFactory
from laketide.meta.snapshot import Snapshot
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.mergetree.compaction.append import AppendCompactSettings
from laketide.mergetree.compaction.manager import CompactionSettings
from laketide.scan.file_scan import FileStoreScan
from laketide.scan.split_read import SplitRead
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.io.file_meta import DescribedFile
from laketide.store.routing import BucketRouter
from laketide.types import DataType
from laketide.write.bucket_assigner import dynamic_bucket_mode
from laketide.write.commit import FileStoreCommit
from laketide.write.table_write import SequenceRestorer, TableWrite, WriterWrapper

__all__ = ["AppendOnlyFileStore", "BucketMode", "FileStore", "KeyValueFileStore"]

BucketMode = Literal["fixed", "dynamic", "cross-partition", "unaware", "postpone"]
"""How rows find their bucket (Paimon: BucketMode HASH_FIXED, HASH_DYNAMIC, KEY_DYNAMIC, BUCKET_UNAWARE,
POSTPONE_MODE)."""


class FileStore:
    """The files of one table (one schema, one branch): layouts, paths, managers and the factories of work."""

    def __init__(
        self,
        *,
        file_io: FileIO,
        table_path: str,
        table_name: str,
        schema: TableSchema,
        schema_manager: SchemaManager,
        snapshot_manager: SnapshotManager,
        branch: str = MAIN_BRANCH,
    ) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self.schema = schema
        self.schema_manager = schema_manager
        self.snapshot_manager = snapshot_manager
        self.branch = branch
        self.options = schema.core_options  # parsed once per schema: every reader of options uses it
        self.partition_types: tuple[DataType, ...] = tuple(f.type for f in schema.partition_fields)
        self.path_factory = FileStorePathFactory.from_options(
            table_path, partition_keys=schema.partition_keys, partition_types=self.partition_types,
            options=self.options, branch=branch,
        )
        self.changelog_manager = ChangelogManager(file_io, self.path_factory.changelog_dir)

    @staticmethod
    def create(
        *,
        file_io: FileIO,
        table_path: str,
        table_name: str,
        schema: TableSchema,
        schema_manager: SchemaManager,
        snapshot_manager: SnapshotManager,
        branch: str = MAIN_BRANCH,
    ) -> FileStore:
        """The store for ``schema``: key-value for primary-key tables, append-only otherwise."""
        kind: type[FileStore] = KeyValueFileStore if schema.primary_keys else AppendOnlyFileStore
        return kind(file_io=file_io, table_path=table_path, table_name=table_name, schema=schema,
                    schema_manager=schema_manager, snapshot_manager=snapshot_manager, branch=branch)

    # -- layouts -----------------------------------------------------------------------------------------------
    @property
    def has_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    @property
    def bucket_mode(self) -> BucketMode:
        bucket = self.options.bucket
        if bucket > 0:
            return "fixed"
        if bucket == POSTPONE_BUCKET:
            return "postpone"
        dynamic = dynamic_bucket_mode(self.schema)
        if dynamic == "cross-partition":
            return "cross-partition"
        return "dynamic" if dynamic is not None else "unaware"

    # -- what maintenance and writers share ---------------------------------------------------------------------
    @property
    def deleter(self) -> TableFileDeleter:
        """The one way maintenance deletes this table's files: never outside its directory (or its
        ``data-file.external-paths``)."""
        return TableFileDeleter.for_options(self.file_io, self.table_path, self.schema.options,
                                            table_name=self.table_name)

    def tag_snapshot(self, tag: str) -> Snapshot:
        """The snapshot tag ``tag`` holds (``tag/tag-<name>`` keeps its JSON)."""
        if not isinstance(tag, str) or not tag.strip() or any(c in tag for c in "/\\") \
                or any(ord(c) < 0x20 for c in tag):
            # The name becomes part of a path: '../..' would read a file outside the table.
            raise InvalidOptionError(f"Table {self.table_name}: tag name {tag!r} is not a valid tag name")
        path = f"{self.path_factory.tag_dir}/tag-{tag}"
        if not self.file_io.exists(path):
            raise NoSuchSnapshotError(f"Tag {tag!r} of table {self.table_name} does not exist")
        return Snapshot.from_json(self.file_io.read_bytes(path), path=path)

    def compaction_settings(self) -> CompactionSettings | AppendCompactSettings:
        raise NotImplementedError

    # -- factories ---------------------------------------------------------------------------------------------
    def new_scan(self, schema: TableSchema | None = None) -> FileStoreScan:
        """Plans files from metadata; ``schema`` (default: this store's) is the one predicates name."""
        schema = schema or self.schema
        paths = self.path_factory if schema is self.schema else None
        return FileStoreScan(file_io=self.file_io, table_path=self.table_path, schema_manager=self.schema_manager,
                             schema=schema, path_factory=paths)

    def new_read(
        self,
        *,
        read_schema: TableSchema | None = None,
        columns: Sequence[str] | None = None,
        predicate: Predicate | None = None,
        batch_size: int | None = None,
    ) -> SplitRead:
        """Reads splits (and single files) evolved to ``read_schema`` (default: this store's)."""
        return SplitRead(
            file_io=self.file_io, schema_manager=self.schema_manager, read_schema=read_schema or self.schema,
            columns=columns, predicate=predicate,
            batch_size=batch_size if batch_size is not None else self.options.read_batch_size * 64,
        )

    def new_write(
        self,
        *,
        restore_sequence: SequenceRestorer | None = None,
        wrap_writer: WriterWrapper | None = None,
    ) -> TableWrite:
        """Writes rows into new files; ``restore_sequence`` continues each bucket's sequence numbers and
        ``wrap_writer`` wraps each bucket's LSM writer (e.g. to compact it)."""
        return TableWrite(
            file_io=self.file_io, table_path=self.table_path, table_name=self.table_name, schema=self.schema,
            options=self.options, path_factory=self.path_factory,
            restore_sequence=restore_sequence, wrap_writer=wrap_writer,
        )

    def new_commit(
        self,
        commit_user: str,
        *,
        restored_plan: Callable[[Snapshot], list[ManifestEntry] | None] | None = None,
    ) -> FileStoreCommit:
        return FileStoreCommit(
            file_io=self.file_io, table_path=self.table_path, table_name=self.table_name, schema=self.schema,
            snapshot_manager=self.snapshot_manager, scan_factory=self.new_scan, commit_user=commit_user,
            restored_plan=restored_plan,
        )

    def describe_written_file(self, path: str, *, first_sequence_number: int = 0) -> DescribedFile:
        """The level-0 ``DataFileMeta`` (and partition) of a Parquet file another engine wrote in this store's
        layout (key-value columns for primary-key tables); see laketide.store.adopt."""
        from laketide.store.adopt import describe_written_file

        return describe_written_file(self, path, first_sequence_number=first_sequence_number)

    def describe_written_file_from_footer(self, path: str, *, first_sequence_number: int = 0) -> DescribedFile:
        """``describe_written_file``'s result from the file's Parquet footer, reading back only what it lacks."""
        from laketide.store.adopt import describe_written_file_from_footer

        return describe_written_file_from_footer(self, path, first_sequence_number=first_sequence_number)

    def bucket_router(self) -> BucketRouter:
        """The public routing of rows to buckets (fixed) or bucket assigners (dynamic), for engines."""
        return BucketRouter(self)


class KeyValueFileStore(FileStore):
    """A primary-key table's store: an LSM tree of sorted runs per bucket."""

    def compaction_settings(self) -> CompactionSettings:
        return CompactionSettings.from_options(self.options)


class AppendOnlyFileStore(FileStore):
    """An append table's store: files in arrival order per bucket, small ones rewritten by compaction."""

    def compaction_settings(self) -> AppendCompactSettings:
        return AppendCompactSettings.from_options(self.options)
