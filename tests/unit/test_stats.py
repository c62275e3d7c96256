"""Column statistics against a row-by-row oracle that follows Java's SimpleColStatsCollector literally."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laketide.exceptions import InvalidOptionError
from laketide.format import (
    ColumnStats,
    StatsMode,
    StatsModeKind,
    collect_stats,
    merge_stats,
    parse_stats_mode,
    truncate_max,
    truncate_min,
)

# --- oracle: Java's collectors, one value at a time ----------------------------------------------------


def _java_less(a: Any, b: Any) -> bool:
    if isinstance(a, float):
        # Float.compare: -0.0 < 0.0 and NaN above everything.
        def key(v: float) -> tuple[int, float, int]:
            return (1, 0.0, 0) if math.isnan(v) else (0, v, 0 if math.copysign(1.0, v) < 0 else 1)

        return key(a) < key(b)
    return bool(a < b)


def _oracle_truncate_max(value: Any, n: int) -> Any:
    """Java's truncateMax, spelled out over code points (U+D7FF steps to U+E000, see stats.py)."""
    if isinstance(value, str):
        points = [ord(c) for c in value]
        if len(points) <= n:
            return value
        points = points[:n]
        while points:
            nxt = points[-1] + 1
            if 0xD800 <= nxt <= 0xDFFF:
                nxt = 0xE000
            if nxt <= 0x10FFFF:
                return "".join(map(chr, points[:-1] + [nxt]))
            points.pop()
        return None
    if isinstance(value, bytes):
        if len(value) <= n:
            return value
        cut = bytearray(value[:n])
        while cut:
            if cut[-1] != 0xFF:
                cut[-1] += 1
                return bytes(cut)
            cut.pop()
        return None
    return value


def _oracle(values: list[Any], mode: str, *, comparable: bool = True) -> ColumnStats:
    mode = mode.lower()
    if mode == "none":
        return ColumnStats(None, None, None)
    nulls = sum(v is None for v in values)
    if mode == "counts" or not comparable:
        return ColumnStats(None, None, nulls)
    n = int(mode[len("truncate(") : -1]) if mode.startswith("truncate") else None
    low = high = None
    failed = False
    for v in values:
        if v is None or failed:
            continue
        if low is None or _java_less(v, low):
            low = v[:n] if n is not None and isinstance(v, (str, bytes)) else v
        if high is None or _java_less(high, v):
            m = _oracle_truncate_max(v, n) if n is not None else v
            if m is None:
                failed = True
            else:
                high = m
    if failed:
        return ColumnStats(None, None, nulls)
    return ColumnStats(low, high, nulls)


def _same(a: ColumnStats, b: ColumnStats) -> bool:
    def eq(x: Any, y: Any) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
        return bool(x == y)

    return eq(a.min, b.min) and eq(a.max, b.max) and a.null_count == b.null_count


# --- strategies --------------------------------------------------------------------------------------

