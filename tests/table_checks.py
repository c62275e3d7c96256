"""Checks on a table's physical layout shared by the tests."""

from __future__ import annotations

from typing import Any


def key_locations(table: Any, key: str) -> dict[object, list[tuple[tuple, int]]]:
    """Each value of ``key`` -> every (partition values, bucket) whose merged rows hold it (a live primary key
    must be in exactly one)."""
    scan = table.scan()
    out: dict[object, list[tuple[tuple, int]]] = {}
    for split in scan.plan():
        for batch in scan.reader.read(split):
            for value in batch.column(key).to_pylist():
                out.setdefault(value, []).append((split.partition_values, split.bucket))
    return out


def key_buckets(table: Any, key: str) -> dict[tuple, set[int]]:
    """(partition values, key value) -> the buckets holding it."""
    out: dict[tuple, set[int]] = {}
    for value, places in key_locations(table, key).items():
        for partition, bucket in places:
            out.setdefault((partition, value), set()).add(bucket)
    return out
