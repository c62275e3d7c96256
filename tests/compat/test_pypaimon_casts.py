"""Column type changes across laketide and pypaimon: either one alters, both read Java's values.

pypaimon casts with pyarrow (``cast(safe=False)``), which matches Java's rules for the values below: integers
widening, numeric strings, doubles truncated toward zero, decimals rescaled without dropping digits, timestamps
cut to a coarser unit after 1970.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from laketide import UpdateColumnType
from laketide.types import BigIntType, DecimalType, IntType, TimestampType

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("i", pa.int32()),
    ("s", pa.string()),
    ("d", pa.float64()),
    ("dec", pa.decimal128(10, 3)),
    ("ts", pa.timestamp("us")),
])
ROWS = pa.table({
    "id": [1, 2, 3],
    "i": [2**31 - 1, -5, None],
    "s": ["12", "-7", None],
    "d": [3.7, -3.7, None],
    "dec": [Decimal("1.230"), Decimal("-99999.990"), None],
    "ts": [dt.datetime(2024, 11, 26, 6, 38, 56, 1000), dt.datetime(2001, 1, 1), None],
}, schema=SCHEMA)
CHANGES = {"i": "BIGINT", "s": "INT", "d": "INT", "dec": "DECIMAL(12, 2)", "ts": "TIMESTAMP(3)"}
EXPECTED = [
    {"id": 1, "i": 2**31 - 1, "s": 12, "d": 3, "dec": Decimal("1.23"),
     "ts": dt.datetime(2024, 11, 26, 6, 38, 56, 1000)},
    {"id": 2, "i": -5, "s": -7, "d": -3, "dec": Decimal("-99999.99"), "ts": dt.datetime(2001, 1, 1)},
    {"id": 3, "i": None, "s": None, "d": None, "dec": None, "ts": None},
]


def _sorted(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.select(SCHEMA.names).to_pylist(), key=lambda r: r["id"])


def test_pypaimon_alters_laketide_reads(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.casts", SCHEMA)
    pypaimon.write(warehouse, "db.casts", ROWS)
    pypaimon.alter(warehouse, "db.casts", column_types=CHANGES)
    theirs = _sorted(pypaimon.read(warehouse, "db.casts"))
    ours = _sorted(catalog.table("db.casts").read())
    assert ours == EXPECTED
    assert theirs == EXPECTED


def test_laketide_alters_pypaimon_reads(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.casts2", SCHEMA)
    t.write(ROWS)
    t.alter(UpdateColumnType("i", BigIntType()), UpdateColumnType("s", IntType()), UpdateColumnType("d", IntType()),
            UpdateColumnType("dec", DecimalType(12, 2)), UpdateColumnType("ts", TimestampType(3)))
    assert _sorted(t.read()) == EXPECTED
    assert _sorted(pypaimon.read(warehouse, "db.casts2")) == EXPECTED
