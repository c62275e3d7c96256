"""The write side of one LSM bucket: a write buffer that flushes sorted, deduplicated level-0 runs.

The owner (TableWrite) decides when to flush: ``write-buffer-size`` bounds the buffers of all its buckets together.

Rows get the bucket's next sequence numbers in arrival order; a flush (buffer full, or prepare_commit) sorts the
buffer and reduces each key with the table's merge function - a retraction that wins is kept, so it still masks
older files - and writes the result as one level-0 sorted run (rolling at target-file-size).

With ``changelog-producer = input`` a flush also writes the buffer's rows as they came in (sorted by key and
sequence number, not merged) to changelog files: the changelog of this commit.

Paimon: mergetree.MergeTreeWriter, mergetree.SortBufferWriteBuffer
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from laketide.meta.manifest import DataFileMeta
from laketide.io.kv import VALUE_KIND, count_retracts, to_kv_table
from laketide.mergetree.merge import MergeFunction, sort_for_merge
from laketide.io.file_writer import RollingFileWriter
from laketide.io.parallel_run import write_sorted_run

__all__ = ["MergeTreeWriter"]


@dataclass(slots=True)
class MergeTreeWriter:
    file_writer: RollingFileWriter  # writes key-value files of this bucket
    merge: MergeFunction
    kv_schema: pa.Schema
    value_names: tuple[str, ...]
    next_sequence_number: int
    changelog_writer: RollingFileWriter | None = None  # changelog-producer = input
    _buffer: list[pa.Table] = field(default_factory=list)
    _buffered_bytes: int = 0

    def write(self, rows: pa.Table) -> None:
        """``rows``: the table's columns plus ``_VALUE_KIND`` (row kinds as int8)."""
        n = rows.num_rows
        if n == 0:
            return
        kinds = rows.column(VALUE_KIND).to_numpy()
        seq = np.arange(self.next_sequence_number, self.next_sequence_number + n, dtype=np.int64)
        self.next_sequence_number += n
        kv = to_kv_table(rows.select(list(self.value_names)), self.merge.spec.key_names, seq, kinds, self.kv_schema)
        self._buffer.append(kv)
        self._buffered_bytes += kv.nbytes

    @property
    def buffered_bytes(self) -> int:
        return self._buffered_bytes

    def flush(self) -> None:
        if not self._buffer:
            return
        rows = pa.concat_tables(self._buffer)
        if self.changelog_writer is not None:
            self.changelog_writer.write(sort_for_merge(rows, self.merge.spec))
            self.changelog_writer.close()
        run = rows if _already_merged(rows, self.merge) else self.merge.merge(rows)
        self._buffer.clear()
        self._buffered_bytes = 0
        write_sorted_run(self.file_writer, run)  # each flush is its own level-0 run (large ones: several files)

    def prepare_commit(self) -> list[DataFileMeta]:
        """Flush and hand over every file written since the last call."""
        self.flush()
        files = self.file_writer.close()
        self.file_writer.written.clear()
        self.file_writer.written_paths.clear()
        return files

    def drain_changelog(self) -> list[DataFileMeta]:
        """The changelog files written since the last call."""
        if self.changelog_writer is None:
            return []
        files = self.changelog_writer.close()
        self.changelog_writer.written.clear()
        self.changelog_writer.written_paths.clear()
        return files

    def abort(self) -> None:
        self._buffer.clear()
        self._buffered_bytes = 0
        self.file_writer.abort()
        if self.changelog_writer is not None:
            self.changelog_writer.abort()


def _already_merged(rows: pa.Table, merge: MergeFunction) -> bool:
    """Rows with one integer key, strictly ascending (e.g. increasing ids), no retractions, under an engine that
    keeps a lone version as it is: the merge would return them unchanged, so it is skipped (one pass instead of a
    sort, a dedupe and a gather)."""
    if not merge.single_row_is_result or len(merge.spec.key_names) != 1 or rows.num_rows < 2:
        return False
    key = rows.column(merge.spec.key_names[0])
    if not pa.types.is_integer(key.type) or key.null_count:
        return False
    return _strictly_ascending(key) and count_retracts(rows.column(VALUE_KIND)) == 0


def _strictly_ascending(key: pa.ChunkedArray) -> bool:
    """Whether a null-free integer column is strictly ascending, chunk by chunk: a flush's buffer is several
    pieces, and ``to_numpy`` of the whole column would first copy them into one array (16 MB per 2M rows)."""
    last = None
    for chunk in key.chunks:
        if len(chunk) == 0:
            continue
        k = chunk.to_numpy()  # zero-copy: no nulls
        if (last is not None and k[0] <= last) or not bool((k[1:] > k[:-1]).all()):
            return False
        last = k[-1]
    return True
