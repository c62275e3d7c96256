"""Field aggregate functions of the aggregation and partial-update merge engines.

Each function has two faces. The scalar one (``agg`` / ``agg_reversed`` / ``retract``, on Python values) is Paimon's
``FieldAggregator`` contract and serves the rare sequential paths. The vectorized one (``aggregate``) reduces the
active rows of every key segment at once, oldest first: numpy ``reduceat`` or an index per segment plus one
``take`` for the common functions. Functions Arrow has no kernel for (merge_map, nested_update, rbm32/64,
theta_sketch, collect with distinct or retractions, listagg with distinct, product with retractions) fold the
segments that really need merging in Python, one segment at a time; a segment holding a single row is that row.

Paimon: mergetree.compact.aggregate.Field*Agg, aggregate.factory.Field*AggFactory
"""

from __future__ import annotations

import decimal
from abc import ABC
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import InvalidOptionError, MergeEngineError, UnsupportedFeatureError
from laketide.mergetree.engines._kernels import Segments, take_or_null, valid_mask
from laketide.options import CoreOptions
from laketide.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    DataType,
    DecimalType,
    IntType,
    MapType,
    MultisetType,
    RowType,
    SmallIntType,
    TinyIntType,
    VarBinaryType,
    VarCharType,
    MAX_LENGTH,
    is_numeric,
)

__all__ = ["FieldAggregator", "AGGREGATORS", "create_aggregator", "aggregator_class", "LAST_NON_NULL_VALUE"]

LAST_NON_NULL_VALUE = "last_non_null_value"

_INT_RANGES = {
    TinyIntType: (-(2**7), 2**7 - 1), SmallIntType: (-(2**15), 2**15 - 1),
    IntType: (-(2**31), 2**31 - 1), BigIntType: (-(2**63), 2**63 - 1),
}


