"""One bucket's deletion vectors while a writer or a compaction changes them.

Restored from the bucket's index files of the snapshot the writer starts from; compaction marks positions of old
rows deleted (``notify_deletions``) and forgets the vectors of files it replaced (``remove``). When something
changed, ``write_index_file`` writes one index file with every vector of the bucket (the bucket's previous
index files are then replaced), as Java's ``BucketedDvMaintainer.writeDeletionVectorsIndex`` does; a bucket
left with no vector gets a bare version byte, as Java writes it.

Paimon: deletionvectors.BucketedDvMaintainer, DeletionVectorsIndexFile#writeSingleFile
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from laketide.index.deletion_vectors import DeletionVector, dv_index_file_meta, write_dv_index_file
from laketide.meta.manifest import IndexFileMeta

if TYPE_CHECKING:
    from laketide.fs.file_io import FileIO

__all__ = ["BucketDeletionVectors", "IndexFileChanges"]


@dataclass(frozen=True, slots=True)
class IndexFileChanges:
    """Index files a commit adds to a bucket and the ones it replaces."""

    new: tuple[IndexFileMeta, ...] = ()
    deleted: tuple[IndexFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not self.new and not self.deleted


@dataclass(slots=True)
class BucketDeletionVectors:
    """Data file name -> deletion vector of one bucket, and the index files they were restored from."""

    vectors: dict[str, DeletionVector]
    index_files: tuple[IndexFileMeta, ...] = ()
    bit64: bool = False
    modified: bool = False

    @classmethod
    def restore(
        cls, vectors: Mapping[str, DeletionVector], index_files: Sequence[IndexFileMeta], *, bit64: bool
    ) -> BucketDeletionVectors:
        return cls(vectors=dict(vectors), index_files=tuple(index_files), bit64=bit64)

    def vector_of(self, file_name: str) -> DeletionVector | None:
        return self.vectors.get(file_name)

    def deleted_mask(self, file_name: str, num_rows: int) -> np.ndarray | None:
        """True at the deleted positions of a file of ``num_rows`` rows; None when nothing is deleted."""
        dv = self.vectors.get(file_name)
        return None if dv is None or dv.is_empty else dv.is_deleted_mask(num_rows)

    def notify_deletions(self, file_name: str, positions: np.ndarray) -> None:
        """Mark ``positions`` of ``file_name`` deleted."""
        if positions.size == 0:
            return
        added = DeletionVector.from_positions(positions, bit64=self.bit64)
        old = self.vectors.get(file_name)
        merged = added if old is None else old.merge(added)
        if old is None or merged.cardinality != old.cardinality:
            self.vectors[file_name] = merged
            self.modified = True

    def remove(self, file_name: str) -> None:
        """The file left the bucket: its vector goes with it."""
        if self.vectors.pop(file_name, None) is not None:
            self.modified = True

    def write_index_file(self, file_io: FileIO, index_dir: str, file_name: str) -> IndexFileChanges:
        """Write the bucket's vectors to ``index_dir/file_name`` if they changed; the new file replaces the old."""
        if not self.modified:
            return IndexFileChanges()
        ordered = {name: self.vectors[name] for name in sorted(self.vectors)}
        data, ranges = write_dv_index_file(ordered, bit64=self.bit64)
        file_io.write_bytes(f"{index_dir}/{file_name}", data)
        meta = dv_index_file_meta(file_name, data, ranges=ranges)
        changes = IndexFileChanges(new=(meta,), deleted=self.index_files)
        self.index_files = (meta,)
        self.modified = False
        return changes
