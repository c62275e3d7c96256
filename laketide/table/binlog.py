"""The binlog view of changes: each column as an array, an update's before- and after-image in one row.

A ``-U`` immediately followed by a ``+U`` of the same key (how changelogs order an update within a bucket) becomes
one ``+U`` row whose arrays hold ``[before, after]``; every other row holds ``[value]``. The list arrays are built
on the change rows as they are (no copy of values): the offsets of kept rows tile them.

Paimon: table.system.BinlogTable
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["to_binlog"]


def to_binlog(changes: pa.Table, key_names: Sequence[str], *, row_kind_column: str = "rowkind") -> pa.Table:
    """``changes`` (``rowkind`` first, as ``Table.read_changes`` returns them) in the binlog layout."""
    data_names = [n for n in changes.column_names if n != row_kind_column]
    kinds = changes.column(row_kind_column).to_numpy(zero_copy_only=False)
    n = len(kinds)
    paired = np.zeros(n, dtype=bool)  # True at a -U that joins the +U right after it
    if n > 1:
        same_key = np.ones(n - 1, dtype=bool)
        for k in key_names:
            col = changes.column(k)
            same_key &= pc.fill_null(pc.equal(col.slice(0, n - 1), col.slice(1)), False).to_numpy(
                zero_copy_only=False)
        paired[:-1] = (kinds[:-1] == "-U") & (kinds[1:] == "+U") & same_key
    kept = np.flatnonzero(~paired)
    offsets = pa.array(np.concatenate([[0], kept + 1]).astype(np.int32))
    columns = [pa.array(kinds[kept], pa.string())]
    fields = [pa.field(row_kind_column, pa.string())]
    for name in data_names:
        values = changes.column(name).combine_chunks()
        columns.append(pa.ListArray.from_arrays(offsets, values))
        fields.append(pa.field(name, pa.list_(changes.schema.field(name).type)))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))
