"""Where every file of a table lives, and how partition values become directory names.

Directory names must be Java-identical: Java readers derive a data file's path from the partition row, so a
different spelling would hide our files from them (and theirs from us).

Paimon: utils.FileStorePathFactory, utils.PartitionPathUtils, utils.InternalRowPartitionComputer
(``partition.legacy-name`` = true: values are rendered with Java's ``toString`` of the internal value).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import math
import uuid
from collections.abc import Sequence
from typing import Protocol
from dataclasses import dataclass, field

from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.external_paths import ExternalPathProvider, external_roots
from laketide.options import CoreOptions, ExternalPathStrategy
from laketide.types import DataType

__all__ = [
    "FILE_INDEX_SUFFIX",
    "JOBS_DIR",
    "POSTPONE_BUCKET",
    "STAGING_DIR_PREFIX",
    "FileStorePathFactory",
    "PartitionCodec",
    "TablePaths",
    "bucket_dir_name",
    "partition_path",
    "java_to_string",
]

POSTPONE_BUCKET = -2
"""Paimon: BucketMode.POSTPONE_BUCKET: rows of a ``bucket = -2`` table wait in ``bucket-postpone`` until compaction."""
STAGING_DIR_PREFIX = "_spark-staging-"
"""Directories (in the table directory) where an engine writes files before laketide adopts them."""
JOBS_DIR = "_laketide_jobs"
"""Where (in the table directory) Spark jobs name the files their tasks create (laketide.spark.job_files)."""


def bucket_dir_name(bucket: int) -> str:
    """``bucket-N``; ``bucket-postpone`` for the postpone bucket (Paimon: FileStorePathFactory#relativeBucketPath)."""
    return "bucket-postpone" if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"

_ESCAPE = set(range(0x01, 0x20)) | {ord(c) for c in "\"#%'*/:=?\\{}[]^"} | {0x7F}


def _escape(s: str) -> str:
    if not any(ord(c) in _ESCAPE for c in s):
        return s
    return "".join(f"%{ord(c):02X}" if ord(c) in _ESCAPE else c for c in s)


_EPOCH_DATE = _dt.date(1970, 1, 1)


def java_to_string(value: object, *, legacy: bool = True) -> str:
    """Java's ``toString`` of Paimon's internal representation of ``value``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double_to_string(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.datetime):
        return _java_local_datetime(value)
    if isinstance(value, _dt.date):
        # Internal DATE is days since epoch; the legacy name prints that int.
        return str((value - _EPOCH_DATE).days) if legacy else value.isoformat()
    if isinstance(value, _dt.time):
        ms = (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
        return str(ms) if legacy else value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _java_double_to_string(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    r = repr(x)  # shortest round-trip digits, as Java's algorithm produces
    a = abs(x)
    if 1e-3 <= a < 1e7:
        s = format(decimal.Decimal(r), "f")
        return s if "." in s else s + ".0"
    mantissa, exp = f"{decimal.Decimal(r):E}".split("E")
    digits = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if "." not in digits:
        digits += ".0"
    return f"{digits}E{int(exp)}"


def _java_local_datetime(v: _dt.datetime) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    nanos = v.microsecond * 1000 + int(getattr(v, "nanosecond", 0))
    s = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}"
    if v.second or nanos:
        s += f":{v.second:02d}"
        if nanos:
            if nanos % 1_000_000 == 0:
                s += f".{nanos // 1_000_000:03d}"
            elif nanos % 1000 == 0:
                s += f".{nanos // 1000:06d}"
            else:
                s += f".{nanos:09d}"
    return s


def partition_path(
    names: Sequence[str], values: Sequence[object], *, default_name: str, legacy: bool = True
) -> str:
    """``k1=v1/k2=v2`` (no trailing slash), nulls and blank strings as ``default_name``."""
    parts = []
    for name, value in zip(names, values, strict=True):
        text = None if value is None else java_to_string(value, legacy=legacy)
        if text is None or not text.strip():
            text = default_name
        parts.append(f"{_escape(name)}={_escape(text)}")
    return "/".join(parts)


class PartitionCodec:
    """Decodes partition BinaryRows to values, once per distinct partition."""

    def __init__(self, names: Sequence[str], types: Sequence[DataType]) -> None:
        self.names = list(names)
        self.types = list(types)
        self._cache: dict[bytes, tuple[object, ...]] = {}

    def values(self, partition: bytes) -> tuple[object, ...]:
        v = self._cache.get(partition)
        if v is None:
            v = tuple(deserialize_binary_row(partition, self.types)) if self.types else ()
            self._cache[partition] = v
        return v

    def as_dict(self, partition: bytes) -> dict[str, object]:
        return dict(zip(self.names, self.values(partition)))


MAIN_BRANCH = "main"


FILE_INDEX_SUFFIX = ".index"
"""Suffix of a data file's sidecar file index (Paimon: DataFilePathFactory.INDEX_PATH_SUFFIX)."""


class FileStorePathFactory:
    """The one place that says where a table's files live: its (branch's) metadata directories, the partition and
    bucket directories, and the paths of data, changelog, index, manifest and statistics files.

    Branches share the table's data, manifest and index files and keep their own snapshots, schemas, tags and
    consumers under ``branch/branch-<name>`` (Paimon: utils.BranchManager#branchPath).

    Paimon: utils.FileStorePathFactory, utils.DataFilePathFactories
    """

    def __init__(
        self,
        table_path: str,
        *,
        partition_keys: Sequence[str] = (),
        partition_types: Sequence[DataType] = (),
        default_partition_name: str = "__DEFAULT_PARTITION__",
        data_file_prefix: str = "data-",
        changelog_file_prefix: str = "changelog-",
        data_file_path_directory: str | None = None,
        branch: str = MAIN_BRANCH,
        external_roots: Sequence[str] = (),
        external_strategy: ExternalPathStrategy = ExternalPathStrategy.NONE,
        external_weights: Sequence[int] | None = None,
        index_file_in_data_file_dir: bool = False,
    ) -> None:
        self.table_path = table_path.rstrip("/") or table_path
        self.partition_codec = PartitionCodec(partition_keys, partition_types)
        self.default_partition_name = default_partition_name
        self.data_file_prefix = data_file_prefix
        self.changelog_file_prefix = changelog_file_prefix
        self.branch = branch
        # ``data-file.path-directory``: partition and bucket directories live under it, not the table root.
        directory = data_file_path_directory
        self.data_file_path_directory = directory
        self.data_root = f"{self.table_path}/{directory}" if directory else self.table_path
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        # ``data-file.external-paths`` (empty when unset or the strategy is ``none``): where new data files go.
        self.external_roots = tuple(external_roots)
        self.external_strategy = external_strategy
        self.external_weights = None if external_weights is None else tuple(external_weights)
        # ``index-file-in-data-file-dir``: hash-index and deletion-vector files live in their bucket directory.
        self.index_file_in_data_file_dir = index_file_in_data_file_dir

    @classmethod
    def from_options(
        cls, table_path: str, *, partition_keys: Sequence[str], partition_types: Sequence[DataType],
        options: CoreOptions, branch: str = MAIN_BRANCH,
    ) -> FileStorePathFactory:
        return cls(
            table_path, partition_keys=partition_keys, partition_types=partition_types,
            default_partition_name=options.partition_default_name, data_file_prefix=options.data_file_prefix,
            changelog_file_prefix=options.changelog_file_prefix,
            data_file_path_directory=options.data_file_path_directory, branch=branch,
            external_roots=external_roots(options), external_strategy=options.external_path_strategy,
            external_weights=options.external_path_weights,
            index_file_in_data_file_dir=options.index_file_in_data_file_dir,
        )

    # -- the branch's metadata -----------------------------------------------------------------------------------
    @property
    def branch_path(self) -> str:
        if self.branch == MAIN_BRANCH:
            return self.table_path
        return f"{self.table_path}/branch/branch-{self.branch}"

    @property
    def snapshot_dir(self) -> str:
        return f"{self.branch_path}/snapshot"

    @property
    def schema_dir(self) -> str:
        return f"{self.branch_path}/schema"

    @property
    def tag_dir(self) -> str:
        return f"{self.branch_path}/tag"

    @property
    def consumer_dir(self) -> str:
        return f"{self.branch_path}/consumer"

    @property
    def changelog_dir(self) -> str:
        """changelog/changelog-N: snapshots kept for their changelog after the snapshot expired."""
        return f"{self.branch_path}/changelog"

    # -- files every branch shares -------------------------------------------------------------------------------
    @property
    def manifest_dir(self) -> str:
        return f"{self.table_path}/manifest"

    @property
    def index_dir(self) -> str:
        return f"{self.table_path}/index"

    @property
    def statistics_dir(self) -> str:
        return f"{self.table_path}/statistics"

    def manifest_path(self, name: str) -> str:
        return f"{self.manifest_dir}/{name}"

    def index_file_path(self, name: str, external_path: str | None = None) -> str:
        return external_path or f"{self.index_dir}/{name}"

    def statistics_path(self, name: str) -> str:
        return f"{self.statistics_dir}/{name}"

    def partition_dir(self, values: Sequence[object]) -> str:
        """``k1=v1/k2=v2`` relative to the table, ``""`` for an unpartitioned table."""
        if not self.partition_codec.names:
            return ""
        return partition_path(self.partition_codec.names, values, default_name=self.default_partition_name)

    def success_file_path(self, values: Sequence[object]) -> str:
        """The ``_SUCCESS`` file marking a partition done (Paimon: SuccessFileMarkDoneAction)."""
        part = self.partition_dir(values)
        return f"{self.data_root}/{part}/_SUCCESS" if part else f"{self.data_root}/_SUCCESS"

    def new_staging_dir(self) -> str:
        """A fresh directory for files an engine writes before laketide names and moves them into bucket
        directories (Spark's native write); what a killed job leaves there is an orphan."""
        return f"{self.table_path}/{STAGING_DIR_PREFIX}{uuid.uuid4().hex}"

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The directory of ``bucket`` of the partition whose BinaryRow is ``partition``."""
        key = (partition, bucket)
        d = self._bucket_dirs.get(key)
        if d is None:
            d = self.bucket_dir_of(self.partition_codec.values(partition), bucket)
            self._bucket_dirs[key] = d
        return d

    def bucket_dir_of(self, values: Sequence[object], bucket: int) -> str:
        """The directory of ``bucket`` of the partition with ``values``."""
        part = self.partition_dir(values)
        name = bucket_dir_name(bucket)
        return f"{self.data_root}/{part}/{name}" if part else f"{self.data_root}/{name}"

    def relative_bucket_dir_of(self, values: Sequence[object], bucket: int) -> str:
        """The bucket directory relative to the table (Paimon: FileStorePathFactory#relativeBucketPath)."""
        parts = [p for p in (self.data_file_path_directory, self.partition_dir(values)) if p]
        return "/".join([*parts, bucket_dir_name(bucket)])

    def external_path_provider(self, partition: bytes, bucket: int) -> ExternalPathProvider | None:
        """The provider of external paths for new files of one (partition, bucket); None: they go in the bucket
        directory. One per writer, as Java makes one per DataFilePathFactory."""
        if not self.external_roots:
            return None
        return ExternalPathProvider(self.external_strategy, self.external_roots,
                                    self.relative_bucket_dir_of(self.partition_codec.values(partition), bucket),
                                    self.external_weights)

    def bucket_index_file_path(self, partition: bytes, bucket: int, name: str,
                               external_path: str | None = None) -> str:
        """Where an index file (hash index, deletion vectors) of one bucket lives: its external path, else the
        bucket directory with ``index-file-in-data-file-dir``, else ``index/``
        (Paimon: FileStorePathFactory#indexFileFactory, IndexInDataFileDirPathFactory#toPath)."""
        if external_path:
            return external_path
        if self.index_file_in_data_file_dir:
            return f"{self.bucket_dir(partition, bucket)}/{name}"
        return f"{self.index_dir}/{name}"

    def bucket_index_dir(self, partition: bytes, bucket: int) -> str:
        """The directory new index files of one bucket are written to (Paimon: FileStorePathFactory#indexFileFactory).

        With external data paths too, Java writes them under an external root and records that path; laketide
        keeps them in the table's bucket directory with no external path, which Java resolves the same way."""
        return self.bucket_dir(partition, bucket) if self.index_file_in_data_file_dir else self.index_dir

    def data_file_paths(self, partition: bytes, bucket: int, file: _DataFileLike) -> list[str]:
        """Where a data (or changelog) file lives, followed by its extra files (e.g. its sidecar file index),
        which sit beside it, also under an external path (Paimon: DataFilePathFactory#toAlignedPath)."""
        d = self.bucket_dir(partition, bucket)
        path = file.external_path or f"{d}/{file.file_name}"
        beside = path.rsplit("/", 1)[0] if file.external_path else d
        return [path, *(f"{beside}/{x}" for x in file.extra_files)]

    def extra_file_path(self, partition: bytes, bucket: int, file: _DataFileLike, name: str) -> str:
        """The path of ``name``, one of ``file``'s extra files (it lives beside the data file)."""
        return self.extra_file_path_beside(file.external_path or f"{self.bucket_dir(partition, bucket)}/"
                                           f"{file.file_name}", name)

    @staticmethod
    def extra_file_path_beside(data_file_path: str, name: str) -> str:
        return f"{data_file_path.rsplit('/', 1)[0]}/{name}"

    @staticmethod
    def file_index_name(data_file_name: str) -> str:
        """The sidecar file index of a data file: ``<data file name>.index``
        (Paimon: DataFilePathFactory#dataFileToFileIndexPath)."""
        return f"{data_file_name}{FILE_INDEX_SUFFIX}"

    def new_file_names(self) -> TablePaths:
        """Fresh names for one writer's new files (its own uuid and counters)."""
        return TablePaths(self.table_path, data_file_prefix=self.data_file_prefix,
                          changelog_file_prefix=self.changelog_file_prefix)


class _DataFileLike(Protocol):
    @property
    def file_name(self) -> str: ...
    @property
    def external_path(self) -> str | None: ...
    @property
    def extra_files(self) -> Sequence[str]: ...


@dataclass(slots=True)
class TablePaths:
    """Names of new files. One instance per writer: it owns a uuid and counters, so names never collide."""

    table_path: str
    data_file_prefix: str = "data-"
    changelog_file_prefix: str = "changelog-"
    _uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    _counters: dict[str, itertools.count[int]] = field(default_factory=dict)

    @property
    def manifest_dir(self) -> str:
        return f"{self.table_path}/manifest"

    @property
    def index_dir(self) -> str:
        return f"{self.table_path}/index"

    def _next(self, kind: str) -> int:
        # itertools.count hands out numbers atomically: writers of several buckets may flush in parallel.
        counter = self._counters.get(kind)
        if counter is None:
            counter = self._counters.setdefault(kind, itertools.count())
        return next(counter)

    def new_manifest_name(self) -> str:
        return f"manifest-{self._uuid}-{self._next('manifest')}"

    def new_manifest_list_name(self) -> str:
        return f"manifest-list-{self._uuid}-{self._next('manifest-list')}"

    def new_index_manifest_name(self) -> str:
        return f"index-manifest-{self._uuid}-{self._next('index-manifest')}"

    def new_index_file_name(self) -> str:
        return f"index-{self._uuid}-{self._next('index')}"

    def new_data_file_name(self, extension: str) -> str:
        return f"{self.data_file_prefix}{self._uuid}-{self._next('data')}.{extension}"

    def new_changelog_file_name(self, extension: str) -> str:
        # Java's DataFilePathFactory numbers data and changelog files with one counter.
        return f"{self.changelog_file_prefix}{self._uuid}-{self._next('data')}.{extension}"
