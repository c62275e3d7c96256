"""A data file's statistics decoded to Python values, by current column (what ``$files`` and ``inspect`` show).

Paimon: SimpleStatsEvolution — stats are matched to today's columns by field id; a column dropped since is left
out, one added since has none. Damaged stats bytes decode to nothing rather than failing a listing.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from laketide.exceptions import SchemaError
from laketide.meta.binary_row import deserialize_binary_row
from laketide.meta.manifest import DataFileMeta
from laketide.schema.table_schema import TableSchema

__all__ = ["DECODE_ERRORS", "decode_key_range", "decode_value_stats"]

DECODE_ERRORS = (ValueError, IndexError, struct.error, UnicodeDecodeError, SchemaError)


def decode_key_range(file: DataFileMeta, schema: TableSchema) -> tuple[list[object], list[object]] | None:
    """The file's min and max primary key (trimmed key columns of ``schema``), or None without one."""
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]
    if not types or not file.min_key:
        return None
    try:
        return deserialize_binary_row(file.min_key, types), deserialize_binary_row(file.max_key, types)
    except DECODE_ERRORS:
        return None


def decode_value_stats(
    file: DataFileMeta, schema: TableSchema, names_by_id: Mapping[int, str],
) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """(null counts, mins, maxs) keyed by the current name (``names_by_id``) of each column the file has stats for;
    ``schema`` is the file's own schema."""
    fields = [schema.field(c) for c in file.stats_columns(schema.field_names)]
    try:
        lo = deserialize_binary_row(file.value_stats.min_values, [f.type for f in fields])
        hi = deserialize_binary_row(file.value_stats.max_values, [f.type for f in fields])
    except DECODE_ERRORS:
        lo = hi = [None] * len(fields)
    counts = file.value_stats.null_counts or ()
    nulls: dict[str, object] = {}
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    for i, f in enumerate(fields):
        name = names_by_id.get(f.id)
        if name is None:
            continue  # dropped since
        nulls[name] = counts[i] if i < len(counts) else None
        mins[name], maxs[name] = lo[i], hi[i]
    return nulls, mins, maxs
