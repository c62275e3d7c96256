"""DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ in Paimon's casts, column-wise.

A timestamp is handled as Java's ``Timestamp`` is: epoch milliseconds plus the nanoseconds within the
millisecond. TIMESTAMP holds a wall-clock time (as if in UTC), TIMESTAMP_LTZ an instant; casts between them,
and from LTZ to dates, times and strings, go through the session time zone Java takes from
``TimeZone.getDefault()``. laketide has no JVM default: the zone is an argument (UTC unless the table's
``local-time-zone`` option says otherwise). A local time falling in a daylight-saving gap moves forward by the
gap and an ambiguous one takes the earlier offset, as ``LocalDateTime.atZone`` does.

Paimon: utils.DateTimeUtils, utils.BinaryStringUtils (toDate, toTime, toTimestamp), data.Timestamp and the
Timestamp / Date / Time cast rules of org.apache.paimon.casting.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import CastError
from laketide.schema.cast_strings import assemble, cast_failure, integers_from_strings
from laketide.types import DataType, LocalZonedTimestampType, TimestampType, TimeType

__all__ = [
    "date_to_timestamp",
    "dates_from_strings",
    "dates_to_strings",
    "integer_to_timestamp",
    "is_utc",
    "time_to_timestamp",
    "times_from_strings",
    "times_to_strings",
    "timestamp_to_date",
    "timestamp_to_integer",
    "timestamp_to_string",
    "timestamp_to_time",
    "timestamp_to_timestamp",
    "timestamps_from_strings",
]

MILLIS_PER_DAY = 86_400_000
_UNITS = ("s", "ms", "ms", "ms", "us", "us", "us", "ns", "ns", "ns")
_UTC_NAMES = frozenset({"UTC", "Z", "GMT", "+00:00", "Etc/UTC", "Etc/GMT", "UCT", "Zulu"})
_DAY_WINDOW = 26 * 3_600_000  # wider than any day: one offset change at most on either side of a local time


def is_utc(time_zone: str) -> bool:
    return time_zone in _UTC_NAMES


# ------------------------------------------------------------------------------------------------
# timestamps as (epoch millis, nanos of millisecond)
# ------------------------------------------------------------------------------------------------


class _Stamps:
    """Java's Timestamp, column-wise: ``millis`` (int64) and ``nanos`` (0..999999 within the millisecond)."""

    __slots__ = ("millis", "nanos", "valid")

    def __init__(self, millis: np.ndarray, nanos: np.ndarray, valid: np.ndarray) -> None:
        self.millis = millis
        self.nanos = nanos
        self.valid = valid

    @classmethod
    def of(cls, arr: pa.Array) -> _Stamps:
        unit = arr.type.unit
        raw = np.asarray(pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(), dtype=np.int64)
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
        if unit == "s":
            return cls(raw * 1000, np.zeros_like(raw), valid)
        if unit == "ms":
            return cls(raw, np.zeros_like(raw), valid)
        per_milli = 1000 if unit == "us" else 1_000_000
        millis, rest = np.divmod(raw, per_milli)
        return cls(millis, rest * (1_000_000 // per_milli), valid)

    def to_arrow(self, precision: int, *, ltz: bool, what: str) -> pa.Array:
        unit = _UNITS[precision]
        if unit == "ns" and self.valid.any():
            limit = np.iinfo(np.int64).max // 1_000_000
            if (np.abs(self.millis[self.valid]) >= limit).any():
                raise CastError(f"{what}: a value is outside the years 1677-2262 that TIMESTAMP({precision}) holds")
        millis = np.where(self.valid, self.millis, 0)
        nanos = np.where(self.valid, self.nanos, 0)
        if unit == "s":
            values = np.floor_divide(millis, 1000)
        elif unit == "ms":
            values = millis
        elif unit == "us":
            values = millis * 1000 + nanos // 1000
        else:
            values = millis * 1_000_000 + nanos
        out = pa.array(values, pa.int64(), mask=~self.valid)
        return out.cast(pa.timestamp(unit, tz="UTC" if ltz else None))

    def truncate(self, precision: int) -> _Stamps:
        """DateTimeUtils.truncate: up to milliseconds the epoch millis are cut toward zero (Java's long
        division), finer precisions cut the nanoseconds within the millisecond."""
        if precision >= 9:
            return self
        if precision <= 3:
            step = 10 ** (3 - precision)
            # np.fix-style division toward zero, as Java's (l / n) * n
            millis = (np.abs(self.millis) // step) * step * np.sign(self.millis)
            return _Stamps(millis, np.zeros_like(self.nanos), self.valid)
        step = 10 ** (9 - precision)
        return _Stamps(self.millis, (self.nanos // step) * step, self.valid)


def _precision(dt: DataType) -> int:
    assert isinstance(dt, (TimestampType, LocalZonedTimestampType, TimeType))
    return dt.precision


# ------------------------------------------------------------------------------------------------
# time zones
# ------------------------------------------------------------------------------------------------


def _offsets(instants: np.ndarray, time_zone: str) -> np.ndarray:
    """UTC offset (ms) of ``time_zone`` at each instant (epoch ms)."""
    if is_utc(time_zone) or len(instants) == 0:
        return np.zeros_like(instants)
    try:
        local = pc.local_timestamp(pa.array(instants, pa.timestamp("ms", tz=time_zone)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CastError(f"Unknown time zone {time_zone!r}: {e}") from e
    offsets: np.ndarray = np.asarray(local.cast(pa.int64()).to_numpy(), dtype=np.int64) - instants
    return offsets


def to_local(instants: np.ndarray, time_zone: str) -> np.ndarray:
    """Wall-clock millis (as if UTC) of instants in ``time_zone`` (LocalDateTime.ofInstant)."""
    local: np.ndarray = instants + _offsets(instants, time_zone)
    return local


def to_instant(local: np.ndarray, time_zone: str) -> np.ndarray:
    """The instant of each wall-clock time in ``time_zone`` (LocalDateTime.atZone(zone).toInstant()): a gap
    moves the time forward by its length (the offset before it applies); an overlap takes the earlier offset."""
    if is_utc(time_zone) or len(local) == 0:
        return local.copy()
    before = _offsets(local - _DAY_WINDOW, time_zone)
    after = _offsets(local + _DAY_WINDOW, time_zone)
    with_before, with_after = local - before, local - after
    before_ok = _offsets(with_before, time_zone) == before
    after_ok = _offsets(with_after, time_zone) == after
    chosen: np.ndarray = np.where(before_ok, with_before, np.where(after_ok, with_after, with_before))
    return chosen


def check_time_zone(time_zone: str) -> str | None:
    """None when Arrow knows ``time_zone``, else why not (for option validation)."""
    try:
        _offsets(np.zeros(1, dtype=np.int64), time_zone)
    except CastError as e:
        return str(e)
    return None


# ------------------------------------------------------------------------------------------------
# timestamp -> timestamp / date / time / number
# ------------------------------------------------------------------------------------------------


def timestamp_to_timestamp(arr: pa.Array, source: DataType, target: DataType, time_zone: str) -> pa.Array:
    """TimestampToTimestampCastRule: the zone conversion (TIMESTAMP <-> LTZ), then truncation when the
    precision shrinks."""
    s = _Stamps.of(arr)
    src_ltz = isinstance(source, LocalZonedTimestampType)
    dst_ltz = isinstance(target, LocalZonedTimestampType)
    if not src_ltz and dst_ltz:
        s = _Stamps(to_instant(s.millis, time_zone), s.nanos, s.valid)
    elif src_ltz and not dst_ltz:
        s = _Stamps(to_local(s.millis, time_zone), s.nanos, s.valid)
    if _precision(source) > _precision(target):
        s = s.truncate(_precision(target))
    return s.to_arrow(_precision(target), ltz=dst_ltz, what=f"{source} -> {target}")


def timestamp_to_date(arr: pa.Array, source: DataType, time_zone: str) -> pa.Array:
    s = _Stamps.of(arr)
    millis = to_local(s.millis, time_zone) if isinstance(source, LocalZonedTimestampType) else s.millis
    days = np.floor_divide(millis, MILLIS_PER_DAY).astype(np.int32)
    return pa.array(days, pa.int32(), mask=~s.valid).cast(pa.date32())


def timestamp_to_time(arr: pa.Array, source: DataType, time_zone: str) -> pa.Array:
    s = _Stamps.of(arr)
    millis = to_local(s.millis, time_zone) if isinstance(source, LocalZonedTimestampType) else s.millis
    of_day = np.mod(millis, MILLIS_PER_DAY).astype(np.int32)
    return pa.array(of_day, pa.int32(), mask=~s.valid).cast(pa.time32("ms"))


def timestamp_to_integer(arr: pa.Array, target_bits: int) -> pa.Array:
    """TimestampToNumericPrimitiveCastRule: epoch seconds, Java's millis / 1000 (toward zero), then (int) for
    INT. TIMESTAMP_LTZ reads its millis the same way, with no zone."""
    s = _Stamps.of(arr)
    seconds = np.sign(s.millis) * (np.abs(s.millis) // 1000)
    if target_bits == 32:
        return pa.array(seconds.astype(np.int32), pa.int32(), mask=~s.valid)
    return pa.array(seconds, pa.int64(), mask=~s.valid)


def integer_to_timestamp(arr: pa.Array, target: DataType, time_zone: str) -> pa.Array:
    """NumericPrimitiveToTimestamp (INT / BIGINT seconds): TIMESTAMP reads them in UTC; TIMESTAMP_LTZ keeps the
    wall-clock time of that instant in the session zone, as Java's rule does."""
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    seconds = np.asarray(pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(), dtype=np.int64)
    with np.errstate(over="ignore"):
        millis = seconds * 1000  # Java's long multiplication wraps the same way
    ltz = isinstance(target, LocalZonedTimestampType)
    if ltz:
        millis = to_local(millis, time_zone)
    return _Stamps(millis, np.zeros_like(millis), valid).to_arrow(_precision(target), ltz=ltz, what=f"-> {target}")


def date_to_timestamp(arr: pa.Array, target: DataType, time_zone: str) -> pa.Array:
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    days = np.asarray(pc.fill_null(arr.cast(pa.int32()), 0).to_numpy(), dtype=np.int64)
    millis = days * MILLIS_PER_DAY
    ltz = isinstance(target, LocalZonedTimestampType)
    if ltz:
        millis = to_instant(millis, time_zone)
    return _Stamps(millis, np.zeros_like(millis), valid).to_arrow(_precision(target), ltz=ltz, what=f"DATE -> {target}")


def time_to_timestamp(arr: pa.Array, target: DataType, time_zone: str) -> pa.Array:
    """TimeToTimestampCastRule: 1970-01-01 plus the time; for LTZ Java reads the time as an instant, takes its
    wall clock in the zone and converts that back (a no-op outside DST transitions)."""
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    millis = np.asarray(pc.fill_null(arr.cast(pa.int32()), 0).to_numpy(), dtype=np.int64)
    ltz = isinstance(target, LocalZonedTimestampType)
    if ltz:
        millis = to_instant(to_local(millis, time_zone), time_zone)
    return _Stamps(millis, np.zeros_like(millis), valid).to_arrow(_precision(target), ltz=ltz, what=f"TIME -> {target}")


# ------------------------------------------------------------------------------------------------
# calendar arithmetic (proleptic Gregorian, as java.time)
# ------------------------------------------------------------------------------------------------


def _civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = days.astype(np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return y + (m <= 2), m, d


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y.astype(np.int64) - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = np.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: np.ndarray = era * 146097 + doe - 719468
    return days


def _month_length(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    lengths = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    month_days: np.ndarray = lengths[np.clip(m, 0, 12)] + ((m == 2) & leap)
    return month_days


# ------------------------------------------------------------------------------------------------
# to strings
# ------------------------------------------------------------------------------------------------


def _padded(values: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pa.array(values.astype(np.int64)).cast(pa.string()), width, "0")


def _join(*parts: pa.Array | str) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _ymd(days: np.ndarray) -> pa.Array:
    y, m, d = _civil_from_days(days)
    # Java's int4 prints the last four digits of the year.
    return _join(_padded(np.mod(y, 10000), 4), "-", _padded(m, 2), "-", _padded(d, 2))


def _hms(millis_of_day: np.ndarray) -> pa.Array:
    s = millis_of_day // 1000
    return _join(_padded(s // 3600, 2), ":", _padded((s // 60) % 60, 2), ":", _padded(s % 60, 2))


def timestamp_to_string(arr: pa.Array, source: DataType, time_zone: str) -> pa.Array:
    """DateTimeUtils.formatTimestamp: ``yyyy-MM-dd HH:mm:ss``, then the nanoseconds with trailing zeros dropped
    down to the type's precision (TIMESTAMP(3) prints .000, TIMESTAMP(6) .100000, TIMESTAMP(0) nothing)."""
    s = _Stamps.of(arr)
    millis = to_local(s.millis, time_zone) if isinstance(source, LocalZonedTimestampType) else s.millis
    days, of_day = np.divmod(millis, MILLIS_PER_DAY)
    nano_of_second = (of_day % 1000) * 1_000_000 + s.nanos
    base = _join(_ymd(days), " ", _hms(of_day))
    trailing = np.zeros(len(millis), dtype=np.int64)
    rest = nano_of_second.copy()
    for _ in range(9):
        zero = (rest % 10 == 0) & (trailing < 9)
        trailing += zero
        rest = np.where(zero, rest // 10, rest)
    length = np.maximum(_precision(source), 9 - trailing)
    fraction = _padded(nano_of_second, 9)
    parts: list[tuple[np.ndarray, pa.Array]] = []
    for width in np.unique(length[s.valid]) if s.valid.any() else ():
        rows = np.flatnonzero((length == width) & s.valid)
        idx = pa.array(rows)
        if width == 0:
            parts.append((rows, base.take(idx)))
        else:
            parts.append((rows, _join(base.take(idx), ".", pc.utf8_slice_codeunits(fraction.take(idx), 0, int(width)))))
    return assemble(len(millis), parts, pa.string())


def dates_to_strings(arr: pa.Array) -> pa.Array:
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    days = np.asarray(pc.fill_null(arr.cast(pa.int32()), 0).to_numpy(), dtype=np.int64)
    return pc.if_else(pa.array(valid), _ymd(days), pa.scalar(None, pa.string()))


def times_to_strings(arr: pa.Array, source: DataType) -> pa.Array:
    """DateTimeUtils.formatTimestampMillis: ``HH:mm:ss``, then up to ``precision`` digits of the milliseconds,
    stopping after the last non-zero one (at least one digit when the precision is positive)."""
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
    millis = np.asarray(pc.fill_null(arr.cast(pa.int32()), 0).to_numpy(), dtype=np.int64)
    millis = np.mod(millis, MILLIS_PER_DAY)  # Java adds days until the time is positive
    base = _hms(millis)
    precision = _precision(source)
    if precision == 0:
        return pc.if_else(pa.array(valid), base, pa.scalar(None, pa.string()))
    ms = millis % 1000
    needed = np.where(ms % 100 == 0, 1, np.where(ms % 10 == 0, 2, 3))
    length = np.minimum(precision, needed)
    digits = _padded(ms, 3)
    parts: list[tuple[np.ndarray, pa.Array]] = []
    for width in (1, 2, 3):
        rows = np.flatnonzero((length == width) & valid)
        if len(rows):
            idx = pa.array(rows)
            parts.append((rows, _join(base.take(idx), ".", pc.utf8_slice_codeunits(digits.take(idx), 0, width))))
    return assemble(len(millis), parts, pa.string())


# ------------------------------------------------------------------------------------------------
# from strings
# ------------------------------------------------------------------------------------------------

_NUMERIC = r"^-?[0-9]+$"  # StringUtils.isNumeric (ASCII digits; other digits fail in toInt as well)
_BLANK = r"[\x00-\x20]*"
_DATE = rf"^{_BLANK}(?P<y>[0-9]+){_BLANK}(?:-{_BLANK}(?P<m>[0-9]+){_BLANK}(?:-{_BLANK}(?P<d>[0-9]+){_BLANK})?)?$"


def _ints(column: pa.Array) -> np.ndarray:
    filled = pc.if_else(pc.equal(pc.fill_null(column, ""), ""), "0", pc.fill_null(column, "0"))
    return np.asarray(filled.cast(pa.int64()).to_numpy(), dtype=np.int64)


def dates_from_strings(strings: pa.Array) -> pa.Array:
    """BinaryStringUtils.toDate: a number is a day count; else DateTimeUtils.parseDate: the text before the first
    blank, ``y[-m[-d]]`` with blanks around each part, a year 0-9999 and a real day of the month."""
    valid = pc.is_valid(strings)
    numeric = pc.fill_null(pc.match_substring_regex(strings, _NUMERIC), False)
    days_from_number = integers_from_strings(
        pc.if_else(numeric, strings, pa.scalar(None, pa.string())), -(2**31), 2**31 - 1, "DATE"
    )
    head = pc.replace_substring_regex(strings, r"(?s)^([^ ]+) .*$", r"\1")
    parts = pc.extract_regex(pc.if_else(numeric, pa.scalar(None, pa.string()), head), _DATE)
    bad = pc.and_(pc.and_(valid, pc.invert(numeric)), pc.is_null(parts))
    if pc.any(bad).as_py():
        raise cast_failure(strings, bad, "to DATE")
    y_text, m_text, d_text = (parts.field(name) for name in ("y", "m", "d"))
    too_long = pc.or_(pc.greater(pc.utf8_length(y_text), 9), pc.or_(
        pc.greater(pc.utf8_length(m_text), 9), pc.greater(pc.utf8_length(d_text), 9)))
    if pc.any(too_long).as_py():
        raise cast_failure(strings, too_long, "to DATE")
    y = _ints(y_text)
    m = np.where(np.asarray(pc.fill_null(pc.equal(m_text, ""), True)), 1, _ints(m_text))
    d = np.where(np.asarray(pc.fill_null(pc.equal(d_text, ""), True)), 1, _ints(d_text))
    parsed = np.asarray(pc.fill_null(pc.is_valid(parts), False))
    legal = (y >= 0) & (y <= 9999) & (m >= 1) & (m <= 12) & (d >= 1) & (d <= _month_length(y, m))
    if (parsed & ~legal).any():
        raise cast_failure(strings, parsed & ~legal, "to DATE: no such date")
    days = np.where(parsed, _days_from_civil(y, m, d), np.asarray(pc.fill_null(days_from_number, 0)))
    return pa.array(days.astype(np.int32), pa.int32(), mask=~np.asarray(valid)).cast(pa.date32())


_TIME = (
    rf"^{_BLANK}(?P<h>[0-9]+){_BLANK}(?::{_BLANK}(?P<mi>[0-9]+){_BLANK}"
    rf"(?::{_BLANK}(?P<s>[0-9]+){_BLANK}(?:\.{_BLANK}(?P<f>[0-9]*){_BLANK})?)?)?$"
)


def times_from_strings(strings: pa.Array) -> pa.Array:
    """BinaryStringUtils.toTime: a number is milliseconds of the day; else DateTimeUtils.parseTime
    (``h[:m[:s[.fff]]]`` with an optional ``+hh:mm`` / ``-hh:mm`` shift; the fraction rounds at the fourth
    digit; no range checks)."""
    valid = np.asarray(pc.is_valid(strings))
    numeric = pc.fill_null(pc.match_substring_regex(strings, _NUMERIC), False)
    from_number = integers_from_strings(
        pc.if_else(numeric, strings, pa.scalar(None, pa.string())), -(2**31), 2**31 - 1, "TIME"
    )
    simple = pc.extract_regex(pc.if_else(numeric, pa.scalar(None, pa.string()), strings), _TIME)
    h, mi, sec, frac = (simple.field(name) for name in ("h", "mi", "s", "f"))
    parsed = np.asarray(pc.fill_null(pc.is_valid(simple), False))
    frac_text = pc.utf8_rpad(pc.utf8_slice_codeunits(pc.fill_null(frac, ""), 0, 4), 4, "0")
    four = _ints(frac_text)
    milli = four // 10 + (four % 10 >= 5)
    values = (_ints(h) * 3_600_000 + _ints(pc.fill_null(mi, "0")) * 60_000 + _ints(pc.fill_null(sec, "0")) * 1000
              + milli)
    values = np.where(parsed, values, np.asarray(pc.fill_null(from_number, 0)))
    rest = valid & ~parsed & ~np.asarray(numeric)
    out = values.astype(np.int64)
    for i in np.flatnonzero(rest):
        result = _java_parse_time(strings[int(i)].as_py())
        if result is None:
            raise CastError(f"Cannot cast {strings[int(i)].as_py()!r} to TIME")
        out[i] = result
    return pa.array(out.astype(np.int32), pa.int32(), mask=~valid).cast(pa.time32("ms"))


def _java_int(text: str) -> int | None:
    text = text.strip(_JAVA_BLANKS)
    return int(text) if text and all("0" <= c <= "9" for c in text) else None


_JAVA_BLANKS = "".join(chr(i) for i in range(33))


def _java_parse_time(v: str) -> int | None:
    # DateTimeUtils.parseTime, step by step (only for the rare strings the pattern above does not cover).
    colon1 = v.find(":")
    operator, end = -1, len(v)
    zone = v.find("-")
    if zone < 0:
        zone, operator = v.find("+"), 1
    zone_h = zone_m = 0
    if zone >= 0:
        end = zone
        colon3 = v.find(":", zone)
        if colon3 < 0:
            parsed_h = _java_int(v[zone + 1:])
            if parsed_h is None:
                return None
            zone_h = parsed_h
        else:
            parsed_h, parsed_m = _java_int(v[zone + 1:colon3]), _java_int(v[colon3 + 1:])
            if parsed_h is None or parsed_m is None:
                return None
            zone_h, zone_m = parsed_h, parsed_m
    minute = second = milli = 0
    if colon1 < 0:
        hour = _java_int(v[:end])
        if hour is None:
            return None
    else:
        hour = _java_int(v[:colon1])
        colon2 = v.find(":", colon1 + 1)
        if colon2 < 0:
            m = _java_int(v[colon1 + 1:end])
            if hour is None or m is None:
                return None
            minute = m
        else:
            m = _java_int(v[colon1 + 1:colon2])
            if hour is None or m is None:
                return None
            minute = m
            dot = v.find(".", colon2)
            if dot < 0:
                s = _java_int(v[colon2 + 1:end])
                if s is None:
                    return None
                second = s
            else:
                s = _java_int(v[colon2 + 1:dot])
                if s is None:
                    return None
                second, milli = s, _java_fraction(v[dot + 1:end].strip(_JAVA_BLANKS))
    hour += operator * zone_h
    minute += operator * zone_m
    return hour * 3_600_000 + minute * 60_000 + second * 1000 + milli


def _java_fraction(v: str) -> int:
    multiplier, r = 100, 0
    for i, c in enumerate(v):
        r += multiplier * (ord(c) - 48 if "0" <= c <= "9" else 0)
        if multiplier < 10:
            if i + 1 < len(v) and v[i + 1] >= "5":
                r += 1
            break
        multiplier //= 10
    return r


# DateTimeUtils' formatter: "yyyy-[MM][M]-[dd][d]", then optionally " [HH][H]:[mm][m]:[ss][s]" and a fraction,
# then optionally "'T'[HH][H]:[mm][m]" with an optional ":[ss][s]" and fraction; the whole text must match.
_TIMESTAMP = (
    r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{0,2})-(?P<d>[0-9]{0,2})"
    r"(?: (?P<h1>[0-9]{0,2}):(?P<mi1>[0-9]{0,2}):(?P<s1>[0-9]{0,2})(?:\.(?P<f1>[0-9]{0,9}))?)?"
    r"(?:T(?P<h2>[0-9]{0,2}):(?P<mi2>[0-9]{0,2})(?::(?P<s2>[0-9]{0,2})(?:\.(?P<f2>[0-9]{0,9}))?)?)?$"
)
_PRECISIONS_OF_NUMBERS = (0, 3, 6, 9)


def timestamps_from_strings(strings: pa.Array, target: DataType, time_zone: str) -> pa.Array:
    """BinaryStringUtils.toTimestamp. TIMESTAMP(0/3/6/9) reads a plain number as seconds / millis / micros /
    nanos since the epoch (other precisions throw); anything else goes through Paimon's timestamp pattern,
    resolved as java.time's SMART mode does (day 31 of a short month becomes its last day, 24:00:00 the next
    midnight), the fraction cut to the precision. TIMESTAMP_LTZ reads no numbers and places the wall-clock time
    in the session zone."""
    precision = _precision(target)
    ltz = isinstance(target, LocalZonedTimestampType)
    valid = np.asarray(pc.is_valid(strings))
    numeric = np.zeros(len(strings), dtype=bool)
    if not ltz:
        numeric = np.asarray(pc.fill_null(pc.match_substring_regex(strings, _NUMERIC), False))
    millis = np.zeros(len(strings), dtype=np.int64)
    nanos = np.zeros(len(strings), dtype=np.int64)
    if numeric.any():
        if precision not in _PRECISIONS_OF_NUMBERS:
            raise cast_failure(strings, numeric, f"to {target}: numbers are read for precisions 0, 3, 6, 9 only")
        as_numbers = pc.if_else(pa.array(numeric), strings, pa.scalar(None, pa.string()))
        epoch = np.asarray(pc.fill_null(integers_from_strings(as_numbers, -(2**63), 2**63 - 1, str(target)), 0))
        per_milli = {0: None, 3: 1, 6: 1000, 9: 1_000_000}[precision]
        if per_milli is None:
            with np.errstate(over="ignore"):
                num_millis = epoch * 1000
            num_nanos = np.zeros_like(epoch)
        else:
            num_millis, rest = np.divmod(epoch, per_milli)
            num_nanos = rest * (1_000_000 // per_milli)
        millis = np.where(numeric, num_millis, millis)
        nanos = np.where(numeric, num_nanos, nanos)
    parts = pc.extract_regex(pc.if_else(pa.array(numeric), pa.scalar(None, pa.string()), strings), _TIMESTAMP)
    parsed = np.asarray(pc.fill_null(pc.is_valid(parts), False))
    bad = valid & ~numeric & ~parsed
    if bad.any():
        raise cast_failure(strings, bad, f"to {target}")
    if parsed.any():
        def num(name: str, default: int) -> np.ndarray:
            col = parts.field(name)
            empty = np.asarray(pc.fill_null(pc.equal(col, ""), True))
            return np.where(empty, default, _ints(col))

        y, mo, d = num("y", 1970), num("mo", 1), num("d", 1)
        # The date holds no blank: a blank opens the " HH:mm:ss" section, else the time (if any) follows a "T".
        space = np.asarray(pc.fill_null(pc.match_substring(strings, " "), False))
        h = np.where(space, num("h1", 0), num("h2", 0))
        mi = np.where(space, num("mi1", 0), num("mi2", 0))
        sec = np.where(space, num("s1", 0), num("s2", 0))
        frac = pc.if_else(pa.array(space), parts.field("f1"), parts.field("f2"))
        fraction = _ints(pc.utf8_rpad(pc.utf8_slice_codeunits(pc.fill_null(frac, ""), 0, 9), 9, "0"))
        end_of_day = (h == 24) & (mi == 0) & (sec == 0) & (fraction == 0)
        legal = (y >= 1) & (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= 31) & ((h <= 23) | end_of_day) & (mi <= 59)
        legal &= sec <= 59
        if (parsed & ~legal).any():
            raise cast_failure(strings, parsed & ~legal, f"to {target}: a field is out of range")
        d = np.minimum(d, _month_length(y, mo))  # SMART resolution
        days = _days_from_civil(y, mo, d) + end_of_day
        h = np.where(end_of_day, 0, h)
        step = 10 ** (9 - precision)
        fraction = (fraction // step) * step
        local = days * MILLIS_PER_DAY + ((h * 60 + mi) * 60 + sec) * 1000 + fraction // 1_000_000
        millis = np.where(parsed, local, millis)
        nanos = np.where(parsed, fraction % 1_000_000, nanos)
    if ltz:
        millis = to_instant(millis, time_zone)
    return _Stamps(millis, nanos, valid).to_arrow(precision, ltz=ltz, what=f"STRING -> {target}")
