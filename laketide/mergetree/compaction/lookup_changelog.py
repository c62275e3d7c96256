"""changelog-producer = lookup: when level-0 rows are compacted into the levels above, emit what changed for
each of their keys — the value readers saw before (``-U`` / ``-D``) and the value they see after (``+I`` / ``+U``).

For the distinct keys of the unit's level-0 files, every version above level 0 (deletion vectors applied) is
looked up in the bucket's local lookup files. ``before`` is the merge of those versions, ``after`` the merge of
those versions and the level-0 rows, each with the table's merge engine — what a read of the table returns for
the key before and after the commit. Then, as Java's ``LookupChangelogMergeFunctionWrapper``:

* no live ``before``, live ``after``: ``+I after``;
* live ``before``, no live ``after``: ``-D before``;
* both live: ``-U before``, ``+U after`` (nothing when ``changelog-producer.row-deduplicate`` and they are equal);
* first-row: only ``+I`` for keys that had no row before (the first row never changes).

The changelog rows (key-value layout, sorted by key, before-image first) go to changelog files written at the
unit's output level; they are committed with the COMPACT snapshot.

Paimon: mergetree.compact.LookupChangelogMergeFunctionWrapper, FirstRowMergeFunctionWrapper,
LookupMergeTreeCompactRewriter
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from laketide.io.file_writer import RollingFileWriter
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.compaction.changelog_diff import changelog_rows, write_changelog
from laketide.mergetree.compaction.universal import CompactUnit
from laketide.mergetree.lookup import LookupLevels
from laketide.mergetree.merge import MergeFunction

__all__ = ["LookupChangelog"]

_KEY_BATCH_ROWS = 65536


@dataclass(slots=True)
class LookupChangelog:
    read_file: Callable[[DataFileMeta, int], Iterator[pa.Table]]
    merge: MergeFunction
    kv_schema: pa.Schema
    lookup: LookupLevels
    deleted_mask: Callable[[str, int], np.ndarray | None]
    new_writer: Callable[[int], RollingFileWriter]  # a changelog file writer for an output level
    delete_file: Callable[[DataFileMeta], None]  # removes a changelog file no commit will hold
    first_row: bool = False
    row_deduplicate: bool = False

    def produce(self, unit: CompactUnit) -> list[DataFileMeta]:
        """Changelog files for the level-0 rows of ``unit`` (call before the unit is compacted)."""
        level0 = [f for f in unit.files if f.level == 0]
        if unit.output_level == 0 or not level0:
            return []
        parts = [p for f in level0 for p in self.read_file(f, _KEY_BATCH_ROWS) if p.num_rows]
        if not parts:
            return []
        new_rows = pa.concat_tables(parts)
        names = list(self.merge.spec.key_names)
        keys = new_rows.select(names).group_by(names, use_threads=False).aggregate([]).select(names)
        found = self.lookup.lookup(keys, start_level=1, skip=set(), deleted_mask=self.deleted_mask,
                                   first_only=False)
        old_rows = found.rows.select(new_rows.column_names) if found.rows is not None else new_rows.schema.empty_table()
        before = self.merge.merge(old_rows) if old_rows.num_rows else old_rows
        if not old_rows.num_rows and len(level0) == 1 and keys.num_rows == new_rows.num_rows \
                and self.merge.single_row_is_result:
            after = new_rows  # one key-sorted file, each key once, nothing older: already merged
        else:
            after = self.merge.merge(pa.concat_tables([old_rows, new_rows]))
        changes = changelog_rows(before, after, names, self.kv_schema, first_row=self.first_row,
                                 row_deduplicate=self.row_deduplicate)
        return write_changelog(changes, self.new_writer(unit.output_level))

