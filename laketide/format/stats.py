"""Per-column statistics of a data file: min, max and null count, under Paimon's stats modes.

A column's mode comes from ``fields.<name>.stats-mode`` or ``metadata.stats-mode`` (default
``truncate(16)``): ``none`` keeps nothing, ``counts`` the null count, ``full`` also min and max, and
``truncate(N)`` cuts string and binary bounds to N characters / bytes — the min to its prefix, the max to its
prefix with the last character (byte) that can be incremented incremented, or no bounds at all when none can.

Values follow Java's SimpleColStatsCollector: min/max are left unknown for ARRAY / MAP / ROW (not
comparable in Java) and float/double are ordered as Java's ``Float.compare`` orders them: ``-0.0 < 0.0``
and NaN above everything, so a column holding a NaN has max NaN, and an all-NaN column has min and max NaN.
Everything is computed per column with pyarrow.compute / numpy; Python values are what ``Scalar.as_py()``
returns.

One deliberate difference from Java: incrementing U+D7FF yields U+E000 here. Java appends the lone surrogate
U+D800, which its UTF-8 encoder turns into ``?`` — an upper bound below the values it should cover.

Paimon: org.apache.paimon.statistics.SimpleColStatsCollector and its None/Counts/Full/Truncate collectors,
org.apache.paimon.utils.StatsCollectorFactories
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.options import METADATA_STATS_MODE_KEY, StatsMode, StatsModeKind, parse_stats_mode

__all__ = [
    "METADATA_STATS_MODE_KEY",
    "ColumnStats",
    "StatsMode",
    "StatsModeKind",
    "collect_stats",
    "field_stats_mode_key",
    "merge_column_stats",
    "merge_stats",
    "parse_stats_mode",
    "stats_from_bounds",
    "truncate_max",
    "truncate_min",
]

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def field_stats_mode_key(field_name: str) -> str:
    """The per-field option key, ``fields.<name>.stats-mode``."""
    return f"fields.{field_name}.stats-mode"


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Min, max and null count of one column; None where unknown or not collected.

    ``bounds_lost`` marks a ``truncate(N)`` result whose max could not be bounded: min and max are None and
    must stay None when merged with other batches' stats. It takes no part in equality.
    """

    min: Any
    max: Any
    null_count: int | None
    _: KW_ONLY
    bounds_lost: bool = field(default=False, compare=False)


_NONE_STATS = ColumnStats(None, None, None)


def collect_stats(
    data: pa.Table | pa.RecordBatch,
    modes: Sequence[str | StatsMode],
) -> list[ColumnStats]:
    """Statistics of every column of ``data`` under its mode (one mode per column, in column order)."""
    if len(modes) != data.num_columns:
        raise ValueError(f"{len(modes)} stats modes for {data.num_columns} columns")
    return [
        _collect_column(data.column(i), m if isinstance(m, StatsMode) else parse_stats_mode(m))
        for i, m in enumerate(modes)
    ]


def _collect_column(column: pa.Array | pa.ChunkedArray, mode: StatsMode) -> ColumnStats:
    if mode.kind is StatsModeKind.NONE:
        return _NONE_STATS
    null_count = column.null_count
    if mode.kind is StatsModeKind.COUNTS or null_count == len(column):
        return ColumnStats(None, None, null_count)
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = t.value_type
    if _is_nested(t) or pa.types.is_null(t):
        return ColumnStats(None, None, null_count)
    if pa.types.is_floating(t):
        low, high = _float_min_max(column)
    else:
        if pa.types.is_string_view(t):
            column = column.cast(pa.string())
        elif pa.types.is_binary_view(t):
            column = column.cast(pa.binary())
        bounds = pc.min_max(column)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return stats_from_bounds(low, high, null_count, mode)