class FieldAggregator(ABC):
    """How one column of a key's rows folds into one value (Paimon: FieldAggregator)."""

    name: ClassVar[str]
    retractable: ClassVar[bool] = False
    #: agg_reversed(acc, x) gives what agg(acc, x) gives: out-of-order rows need no special path.
    reversed_is_forward: ClassVar[bool] = False
    #: agg(None, x) is x: a segment with one row needs no merging.
    single_is_identity: ClassVar[bool] = True

    def __init__(self, *, field: str, dtype: DataType, arrow_type: pa.DataType, options: CoreOptions) -> None:
        self.field = field
        self.dtype = dtype
        self.arrow_type = arrow_type
        self.options = options
        self.ignore_retract = bool_option(options, f"fields.{field}.ignore-retract")

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        """None when the function takes ``dtype``, else what it takes."""
        return None

    # -- scalar semantics --------------------------------------------------------------------------------------
    def reset(self) -> None:  # noqa: B027 - a hook, a no-op unless the function keeps state across rows
        """Start a new key (stateful functions such as first_value)."""

    def agg(self, acc: Any, x: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        """Fold ``x`` from a row that is older than the accumulator (partial-update sequence groups)."""
        return self.agg(x, acc)

    def retract(self, acc: Any, x: Any) -> Any:
        raise self.retract_error()

    def apply_retract(self, acc: Any, x: Any) -> Any:
        return acc if self.ignore_retract else self.retract(acc, x)

    def retract_error(self) -> MergeEngineError:
        return MergeEngineError(
            f"Aggregate function '{self.name}' of field '{self.field}' does not support retraction (-U / -D rows); "
            f"set 'fields.{self.field}.ignore-retract' = 'true' to ignore retraction messages"
        )

    # -- vectorized --------------------------------------------------------------------------------------------
    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        """One value per segment from its ``active`` rows, oldest first; ``retract`` marks -U / -D rows."""
        return self._fold_python(values, segs, active=active, retract=retract)

    def _fold_python(
        self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray
    ) -> pa.Array:
        """Fold segments in Python; segments with one plain row (or none) are gathered without Python."""
        counts = segs.count_true(active)
        has_retract = segs.any(active & retract)
        single = (counts == 1) & ~has_retract if self.single_is_identity else np.zeros(segs.count, dtype=bool)
        base = take_or_null(values, np.where(single, segs.first_index(active), -1))
        todo = ~single & (counts > 0)
        multi = np.flatnonzero(todo)
        if multi.size == 0:
            return base
        act = np.flatnonzero(active & todo[segs.ids])
        parts = np.split(act, np.flatnonzero(np.diff(segs.ids[act])) + 1)
        py = values.take(pa.array(act, pa.int64())).to_pylist()
        rkind = retract[act]
        results: list[Any] = []
        pos = 0
        for part in parts:
            self.reset()
            acc = None
            for j in range(pos, pos + len(part)):
                acc = self.apply_retract(acc, py[j]) if rkind[j] else self.agg(acc, py[j])
            pos += len(part)
            results.append(acc)
        folded = pa.array(results, type=self.arrow_type)
        positions = np.arange(segs.count, dtype=np.int64)
        positions[multi] = segs.count + np.arange(len(multi))
        return pa.concat_arrays([base, folded]).take(pa.array(positions))


def bool_option(options: CoreOptions, key: str, default: bool = False) -> bool:
    raw = options.raw(key)
    if raw is None:
        return default
    lowered = raw.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidOptionError(f"Option '{key}' has invalid value {raw!r}: expected 'true' or 'false'")
    return lowered == "true"


def _numeric_problem(dtype: DataType) -> str | None:
    return None if is_numeric(dtype) else "a numeric type (DECIMAL, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE)"


# -- value pickers ---------------------------------------------------------------------------------------------
class LastNonNullValueAgg(FieldAggregator):
    name = "last_non_null_value"
    retractable = True

    def agg(self, acc: Any, x: Any) -> Any:
        return acc if x is None else x

    def retract(self, acc: Any, x: Any) -> Any:
        return None if x is not None else acc

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        idx = segs.last_index(active & valid_mask(values))
        # the newest non-null value wins; a retraction of it leaves null
        idx = np.where((idx >= 0) & retract[np.maximum(idx, 0)], -1, idx)
        return take_or_null(values, idx)


class LastValueAgg(FieldAggregator):
    name = "last_value"
    retractable = True

    def agg(self, acc: Any, x: Any) -> Any:
        return x

    def retract(self, acc: Any, x: Any) -> Any:
        return None

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        idx = segs.last_index(active)
        idx = np.where((idx >= 0) & retract[np.maximum(idx, 0)], -1, idx)
        return take_or_null(values, idx)


class FirstValueAgg(FieldAggregator):
    name = "first_value"

    def reset(self) -> None:
        self._initialized = False

    def agg(self, acc: Any, x: Any) -> Any:
        if not getattr(self, "_initialized", False):
            self._initialized = True
            return x
        return acc

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, segs.first_index(active))


class FirstNonNullValueAgg(FieldAggregator):
    name = "first_non_null_value"

    def reset(self) -> None:
        self._initialized = False

    def agg(self, acc: Any, x: Any) -> Any:
        if not getattr(self, "_initialized", False) and x is not None:
            self._initialized = True
            return x
        return acc

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, segs.first_index(active & valid_mask(values)))


