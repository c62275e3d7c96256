"""Parsing of command-line values: column lists, durations, partitions."""

from __future__ import annotations

from typing import Any

from laketide.cli.config import parse_pairs
from laketide.exceptions import InvalidOptionError

__all__ = ["column_list", "duration_ms", "parse_partition"]


def column_list(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def duration_ms(text: str, flag: str) -> int:
    from laketide.options import parse_duration

    try:
        return parse_duration(text)
    except ValueError as e:
        raise InvalidOptionError(f"{flag} {text!r}: {e}") from None


def parse_partition(table: Any, spec: str) -> dict[str, object]:
    """``dt=2024-01-01,h=3`` typed by the table's partition columns."""
    import pyarrow as pa

    raw = parse_pairs(spec.split(","), "--partition")
    keys = table.partition_keys
    unknown = [k for k in raw if k not in keys]
    if unknown:
        raise InvalidOptionError(f"--partition {spec!r}: {unknown} are not partition keys of {table.name} "
                                 f"(partition keys: {list(keys)})")
    types = {f.name: f.type for f in table.arrow_schema}
    out: dict[str, object] = {}
    for k, v in raw.items():
        try:
            out[k] = pa.array([v]).cast(types[k])[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidOptionError(f"--partition {k}={v!r} is not a {types[k]} value: {e}") from None
    return out
