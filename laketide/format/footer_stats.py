"""Exact per-column min / max / null count of a Parquet file from its footer alone (row-group statistics merged).

Paimon takes a Parquet file's SimpleStats from the footer (ParquetSimpleStatsExtractor); laketide's stats follow
Java's collectors on the values themselves, so a footer answer is used only where it is provably the same value:

- null counts: every row group says its count (parquet-mr and Arrow always write it);
- min / max of the types whose Parquet order is the order laketide compares in: signed integers (INT32 / INT64,
  any width annotation), booleans, dates, INT64 timestamps, and BYTE_ARRAY strings / binaries (unsigned
  lexicographic byte order = code-point order of UTF-8 strings). Each row group holding a non-null value must
  carry min / max: writers leave them out when they exceed their statistics size (4096 bytes in parquet-mr and
  Arrow), and readers drop them when the writer's order is unknown or known to be wrong.
- Not from the footer: floats (writers disagree on NaN and on -0.0 / 0.0, which Java's ``Float.compare``
  orders), INT96 timestamps, decimals, times, nested columns — the caller reads those columns.

Values are raw physical values merged per row group, then boxed once as the file's Arrow type boxes them, so
they equal ``Scalar.as_py()`` of the same column read back.

Paimon: org.apache.paimon.format.parquet.ParquetSimpleStatsExtractor, ParquetUtil#extractColumnStats
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from laketide.format.parquet import _leaf_count

__all__ = ["FooterColumnStats", "footer_column_stats"]


@dataclass(frozen=True, slots=True)
class FooterColumnStats:
    """One top-level column's statistics as the footer states them.

    ``null_count`` is None when some row group does not say it; ``bounded`` is True when ``min`` / ``max`` are the
    column's exact bounds (both None for a column without a non-null value); when False they are unknown.
    """

    null_count: int | None
    bounded: bool
    min: Any = None
    max: Any = None


_UNKNOWN = FooterColumnStats(None, False)


def _bounds_exact(t: pa.DataType, physical: str) -> bool:
    """Whether the footer's min / max of a column of Arrow type ``t`` stored as ``physical`` are exact."""
    if pa.types.is_boolean(t):
        return physical == "BOOLEAN"
    if pa.types.is_signed_integer(t) or pa.types.is_date32(t):
        return physical in ("INT32", "INT64")
    if pa.types.is_timestamp(t):
        return physical == "INT64"  # INT96 has no usable order
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return physical == "BYTE_ARRAY"
    return False


def footer_column_stats(meta: pq.FileMetaData, schema: pa.Schema, names: Iterable[str]) -> dict[str, FooterColumnStats]:
    """Statistics of the top-level columns ``names`` of a file with footer ``meta`` and Arrow schema ``schema``
    (``ParquetFile.schema_arrow``); a name the file lacks or a nested column is unknown."""
    leaves: dict[str, int] = {}
    position = 0
    for f in schema:
        if _leaf_count(f.type) == 1 and not pa.types.is_nested(f.type):
            leaves[f.name] = position
        position += _leaf_count(f.type)
    out: dict[str, FooterColumnStats] = {}
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    for name in names:
        leaf = leaves.get(name)
        out[name] = _UNKNOWN if leaf is None else _merged(groups, leaf, schema.field(name).type)
    return out


def _merged(groups: list[pq.RowGroupMetaData], leaf: int, arrow_type: pa.DataType) -> FooterColumnStats:
    nulls = 0
    bounded = True
    low: Any = None
    high: Any = None
    for group in groups:
        column = group.column(leaf)
        st = column.statistics
        if st is None or not st.has_null_count:
            return _UNKNOWN
        nulls += st.null_count
        if not bounded or st.null_count >= group.num_rows:
            continue  # no non-null value in this group (or bounds already unknown): only its null count counts
        if not st.has_min_max or not _bounds_exact(arrow_type, st.physical_type):
            bounded = False
            continue
        lo, hi = st.min_raw, st.max_raw
        low = lo if low is None or lo < low else low
        high = hi if high is None or hi > high else high
    if not bounded:
        return FooterColumnStats(nulls, False)
    if low is None:
        return FooterColumnStats(nulls, True)
    return FooterColumnStats(nulls, True, _box(low, arrow_type), _box(high, arrow_type))


def _box(raw: Any, arrow_type: pa.DataType) -> Any:
    """A raw physical value as ``Scalar.as_py()`` gives it for ``arrow_type``."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    return pa.scalar(raw, type=arrow_type).as_py()