# -- arithmetic ------------------------------------------------------------------------------------------------
class SumAgg(FieldAggregator):
    name = "sum"
    retractable = True
    reversed_is_forward = True

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return _numeric_problem(dtype)

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return self._checked(acc + x)

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return self._checked(-x) if acc is None and x is not None else acc
        return self._checked(acc - x)

    def _checked(self, value: Any) -> Any:
        bounds = _INT_RANGES.get(type(self.dtype))
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise MergeEngineError(f"sum of field '{self.field}' overflows {self.dtype}: {value}")
        return value

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        take = active & valid_mask(values)
        present = segs.any(take)
        if isinstance(self.dtype, DecimalType):
            signed = pc.if_else(pa.array(retract), pc.negate(values), values)
            masked = pc.if_else(pa.array(take), signed, pa.nulls(len(values), values.type))
            summed = _group_aggregate(masked, segs, "sum")
            try:
                return pc.cast(summed, self.arrow_type)
            except pa.ArrowInvalid as e:
                raise MergeEngineError(f"sum of field '{self.field}' overflows {self.dtype}: {e}") from e
        raw = values.to_numpy(zero_copy_only=False)
        if pa.types.is_floating(values.type):
            vals = np.where(take, np.nan_to_num(raw, nan=0.0) if values.null_count else raw, 0).astype(raw.dtype)
            vals = np.where(retract, -vals, vals)
            vals = np.where(take, vals, 0).astype(raw.dtype)
            out = np.add.reduceat(vals, segs.starts) if len(vals) else vals
        else:
            ints = np.where(take, np.nan_to_num(raw) if values.null_count else raw, 0).astype(np.int64)
            ints = np.where(retract, -ints, ints)
            out = np.add.reduceat(ints, segs.starts)
            self._check_int_sums(out, ints, segs)
        return pa.array(out, mask=~present).cast(self.arrow_type)

    def _check_int_sums(self, out: np.ndarray, ints: np.ndarray, segs: Segments) -> None:
        low, high = _INT_RANGES.get(type(self.dtype), _INT_RANGES[BigIntType])
        if isinstance(self.dtype, BigIntType):
            # int64 sums wrap silently: recheck in float, exactly (Python ints) only where it may have wrapped
            approx = np.add.reduceat(ints.astype(np.float64), segs.starts)
            suspect = np.flatnonzero(np.abs(approx) > 2.0**62)
            for s in suspect:
                total = sum(int(v) for v in ints[segs.starts[s]: segs.ends[s] + 1])
                if not low <= total <= high:
                    raise MergeEngineError(f"sum of field '{self.field}' overflows BIGINT: {total}")
            return
        bad = (out < low) | (out > high)
        if bad.any():
            raise MergeEngineError(f"sum of field '{self.field}' overflows {self.dtype}: {int(out[bad][0])}")


class CountAgg(SumAgg):
    """count: the number of non-null values; the writer turns each value into 1 so that counts add up."""

    name = "count"

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, (IntType, BigIntType)) else "INT or BIGINT"


class ProductAgg(FieldAggregator):
    name = "product"
    retractable = True
    reversed_is_forward = True

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return _numeric_problem(dtype)

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return self._checked(acc * x)

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return acc
        if isinstance(self.dtype, DecimalType):
            return (decimal.Decimal(acc) / decimal.Decimal(x)).quantize(decimal.Decimal(1).scaleb(-self.dtype.scale))
        if isinstance(acc, int):
            q = abs(acc) // abs(x)  # Java truncates toward zero
            return self._checked(q if (acc >= 0) == (x >= 0) else -q)
        return acc / x

    def _checked(self, value: Any) -> Any:
        bounds = _INT_RANGES.get(type(self.dtype))
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise MergeEngineError(f"product of field '{self.field}' overflows {self.dtype}: {value}")
        return value

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        if isinstance(self.dtype, DecimalType) or (active & retract).any():
            return self._fold_python(values, segs, active=active, retract=retract)
        take = active & valid_mask(values)
        raw = values.to_numpy(zero_copy_only=False)
        present = segs.any(take)
        if pa.types.is_floating(values.type):
            vals = np.where(take, np.nan_to_num(raw, nan=1.0), 1).astype(raw.dtype)
            out = np.multiply.reduceat(vals, segs.starts)
        else:
            ints = np.where(take, np.nan_to_num(raw) if values.null_count else raw, 1).astype(np.int64)
            approx = np.multiply.reduceat(np.abs(ints).astype(np.float64), segs.starts)
            low, high = _INT_RANGES[type(self.dtype)]
            if (approx > 2.0**62).any() or (approx > high).any():
                return self._fold_python(values, segs, active=active, retract=retract)
            out = np.multiply.reduceat(ints, segs.starts)
        return pa.array(out, mask=~present).cast(self.arrow_type)


