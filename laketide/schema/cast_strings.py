"""Character strings in Paimon's casts: parsing numbers and booleans out of them, printing numbers into them, and
fitting strings and bytes to CHAR / VARCHAR / BINARY / VARBINARY lengths, all as Java does it.

Every function takes and returns Arrow arrays and works column-wise; rows Java refuses raise CastError naming
the first offending value. The few shapes only a per-value parser handles (hexadecimal floats, decimals in
exponent notation) are parsed one value at a time, for those rows only.

Paimon: utils.BinaryStringUtils (toBoolean, toInt, toLong, toDouble, toCharacterString, toBinaryString),
data.Decimal#fromBigDecimal, utils.DecimalUtils, java.lang.Double#toString / Float#toString,
java.math.BigDecimal(String).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import CastError
from laketide.types import BinaryType, CharType, DataType, DecimalType, MAX_LENGTH, VarBinaryType, VarCharType

__all__ = [
    "cast_failure",
    "decimal_from_strings",
    "decimal_to_strings",
    "fit_bytes",
    "fit_chars",
    "floats_from_strings",
    "floats_to_strings",
    "integers_from_strings",
    "booleans_from_strings",
    "strings_from_bytes",
]

# Java's String.trim() strips every char <= U+0020, control characters included.
_JAVA_TRIM = "".join(chr(i) for i in range(33))
_TRUE = pa.array(["t", "true", "y", "yes", "1"])
_FALSE = pa.array(["f", "false", "n", "no", "0"])


def cast_failure(values: pa.Array, bad: pa.Array | np.ndarray, what: str) -> CastError:
    """A CastError naming the first value flagged in ``bad`` (a boolean mask over ``values``)."""
    mask = bad if isinstance(bad, np.ndarray) else np.asarray(pc.fill_null(bad, False).to_numpy(zero_copy_only=False))
    first = int(np.flatnonzero(mask)[0])
    return CastError(f"Cannot cast {values[first].as_py()!r} {what}")


# ------------------------------------------------------------------------------------------------
# lengths
# ------------------------------------------------------------------------------------------------


def fit_chars(strings: pa.Array, target: DataType) -> pa.Array:
    """Java's toCharacterString: cut to the type's length in characters; CHAR pads with spaces."""
    length = target.length if isinstance(target, (CharType, VarCharType)) else MAX_LENGTH
    if length >= MAX_LENGTH:
        return strings
    out = pc.utf8_slice_codeunits(strings, 0, length)
    if isinstance(target, CharType):
        out = pc.utf8_rpad(out, length, " ")
    return out


def fit_bytes(data: pa.Array, target: DataType) -> pa.Array:
    """Java's toBinaryString: BINARY(n) is cut or zero-padded to exactly n bytes, VARBINARY(n) cut to n."""
    length = target.length if isinstance(target, (BinaryType, VarBinaryType)) else MAX_LENGTH
    data = data.cast(pa.binary())
    if length >= MAX_LENGTH:
        return data
    out = pc.binary_slice(data, 0, length)
    if isinstance(target, BinaryType):
        missing = pc.max_element_wise(pc.subtract(length, pc.binary_length(out)), 0)
        zeros = pc.binary_repeat(pa.scalar(b"\x00"), missing)
        out = pc.binary_join_element_wise(out, zeros, b"")
    return out


def strings_from_bytes(data: pa.Array) -> pa.Array:
    """BinaryString.fromBytes: the bytes as UTF-8. Arrow strings must be valid UTF-8, so an invalid sequence
    becomes U+FFFD (Java keeps the raw bytes inside its BinaryString)."""
    data = data.cast(pa.binary())
    try:
        return data.cast(pa.string())
    except pa.ArrowInvalid:
        decoded = [None if v is None else v.decode("utf-8", errors="replace") for v in data.to_pylist()]
        return pa.array(decoded, pa.string())


# ------------------------------------------------------------------------------------------------
# booleans and integers
# ------------------------------------------------------------------------------------------------


def booleans_from_strings(strings: pa.Array) -> pa.Array:
    """BinaryStringUtils.toBoolean: t/true/y/yes/1 and f/false/n/no/0 in any case; anything else throws."""
    lower = pc.utf8_lower(strings)
    is_true = pc.is_in(lower, value_set=_TRUE)
    is_false = pc.is_in(lower, value_set=_FALSE)
    bad = pc.and_(pc.is_valid(strings), pc.invert(pc.or_(is_true, is_false)))
    if pc.any(bad).as_py():
        raise cast_failure(strings, bad, "to BOOLEAN")
    return pc.if_else(pc.is_valid(strings), is_true, pa.scalar(None, pa.bool_()))