MODES = st.sampled_from(["none", "counts", "full", "truncate(1)", "truncate(2)", "truncate(5)", "TRUNCATE(16)"])
# Characters around the interesting edges: ASCII, U+D7FF, U+FFFF, U+10FFFF, plus anything.
EDGE_CHARS = st.sampled_from(["a", "b", "\x7f", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010ffff"])
TEXT = st.lists(st.one_of(EDGE_CHARS, st.characters(exclude_categories=("Cs",))), max_size=8).map("".join)
BYTES = st.binary(max_size=6) | st.lists(st.sampled_from([0x00, 0xFE, 0xFF]), max_size=6).map(bytes)

COLUMNS = [
    (pa.string(), TEXT),
    (pa.large_string(), TEXT),
    (pa.binary(), BYTES),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.int8(), st.integers(-128, 127)),
    (pa.float64(), st.floats(allow_nan=True) | st.sampled_from([0.0, -0.0, math.nan])),
    (pa.float32(), st.floats(width=32) | st.sampled_from([0.0, -0.0, math.nan])),
    (pa.bool_(), st.booleans()),
    (pa.decimal128(12, 3), st.decimals(min_value=-(10**8), max_value=10**8, places=3)),
    (pa.date32(), st.dates()),
    (pa.timestamp("us"), st.datetimes(min_value=dt.datetime(1000, 1, 1))),
]


@st.composite
def column_and_values(draw: st.DrawFn) -> tuple[pa.DataType, list[Any]]:
    t, values = draw(st.sampled_from(COLUMNS))
    return t, draw(st.lists(st.none() | values, max_size=30))


@settings(max_examples=300, deadline=None)
@given(column_and_values(), MODES)
def test_collect_matches_java_collector(column: tuple[pa.DataType, list[Any]], mode: str) -> None:
    t, values = column
    arr = pa.array(values, type=t)
    expected = _oracle(arr.to_pylist(), mode)
    got = collect_stats(pa.table({"c": arr}), [mode])[0]
    assert _same(got, expected), (got, expected)


@settings(max_examples=200, deadline=None)
@given(column_and_values(), MODES, st.integers(0, 30))
def test_merging_batches_equals_collecting_once(column: tuple[pa.DataType, list[Any]], mode: str, cut: int) -> None:
    t, values = column
    batch = pa.record_batch({"c": pa.array(values, type=t)})
    cut = min(cut, batch.num_rows)
    parts = [collect_stats(batch.slice(0, cut), [mode]), collect_stats(batch.slice(cut), [mode])]
    merged = merge_stats(parts[0], parts[1])[0]
    assert _same(merged, collect_stats(batch, [mode])[0])


def test_chunked_table_columns() -> None:
    table = pa.Table.from_batches(
        [pa.record_batch({"a": [3, None]}), pa.record_batch({"a": [None, -1]})]
    )
    assert collect_stats(table, ["full"]) == [ColumnStats(-1, 3, 2)]


def test_nested_columns_keep_only_null_counts() -> None:
    table = pa.table(
        {
            "l": pa.array([[1], None, []]),
            "m": pa.array([[("a", 1)], None, None], pa.map_(pa.string(), pa.int64())),
            "r": pa.array([{"x": 1}, {"x": None}, None]),
        }
    )
    assert collect_stats(table, ["full", "truncate(3)", "counts"]) == [
        ColumnStats(None, None, 1),
        ColumnStats(None, None, 2),
        ColumnStats(None, None, 1),
    ]


def test_all_null_and_empty_columns() -> None:
    assert collect_stats(pa.table({"a": pa.array([None, None], pa.string())}), ["full"]) == [ColumnStats(None, None, 2)]
    assert collect_stats(pa.table({"a": pa.array([], pa.int32())}), ["truncate(4)"]) == [ColumnStats(None, None, 0)]
    assert collect_stats(pa.table({"a": pa.array([1])}), ["none"]) == [ColumnStats(None, None, None)]


def test_float_order_is_javas() -> None:
    def stats(values: list[float | None]) -> ColumnStats:
        return collect_stats(pa.table({"f": pa.array(values, pa.float64())}), ["full"])[0]

    s = stats([1.0, math.nan, -3.0])
    assert s.min == -3.0 and math.isnan(s.max)
    s = stats([math.nan, None, math.nan])
    assert math.isnan(s.min) and math.isnan(s.max) and s.null_count == 1
    s = stats([0.0, -0.0])
    assert math.copysign(1, s.min) == -1 and math.copysign(1, s.max) == 1
    s = stats([-0.0])
    assert math.copysign(1, s.min) == -1 and math.copysign(1, s.max) == -1


def test_values_are_as_py() -> None:
    table = pa.table(
        {
            "d": pa.array([Decimal("1.50"), Decimal("-2.25")], pa.decimal128(38, 2)),
            "t": pa.array([dt.datetime(2020, 1, 1, tzinfo=dt.UTC), None], pa.timestamp("ms", tz="UTC")),
            "b": pa.array([b"\xff", b"\x00\x01"]),
        }
    )
    d, t, b = collect_stats(table, ["full", "full", "full"])
    assert (d.min, d.max) == (Decimal("-2.25"), Decimal("1.50"))
    assert t.min == t.max == dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    assert (b.min, b.max) == (b"\x00\x01", b"\xff")


# --- truncation edge cases ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "n", "low", "high"),
    [
        ("", 3, "", ""),
        ("ab", 3, "ab", "ab"),
        ("abc", 3, "abc", "abc"),
        ("abcd", 3, "abc", "abd"),
        ("a\U0010ffffz", 2, "a\U0010ffff", "b"),
        ("\U0010ffff\U0010ffffz", 2, "\U0010ffff\U0010ffff", None),
        ("\uffffab", 1, "\uffff", "\U00010000"),
        ("a\uffffb", 2, "a\uffff", "a\U00010000"),
        ("\ud7ffab", 1, "\ud7ff", "\ue000"),
        ("\U0001f600\U0001f600x", 2, "\U0001f600\U0001f600", "\U0001f600\U0001f601"),
        (b"", 2, b"", b""),
        (b"ab", 2, b"ab", b"ab"),
        (b"a\xff\x00", 2, b"a\xff", b"b"),
        (b"\xff\xff\x01", 2, b"\xff\xff", None),
        (b"ab\x00", 2, b"ab", b"ac"),
        (42, 1, 42, 42),
    ],
)
def test_truncate_edges(value: Any, n: int, low: Any, high: Any) -> None:
    assert truncate_min(value, n) == low
    assert truncate_max(value, n) == high