def _group_aggregate(values: pa.Array, segs: Segments, func: str) -> pa.Array:
    table = pa.table({"g": pa.array(segs.ids), "v": values})
    out = table.group_by("g", use_threads=False).aggregate([("v", func)])
    order = pc.sort_indices(out.column("g"))
    return out.column(f"v_{func}").take(order).combine_chunks()


class _ExtremumAgg(FieldAggregator):
    reversed_is_forward = True
    _func: ClassVar[str]

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        if isinstance(dtype, (ArrayType, MapType, MultisetType, RowType)):
            return "a comparable type (CHAR, VARCHAR, DECIMAL, numeric, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ, ...)"
        return None

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return max(acc, x) if self._func == "max" else min(acc, x)

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        masked = values if active.all() else pc.if_else(pa.array(active), values, pa.nulls(len(values), values.type))
        return _group_aggregate(masked, segs, self._func).cast(self.arrow_type)


class MaxAgg(_ExtremumAgg):
    name = "max"
    _func = "max"


class MinAgg(_ExtremumAgg):
    name = "min"
    _func = "min"


class _BoolAgg(FieldAggregator):
    reversed_is_forward = True
    _and: ClassVar[bool]

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, BooleanType) else "BOOLEAN"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        return (acc and x) if self._and else (acc or x)

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        take = active & valid_mask(values)
        raw = np.asarray(pc.fill_null(values, self._and).to_numpy(zero_copy_only=False), dtype=bool)
        vals = np.where(take, raw, self._and)
        ufunc = np.logical_and if self._and else np.logical_or
        return pa.array(ufunc.reduceat(vals, segs.starts), mask=~segs.any(take))


class BoolAndAgg(_BoolAgg):
    name = "bool_and"
    _and = True


class BoolOrAgg(_BoolAgg):
    name = "bool_or"
    _and = False


# -- strings and collections -----------------------------------------------------------------------------------
class ListaggAgg(FieldAggregator):
    name = "listagg"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.delimiter = self.options.raw(f"fields.{self.field}.list-agg-delimiter") or ","
        self.distinct = bool_option(self.options, f"fields.{self.field}.distinct")

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        ok = isinstance(dtype, VarCharType) and dtype.length == MAX_LENGTH
        return None if ok else "STRING"

    def agg(self, acc: Any, x: Any) -> Any:
        if x is None or not x.strip():
            return acc
        if acc is None or not acc.strip():
            return x
        if not self.distinct:
            return acc + self.delimiter + x
        seen = set(acc.split(self.delimiter))
        out = [acc]
        for token in x.split(self.delimiter):
            if token.strip() and token not in seen:
                seen.add(token)
                out.append(token)
        return self.delimiter.join(out)

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        if self.distinct:
            return self._fold_python(values, segs, active=active, retract=retract)
        blank = np.asarray(
            pc.fill_null(pc.equal(pc.utf8_trim_whitespace(values), ""), True).to_numpy(zero_copy_only=False),
            dtype=bool,
        )
        take = active & ~blank
        counts = segs.count_true(take)
        offsets = np.zeros(segs.count + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets), values.filter(pa.array(take)))
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, pa.nulls(segs.count, values.type)).cast(self.arrow_type)


