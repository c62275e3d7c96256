"""merge-engine = first-row: the oldest version of a key stays, later ones are dropped (an insert-only changelog).

Paimon: mergetree.compact.FirstRowMergeFunction
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from laketide.exceptions import RowKindError
from laketide.mergetree.engines._kernels import row_kinds, sorted_segments
from laketide.io.kv import RowKind
from laketide.mergetree.merge import MergeFunction, MergeSpec

__all__ = ["FirstRowMergeFunction", "FIRST_ROW_DELETE_HELP"]

FIRST_ROW_DELETE_HELP = (
    "The first-row merge engine can not accept DELETE / UPDATE_BEFORE records; "
    "set 'ignore-delete' = 'true' to ignore them"
)


class FirstRowMergeFunction(MergeFunction):
    # A lone version is the first one; the row keeps its own sequence number, as in Paimon.
    single_row_is_result = True

    def __init__(self, spec: MergeSpec, *, ignore_delete: bool) -> None:
        super().__init__(spec)
        self.ignore_delete = ignore_delete

    def merge(self, rows: pa.Table) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        kinds = row_kinds(rows)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        if retract.any():
            if not self.ignore_delete:
                raise RowKindError(FIRST_ROW_DELETE_HELP)
            rows = rows.filter(pa.array(~retract))
            if rows.num_rows == 0:
                return rows
        ordered, segs = sorted_segments(rows, self.spec)
        return ordered.take(pa.array(np.asarray(segs.starts, dtype=np.int64)))
