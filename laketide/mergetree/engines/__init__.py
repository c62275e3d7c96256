"""Merge engines: how the versions of one primary key combine (merge-engine option).

Paimon: mergetree.compact.{Deduplicate,PartialUpdate,Aggregate,FirstRow}MergeFunction
"""

from __future__ import annotations

from laketide.exceptions import UnsupportedFeatureError
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeFunction, MergeSpec
from laketide.options import CoreOptions, MergeEngine
from laketide.schema.table_schema import TableSchema

__all__ = ["merge_spec_for", "merge_function_for", "check_writable"]


def merge_spec_for(schema: TableSchema) -> MergeSpec:
    options = CoreOptions(schema.options)
    return MergeSpec(
        key_names=tuple(schema.trimmed_primary_keys),
        sequence_fields=tuple(options.sequence_field),
        sequence_descending=options.raw("sequence.field.sort-order") == "descending",
    )


def merge_function_for(schema: TableSchema) -> MergeFunction:
    """The merge function of a primary-key table, used alike by writers, readers and compaction."""
    engine = CoreOptions(schema.options).merge_engine
    spec = merge_spec_for(schema)
    if engine is MergeEngine.DEDUPLICATE:
        return DeduplicateMergeFunction(spec)
    raise UnsupportedFeatureError(f"merge-engine '{engine}' is not implemented yet (only 'deduplicate')")


def check_writable(schema: TableSchema, *, table_name: str) -> None:
    """Raise before writing when the table's merge engine cannot be written (yet)."""
    merge_function_for(schema)
