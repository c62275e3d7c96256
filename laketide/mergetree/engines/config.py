"""The merge-engine options of a table, parsed and checked once (at table creation and when a merge is built).

Paimon: PartialUpdateMergeFunction.Factory, AggregateMergeFunction.Factory, schema.SchemaValidation
"""

from __future__ import annotations

from dataclasses import dataclass

from laketide.exceptions import InvalidOptionError
from laketide.mergetree.engines.agg_functions import (
    LAST_NON_NULL_VALUE,
    FieldAggregator,
    PrimaryKeyAgg,
    create_aggregator,
)
from laketide.mergetree.engines.agg_functions import bool_option
from laketide.options import CoreOptions, MergeEngine
from laketide.schema.table_schema import TableSchema
from laketide.types import (
    BigIntType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    LocalZonedTimestampType,
    SmallIntType,
    TimestampType,
    TimeType,
    TinyIntType,
    to_arrow_type,
)

__all__ = ["SequenceGroup", "PartialUpdateConfig", "partial_update_config", "aggregators_for", "bool_option"]

FIELDS_PREFIX = "fields."
SEQUENCE_GROUP_SUFFIX = ".sequence-group"
DEFAULT_AGG_KEY = "fields.default-aggregate-function"
PU_REMOVE_ON_DELETE = "partial-update.remove-record-on-delete"
PU_REMOVE_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"
AGG_REMOVE_ON_DELETE = "aggregation.remove-record-on-delete"

# The seed's list of types a sequence group may be ordered by.
_ORDERABLE = (DecimalType, TinyIntType, SmallIntType, IntType, BigIntType, FloatType, DoubleType, DateType, TimeType,
              TimestampType, LocalZonedTimestampType)


@dataclass(frozen=True, slots=True, kw_only=True)
class SequenceGroup:
    """``fields.<ordering...>.sequence-group = <fields>``: fields updated only by rows whose ordering is not older."""

    ordering: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialUpdateConfig:
    groups: tuple[SequenceGroup, ...]
    aggregate_functions: dict[str, str]  # protected field -> function name
    ignore_delete: bool
    remove_record_on_delete: bool
    remove_on_sequence_group: frozenset[str]  # ordering fields whose -D removes the whole row

    def group_of(self, field: str) -> SequenceGroup | None:
        return next((g for g in self.groups if field in g.fields or field in g.ordering), None)


def _field_agg_name(options: CoreOptions, field: str) -> str | None:
    return options.raw(f"fields.{field}.aggregate-function") or options.raw(DEFAULT_AGG_KEY)


