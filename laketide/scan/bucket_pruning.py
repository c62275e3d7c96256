"""Which buckets can hold rows matching a predicate: equality on every bucket-key column pins the buckets.

``k = 5`` or ``k IN (1, 2)`` on a fixed-bucket table only needs the buckets of those keys, computed with the same
hash writers use. Anything less specific keeps every bucket.

Paimon: operation.BucketSelectConverter
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from laketide.exceptions import SchemaError
from laketide.expr import Leaf, Op, Predicate, split_and
from laketide.meta.bucket import bucket_ids, bucket_of_values
from laketide.types import DataType, to_arrow_type

__all__ = ["select_buckets"]

# Past this many key combinations, hashing them costs more than scanning: keep every bucket.
MAX_COMBINATIONS = 1000
# From this many combinations on, they are hashed as one Arrow batch (a lookup of many keys).
_VECTORIZED_FROM = 16


def _buckets_vectorized(
    combos: list[tuple[object, ...]], key_types: Sequence[DataType], num_buckets: int
) -> set[int] | None:
    """The buckets of ``combos`` hashed as a batch, as writers hash rows; None when a value does not fit its type
    (the caller then goes value by value and drops those)."""
    names = [f"k{i}" for i in range(len(key_types))]
    try:
        columns = [pa.array([c[i] for c in combos], type=to_arrow_type(t)) for i, t in enumerate(key_types)]
        batch = pa.table(columns, names=names)
        return {int(b) for b in np.unique(bucket_ids(batch, names, key_types, num_buckets))}
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


def select_buckets(
    predicate: Predicate | None,
    *,
    bucket_keys: Sequence[str],
    key_types: Sequence[DataType],
    num_buckets: int,
) -> set[int] | None:
    """The buckets that may match, or None when the predicate does not pin them."""
    if predicate is None or num_buckets <= 0 or not bucket_keys:
        return None
    candidates: dict[str, set[object]] = {}
    for conjunct in split_and(predicate):
        if not isinstance(conjunct, Leaf) or conjunct.field not in bucket_keys:
            continue
        if conjunct.op is Op.EQ:
            values = {conjunct.literals[0]}
        elif conjunct.op is Op.IN:
            values = {v for v in conjunct.literals if v is not None}
        else:
            continue
        # Several conjuncts on one column: only values allowed by all of them remain.
        candidates[conjunct.field] = values if conjunct.field not in candidates else candidates[conjunct.field] & values
    if any(k not in candidates for k in bucket_keys):
        return None
    domains = [sorted(candidates[k], key=repr) for k in bucket_keys]
    total = 1
    for d in domains:
        total *= len(d)
    if total > MAX_COMBINATIONS:
        return None
    combos = list(itertools.product(*domains))
    if len(combos) > _VECTORIZED_FROM:
        hashed = _buckets_vectorized(combos, key_types, num_buckets)
        if hashed is not None:
            return hashed
    buckets: set[int] = set()
    for combo in combos:
        try:
            buckets.add(bucket_of_values(list(combo), key_types, num_buckets=num_buckets))
        except SchemaError:
            # Not a value of the key's type (`int_key = 2.5`, or beyond its range): no row has this key.
            continue
    return buckets