class CollectAgg(FieldAggregator):
    name = "collect"
    retractable = True
    reversed_is_forward = True

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.distinct = bool_option(self.options, f"fields.{self.field}.distinct")
        self.single_is_identity = not self.distinct  # type: ignore[misc]

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, ArrayType) else "ARRAY"

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        return self.agg(acc, x)

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None and x is None:
            return None
        if (acc is None or x is None) and not self.distinct:
            return x if acc is None else acc
        out = list(acc or [])
        if not self.distinct:
            return out + list(x or [])
        merged: list[Any] = []
        for item in out + list(x or []):
            if item not in merged:
                merged.append(item)
        return merged

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None:
            return None
        if not x:
            return acc
        pending = list(x)
        kept = []
        for item in acc:
            if item in pending:
                pending.remove(item)
            else:
                kept.append(item)
        return kept

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        if self.distinct or (active & retract).any():
            return self._fold_python(values, segs, active=active, retract=retract)
        take = active & valid_mask(values)
        picked = values.filter(pa.array(take))
        lengths = np.asarray(pc.list_value_length(picked).to_numpy(zero_copy_only=False), dtype=np.int64)
        per_seg = np.zeros(segs.count, dtype=np.int64)
        np.add.at(per_seg, segs.ids[take], lengths)
        offsets = np.zeros(segs.count + 1, dtype=np.int32)
        np.cumsum(per_seg, out=offsets[1:])
        flat = pc.list_flatten(picked)
        mask = pa.array(~segs.any(take))
        return pa.ListArray.from_arrays(pa.array(offsets), flat, type=self.arrow_type, mask=mask)


class MergeMapAgg(FieldAggregator):
    name = "merge_map"
    retractable = True

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return None if isinstance(dtype, MapType) else "MAP"

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        merged = dict(acc)
        merged.update(x)
        return list(merged.items())

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None:
            return None
        if not x:
            return acc
        gone = {k for k, _ in x}
        return [(k, v) for k, v in acc if k not in gone]


