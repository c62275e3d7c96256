"""What laketide does not do to a row-tracking table yet: rewrite its files by DML, compact data evolution.

Copy-on-write DML (delete / update / merge of an append table) rewrites data files; Java keeps each row's
``_ROW_ID`` and ``_SEQUENCE_NUMBER`` through a rewrite by writing them into the new file. laketide's compaction does
that (table/row_tracking_compact.py); DML is refused until it does too, so a row never changes its id.

Paimon: append compaction with SpecialFields.rowTypeWithRowTracking (AppendOnlyFileStore#newWrite)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laketide.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["refuse_data_evolution_compaction", "refuse_row_tracking_rewrite"]


def refuse_row_tracking_rewrite(table: Table, verb: str) -> None:
    if table.store.options.row_tracking_enabled:
        raise UnsupportedFeatureError(
            f"{verb} on table {table.name} with 'row-tracking.enabled': rewriting its data files would change row "
            f"ids (_ROW_ID); laketide only appends to row-tracking tables so far"
        )


def refuse_data_evolution_compaction(table: Table) -> None:
    # Row-tracking compaction keeps ids (table/row_tracking_compact.py); a data-evolution table's partial-column
    # files need Java's range-wise DataEvolutionCompactCoordinator, which laketide does not implement.
    if table.store.options.data_evolution_enabled:
        raise UnsupportedFeatureError(
            f"compaction on table {table.name} with 'data-evolution.enabled': merging the partial-column files of a "
            f"row-id range is not implemented in laketide"
        )
