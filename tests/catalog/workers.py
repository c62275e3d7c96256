"""Functions other processes run against a shared catalog (spawned: they open the catalog from its spec)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def create_table(spec: dict[str, Any], name: str, tag: str, barrier: Any) -> str:
    """Create ``name`` with a column named after ``tag`` once both processes are ready; the outcome's name."""
    import laketide

    catalog = laketide.load_catalog(**spec)
    schema = SCHEMA.append(pa.field(f"from_{tag}", pa.int32()))
    barrier.wait()
    try:
        catalog.create_table(name, schema)
    except Exception as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__
    return "created"


def create_database(spec: dict[str, Any], name: str, barrier: Any) -> str:
    import laketide

    catalog = laketide.load_catalog(**spec)
    barrier.wait()
    try:
        catalog.create_database(name)
    except Exception as e:  # noqa: BLE001 - the type is the answer
        return type(e).__name__
    return "created"
