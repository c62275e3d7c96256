"""Merge engines: how the versions of one primary key combine (merge-engine option).

Paimon: mergetree.compact.{Deduplicate,PartialUpdate,Aggregate,FirstRow}MergeFunction
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import InvalidOptionError, RowKindError, UnsupportedFeatureError
from laketide.mergetree.engines.agg_functions import CountAgg, FieldAggregator, PrimaryKeyAgg
from laketide.mergetree.engines.aggregation import AggregateMergeFunction
from laketide.mergetree.engines.config import (
    AGG_REMOVE_ON_DELETE,
    aggregation_functions,
    aggregators_for,
    bool_option,
    check_engine_options,
    partial_update_config,
)
from laketide.mergetree.engines.first_row import FIRST_ROW_DELETE_HELP, FirstRowMergeFunction
from laketide.mergetree.engines.partial_update import DELETE_HELP, PartialUpdateMergeFunction
from laketide.io.kv import VALUE_KIND, RowKind
from laketide.mergetree.merge import DeduplicateMergeFunction, MergeFunction, MergeSpec
from laketide.options import MergeEngine
from laketide.schema.table_schema import TableSchema

__all__ = [
    "merge_spec_for",
    "merge_function_for",
    "check_writable",
    "check_engine_options",
    "prepare_rows",
    "AggregateMergeFunction",
    "PartialUpdateMergeFunction",
    "FirstRowMergeFunction",
]


def merge_spec_for(schema: TableSchema) -> MergeSpec:
    options = schema.core_options
    return MergeSpec(
        key_names=tuple(schema.trimmed_primary_keys),
        sequence_fields=tuple(options.sequence_field),
        sequence_descending=options.sequence_field_sort_order == "descending",
    )


def merge_function_for(schema: TableSchema) -> MergeFunction:
    """The merge function of a primary-key table, used alike by writers, readers and compaction."""
    options = schema.core_options
    engine = options.merge_engine
    spec = merge_spec_for(schema)
    if engine is MergeEngine.DEDUPLICATE:
        return DeduplicateMergeFunction(spec, ignore_delete=bool(options.ignore_delete))
    if engine is MergeEngine.PARTIAL_UPDATE:
        config = partial_update_config(schema)
        return PartialUpdateMergeFunction(spec, config=config,
                                          aggregators=aggregators_for(schema, config.aggregate_functions))
    if engine is MergeEngine.AGGREGATE:
        functions = {f: fn for f, fn in aggregation_functions(schema).items() if fn != PrimaryKeyAgg.name}
        return AggregateMergeFunction(
            spec, aggregators=aggregators_for(schema, functions),
            remove_record_on_delete=bool_option(options, AGG_REMOVE_ON_DELETE),
            ignore_delete=bool(options.ignore_delete), primary_keys=frozenset(schema.primary_keys),
        )
    if engine is MergeEngine.FIRST_ROW:
        if options.sequence_field:
            raise InvalidOptionError("Do not support use sequence.field on FIRST_ROW merge engine")
        return FirstRowMergeFunction(spec, ignore_delete=bool(options.ignore_delete))
    raise UnsupportedFeatureError(f"merge-engine '{engine}' is not implemented")


def check_writable(schema: TableSchema, *, table_name: str) -> None:
    """Raise before writing when the table's merge engine cannot be written (bad engine options)."""
    try:
        merge_function_for(schema)
    except InvalidOptionError as e:
        raise InvalidOptionError(f"Table {table_name}: {e}") from e


def prepare_rows(schema: TableSchema, rows: pa.Table, *, table_name: str) -> pa.Table:
    """Check the row kinds of rows about to be written against the merge engine; shape values it needs.

    Raises RowKindError for -U / -D rows the engine cannot take (before anything is written). ``count``
    columns become 1 per non-null value, so that pre-aggregated counts add up in every later merge.
    """
    if not schema.primary_keys or rows.num_rows == 0:
        return rows
    options = schema.core_options
    engine = options.merge_engine
    if engine is MergeEngine.DEDUPLICATE:
        return rows
    kinds = np.asarray(rows.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    retract = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
    has_retract = bool(retract.any()) and not options.ignore_delete
    merge = merge_function_for(schema)
    if isinstance(merge, FirstRowMergeFunction) and has_retract:
        raise RowKindError(f"Table {table_name}: {FIRST_ROW_DELETE_HELP}")
    if isinstance(merge, PartialUpdateMergeFunction):
        if has_retract and not merge.config.remove_record_on_delete and not merge.config.groups:
            raise RowKindError(f"Table {table_name}: {DELETE_HELP}")
        if has_retract:
            _check_group_retractions(merge, rows, retract, table_name)
        return _count_as_ones(rows, merge.aggregators)
    if isinstance(merge, AggregateMergeFunction):
        if has_retract:
            deletes_reset = merge.remove_record_on_delete
            taken = (kinds == RowKind.UPDATE_BEFORE) if deletes_reset else retract
            if taken.any():
                for agg in merge.aggregators.values():
                    if not agg.retractable and not agg.ignore_retract:
                        raise RowKindError(f"Table {table_name}: {agg.retract_error()}")
        return _count_as_ones(rows, merge.aggregators)
    return rows


def _check_group_retractions(
    merge: PartialUpdateMergeFunction, rows: pa.Table, retract: np.ndarray, table_name: str
) -> None:
    for g in merge.config.groups:
        touched = retract.copy()
        any_set = np.zeros(len(retract), dtype=bool)
        for f in g.ordering:
            any_set |= np.asarray(pc.is_valid(rows.column(f)).to_numpy(zero_copy_only=False), dtype=bool)
        touched &= any_set
        if not touched.any():
            continue
        for f in g.fields:
            agg = merge.aggregators.get(f)
            if agg is not None and not agg.retractable and not agg.ignore_retract:
                raise RowKindError(f"Table {table_name}: {agg.retract_error()}")


def _count_as_ones(rows: pa.Table, aggregators: dict[str, FieldAggregator]) -> pa.Table:
    for name, agg in aggregators.items():
        if isinstance(agg, CountAgg) and name in rows.column_names:
            i = rows.column_names.index(name)
            col = rows.column(name)
            ones = pc.if_else(pc.is_valid(col), pa.scalar(1, col.type), pa.scalar(None, col.type))
            rows = rows.set_column(i, rows.schema.field(i), ones)
    return rows
