"""Batch writing to a table: rows -> data files per (partition, bucket) -> commit messages.

``TableWrite`` is executor-side work: it writes files and returns picklable ``CommitMessage``s; the
committer (driver side) turns them into a snapshot.

Paimon: table.sink.TableWriteImpl, operation.AppendFileStoreWrite / BaseAppendFileStoreWrite
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from laketide.exceptions import UnsupportedFeatureError
from laketide.format import file_format
from laketide.fs import FileIO
from laketide.meta.binary_row import serialize_binary_row
from laketide.meta.commit_message import CommitMessage
from laketide.meta.paths import TablePaths, partition_path
from laketide.options import CoreOptions
from laketide.schema.table_schema import TableSchema
from laketide.types import to_arrow_schema
from laketide.write.bucketing import split_by_partition_and_bucket
from laketide.write.conform import conform, to_arrow
from laketide.write.file_writer import RollingFileWriter, StatsLayout

__all__ = ["TableWrite"]

# (partition bytes, bucket) -> the bucket's highest sequence number so far, or None for a new bucket.
SequenceRestorer = Callable[[bytes, int], "int | None"]


@dataclass(frozen=True, slots=True)
class _BucketKey:
    partition: bytes
    bucket: int


class TableWrite:
    """Writes rows of one table; ``prepare_commit()`` returns the commit messages of everything written."""

    def __init__(
        self,
        *,
        file_io: FileIO,
        table_path: str,
        table_name: str,
        schema: TableSchema,
        restore_sequence: SequenceRestorer | None = None,
    ) -> None:
        if schema.primary_keys:
            raise UnsupportedFeatureError(
                f"Table {table_name} has a primary key; primary-key writes are not implemented yet"
            )
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.arrow_schema = to_arrow_schema(schema.row_type)
        self.paths = TablePaths(table_path, data_file_prefix=self.options.data_file_prefix)
        self.num_buckets = self.options.bucket
        self.bucket_keys = schema.bucket_keys() if self.num_buckets > 0 else []
        self.bucket_key_types = [schema.field(k).type for k in self.bucket_keys]
        self.partition_types = [f.type for f in schema.partition_fields]
        self.file_format = file_format(self.options.file_format)
        self.stats_layout = StatsLayout(
            names=tuple(schema.field_names),
            types=tuple(f.type for f in schema.fields),
            modes=tuple(self.options.stats_mode(n) for n in schema.field_names),
        )
        self._restore_sequence = restore_sequence
        self._writers: dict[_BucketKey, RollingFileWriter] = {}
        self._closed = False

    def write(self, data: Any) -> None:
        """Write Arrow / pandas / polars data; a schema mismatch raises before any file is written."""
        table = conform(to_arrow(data), self.arrow_schema, table_name=self.table_name)
        for group in split_by_partition_and_bucket(
            table,
            partition_keys=self.schema.partition_keys,
            bucket_keys=self.bucket_keys,
            bucket_key_types=self.bucket_key_types,
            num_buckets=self.num_buckets,
        ):
            self._writer(group.partition, group.bucket).write(group.rows)

    def prepare_commit(self) -> list[CommitMessage]:
        """Close every open file and describe what was written; the writer can be used again after."""
        total = self.num_buckets if self.num_buckets > 0 else 0
        messages = []
        for key, writer in self._writers.items():
            files = writer.close()
            if files:
                messages.append(
                    CommitMessage(partition=key.partition, bucket=key.bucket, total_buckets=total,
                                  new_files=tuple(files))
                )
        # Keep sequence numbers growing across prepare_commit calls of this writer.
        for w in self._writers.values():
            w.written.clear()
            w.written_paths.clear()
        return messages

    def abort(self) -> None:
        """Delete the files written since the last prepare_commit()."""
        for w in self._writers.values():
            w.abort()

    def close(self) -> None:
        self._writers.clear()
        self._closed = True

    def _writer(self, partition_values: tuple[object, ...], bucket: int) -> RollingFileWriter:
        part_bytes = serialize_binary_row(list(partition_values), self.partition_types)
        key = _BucketKey(part_bytes, bucket)
        w = self._writers.get(key)
        if w is None:
            part_dir = partition_path(
                self.schema.partition_keys, partition_values,
                default_name=self.options.partition_default_name,
            )
            restored = self._restore_sequence(part_bytes, bucket) if self._restore_sequence else None
            w = RollingFileWriter(
                file_io=self.file_io,
                paths=self.paths,
                bucket_dir=self.paths.bucket_dir(part_dir, bucket),
                file_format=self.file_format,
                schema=self.arrow_schema,
                schema_id=self.schema.id,
                stats_layout=self.stats_layout,
                target_file_size=self.options.target_file_size(has_primary_key=False),
                compression=self.options.file_compression,
                next_sequence_number=0 if restored is None else restored + 1,
            )
            self._writers[key] = w
        return w
