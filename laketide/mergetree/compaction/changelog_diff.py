"""The changelog between two states of some keys: ``before`` and ``after`` rows (key-value layout, one per key).

* a key live only after: ``+I after``; live only before: ``-D before``;
* live in both: ``-U before``, ``+U after`` — nothing when ``row_deduplicate`` and the values are equal;
* ``first_row``: only the ``+I`` (a first row never changes).

A row whose ``_VALUE_KIND`` is a retraction counts as absent. Output rows are sorted by key, a key's before-image
first, ready for a changelog file.

Paimon: mergetree.compact.LookupChangelogMergeFunctionWrapper#setChangelog, FullChangelogMergeFunctionWrapper
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.io.file_writer import RollingFileWriter
from laketide.io.kv import SEQUENCE_NUMBER, VALUE_KIND, RowKind, is_retract, to_kv_table
from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.key_order import order_column
from laketide.mergetree.merge import key_order

__all__ = ["changelog_rows", "write_changelog"]


def _live(table: pa.Table) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, dtype=bool)
    return ~np.asarray(is_retract(table.column(VALUE_KIND)).to_numpy(zero_copy_only=False), dtype=bool)


def _match(before: pa.Table, after: pa.Table, key_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(after index, before index) of the keys both hold."""
    if before.num_rows == 0 or after.num_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = [f"k{i}" for i in range(len(key_names))]
    left = pa.table({**{k: order_column(after.column(n)) for k, n in zip(keys, key_names)},
                     "_A": pa.array(np.arange(after.num_rows))})
    right = pa.table({**{k: order_column(before.column(n)) for k, n in zip(keys, key_names)},
                      "_B": pa.array(np.arange(before.num_rows))})
    joined = left.join(right, keys=keys, join_type="inner")
    return joined.column("_A").to_numpy(), joined.column("_B").to_numpy()


def _equal(a: pa.Table, b: pa.Table) -> np.ndarray:
    same = np.ones(a.num_rows, dtype=bool)
    for n in a.column_names:
        if n in (SEQUENCE_NUMBER, VALUE_KIND):
            continue
        eq = pc.equal(a.column(n), b.column(n))
        both_null = pc.and_(pc.is_null(a.column(n)), pc.is_null(b.column(n)))
        same &= np.asarray(pc.fill_null(pc.or_(eq, both_null), False).to_numpy(zero_copy_only=False), dtype=bool)
    return same


def changelog_rows(
    before: pa.Table, after: pa.Table, key_names: Sequence[str], kv_schema: pa.Schema, *,
    first_row: bool = False, row_deduplicate: bool = False,
) -> pa.Table:
    """The changelog from ``before`` to ``after`` in ``kv_schema`` layout (see the module docstring)."""
    before = before.select(after.column_names) if before.num_rows else after.schema.empty_table()
    a_idx, b_idx = _match(before, after, key_names)
    a_live, b_live = _live(after), _live(before)
    a_matched = np.zeros(after.num_rows, dtype=bool)
    a_matched[a_idx] = True
    b_matched = np.zeros(before.num_rows, dtype=bool)
    b_matched[b_idx] = True
    pair_a, pair_b = a_live[a_idx], b_live[b_idx]
    inserts = np.concatenate([np.flatnonzero(~a_matched & a_live), a_idx[pair_a & ~pair_b]])
    pieces: list[tuple[pa.Table, RowKind]] = []
    if not first_row:
        deletes = np.concatenate([np.flatnonzero(~b_matched & b_live), b_idx[pair_b & ~pair_a]])
        both = pair_a & pair_b
        upd_a, upd_b = a_idx[both], b_idx[both]
        if row_deduplicate and upd_a.size:
            changed = ~_equal(after.take(pa.array(upd_a)), before.take(pa.array(upd_b)))
            upd_a, upd_b = upd_a[changed], upd_b[changed]
        pieces += [(before.take(pa.array(deletes)), RowKind.DELETE),
                   (before.take(pa.array(upd_b)), RowKind.UPDATE_BEFORE),
                   (after.take(pa.array(upd_a)), RowKind.UPDATE_AFTER)]
    pieces.append((after.take(pa.array(inserts)), RowKind.INSERT))
    tables = []
    for table, kind in pieces:
        if table.num_rows:
            kinds = pa.array(np.full(table.num_rows, int(kind), dtype=np.int8))
            tables.append(table.set_column(table.schema.get_field_index(VALUE_KIND), VALUE_KIND, kinds))
    if not tables:
        return kv_schema.empty_table()
    rows = pa.concat_tables(tables)
    rows = rows.take(key_order(rows, key_names))  # stable: a key's before-image (listed first) stays first
    return to_kv_table(rows, key_names, rows.column(SEQUENCE_NUMBER).to_numpy(),
                       rows.column(VALUE_KIND).to_numpy(), kv_schema)


def write_changelog(changes: pa.Table, writer: RollingFileWriter) -> list[DataFileMeta]:
    """Write ``changes`` (possibly none) with ``writer``; the changelog files written."""
    if changes.num_rows == 0:
        return []
    try:
        writer.write(changes)
        return writer.close()
    except BaseException:
        writer.abort()
        raise