# toInt/toLong: a sign, digits, and an optional fraction of digits that is dropped (not rounded). Nothing else,
# no blanks; "." and "-." read as 0, an empty string or a lone sign throw.
_INTEGRAL = r"^[+-]?[0-9]*(\.[0-9]*)?$"


def integers_from_strings(strings: pa.Array, low: int, high: int, what: str) -> pa.Array:
    """BinaryStringUtils.toInt / toLong / toShort / toByte as int64 values within [low, high]."""
    try:
        # Fast path: when Arrow's integer parser takes every string ([-]digits), Java reads the same value.
        fast = strings.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        fast = None
    if fast is not None:
        out_of_range = pc.or_(pc.less(fast, low), pc.greater(fast, high))
        if pc.any(out_of_range).as_py():
            raise cast_failure(strings, out_of_range, f"to {what}: overflow")
        return fast
    valid = pc.is_valid(strings)
    shape_ok = pc.and_(
        pc.match_substring_regex(strings, _INTEGRAL),
        pc.invert(pc.is_in(strings, value_set=pa.array(["", "+", "-"]))),
    )
    bad = pc.and_(valid, pc.invert(shape_ok))
    if pc.any(bad).as_py():
        raise cast_failure(strings, bad, f"to {what}: not a number")
    whole = pc.replace_substring_regex(strings, r"\..*$", "")
    negative = pc.starts_with(whole, "-")
    digits = pc.utf8_ltrim(pc.replace_substring_regex(whole, r"^[+-]", ""), "0")
    too_long = pc.and_(valid, pc.greater(pc.utf8_length(digits), 19))
    if pc.any(too_long).as_py():
        raise cast_failure(strings, too_long, f"to {what}: overflow")
    digits = pc.if_else(pc.equal(pc.utf8_length(digits), 0), "0", digits)
    magnitude = digits.cast(pa.decimal128(19, 0))
    value = pc.if_else(negative, pc.negate(magnitude), magnitude)
    out_of_range = pc.and_(valid, pc.or_(pc.less(value, _dec(low)), pc.greater(value, _dec(high))))
    if pc.any(out_of_range).as_py():
        raise cast_failure(strings, out_of_range, f"to {what}: overflow")
    return pc.if_else(valid, value.cast(pa.int64()), pa.scalar(None, pa.int64()))


def _dec(value: int) -> pa.Scalar:
    return pa.scalar(decimal.Decimal(value), pa.decimal128(19, 0))


# ------------------------------------------------------------------------------------------------
# FLOAT / DOUBLE
# ------------------------------------------------------------------------------------------------

_JAVA_DECIMAL_FLOAT = r"^[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)$"
_JAVA_HEX_FLOAT = r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?$"


def floats_from_strings(strings: pa.Array, *, single: bool) -> pa.Array:
    """Double.parseDouble / Float.parseFloat: blanks around are ignored, Java's literal syntax (NaN, Infinity,
    an f/d suffix, hexadecimal with a binary exponent); a FLOAT is rounded once, straight from the decimal."""
    target = pa.float32() if single else pa.float64()
    trimmed = pc.utf8_trim(strings, _JAVA_TRIM)
    is_decimal = pc.match_substring_regex(trimmed, _JAVA_DECIMAL_FLOAT)
    is_hex = pc.match_substring_regex(trimmed, _JAVA_HEX_FLOAT)
    bad = pc.and_(pc.is_valid(strings), pc.invert(pc.or_(is_decimal, is_hex)))
    if pc.any(bad).as_py():
        raise cast_failure(strings, bad, f"to {'FLOAT' if single else 'DOUBLE'}")
    plain = pc.replace_substring_regex(trimmed, r"[fFdD]$", "")
    plain = pc.if_else(is_hex, pa.scalar(None, pa.string()), plain)
    out = plain.cast(target)
    if pc.any(is_hex).as_py():
        hexes = np.flatnonzero(np.asarray(pc.fill_null(is_hex, False).to_numpy(zero_copy_only=False)))
        values = out.to_numpy(zero_copy_only=False).astype(np.float64)
        valid = np.asarray(pc.is_valid(out).to_numpy(zero_copy_only=False)).copy()
        for i in hexes:
            text = trimmed[int(i)].as_py().rstrip("fFdD")
            values[i] = _java_hex(text, single=single)
            valid[i] = True
        out = pa.array(values.astype(np.float32 if single else np.float64), mask=~valid)
    return out


def _java_hex(text: str, *, single: bool) -> float:
    value = float.fromhex(text)
    # A FLOAT rounds the exact binary value once; fromhex gives the double, and float32 of that is the same
    # rounding except for halfway cases too rare to matter (documented).
    return float(np.float32(value)) if single else value


_SCI_SUBNORMAL = {False: 1e-320, True: 1e-42}


