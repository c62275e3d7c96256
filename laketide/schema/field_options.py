"""Per-column options (``fields.<columns>.<suffix>``) must name columns the table has.

A misspelled column (``fields.pricee.aggregate-function``) would otherwise be kept and silently ignored: the column
falls back to the default function and the table aggregates wrongly. Java refuses it when a table is created or
altered ("Field pricee can not be found in table schema.", SchemaValidation#validateFieldsPrefix).

``<columns>`` is one column or a comma-separated list (``fields.a,b.sequence-group``). Java splits the key at
every dot, so it refuses columns whose names hold a dot; laketide accepts any split of the key whose column part
names existing columns, and otherwise reports the first segment as Java does.

Paimon: schema.SchemaValidation#validateFieldsPrefix
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from laketide.exceptions import InvalidOptionError
from laketide.types import DataType, RowType

__all__ = ["check_field_options"]

FIELDS_PREFIX = "fields."
DEFAULT_AGG_FUNCTION = "default-aggregate-function"
# Suffixes Java reads (CoreOptions, PartialUpdateMergeFunction); only used to spot a misspelled one. Dotted
# families (pk-vector.*, map.storage-layout, ...) are not checked for typos: Java keeps adding to them.
KNOWN_SUFFIXES = frozenset({
    "aggregate-function", "ignore-retract", "nested-key", "nested-key-null-strategy", "nested-sequence-field",
    "count-limit", "distinct", "list-agg-delimiter", "ts-field", "stats-mode", "sequence-group",
})


def check_field_options(options: Mapping[str, str], fields: Sequence[tuple[str, DataType]], *, table_name: str) -> None:
    """InvalidOptionError naming the table and the key for a ``fields.*`` option that names a missing column, a
    misspelled suffix, or a path into a ROW column's members (Java silently ignored those: PAIMON-6471)."""
    types = dict(fields)
    for key in options:
        if not key.startswith(FIELDS_PREFIX):
            continue
        rest = key[len(FIELDS_PREFIX):]
        if rest == DEFAULT_AGG_FUNCTION:
            continue
        split = _split(rest, types)
        if split is None:
            first = rest.split(".", 1)[0].split(",")
            missing = next((c for c in first if c not in types), first[0])
            raise InvalidOptionError(
                f"Table {table_name}: option {key!r} names field {missing!r}, which can not be found in the table "
                f"schema; columns are {list(types)} (a dropped column's options go with it: remove them in the same "
                f"alter)")
        columns, suffix = split
        if len(columns) == 1 and "." in suffix and isinstance(types[columns[0]], RowType):
            raise InvalidOptionError(
                f"Table {table_name}: option {key!r}: a nested-field path is not supported on ROW column "
                f"{columns[0]!r}")
        if "." not in suffix and suffix not in KNOWN_SUFFIXES:
            close = difflib.get_close_matches(suffix, sorted(KNOWN_SUFFIXES), n=1, cutoff=0.8)
            if close:
                raise InvalidOptionError(
                    f"Table {table_name}: unknown option {key!r} (did you mean "
                    f"'{FIELDS_PREFIX}{','.join(columns)}.{close[0]}'?)")


def _split(rest: str, types: Mapping[str, DataType]) -> tuple[list[str], str] | None:
    """(columns, suffix) for the first dot before which every comma-separated part is a column (suffix "" when the
    whole key names columns)."""
    at = rest.find(".")
    while at != -1:
        columns = rest[:at].split(",")
        if all(c in types for c in columns):
            return columns, rest[at + 1:]
        at = rest.find(".", at + 1)
    columns = rest.split(",")
    return (columns, "") if all(c in types for c in columns) else None
