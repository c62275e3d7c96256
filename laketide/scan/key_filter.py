"""A primary-key predicate pushed below the merge: row groups pruned by key statistics, rows filtered per file.

Every version of a key satisfies a predicate on key columns alike, so rows (and whole row groups) that fail it
can be dropped before the merge without resurrecting an older version: the merge then sees only candidate keys.
A predicate on value columns never comes here (it must run after the merge).

Row groups are tested with the statistics of the ``_KEY_<k>`` copies (or the value column ``k`` in thin-mode
files) of key columns whose type the file shares with the read schema, for types whose Parquet statistics read
back as comparable Python values; anything else is unknown and keeps the row group.

Paimon: KeyValueFileStoreScan (key filter pushed to files), parquet row-group filtering (RowGroupFilter)
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from laketide.expr import (
    FieldStats,
    Leaf,
    Op,
    Predicate,
    pick_fields,
    referenced_fields,
    split_and,
    to_arrow_expression,
)
from laketide.io.kv import KEY_PREFIX
from laketide.scan.stats_test import StatsTest
from laketide.types import (
    BigIntType,
    CharType,
    DataType,
    DateType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

__all__ = ["KeyFilter"]

# Types whose row-group min / max pyarrow returns as exact, comparable Python values (int, str, date).
_STATS_TYPES = (TinyIntType, SmallIntType, IntType, BigIntType, CharType, VarCharType, DateType)

StatsOf = Callable[[str], "FieldStats | None"]


@dataclass(frozen=True, slots=True)
class KeyFilter:
    """The part of a read predicate on primary-key columns, as a row-group test and an Arrow filter."""

    predicate: Predicate  # names only key columns of the read schema
    expression: pc.Expression
    test: StatsTest
    # ``k = v`` / ``k IN (...)`` conjuncts as (column, value set): masks by is_in, without an Acero plan per batch
    value_sets: tuple[tuple[str, pa.Array], ...] | None = None
    # ``k < v`` / ``k <= v`` / ``k > v`` / ``k >= v`` / ``=`` / ``IN`` conjuncts on exactly typed values, as
    # (column, op, value or values): a mask from compute kernels instead of an Acero plan per batch (~1 ms each)
    comparisons: tuple[tuple[str, Op, pa.Scalar | pa.Array], ...] | None = None

    @staticmethod
    def of(predicate: Predicate | None, *, key_names: Sequence[str], schema: pa.Schema) -> KeyFilter | None:
        """The key part of ``predicate`` (None when it constrains no key column)."""
        if predicate is None or not key_names:
            return None
        picked = pick_fields(predicate, set(key_names))
        if picked is None:
            return None
        return KeyFilter(predicate=picked, expression=to_arrow_expression(picked, schema=schema),
                         test=StatsTest(picked), value_sets=_value_sets(picked, schema),
                         comparisons=_comparisons(picked, schema))

    @property
    def fields(self) -> set[str]:
        return referenced_fields(self.predicate)

    def row_group_test(
        self, file_columns: Mapping[str, str], types: Mapping[str, DataType]
    ) -> Callable[[StatsOf, int], bool]:
        """A test for the row groups of one file.

        ``file_columns`` maps a key column (read-schema name) to its name in the file, for the key columns the
        file holds with their current type; ``types`` gives the columns' types.
        """
        usable = {name: col for name, col in file_columns.items()
                  if name in self.fields and isinstance(types[name], _STATS_TYPES)}

        def keep(stats_of: StatsOf, num_rows: int) -> bool:
            if not usable or num_rows < 0:
                return True
            stats: dict[str, FieldStats] = {}
            for name, col in usable.items():
                found = stats_of(KEY_PREFIX + col) or stats_of(col)
                if found is not None:
                    stats[name] = found
            return not stats or self.test.may_match(stats, num_rows)

        return keep

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of ``batch`` (in the read schema) whose key satisfies the predicate."""
        if self.value_sets is None:
            if self.comparisons is None:
                return batch.filter(self.expression)
            return batch.filter(_comparison_mask(batch, self.comparisons))
        mask = None
        for name, values in self.value_sets:
            hit = pc.is_in(batch.column(name), value_set=values)
            mask = hit if mask is None else pc.and_(mask, hit)
        return batch.filter(mask)


# Python kinds of literals that convert to these Arrow types exactly (bool is not an int here).
_EXACT_KINDS: tuple[tuple[Callable[[pa.DataType], bool], type], ...] = (
    (pa.types.is_integer, int), (pa.types.is_string, str), (pa.types.is_large_string, str),
    (pa.types.is_binary, bytes), (pa.types.is_date32, _dt.date),
)


def _value_sets(p: Predicate, schema: pa.Schema) -> tuple[tuple[str, pa.Array], ...] | None:
    """Each conjunct of ``p`` as (column, values) when all are ``=`` / ``IN`` on exactly typed values, else None."""
    found = _comparisons(p, schema)
    if found is None or any(op not in (Op.EQ, Op.IN) for _, op, _ in found):
        return None
    return tuple((name, value if isinstance(value, pa.Array) else pa.array([value.as_py()], type=value.type))
                 for name, _, value in found)


_COMPARE: dict[Op, Callable[..., pa.Array]] = {
    Op.EQ: pc.equal, Op.LT: pc.less, Op.LE: pc.less_equal, Op.GT: pc.greater, Op.GE: pc.greater_equal,
}


def _comparisons(p: Predicate, schema: pa.Schema) -> tuple[tuple[str, Op, pa.Scalar | pa.Array], ...] | None:
    """Each conjunct of ``p`` as (column, op, value) when all are comparisons or ``IN`` on exactly typed values
    (the same values as ``_value_sets`` accepts: Arrow compares them as Java does), else None."""
    out: list[tuple[str, Op, pa.Scalar | pa.Array]] = []
    for c in split_and(p):
        if not isinstance(c, Leaf) or (c.op not in _COMPARE and c.op is not Op.IN) or c.field not in schema.names:
            return None
        t = schema.field(c.field).type
        kind = next((k for is_type, k in _EXACT_KINDS if is_type(t)), None)
        if kind is None or not c.literals or any(type(v) is not kind for v in c.literals):
            return None
        try:
            values = pa.array(c.literals, type=t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None  # a value out of the column's range: the expression says what that means
        out.append((c.field, c.op, values if c.op is Op.IN else values[0]))
    return tuple(out)


def _comparison_mask(batch: pa.RecordBatch, comparisons: tuple[tuple[str, Op, pa.Scalar | pa.Array], ...]
                     ) -> pa.Array:
    mask = None
    for name, op, value in comparisons:
        column = batch.column(name)
        hit = pc.is_in(column, value_set=value) if op is Op.IN else _COMPARE[op](column, value)
        mask = hit if mask is None else pc.and_(mask, hit)
    return pc.fill_null(mask, False)