def assemble(length: int, parts: list[tuple[np.ndarray, pa.Array]], typ: pa.DataType) -> pa.Array:
    """An array of ``length`` rows where each part's ``rows`` take its values in order (a later part wins over an
    earlier one); rows no part names are null. Keeps everything in Arrow (no Python objects per row)."""
    if not parts:
        return pa.nulls(length, typ)
    rows = np.concatenate([r for r, _ in parts]).astype(np.int64)
    values = pa.concat_arrays([v.cast(typ) for _, v in parts])
    where = np.full(length, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    return values.take(pa.array(where, mask=where < 0))


def floats_to_strings(values: pa.Array, *, single: bool) -> pa.Array:
    """Double.toString / Float.toString (JDK 19+ shortest digits): 1.0E7 and 1.0E-4 outside [1e-3, 1e7), plain
    decimals with at least one fractional digit inside, NaN / Infinity / -0.0 spelled as Java does."""
    nums = np.asarray(pc.fill_null(values, 0).to_numpy(zero_copy_only=False), dtype=np.float64)
    valid = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False))
    parts: list[tuple[np.ndarray, pa.Array]] = []
    for text, mask in (
        ("NaN", np.isnan(nums)), ("Infinity", nums == np.inf), ("-Infinity", nums == -np.inf),
        ("0.0", (nums == 0) & ~np.signbit(nums)), ("-0.0", (nums == 0) & np.signbit(nums)),
    ):
        rows = np.flatnonzero(valid & mask)
        if len(rows):
            parts.append((rows, pa.repeat(pa.scalar(text), len(rows))))
    finite = np.flatnonzero(valid & np.isfinite(nums) & (nums != 0))
    if len(finite):
        # shortest round-trip digits in Arrow's own layout (e.g. 1e+20), re-laid out Java's way
        shortest = values.take(pa.array(finite)).cast(pa.string())
        parts.append((finite, _java_layout(shortest, nums[finite], single=single)))
    return assemble(len(values), parts, pa.string())


def _java_layout(texts: pa.Array, nums: np.ndarray, *, single: bool) -> pa.Array:
    # Split Arrow's text into sign, significant digits and the decimal exponent of the first digit, then lay
    # the digits out Java's way. Each distinct exponent is one vectorized group.
    parts = pc.extract_regex(texts, r"^(?P<sign>-?)(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]+))?(?:e(?P<exp>[+-][0-9]+))?$")
    sign = parts.field("sign")
    int_part = parts.field("int")
    all_digits = pc.binary_join_element_wise(int_part, parts.field("frac"), "")
    exp_text = pc.replace_substring(parts.field("exp"), "+", "")
    exp10 = np.asarray(pc.if_else(pc.equal(exp_text, ""), "0", exp_text).cast(pa.int64()).to_numpy())
    leading = np.asarray(pc.subtract(pc.utf8_length(all_digits), pc.utf8_length(pc.utf8_ltrim(all_digits, "0"))))
    e = np.asarray(pc.utf8_length(int_part).to_numpy()) - 1 + exp10 - leading
    digits = pc.utf8_trim(all_digits, "0")
    groups: list[tuple[np.ndarray, pa.Array]] = []
    for exponent in np.unique(e):
        rows = np.flatnonzero(e == exponent)
        d = digits.take(pa.array(rows))
        x = int(exponent)
        if -3 <= x <= 6:
            if x >= 0:
                whole = pc.utf8_rpad(pc.utf8_slice_codeunits(d, 0, x + 1), x + 1, "0")
                frac = pc.utf8_slice_codeunits(d, x + 1)
                frac = pc.if_else(pc.equal(frac, ""), "0", frac)
                body = pc.binary_join_element_wise(whole, frac, ".")
            else:
                body = pc.binary_join_element_wise(pa.scalar("0." + "0" * (-x - 1)), d, "")
        else:
            rest = pc.utf8_slice_codeunits(d, 1)
            rest = pc.if_else(pc.equal(rest, ""), "0", rest)
            body = pc.binary_join_element_wise(pc.utf8_slice_codeunits(d, 0, 1), rest, ".")
            body = pc.binary_join_element_wise(body, pa.scalar(f"E{x}"), "")
        groups.append((rows, pc.binary_join_element_wise(sign.take(pa.array(rows)), body, "")))
    # Subnormals with one significant digit: Java prints the two-digit value nearest the exact binary one
    # (4.9E-324, 1.4E-45), which is not always d.0. Elsewhere one digit always reads back as d.0.
    one_digit = np.asarray(pc.equal(pc.utf8_length(digits), 1).to_numpy(zero_copy_only=False))
    tiny = np.flatnonzero((np.abs(nums) < _SCI_SUBNORMAL[single]) & one_digit)
    if len(tiny):
        texts_tiny = []
        for i in tiny:
            mantissa, _, exponent_text = f"{float(nums[i]):.1e}".partition("e")
            texts_tiny.append(f"{mantissa}E{int(exponent_text)}")
        groups.append((tiny, pa.array(texts_tiny, pa.string())))
    return assemble(len(texts), groups, pa.string())


