"""Which options ``Table.copy`` lays over a table's schema, as Java's ``FileStoreTable.copy(dynamicOptions)`` does.

Read options (time travel, incremental ranges, consumers, read tuning) and the merge behaviour Java lets a copy
change: ``fields.<f>.*`` (aggregate functions, sequence groups, ...), ``ignore-delete`` and its engine-specific
spellings, ``sequence.field``. Options Java marks ``@Immutable`` (``merge-engine``, the remove-record-on-delete
switches, ``rowkind.field``, ...) are refused when the value differs from the schema's, with Java's message;
options that say where or how files are written (``bucket``, ``file.format``, ...) are refused too: a copy is for
reading, and a write through it must not disagree with the files.

Paimon: AbstractFileStoreTable#copy (checkImmutability, copyInternal), SchemaManager#checkAlterTableOption,
CoreOptions.IMMUTABLE_OPTIONS
"""

from __future__ import annotations

from collections.abc import Mapping

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from laketide.mergetree.engines.config import check_engine_options
from laketide.schema.field_options import check_field_options
from laketide.schema.table_schema import TableSchema

__all__ = ["READ_OPTION_PREFIXES", "check_dynamic_options"]

READ_OPTION_PREFIXES = ("scan.", "incremental-between", "consumer-id", "consumer.", "read.", "local-time-zone")

# Merge behaviour Java's copy() accepts (none of them is @Immutable).
_MERGE_KEYS = frozenset({
    "ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete",
    "sequence.field", "sequence.field.sort-order",
})
_MERGE_PREFIXES = ("fields.",)

# CoreOptions.IMMUTABLE_OPTIONS that concern merging: Java's copy() refuses a different value.
_IMMUTABLE_MERGE_KEYS = frozenset({
    "merge-engine", "partial-update.remove-record-on-delete", "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "sequence.snapshot-ordering",
    "force-lookup", "primary-key", "partition", "bucket-key",
})


def check_dynamic_options(schema: TableSchema, dynamic: Mapping[str, str], *, table_name: str) -> None:
    """Raise unless every key of ``dynamic`` may be laid over ``schema`` by a copy; the merged options must also
    pass the merge-engine checks a created table passes."""
    immutable = sorted(k for k, v in dynamic.items()
                       if k in _IMMUTABLE_MERGE_KEYS and schema.options.get(k) != v)
    if immutable:
        raise UnsupportedOptionError(
            f"Table {table_name}: Change '{immutable[0]}' is not supported yet: Paimon fixes "
            f"{', '.join(repr(k) for k in immutable)} when the table is created, also for dynamic options"
        )
    # A key set to the value the schema already has changes nothing (Java merges it silently).
    refused = sorted(k for k, v in dynamic.items() if schema.options.get(k) != v
                     and not (k.startswith(READ_OPTION_PREFIXES) or k in _MERGE_KEYS or k.startswith(_MERGE_PREFIXES)))
    if refused:
        raise InvalidOptionError(
            f"Table {table_name}: copy() takes read options ({', '.join(READ_OPTION_PREFIXES)}...) and merge "
            f"options (fields.<f>.*, ignore-delete, sequence.field) only, not {refused}; change table options with "
            f"alter()"
        )


def check_merged_schema(schema: TableSchema, *, table_name: str) -> None:
    """The merge-engine and per-column option checks of ``create_table`` on the copy's merged options."""
    check_field_options(schema.options, [(f.name, f.type) for f in schema.fields], table_name=table_name)
    try:
        check_engine_options(schema)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e
