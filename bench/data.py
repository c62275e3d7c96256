"""Deterministic orders-like data: BIGINT key, BIGINT, 5-value STRING, DOUBLE, ~20-char STRING, TIMESTAMP."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

STATUSES = np.array(["new", "paid", "shipped", "done", "returned"])


def orders(n: int, *, seed: int = 42, key_offset: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    comment_pool = np.array([f"comment-{i:012d}-xyz" for i in range(1024)])
    return pa.table({
        "order_id": pa.array(np.arange(key_offset, key_offset + n, dtype=np.int64)),
        "customer_id": pa.array(rng.integers(0, 1_000_000, n, dtype=np.int64)),
        "status": pa.array(STATUSES[rng.integers(0, 5, n)]),
        "amount": pa.array(rng.uniform(0, 1000, n)),
        "comment": pa.array(comment_pool[rng.integers(0, 1024, n)]),
        "created_at": pa.array(
            (1_763_700_000_000_000 + rng.integers(0, 86_400_000_000, n)).astype("datetime64[us]")
        ),
    })