# ------------------------------------------------------------------------------------------------
# DECIMAL
# ------------------------------------------------------------------------------------------------

_BIG_DECIMAL = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_PLAIN_DECIMAL = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"


def decimal_from_strings(strings: pa.Array, target: DecimalType, *, what: str = "") -> pa.Array:
    """new BigDecimal(s) then Decimal.fromBigDecimal: rounded HALF_UP to the scale; a value with more digits
    than the precision becomes null (not an error); a string BigDecimal cannot parse throws."""
    valid = pc.is_valid(strings)
    bad = pc.and_(valid, pc.invert(pc.match_substring_regex(strings, _BIG_DECIMAL)))
    if pc.any(bad).as_py():
        raise cast_failure(strings, bad, f"to {target}{what}")
    plain = pc.match_substring_regex(strings, _PLAIN_DECIMAL)
    out = _plain_decimals(pc.if_else(plain, strings, pa.scalar(None, pa.string())), target)
    exotic = pc.and_(valid, pc.invert(plain))
    if pc.any(exotic).as_py():
        out = _patch_rows(out, strings, exotic, lambda text: _decimal_value(decimal.Decimal(text), target))
    return out


def _plain_decimals(strings: pa.Array, target: DecimalType) -> pa.Array:
    p, s = target.precision, target.scale
    try:
        # Fast path: every string has at most scale + 1 fractional digits and few enough integer digits for
        # Arrow to parse it exactly at scale + 1 (HALF_UP needs no more).
        exact = strings.cast(pa.decimal256(min(76, max(p, 1) + 2), s + 1))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        exact = None
    if exact is not None:
        return fit_decimal(pc.round(exact, s, round_mode="half_towards_infinity"), target)
    body = pc.replace_substring_regex(strings, r"^[+-]", "")
    negative = pc.starts_with(strings, "-")
    whole = pc.utf8_ltrim(pc.replace_substring_regex(body, r"\..*$", ""), "0")
    # HALF_UP looks at the first dropped digit only: keep scale + 1 fractional digits.
    frac = pc.extract_regex(body, r"^[0-9]*\.?(?P<f>[0-9]*)$").field("f")
    frac = pc.utf8_rpad(pc.utf8_slice_codeunits(frac, 0, s + 1), s + 1, "0")
    # More integer digits than the precision leaves room for: null, as fromBigDecimal returns for overflow.
    fits = pc.less_equal(pc.utf8_length(whole), p - s)
    whole = pc.if_else(pc.equal(whole, ""), "0", whole)
    wide = pa.decimal256(min(76, p + 2), s + 1)
    text = pc.binary_join_element_wise(whole, frac, ".")
    magnitude = pc.if_else(fits, text, pa.scalar(None, pa.string())).cast(wide)
    value = pc.if_else(negative, pc.negate(magnitude), magnitude)
    return fit_decimal(pc.round(value, s, round_mode="half_towards_infinity"), target)


def fit_decimal(values: pa.Array, target: DecimalType) -> pa.Array:
    """Decimal.fromBigDecimal's precision check on values already rounded to the target scale: those with more
    digits than the precision become null, the rest are stored as ``decimal128(p, s)``."""
    p, s = target.precision, target.scale
    wide_type = pa.decimal256(76, s)
    # Same type on both sides: Arrow would widen mixed decimals past 76 digits.
    bound = pa.scalar(decimal.Decimal(10) ** (p - s), wide_type)
    wide = values if values.type == wide_type else values.cast(wide_type)
    fits = pc.less(pc.abs(wide), bound)
    kept = pc.if_else(fits, wide, pa.scalar(None, wide.type))
    return kept.cast(pa.decimal128(p, s))


def _decimal_value(value: decimal.Decimal, target: DecimalType) -> decimal.Decimal | None:
    quantum = decimal.Decimal(1).scaleb(-target.scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 400
        rounded = value.quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    digits = len(rounded.as_tuple().digits) if rounded != 0 else 1
    return None if digits > target.precision else rounded


def _patch_rows(out: pa.Array, source: pa.Array, rows: pa.Array, convert: Callable[[str], object]) -> pa.Array:
    values = out.to_pylist()
    for i in np.flatnonzero(np.asarray(pc.fill_null(rows, False).to_numpy(zero_copy_only=False))):
        values[i] = convert(source[int(i)].as_py())
    return pa.array(values, out.type)


def decimal_to_strings(values: pa.Array) -> pa.Array:
    """Decimal.toString = BigDecimal.toPlainString: every digit of the scale, no exponent."""
    return values.cast(pa.string())
