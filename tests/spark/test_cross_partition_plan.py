"""The DataFrame a cross-partition write shuffles: one keyed lookup per row, key names taken literally."""

from __future__ import annotations

import re

import pyarrow as pa

import laketide.spark as lts
from laketide.spark.cross_partition import cross_partition_keyed

SCHEMA = pa.schema([pa.field("a.b", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])
DDL = "`a.b` long, dt string, v long"


def _state(t) -> dict[int, tuple]:  # noqa: ANN001
    return {r["a.b"]: (r["dt"], r["v"]) for r in t.read().to_pylist()}


def test_the_lookup_runs_once_per_row(spark, cat) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["a.b"], partition_keys=["dt"])
    t.write(pa.table({"a.b": [1, 2, 3], "dt": ["x", "y", "x"], "v": [1, 2, 3]}, schema=SCHEMA))
    df = spark.createDataFrame([(1, "y", 10), (4, "x", 40)], DDL)
    with cross_partition_keyed(df, t) as (by_owner, _, _):
        plan = by_owner._jdf.queryExecution().executedPlan().toString()
    evals = [line for line in plan.splitlines() if "ArrowEvalPython" in line]
    # One evaluation node with one UDF: the owner column is computed from the location column, not by a second
    # lookup.
    assert len(evals) == 1 and len(re.findall(r"locate\(", evals[0])) == 1, plan


def test_key_names_with_dots_are_names_not_field_accesses(spark, cat, wh: str) -> None:
    t = cat.create_table("db.t", SCHEMA, primary_key=["a.b"], partition_keys=["dt"])
    t.write(pa.table({"a.b": [1, 2, 3], "dt": ["x", "y", "x"], "v": [1, 2, 3]}, schema=SCHEMA))
    rows = [(1, "y", 10), (4, "x", 40), (3, "x", 30), (2, "x", 20)]  # 1 and 2 move, 3 stays, 4 is new
    lts.write(spark.sparkContext.parallelize(rows, 2).toDF(DDL), "db.t", warehouse=wh)
    t = cat.table("db.t")
    assert _state(t) == {1: ("y", 10), 2: ("x", 20), 3: ("x", 30), 4: ("x", 40)}
    assert t.read().num_rows == 4  # the moved keys were deleted in their old partitions
