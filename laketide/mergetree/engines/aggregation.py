"""merge-engine = aggregation: every value column folds its key's versions with its aggregate function.

Columns are independent, so each is one vectorized group-by over the key-sorted rows (see agg_functions). The
result is an insert carrying the newest sequence number; ``aggregation.remove-record-on-delete`` makes a -D start
the key over from that row (and remove the key when it is the newest).

Paimon: mergetree.compact.aggregate.AggregateMergeFunction
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from laketide.mergetree.engines._kernels import keep_single_versions, row_kinds, sorted_segments, take_or_null
from laketide.mergetree.engines.agg_functions import FieldAggregator
from laketide.io.kv import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, RowKind
from laketide.mergetree.merge import MergeFunction, MergeSpec

__all__ = ["AggregateMergeFunction"]


class AggregateMergeFunction(MergeFunction):
    def __init__(
        self, spec: MergeSpec, *, aggregators: dict[str, FieldAggregator], remove_record_on_delete: bool = False,
        ignore_delete: bool = False, primary_keys: frozenset[str] = frozenset(),
    ) -> None:
        """``primary_keys``: every primary-key column, partition columns included (the merge spec's key is the
        trimmed one); they are not aggregated, as in Java."""
        super().__init__(spec)
        self.aggregators = aggregators
        self.primary_keys = primary_keys
        self.remove_record_on_delete = remove_record_on_delete
        self.ignore_delete = ignore_delete

    def merge(self, rows: pa.Table) -> pa.Table:
        if rows.num_rows == 0:
            return rows
        if self.ignore_delete:
            kinds = row_kinds(rows)
            keep = (kinds != RowKind.UPDATE_BEFORE) & (kinds != RowKind.DELETE)
            if not keep.all():
                rows = rows.filter(pa.array(keep))
                if rows.num_rows == 0:
                    return rows
        ordered, segs = sorted_segments(rows, self.spec)
        kinds = row_kinds(ordered)
        retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
        active = np.ones(ordered.num_rows, dtype=bool)
        ends = segs.ends
        out_kind = np.zeros(segs.count, dtype=np.int8)
        if self.remove_record_on_delete and retract.any():
            is_delete = kinds == RowKind.DELETE
            reset = segs.last_index(is_delete)
            active = np.arange(ordered.num_rows) >= segs.broadcast(reset)
            retract = retract & ~is_delete  # the -D row itself is where the key starts over
            out_kind[kinds[ends] == RowKind.DELETE] = RowKind.DELETE
        columns: dict[str, pa.Array] = {}
        for name in ordered.column_names:
            if (name in (SEQUENCE_NUMBER, VALUE_KIND) or name in self.spec.key_names or name in self.primary_keys
                    or name.startswith(KEY_PREFIX)):
                columns[name] = take_or_null(ordered.column(name), ends)
                continue
            agg = self.aggregators[name]
            col_active = active & ~retract if agg.ignore_retract else active
            col_retract = retract & col_active
            if not agg.retractable and col_retract.any():
                raise agg.retract_error()
            columns[name] = agg.aggregate(ordered.column(name).combine_chunks(), segs, active=col_active,
                                          retract=col_retract)
        columns[VALUE_KIND] = pa.array(out_kind, pa.int8())
        merged = pa.Table.from_arrays([columns[n] for n in ordered.column_names], schema=ordered.schema)
        return keep_single_versions(ordered, segs, merged)
