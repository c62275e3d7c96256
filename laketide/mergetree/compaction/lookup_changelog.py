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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.io.file_writer import RollingFileWriter
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, RowKind, is_retract, to_kv_table
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.compaction.universal import CompactUnit
from laketide.mergetree.key_order import order_column
from laketide.mergetree.lookup import LookupLevels
from laketide.mergetree.merge import MergeFunction, key_order

__all__ = ["LookupChangelog"]

_KEY_BATCH_ROWS = 65536
_INDEX = "_CHANGELOG_INDEX"


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
        after = self.merge.merge(pa.concat_tables([old_rows, new_rows]))
        changes = self._changes(before, after)
        if changes.num_rows == 0:
            return []
        writer = self.new_writer(unit.output_level)
        try:
            writer.write(changes)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def _changes(self, before: pa.Table, after: pa.Table) -> pa.Table:
        names = list(self.merge.spec.key_names)
        n_after = after.num_rows
        idx_before = np.full(n_after, -1, dtype=np.int64)
        if before.num_rows:
            left = pa.table({**{f"k{i}": order_column(after.column(n)) for i, n in enumerate(names)},
                             _INDEX: pa.array(np.arange(n_after))})
            right = pa.table({**{f"k{i}": order_column(before.column(n)) for i, n in enumerate(names)},
                              "_B": pa.array(np.arange(before.num_rows))})
            joined = left.join(right, keys=[f"k{i}" for i in range(len(names))], join_type="inner")
            idx_before[joined.column(_INDEX).to_numpy()] = joined.column("_B").to_numpy()
        has_before = idx_before >= 0
        before_live = np.zeros(n_after, dtype=bool)
        if before.num_rows:
            live_b = ~is_retract(before.column(VALUE_KIND)).to_numpy(zero_copy_only=False)
            before_live[has_before] = live_b[idx_before[has_before]]
        after_live = ~is_retract(after.column(VALUE_KIND)).to_numpy(zero_copy_only=False)
        inserts = ~before_live & after_live
        if self.first_row:
            deletes = updates = np.zeros(n_after, dtype=bool)
        else:
            deletes = before_live & ~after_live
            updates = before_live & after_live
            if self.row_deduplicate and updates.any():
                updates &= ~self._equal_values(before, after, idx_before, updates)
        pieces: list[tuple[pa.Table, RowKind]] = [
            (before.take(pa.array(idx_before[deletes])), RowKind.DELETE),
            (before.take(pa.array(idx_before[updates])), RowKind.UPDATE_BEFORE),
            (after.filter(pa.array(updates)), RowKind.UPDATE_AFTER),
            (after.filter(pa.array(inserts)), RowKind.INSERT),
        ]
        tables = []
        for table, kind in pieces:
            if table.num_rows:
                kinds = pa.array(np.full(table.num_rows, int(kind), dtype=np.int8))
                tables.append(table.set_column(table.schema.get_field_index(VALUE_KIND), VALUE_KIND, kinds))
        if not tables:
            return self.kv_schema.empty_table()
        rows = pa.concat_tables(tables)
        rows = rows.take(key_order(rows, names))  # a stable sort: a key's before-image stays first
        return to_kv_table(rows, names, rows.column(SEQUENCE_NUMBER).to_numpy(),
                           rows.column(VALUE_KIND).to_numpy(), self.kv_schema)

    def _equal_values(self, before: pa.Table, after: pa.Table, idx_before: np.ndarray,
                      mask: np.ndarray) -> np.ndarray:
        value_names = [n for n in after.column_names if n not in (SEQUENCE_NUMBER, VALUE_KIND)]
        b = before.take(pa.array(idx_before[mask]))
        a = after.filter(pa.array(mask))
        same = np.ones(a.num_rows, dtype=bool)
        for n in value_names:
            eq = pc.equal(a.column(n), b.column(n))
            both_null = pc.and_(pc.is_null(a.column(n)), pc.is_null(b.column(n)))
            same &= pc.fill_null(pc.or_(eq, both_null), False).to_numpy(zero_copy_only=False)
        out = np.zeros(len(mask), dtype=bool)
        out[np.flatnonzero(mask)] = same
        return out
