"""``db.t$binlog`` through Spark: every column an ArrayType, an update's before- and after-image in one row, the
same rows Python's system table gives."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import ArrayType, LongType, StringType

import laketide.spark as ls
from laketide.table.system import system_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("v", pa.int64())])


def test_binlog_reads_through_spark_as_arrays(spark, cat, wh: str) -> None:  # noqa: ANN001
    t = cat.create_table("db.bl", SCHEMA, primary_key=["id"],
                         options={"bucket": "1", "changelog-producer": "lookup"})
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "v": [10, 20, 30]}, schema=SCHEMA))
    t.write(pa.table({"id": [2], "name": ["b2"], "v": [21]}, schema=SCHEMA))
    df = ls.read(spark, "db.bl$binlog", warehouse=wh)
    fields = {f.name: f.dataType for f in df.schema.fields}
    assert fields["rowkind"] == StringType()
    assert fields["id"] == ArrayType(LongType(), fields["id"].containsNull)
    assert fields["name"] == ArrayType(StringType(), True) and fields["v"] == ArrayType(LongType(), True)
    got = sorted((r["rowkind"], tuple(r["id"]), tuple(r["name"]), tuple(r["v"])) for r in df.collect())
    ours = system_table(t, "binlog").read()
    expected = sorted((r["rowkind"], tuple(r["id"]), tuple(r["name"]), tuple(r["v"])) for r in ours.to_pylist())
    assert got == expected
    assert ("+I", (3,), (None,), (30,)) in got and ("+I", (2,), ("b2",), (21,)) in got
    # The binlog of the change stream holds the update as one row with [before, after].
    changes = t.read_changes(binlog=True)
    rows = {(r["rowkind"], tuple(r["name"])) for r in changes.to_pylist()}
    assert ("+U", ("b", "b2")) in rows
    # Spark SQL over the view unnests the arrays.
    df.createOrReplaceTempView("bl")
    names = {r[0] for r in spark.sql("SELECT explode(name) FROM bl WHERE rowkind = '+I'").collect()}
    assert names == {"a", "b2", None}
