"""Column names that hold a dot (legal in Paimon) are names, not field accesses, on every Spark write path: fixed,
dynamic and cross-partition buckets, partitioned or not, Python and native writers. Each write through Spark gives
the table the same rows as the same write through Python."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide.spark as lts

SCHEMA = pa.schema([pa.field("k.id", pa.int64(), nullable=False), pa.field("p.x", pa.string(), nullable=False),
                    ("v.s", pa.string())])
DDL = "`k.id` long, `p.x` string, `v.s` string"
ROWS = [(1, "a", "x"), (2, "b", "y"), (3, "a", "z"), (4, "b", None)]
UPSERT = [(1, "a", "x2"), (5, "a", "new"), (2, "b", None)]

LAYOUTS = {
    "fixed, partitioned": dict(primary_key=["k.id", "p.x"], partition_keys=["p.x"], options={"bucket": "2"}),
    "fixed, unpartitioned": dict(primary_key=["k.id"], options={"bucket": "2"}),
    "dynamic": dict(primary_key=["k.id", "p.x"], partition_keys=["p.x"]),
    "cross-partition": dict(primary_key=["k.id"], partition_keys=["p.x"]),
    "append": dict(partition_keys=["p.x"]),
}


def _rows(t) -> list[tuple]:  # noqa: ANN001
    return sorted((tuple(r.values()) for r in t.read().to_pylist()), key=str)


def _arrow(rows: list[tuple]) -> pa.Table:
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(SCHEMA.names)}, schema=SCHEMA)


# The native writer (Spark's Parquet writer) takes fixed-bucket and append tables.
CASES = [(layout, False) for layout in LAYOUTS] + [(layout, True) for layout in LAYOUTS if "fixed" in layout
                                                   or layout == "append"]


@pytest.mark.parametrize(("layout", "native"), CASES)
def test_spark_writes_columns_with_dots_like_python(spark, cat, wh: str, layout: str, native: bool) -> None:
    cat.create_table("db.s", SCHEMA, **LAYOUTS[layout])
    through_python = cat.create_table("db.p", SCHEMA, **LAYOUTS[layout])
    for batch in (ROWS, UPSERT):
        # One Spark partition: which of two rows of a key arrives last is the input order, as in Python.
        lts.write(spark.sparkContext.parallelize(batch, 1).toDF(DDL), "db.s", warehouse=wh, native=native)
        through_python.write(_arrow(batch))
    assert _rows(cat.table("db.s")) == _rows(cat.table("db.p"))
    assert len(_rows(cat.table("db.s"))) == (7 if layout == "append" else 5)
    read_back = lts.read(spark, "db.s", warehouse=wh).orderBy("`k.id`").collect()
    assert sorted((tuple(r) for r in read_back), key=str) == _rows(cat.table("db.p"))