class NestedUpdateAgg(FieldAggregator):
    """nested_update: rows of an ARRAY<ROW> updated by ``fields.<f>.nested-key`` (appended without a key)."""

    name = "nested_update"
    retractable = True
    single_is_identity = False

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        raw = self.options.raw(f"fields.{self.field}.nested-key")
        self.nested_key = [k.strip() for k in raw.split(",")] if raw else []
        limit = self.options.raw(f"fields.{self.field}.count-limit")
        self.count_limit = int(limit) if limit else 2**31 - 1
        element = self.dtype.element if isinstance(self.dtype, ArrayType) else None
        names = element.field_names if isinstance(element, RowType) else []
        unknown = [k for k in self.nested_key if k not in names]
        if unknown:
            raise InvalidOptionError(
                f"Option 'fields.{self.field}.nested-key' names {unknown}, not fields of {element}"
            )

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        ok = isinstance(dtype, ArrayType) and isinstance(dtype.element, RowType)
        return None if ok else "ARRAY<ROW<...>>"

    def _key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(_hashable(row[k]) for k in self.nested_key)

    def agg(self, acc: Any, x: Any) -> Any:
        if x is None:
            return acc
        if not self.nested_key:
            rows = [r for r in (acc or []) if r is not None]
            if len(rows) >= self.count_limit and acc is not None:
                return acc
            room = self.count_limit - len(rows)
            return rows + [r for r in x if r is not None][:room]
        merged: dict[tuple[Any, ...], Any] = {}
        for r in acc or []:
            if r is not None:
                merged[self._key(r)] = r
        for r in x:
            if r is None:
                continue
            k = self._key(r)
            if k in merged or len(merged) < self.count_limit:
                merged[k] = r
        return list(merged.values())

    def retract(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return acc
        if not self.nested_key:
            gone = [r for r in x if r is not None]
            return [r for r in acc if r is not None and r not in gone]
        keys = {self._key(r) for r in x if r is not None}
        return [r for r in acc if r is not None and self._key(r) not in keys]


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    return value


# -- sketches --------------------------------------------------------------------------------------------------
def _binary_problem(dtype: DataType) -> str | None:
    return None if isinstance(dtype, VarBinaryType) else "VARBINARY (BYTES)"


class RoaringBitmap32Agg(FieldAggregator):
    """rbm32: union of serialized 32-bit Roaring bitmaps (the portable format Java's RoaringBitmap writes)."""

    name = "rbm32"
    reversed_is_forward = True

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return _binary_problem(dtype)

    def _bitmap(self) -> Any:
        from pyroaring import BitMap

        return BitMap

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        cls = self._bitmap()
        try:
            union = cls.deserialize(acc) | cls.deserialize(x)
        except (ValueError, IndexError, MemoryError) as e:  # what pyroaring raises on bytes that are no bitmap
            raise MergeEngineError(f"Field '{self.field}' holds bytes that are not a {self.name} bitmap: {e}") from e
        union.run_optimize()
        return union.serialize()


class RoaringBitmap64Agg(RoaringBitmap32Agg):
    name = "rbm64"

    def _bitmap(self) -> Any:
        from pyroaring import BitMap64

        return BitMap64


class ThetaSketchAgg(FieldAggregator):
    """theta_sketch: union of serialized compact Theta sketches (Apache DataSketches)."""

    name = "theta_sketch"
    reversed_is_forward = True

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        try:
            import datasketches
        except ImportError as e:  # pragma: no cover - datasketches is a pinned dependency
            raise UnsupportedFeatureError("theta_sketch needs the 'datasketches' package") from e
        self._ds = datasketches

    @classmethod
    def type_problem(cls, dtype: DataType) -> str | None:
        return _binary_problem(dtype)

    def agg(self, acc: Any, x: Any) -> Any:
        if acc is None or x is None:
            return x if acc is None else acc
        ds = self._ds
        try:
            union = ds.theta_union()
            union.update(ds.compact_theta_sketch.deserialize(acc))
            union.update(ds.compact_theta_sketch.deserialize(x))
        except (ValueError, IndexError, RuntimeError) as e:  # what datasketches raises on bytes that are no sketch
            raise MergeEngineError(f"Field '{self.field}' holds bytes that are not a theta sketch: {e}") from e
        return union.get_result().serialize()


class PrimaryKeyAgg(FieldAggregator):
    name = "primary-key"
    retractable = True

    def agg(self, acc: Any, x: Any) -> Any:
        return x

    def retract(self, acc: Any, x: Any) -> Any:
        return x

    def aggregate(self, values: pa.Array, segs: Segments, *, active: np.ndarray, retract: np.ndarray) -> pa.Array:
        return take_or_null(values, segs.ends)


AGGREGATORS: dict[str, type[FieldAggregator]] = {
    cls.name: cls
    for cls in (
        SumAgg, ProductAgg, CountAgg, MaxAgg, MinAgg, LastValueAgg, LastNonNullValueAgg, ListaggAgg, BoolAndAgg,
        BoolOrAgg, FirstValueAgg, FirstNonNullValueAgg, RoaringBitmap32Agg, RoaringBitmap64Agg, NestedUpdateAgg,
        CollectAgg, MergeMapAgg, ThetaSketchAgg,
    )
}
AGGREGATORS["first_not_null_value"] = FirstNonNullValueAgg  # Paimon's legacy name


def aggregator_class(name: str, *, field: str) -> type[FieldAggregator]:
    cls = AGGREGATORS.get(name)
    if cls is None:
        raise InvalidOptionError(
            f"Field '{field}': unknown aggregate function '{name}'; known: {', '.join(sorted(AGGREGATORS))}"
        )
    return cls


def create_aggregator(
    name: str, *, field: str, dtype: DataType, arrow_type: pa.DataType, options: CoreOptions
) -> FieldAggregator:
    """The aggregate function ``name`` for one column; InvalidOptionError when it does not take the type."""
    cls = aggregator_class(name, field=field)
    problem = cls.type_problem(dtype)
    if problem is not None:
        raise InvalidOptionError(
            f"Aggregate function '{name}' cannot aggregate field '{field}' of type {dtype}: it takes {problem}"
        )
    return cls(field=field, dtype=dtype, arrow_type=arrow_type, options=options)