def test_truncate_failure_drops_bounds_but_keeps_null_count() -> None:
    table = pa.table({"s": ["a", "\U0010ffff\U0010ffffzz", None]})
    (s,) = collect_stats(table, ["truncate(2)"])
    assert s == ColumnStats(None, None, 1)
    assert s.bounds_lost
    # A lost bound stays lost when merged with a batch that had bounds.
    (other,) = collect_stats(pa.table({"s": ["b"]}), ["truncate(2)"])
    assert merge_stats([s], [other]) == [ColumnStats(None, None, 1)]
    assert merge_stats([other], [s])[0].bounds_lost


def test_truncate_covers_every_value() -> None:
    values = ["apple", "apricot", "banana", "bandana", "b"]
    (s,) = collect_stats(pa.table({"s": values}), ["truncate(3)"])
    assert s == ColumnStats("app", "bao", 0)
    assert all(s.min <= v <= s.max for v in values)


# --- modes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("none", StatsMode(StatsModeKind.NONE)),
        ("Counts", StatsMode(StatsModeKind.COUNTS)),
        ("FULL", StatsMode(StatsModeKind.FULL)),
        ("truncate(16)", StatsMode(StatsModeKind.TRUNCATE, 16)),
        ("Truncate(1)", StatsMode(StatsModeKind.TRUNCATE, 1)),
    ],
)
def test_parse_stats_mode(text: str, mode: StatsMode) -> None:
    assert parse_stats_mode(text) == mode
    assert parse_stats_mode(str(mode)) == mode


@pytest.mark.parametrize("text", ["", "fast", " full", "truncate", "truncate(0)", "truncate(-1)", "truncate(1.5)",
                                  "truncate(99999999999)", "truncate(16) "])
def test_bad_stats_modes_name_the_option(text: str) -> None:
    with pytest.raises(InvalidOptionError, match="metadata.stats-mode"):
        parse_stats_mode(text)
    with pytest.raises(InvalidOptionError, match=r"fields\.name\.stats-mode"):
        parse_stats_mode(text, key="fields.name.stats-mode")


def test_collect_rejects_mode_count_mismatch() -> None:
    with pytest.raises(ValueError, match="2 stats modes"):
        collect_stats(pa.table({"a": [1]}), ["full", "full"])
    with pytest.raises(InvalidOptionError):
        collect_stats(pa.table({"a": [1]}), ["most"])