def partial_update_config(schema: TableSchema) -> PartialUpdateConfig:
    """Sequence groups and per-field functions of a partial-update table; InvalidOptionError when inconsistent."""
    options = schema.core_options
    names = schema.field_names
    pks = set(schema.primary_keys)
    groups: list[SequenceGroup] = []
    owner: dict[str, str] = {}
    for key, value in sorted(options.to_map().items()):
        if not (key.startswith("fields") and key.endswith("sequence-group")):
            continue
        if not (key.startswith(FIELDS_PREFIX) and key.endswith(SEQUENCE_GROUP_SUFFIX)):
            raise InvalidOptionError(f"Option '{key}' is not 'fields.<ordering fields>.sequence-group'")
        ordering = tuple(f.strip() for f in key[len(FIELDS_PREFIX):-len(SEQUENCE_GROUP_SUFFIX)].split(","))
        protected = tuple(f.strip() for f in value.split(","))
        for f in (*ordering, *protected):
            if f not in names:
                raise InvalidOptionError(f"Option '{key}': field '{f}' can not be found in table schema {names}")
            if f in pks:
                raise InvalidOptionError(
                    f"Option '{key}': the sequence-group contains primary key field '{f}', which is not allowed"
                )
        for f in ordering:
            dtype = schema.field(f).type
            if not isinstance(dtype, _ORDERABLE):
                raise InvalidOptionError(
                    f"Option '{key}': sequence field '{f}' has type {dtype}; a sequence group is ordered by "
                    f"DECIMAL, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ"
                )
        for f in protected:
            if f in owner:
                raise InvalidOptionError(f"Field '{f}' is defined repeatedly by multiple groups: {owner[f]} and {key}")
            owner[f] = key
        groups.append(SequenceGroup(ordering=ordering, fields=tuple(f for f in protected if f not in ordering)))
    ordering_fields = {f for g in groups for f in g.ordering}
    protected_fields = {f for g in groups for f in g.fields}
    functions: dict[str, str] = {}
    for f in names:
        if f in pks or f in ordering_fields:
            continue
        fn = _field_agg_name(options, f)
        if fn is None:
            continue
        if fn != LAST_NON_NULL_VALUE and f not in protected_fields:
            raise InvalidOptionError(
                f"Field '{f}' uses aggregate function '{fn}' in a partial-update table: it must belong to a "
                f"sequence group ('fields.<seq>.sequence-group'); only last_non_null_value needs none"
            )
        functions[f] = fn
    ignore_delete = bool(options.ignore_delete)
    remove_on_delete = bool_option(options, PU_REMOVE_ON_DELETE)
    raw_group_delete = options.raw(PU_REMOVE_ON_SEQUENCE_GROUP)
    if remove_on_delete and ignore_delete:
        raise InvalidOptionError(f"'ignore-delete' and '{PU_REMOVE_ON_DELETE}' cannot both be enabled")
    if raw_group_delete and ignore_delete:
        raise InvalidOptionError(f"'ignore-delete' and '{PU_REMOVE_ON_SEQUENCE_GROUP}' cannot both be enabled")
    if remove_on_delete and groups:
        raise InvalidOptionError(f"'{PU_REMOVE_ON_DELETE}' cannot be combined with sequence groups")
    group_delete = frozenset(f.strip() for f in raw_group_delete.split(",")) if raw_group_delete else frozenset()
    if not group_delete <= ordering_fields:
        raise InvalidOptionError(
            f"Option '{PU_REMOVE_ON_SEQUENCE_GROUP}': {sorted(group_delete - ordering_fields)} must be sequence "
            f"fields of sequence groups"
        )
    return PartialUpdateConfig(
        groups=tuple(groups), aggregate_functions=functions, ignore_delete=ignore_delete,
        remove_record_on_delete=remove_on_delete, remove_on_sequence_group=group_delete,
    )


def aggregators_for(schema: TableSchema, functions: dict[str, str]) -> dict[str, FieldAggregator]:
    """Instantiate ``functions`` (field -> name) for ``schema``'s columns, checking each column's type."""
    options = schema.core_options
    out: dict[str, FieldAggregator] = {}
    for name, fn in functions.items():
        f = schema.field(name)
        out[name] = create_aggregator(fn, field=name, dtype=f.type, arrow_type=to_arrow_type(f.type), options=options)
    return out


def aggregation_functions(schema: TableSchema) -> dict[str, str]:
    """Function of every column of an aggregation table (Paimon: AggregateMergeFunction#getAggFuncName)."""
    options = schema.core_options
    sequence_fields = set(options.sequence_field)
    out: dict[str, str] = {}
    for f in schema.field_names:
        explicit = options.raw(f"fields.{f}.aggregate-function")
        if f in sequence_fields:
            if explicit is not None:
                raise InvalidOptionError(f"Should not define aggregation on sequence field: '{f}'")
            out[f] = "last_value"
        elif f in schema.primary_keys:
            out[f] = PrimaryKeyAgg.name
        else:
            out[f] = explicit or options.raw(DEFAULT_AGG_KEY) or LAST_NON_NULL_VALUE
    return out


def check_engine_options(schema: TableSchema) -> None:
    """Creation-time checks of a primary-key table's merge-engine options."""
    if not schema.primary_keys:
        return
    options = schema.core_options
    engine = options.merge_engine
    for f in options.sequence_field:
        if options.raw(f"fields.{f}.aggregate-function") is not None:
            raise InvalidOptionError(f"Should not define aggregation on sequence field: '{f}'")
    if engine is MergeEngine.FIRST_ROW and options.sequence_field:
        raise InvalidOptionError("Do not support use sequence.field on FIRST_ROW merge engine")
    if engine is MergeEngine.PARTIAL_UPDATE:
        config = partial_update_config(schema)
        aggregators_for(schema, config.aggregate_functions)
    elif engine is MergeEngine.AGGREGATE:
        functions = aggregation_functions(schema)
        bool_option(options, AGG_REMOVE_ON_DELETE)
        aggregators_for(schema, {f: fn for f, fn in functions.items() if fn != PrimaryKeyAgg.name})
