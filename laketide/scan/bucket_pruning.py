"""Which buckets can hold rows matching a predicate: equality on every bucket-key column pins the buckets.

``k = 5`` or ``k IN (1, 2)`` on a fixed-bucket table only needs the buckets of those keys, computed with the same
hash writers use. Anything less specific keeps every bucket.

Paimon: operation.BucketSelectConverter
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from laketide.exceptions import SchemaError
from laketide.expr import Leaf, Op, Predicate, split_and
from laketide.meta.bucket import bucket_of_values
from laketide.types import DataType

__all__ = ["select_buckets"]

# Past this many key combinations, hashing them costs more than scanning: keep every bucket.
MAX_COMBINATIONS = 1000


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
    buckets: set[int] = set()
    for combo in itertools.product(*domains):
        try:
            buckets.add(bucket_of_values(list(combo), key_types, num_buckets=num_buckets))
        except SchemaError:
            # Not a value of the key's type (`int_key = 2.5`, or beyond its range): no row has this key.
            continue
    return buckets
