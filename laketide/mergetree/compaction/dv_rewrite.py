"""Compaction of a deletion-vector bucket: level-0 keys are looked up in the levels above the output, and the old
row is marked deleted in its file's deletion vector instead of rewriting that file.

For each section of a compaction unit going to level ``n > 0``, the distinct keys of its level-0 files are looked
up in levels ``n + 1`` and up (files outside the unit). The live rows found join the merge as one more (oldest)
sorted run — so partial-update and aggregation fold in the value readers saw — and their positions are deleted in
the deletion vectors once the rewrite has succeeded. Files of the unit are read through their deletion vectors.
A level-0 file that overlaps nothing in its unit is upgraded as it is, its keys looked up all the same, where
Java's LookupMergeTreeCompactRewriter keeps it: it holds no retractions, and it goes to the top level (nothing
above to merge with) or the newest row wins as it stands (deduplicate without ``sequence.field`` or
``ignore-delete``). Any other level-0 file is rewritten, and so is every file with a vector that a compaction
takes in (a full compaction leaves no vector). As in Java, retractions are dropped at any output level: the
older rows they retract are already deleted by vector. Where the newest row wins, the older rows found are not
merged (none can be a key's result): only their positions count, and the bucket's lookup files hold keys and
positions, not whole rows (Java's PersistPositionProcessor), unless a lookup changelog needs the rows.

Invariant kept: above level 0, each key has at most one row not deleted by a vector, so a batch read of the
levels above 0 through their vectors needs no merge.

Paimon: mergetree.compact.LookupMergeTreeCompactRewriter, LookupChangelogMergeFunctionWrapper (deletion
vector branch), MergeTreeCompactManager (dropDelete with a DV maintainer)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
import numpy as np
import pyarrow as pa

from laketide.index.dv_maintainer import BucketDeletionVectors
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.compaction.task import CompactResult, KeyValueRewriter
from laketide.mergetree.merge import drop_retracts, merge_order
from laketide.mergetree.sort_merge import RunSource, merge_sorted_runs, reader_memory

__all__ = ["DeletionVectorRewriter"]

_KEY_BATCH_ROWS = 65536


@dataclass(slots=True)
class DeletionVectorRewriter(KeyValueRewriter):
    """A :class:`KeyValueRewriter` that maintains the bucket's deletion vectors through lookups."""

    vectors: BucketDeletionVectors = field(default_factory=lambda: BucketDeletionVectors({}))
    # A file's key columns (plus _SEQUENCE_NUMBER / _VALUE_KIND) in batches; None: read_file's rows.
    read_keys: Callable[[DataFileMeta, int], Iterator[pa.Table]] | None = None

    def rewrite(
        self, output_level: int, *, drop_delete: bool, sections: Sequence[Sequence[Sequence[DataFileMeta]]]
    ) -> CompactResult:
        skip = {f.file_name for section in sections for run in section for f in run}
        deletions: dict[str, list[np.ndarray]] = {}
        writer = self.new_writer(output_level)
        try:
            for section in sections:
                runs = [RunSource(size=sum(f.file_size for f in run), read=self._reader(run),
                                  memory=reader_memory([f.file_size for f in run], columns=len(self.kv_schema)))
                        for run in section]
                found = self._look_up(section, output_level, skip, deletions) if output_level > 0 else None
                # Where the newest row wins, the older rows found cannot be a key's result: their positions suffice.
                if found is not None and not self.merge.newest_row_wins:
                    runs.append(self._older_run(found))
                for merged in merge_sorted_runs(runs, self.merge, settings=self.sort):
                    if drop_delete:
                        merged = drop_retracts(merged)
                    if merged.num_rows:
                        writer.write(self._to_kv(merged))
            after = writer.close()
        except BaseException:
            writer.abort()
            raise
        self._delete(deletions)
        before = tuple(f for section in sections for run in section for f in run)
        return CompactResult(before, tuple(after))

    def must_rewrite(self, f: DataFileMeta, output_level: int, *, max_level: int) -> bool:
        if self.vectors.vector_of(f.file_name) is not None:
            return True  # a file with a vector that takes part in a compaction sheds it
        if f.level != 0:
            return False
        if f.delete_row_count is None or f.delete_row_count > 0:
            return True  # retractions are dropped at every level
        return output_level != max_level and not self.merge.newest_row_wins

    def upgrade(self, f: DataFileMeta, output_level: int) -> CompactResult:
        if f.level == 0:  # kept as it is (must_rewrite): the older rows of its keys are deleted by vector
            deletions: dict[str, list[np.ndarray]] = {}
            self._look_up([[f]], output_level, {f.file_name}, deletions)
            self._delete(deletions)
        return KeyValueRewriter.upgrade(self, f, output_level)

    def _delete(self, deletions: dict[str, list[np.ndarray]]) -> None:
        for name, parts in deletions.items():
            self.vectors.notify_deletions(name, np.concatenate(parts))

    def files_replaced(self, names: Sequence[str]) -> None:
        for name in names:
            self.vectors.remove(name)
        KeyValueRewriter.files_replaced(self, names)

    def _reader(self, files: Sequence[DataFileMeta]) -> Callable[[int], Iterator[pa.Table]]:
        def read(batch_rows: int) -> Iterator[pa.Table]:
            for f in files:
                deleted = self.vectors.deleted_mask(f.file_name, f.row_count)
                offset = 0
                for part in self.read_file(f, batch_rows):
                    n = part.num_rows
                    if deleted is not None:
                        keep = ~deleted[offset: offset + n]
                        if not keep.all():
                            part = part.filter(pa.array(keep))
                    offset += n
                    yield part

        return read

    def _level0_keys(self, section: Sequence[Sequence[DataFileMeta]]) -> pa.Table | None:
        names = list(self.merge.spec.key_names)
        read = self.read_keys or self.read_file
        parts = [part.select(names) for run in section for f in run if f.level == 0
                 for part in read(f, _KEY_BATCH_ROWS)]
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return None
        keys = pa.concat_tables(parts)
        return keys.group_by(names, use_threads=False).aggregate([]).select(names)

    def _look_up(
        self, section: Sequence[Sequence[DataFileMeta]], output_level: int, skip: set[str],
        deletions: dict[str, list[np.ndarray]],
    ) -> pa.Table | None:
        """The live rows above ``output_level`` of the section's level-0 keys; their positions go to
        ``deletions``. Nothing is read when no file sits above the output (a first write into a bucket)."""
        assert self.lookup is not None, "a deletion-vector rewriter needs the bucket's lookup levels"
        if not self.lookup.has_files(start_level=output_level + 1, skip=skip):
            return None
        keys = self._level0_keys(section)
        if keys is None:
            return None
        result = self.lookup.lookup(keys, start_level=output_level + 1, skip=skip,
                                    deleted_mask=self.vectors.deleted_mask)
        for name, pos in result.positions.items():
            deletions.setdefault(name, []).append(pos)
        return result.rows if result.rows is not None and result.rows.num_rows else None

    def _older_run(self, found: pa.Table) -> RunSource:
        """Rows found above the output, as the oldest sorted run of the merge."""
        rows = found.take(merge_order(found, self.merge.spec)).combine_chunks()

        def read(batch_rows: int) -> Iterator[pa.Table]:
            for start in range(0, rows.num_rows, batch_rows):
                yield rows.slice(start, batch_rows)

        return RunSource(size=rows.nbytes, memory=rows.nbytes, read=read)
