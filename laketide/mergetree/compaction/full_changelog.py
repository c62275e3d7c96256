"""changelog-producer = full-compaction: the changelog is the difference between consecutive full compactions.

A compaction whose output is the top level takes in every sorted run of the bucket (a full compaction). The top
level before it is what the previous full compaction left, the top level after it is what this one leaves; their
difference per key (see ``changelog_diff``) is written as changelog files of the COMPACT snapshot. Compactions to
lower levels produce no changelog. Full compactions come every ``full-compaction.delta-commits`` commits of a
writer, or from ``Table.compact(full=True)``.

Both states of the bucket are held in memory while the difference is taken (one bucket at a time).

Paimon: mergetree.compact.FullChangelogMergeTreeCompactRewriter, FullChangelogMergeFunctionWrapper
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from laketide.io.file_writer import RollingFileWriter
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.compaction.changelog_diff import changelog_rows, write_changelog
from laketide.mergetree.compaction.task import CompactResult
from laketide.mergetree.compaction.universal import CompactUnit

__all__ = ["FullCompactionChangelog"]

_BATCH_ROWS = 65536


@dataclass(slots=True)
class FullCompactionChangelog:
    read_file: Callable[[DataFileMeta, int], Iterator[pa.Table]]
    kv_schema: pa.Schema
    key_names: Sequence[str]
    max_level: int
    new_writer: Callable[[int], RollingFileWriter]  # a changelog file writer for an output level
    row_deduplicate: bool = False

    def _rows(self, files: Sequence[DataFileMeta], schema: pa.Schema | None) -> pa.Table | None:
        parts = [p for f in files for p in self.read_file(f, _BATCH_ROWS) if p.num_rows]
        if parts:
            return pa.concat_tables(parts)
        return schema.empty_table() if schema is not None else None

    def produce(self, unit: CompactUnit, result: CompactResult) -> list[DataFileMeta]:
        """Changelog files for a compaction that went to the top level (none for any other)."""
        if unit.output_level != self.max_level or result.is_empty():
            return []
        replaced = {f.file_name for f in result.before}
        before_files = [f for f in unit.files if f.level == self.max_level]
        after_files = [f for f in unit.files if f.file_name not in replaced] + list(result.after)
        after = self._rows(after_files, None)
        before = self._rows(before_files, after.schema if after is not None else None)
        if after is None:
            if before is None:
                return []
            after = before.schema.empty_table()
        assert before is not None
        changes = changelog_rows(before, after, self.key_names, self.kv_schema,
                                 row_deduplicate=self.row_deduplicate)
        return write_changelog(changes, self.new_writer(self.max_level))
