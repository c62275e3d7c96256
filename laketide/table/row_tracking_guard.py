"""What laketide does not do to a row-tracking table yet: rewrite its files.

Compaction and copy-on-write DML (delete / update / merge of an append table) rewrite data files; Java keeps each
row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` through a rewrite by writing them into the new file. laketide appends to
row-tracking tables (row ids are assigned at commit) but refuses rewrites until it writes those columns, so a row
never changes its id.

Paimon: append compaction with SpecialFields.rowTypeWithRowTracking (AppendOnlyFileStore#newWrite)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from laketide.exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["refuse_row_tracking_rewrite"]


def refuse_row_tracking_rewrite(table: Table, verb: str) -> None:
    if table.store.options.row_tracking_enabled:
        raise UnsupportedFeatureError(
            f"{verb} on table {table.name} with 'row-tracking.enabled': rewriting its data files would change row "
            f"ids (_ROW_ID); laketide only appends to row-tracking tables so far"
        )
