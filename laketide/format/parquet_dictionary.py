"""Which columns of a Parquet file get dictionary encoding, decided from the rows being written.

Java's parquet-mr (and pyarrow by default) starts every column of every row group with a dictionary and falls
back to plain encoding when the dictionary stops paying (parquet-mr: ``encodedSize + dictionarySize >=
rawSize``; pyarrow: only when the dictionary page passes 1 MiB). On high-cardinality columns - unique keys,
``_SEQUENCE_NUMBER``, doubles, timestamps - the attempt is pure cost: in small row groups (primary-key files cut
one every 2 MiB) the dictionary never overflows, so each group stores a dictionary as large as the values plus
the indices (bigger and slower than plain), and in large ones it overflows and the work is thrown away.

So, unless ``parquet.enable.dictionary`` says otherwise, the writer asks here once per file, with the rows of its
first row group: a spread sample of each column gives the distinct-value count, from which the distinct values
of a whole row group are estimated (uniform values assumed: a skewed column looks smaller, i.e. keeps its
dictionary, the safe side). A column keeps its dictionary when Java's criterion says it would pay and it fits
in one dictionary page. Where the sample cannot judge (null-only or empty columns, nested columns, Arrow
dictionary input, types without a distinct count) the column keeps the dictionary, as before.

The result is plain Parquet either way (a per-column-chunk choice of encodings every reader handles).

Paimon: RowDataParquetBuilder (``parquet.enable.dictionary``), parquet-mr DictionaryValuesWriter
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from laketide.exceptions import InvalidOptionError
from laketide.format.ascending_take import take_column

__all__ = ["DICTIONARY_KEY", "SAMPLE_ROWS", "explicit_dictionary", "dictionary_columns", "keeps_dictionary"]

DICTIONARY_KEY = "parquet.enable.dictionary"
# Rows sampled per column: enough to tell a few thousand distinct values from unique ones, ~0.1 ms per column.
SAMPLE_ROWS = 4096
# pyarrow's dictionary page limit (WriterProperties dictionary_pagesize_limit): a bigger dictionary falls back.
DICTIONARY_PAGE_BYTES = 1024 * 1024
# Plain encoding stores a 4-byte length before each string / binary value.
_LENGTH_PREFIX_BYTES = 4


def explicit_dictionary(options: Mapping[str, str]) -> bool | None:
    """``parquet.enable.dictionary`` when the table sets it (Java's key: true = every column, false = none);
    None when unset: the writer decides per column."""
    raw = options.get(DICTIONARY_KEY)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"{DICTIONARY_KEY} must be true or false, got {raw!r}")
    return value == "true"


def dictionary_columns(table: pa.Table, *, group_rows: int) -> list[str]:
    """The Parquet column paths (leaves, as pyarrow's ``use_dictionary`` takes them) to dictionary-encode for
    a file whose row groups hold ``group_rows`` rows, judged from ``table`` (its first rows)."""
    paths: list[str] = []
    for f, column in zip(table.schema, table.columns, strict=True):
        if keeps_dictionary(column, group_rows=group_rows):
            paths.extend(_leaf_paths(f) if _is_nested(f.type) else [f.name])
    return paths


def keeps_dictionary(column: pa.ChunkedArray | pa.Array, *, group_rows: int) -> bool:
    """Whether a dictionary is estimated to pay for this column in row groups of ``group_rows`` rows."""
    t = column.type
    if pa.types.is_dictionary(t) or _is_nested(t) or pa.types.is_boolean(t):
        return True  # already dictionary data / leaves the sample cannot judge / no Parquet dictionary exists
    width = _fixed_width(t)
    if width is None and not _is_bytes_like(t):
        return True
    n = len(column)
    if n == 0:
        return True
    try:
        # Rows spread over the whole input (a prefix of sorted or clustered data would look too repetitive).
        sample = column if n <= SAMPLE_ROWS else take_column(column, _spread(n))
        valid = len(sample) - sample.null_count
        if valid == 0:
            return True  # nothing to judge: a dictionary of no values costs nothing
        distinct = pc.count_distinct(sample, mode="only_valid").as_py()
        if width is None:
            lengths = pc.sum(pc.binary_length(sample)).as_py() or 0
            width = lengths / valid + _LENGTH_PREFIX_BYTES
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return True  # a type without these kernels: leave the choice to the encoder, as Java does
    if distinct >= valid:
        return False  # no value repeats in the sample: unique or nearly so
    values = max(1, group_rows)
    in_group = _expected_distinct(_estimate_distinct(distinct, valid), values)
    dictionary_bytes = in_group * width
    index_bytes = values * max(1, math.ceil(math.log2(in_group + 1))) / 8
    return dictionary_bytes <= DICTIONARY_PAGE_BYTES and dictionary_bytes + index_bytes < values * width


def _spread(n: int) -> np.ndarray:
    """SAMPLE_ROWS increasing row positions spread evenly over ``n`` > SAMPLE_ROWS rows."""
    return (np.arange(SAMPLE_ROWS, dtype=np.float64) * (n / SAMPLE_ROWS)).astype(np.int64)


def _estimate_distinct(seen: int, sampled: int) -> float:
    """Distinct values D of a uniform column whose sample of ``sampled`` rows held ``seen`` distinct ones:
    solves seen = D * (1 - exp(-sampled / D)) (increasing in D, from below ``seen`` towards ``sampled``)."""
    lo, hi = float(seen), float(seen)
    while _expected_distinct(hi, sampled) < seen and hi < 1e15:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if _expected_distinct(mid, sampled) < seen:
            lo = mid
        else:
            hi = mid
    return hi


def _expected_distinct(distinct: float, rows: int) -> float:
    """Expected distinct values among ``rows`` uniform draws from ``distinct`` values."""
    return distinct * -math.expm1(-rows / distinct)


def _is_nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_struct(t) or pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
                or pa.types.is_fixed_size_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def _is_bytes_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t))


def _fixed_width(t: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width type (as Arrow holds it; near enough to Parquet's plain width)."""
    try:
        bits = int(t.bit_width)
    except ValueError:
        return None
    return max(1, bits // 8)


@functools.lru_cache(maxsize=256)
def _leaf_paths(f: pa.Field) -> tuple[str, ...]:
    """The Parquet leaf column paths of a nested field, as pyarrow's writer names them (``s.x``,
    ``l.list.element``, ``m.key_value.key``): asked from the writer itself (an empty file), not re-derived."""
    out = io.BytesIO()
    schema = pa.schema([f])
    with pq.ParquetWriter(out, schema, store_schema=False) as writer:
        writer.write_table(schema.empty_table())
    meta = pq.ParquetFile(io.BytesIO(out.getvalue())).metadata
    return tuple(meta.schema.column(i).path for i in range(meta.num_columns))
