"""Appends to a table with BLOB columns: the other columns go to the data file, each BLOB column to ``.blob``
files beside it.

As Java's DedicatedFormatRollingFileWriter: the data file holds the normal columns (``write_cols`` lists them, stats
cover them); per BLOB column, ``.blob`` files (``write_cols`` = that column, no value stats) hold the same rows,
rolled by ``blob.target-file-size`` within the data file's rows and closed with it. The files are listed data file
first, then its blob files, so the commit gives the blob files the data file's row ids (Java's
RowTrackingCommitUtils#assignRowTrackingMeta, blobStarts).

Paimon: append.DedicatedFormatRollingFileWriter, append.MultipleBlobFileWriter, format.blob.BlobFormatWriter
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from laketide.format.blob import encode_blob_file, split_blob_values
from laketide.fs import FileIO
from laketide.io.file_writer import RollingFileWriter, _local_now_ms
from laketide.meta.manifest import DataFileMeta, FileSource, SimpleStats
from laketide.meta.paths import TablePaths

__all__ = ["BlobAppendWriter"]


@dataclass(slots=True)
class BlobAppendWriter:
    files: RollingFileWriter  # the normal columns
    blob_names: tuple[str, ...]
    file_io: FileIO
    paths: TablePaths
    bucket_dir: str
    schema_id: int
    blob_target_size: int
    _pending: dict[str, list[pa.Array]] = field(default_factory=dict)
    _done: list[DataFileMeta] = field(default_factory=list)
    _blob_paths: list[str] = field(default_factory=list)

    def write(self, rows: pa.Table) -> None:
        normal = [n for n in rows.column_names if n not in self.blob_names]
        for batch in rows.to_batches():
            if batch.num_rows == 0:
                continue
            rolled = len(self.files.written)
            self.files.write(pa.Table.from_batches([batch.select(normal)]))
            for name in self.blob_names:
                self._pending.setdefault(name, []).append(batch.column(name))
            if len(self.files.written) > rolled:  # the data file closed after this batch: so do its blob files
                self._close_range(self.files.written[-1])

    def _close_range(self, data_file: DataFileMeta) -> None:
        blobs = []
        for name in self.blob_names:
            values = pa.concat_arrays([a.cast(pa.large_binary()) for a in self._pending.pop(name, [])])
            if len(values) != data_file.row_count:
                raise AssertionError(f"blob column {name}: {len(values)} rows for a data file of {data_file.row_count}")
            for part in split_blob_values(values, self.blob_target_size):
                blobs.append(self._write_blob_file(name, part, data_file))
        self._done.append(replace(data_file, write_cols=tuple(n for n in self.files.schema.names)))
        self._done.extend(blobs)

    def _write_blob_file(self, name: str, values: pa.Array, data_file: DataFileMeta) -> DataFileMeta:
        file_name = self.paths.new_data_file_name("blob")
        # Under data-file.external-paths a blob file goes where the strategy puts the next file, as Java's
        # DataFilePathFactory#newBlobPath does.
        external = None if self.files.external_paths is None else self.files.external_paths.next_path(file_name)
        path = external or f"{self.bucket_dir}/{file_name}"
        self._blob_paths.append(path)
        data = encode_blob_file(values)
        with self.file_io.open_output(path) as out:
            out.write(data)
        return DataFileMeta(
            file_name=file_name, file_size=len(data), row_count=len(values),
            min_key=data_file.min_key, max_key=data_file.max_key, key_stats=SimpleStats.empty(),
            value_stats=SimpleStats.empty(), min_sequence_number=0, max_sequence_number=0,
            schema_id=self.schema_id, level=0, extra_files=(), creation_time_ms=_local_now_ms(),
            delete_row_count=0, embedded_index=None, file_source=FileSource.APPEND, value_stats_cols=(),
            external_path=external, write_cols=(name,),
        )

    def prepare_commit(self) -> list[DataFileMeta]:
        closed = len(self.files.written)
        self.files.close()
        if len(self.files.written) > closed:
            self._close_range(self.files.written[-1])
        done, self._done = self._done, []
        self.files.written.clear()
        self.files.written_paths.clear()
        self._blob_paths.clear()
        return done

    def abort(self) -> None:
        self.files.abort()
        for path in self._blob_paths:
            self.file_io.delete_quietly(path)
        self._blob_paths.clear()
        self._pending.clear()
        self._done.clear()