def stats_from_bounds(low: Any, high: Any, null_count: int, mode: StatsMode) -> ColumnStats:
    """A column's stats under ``mode`` from its exact min / max (None: no non-null value) and null count, e.g. as a
    Parquet footer gives them: what :func:`collect_stats` gives for the same values."""
    if mode.kind is StatsModeKind.NONE:
        return _NONE_STATS
    if mode.kind is StatsModeKind.COUNTS or low is None:
        return ColumnStats(None, None, null_count)
    if mode.kind is StatsModeKind.TRUNCATE and isinstance(low, (str, bytes)):
        assert mode.length is not None
        high = truncate_max(high, mode.length)
        if high is None:
            return ColumnStats(None, None, null_count, bounds_lost=True)
        low = truncate_min(low, mode.length)
    return ColumnStats(low, high, null_count)


def _is_nested(t: pa.DataType) -> bool:
    nested: bool = (
        pa.types.is_struct(t)
        or pa.types.is_map(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )
    return nested


def _float_min_max(column: pa.Array | pa.ChunkedArray) -> tuple[float, float]:
    """Min and max in the order of Java's ``Float.compare`` (``-0.0 < 0.0``, NaN largest)."""
    values = np.asarray(column.drop_null().to_numpy(zero_copy_only=False))
    nan = np.isnan(values)
    if nan.all():
        return math.nan, math.nan
    finite = values[~nan]
    zeros_negative = np.signbit(finite[finite == 0])
    low = float(finite.min())
    if low == 0.0:
        low = -0.0 if zeros_negative.any() else 0.0
    if nan.any():
        return low, math.nan
    high = float(finite.max())
    if high == 0.0:
        high = 0.0 if (~zeros_negative).any() else -0.0
    return low, high


def truncate_min(value: Any, length: int) -> Any:
    """A lower bound of ``value``: its first ``length`` characters (bytes); other values unchanged."""
    if isinstance(value, (str, bytes)):
        return value[:length]
    return value


def truncate_max(value: Any, length: int) -> Any:
    """An upper bound of ``value`` at most ``length`` characters (bytes) long, or None if there is none.

    Values that already fit are returned as they are; otherwise the last position of the prefix that can be
    incremented is incremented and everything after it dropped.
    """
    if isinstance(value, str):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            code_point = ord(value[i]) + 1
            if code_point in _SURROGATES:
                code_point = _SURROGATES.stop
            if code_point <= _MAX_CODE_POINT:
                return value[:i] + chr(code_point)
        return None
    if isinstance(value, bytes):
        if len(value) <= length:
            return value
        for i in range(length - 1, -1, -1):
            if value[i] != 0xFF:
                return value[:i] + bytes([value[i] + 1])
        return None
    return value


# --- merging -----------------------------------------------------------------------------------------


def merge_stats(a: Sequence[ColumnStats], b: Sequence[ColumnStats]) -> list[ColumnStats]:
    """Column-wise :func:`merge_column_stats` of two batches' stats of one file (same columns, same modes)."""
    if len(a) != len(b):
        raise ValueError(f"cannot merge stats of {len(a)} and {len(b)} columns")
    return [merge_column_stats(x, y) for x, y in zip(a, b, strict=True)]


def merge_column_stats(a: ColumnStats, b: ColumnStats) -> ColumnStats:
    """Stats of the union of two batches: min of mins, max of maxes, sum of null counts.

    Merging stats collected under one mode gives what collecting the concatenated batches would give,
    truncated bounds included (the truncation of the least / greatest value wins either way).
    """
    null_count = None if a.null_count is None or b.null_count is None else a.null_count + b.null_count
    if a.bounds_lost or b.bounds_lost:
        return ColumnStats(None, None, null_count, bounds_lost=True)
    low = _pick(a.min, b.min, lower=True)
    high = _pick(a.max, b.max, lower=False)
    return ColumnStats(low, high, null_count)


def _pick(x: Any, y: Any, *, lower: bool) -> Any:
    if x is None:
        return y
    if y is None:
        return x
    if isinstance(x, float) or isinstance(y, float):
        y_first = _java_float_key(y) < _java_float_key(x)
    else:
        y_first = y < x
    return (y if y_first else x) if lower else (x if y_first else y)


def _java_float_key(v: float) -> tuple[int, float, int]:
    if math.isnan(v):
        return (1, 0.0, 0)
    return (0, v, 0 if math.copysign(1.0, v) < 0 else 1)
