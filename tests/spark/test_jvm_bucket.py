"""The Java bucket UDF the Spark write path routes rows with: the same bucket as laketide's own hash (and Java
Paimon's, which laketide.meta.bucket is checked against), or no UDF at all where it does not apply."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F  # noqa: N812

import laketide.spark as ls
from laketide.meta.bucket import bucket_ids
from laketide.spark.jvm_bucket import _javac, jvm_bucket_column
from laketide.types import (
    MAX_LENGTH,
    BigIntType,
    BooleanType,
    DateType,
    DecimalType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

N = 2000
# Spark needs a JRE only; the UDF is compiled with the JDK's javac (without one the Arrow UDF routes rows).
needs_jdk = pytest.mark.skipif(_javac() is None, reason="no javac: the Java bucket UDF is not built")
TYPES = {"b": BigIntType(), "i": IntType(), "s": SmallIntType(), "t": TinyIntType(), "d": DateType(),
         "o": BooleanType(), "str": VarCharType(MAX_LENGTH)}
WORDS = ["", "a", "abcdefg", "abcdefgh", "é漢字", "x" * 40, "twenty-three characters"]


def _rows() -> pa.Table:
    rng = np.random.default_rng(7)

    def nulls() -> np.ndarray:
        return rng.random(N) < 0.1

    extremes = np.array([0, -1, 2**63 - 1, -(2**63)], dtype=np.int64)
    return pa.table({
        "b": pa.array(np.concatenate([rng.integers(-(2**63), 2**63 - 1, N - 4, dtype=np.int64), extremes]),
                      mask=nulls()),
        "i": pa.array(rng.integers(-(2**31), 2**31 - 1, N).astype(np.int32), mask=nulls()),
        "s": pa.array(rng.integers(-(2**15), 2**15 - 1, N).astype(np.int16), mask=nulls()),
        "t": pa.array(rng.integers(-128, 127, N).astype(np.int8), mask=nulls()),
        "d": pa.array(rng.integers(-30000, 30000, N).astype(np.int32), mask=nulls()).cast(pa.date32()),
        "o": pa.array(rng.random(N) < 0.5, mask=nulls()),
        "str": pa.array([WORDS[i % len(WORDS)] + ("" if i % 3 else str(i)) for i in range(N)], mask=nulls()),
    })


@needs_jdk
@pytest.mark.parametrize("keys", [["b"], ["i"], ["s"], ["t"], ["d"], ["o"], ["str"], ["b", "i"],
                                  ["str", "b", "d"], ["i", "d", "s", "t", "o", "b", "str"]])
def test_jvm_bucket_equals_laketide_hash(spark, keys: list[str]) -> None:  # noqa: ANN001
    df = spark.createDataFrame(_rows())
    types = [TYPES[k] for k in keys]
    for buckets in (1, 3, 16):
        column = jvm_bucket_column(df, keys, types, buckets)
        assert column is not None
        got = df.withColumn("bucket", column).toArrow()
        want = bucket_ids(got, keys, types, buckets)
        assert got.column("bucket").to_pylist() == want.tolist()


def test_jvm_bucket_declines_what_it_does_not_encode(spark) -> None:  # noqa: ANN001
    df = spark.createDataFrame(_rows()).withColumn("dec", F.col("i").cast("decimal(10,2)"))
    assert jvm_bucket_column(df, ["dec"], [DecimalType(10, 2)], 4) is None
    # the DataFrame's column is not of the table's type: the Python path casts it first
    assert jvm_bucket_column(df, ["i"], [BigIntType()], 4) is None


def test_string_key_upsert_through_spark_keeps_latest_rows(spark, wh: str, cat) -> None:  # noqa: ANN001
    """Rows routed by the JVM bucket land where laketide's own writer and reader expect them: a second write of
    the same keys replaces the first, bucket by bucket."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])
    t = cat.create_table("db.sk", schema, primary_key=["k"], options={"bucket": "3"})
    keys = [WORDS[i % len(WORDS)] + str(i) for i in range(300)]
    ls.write(spark.createDataFrame(pa.table({"k": keys, "v": list(range(300))})), "db.sk", warehouse=wh)
    t.write(pa.table({"k": keys[:100], "v": [-1] * 100}, schema=schema))  # laketide's own writer, same buckets
    ls.write(spark.createDataFrame(pa.table({"k": keys[50:150], "v": [-2] * 100})), "db.sk", warehouse=wh)
    got = dict(zip(*t.read().select(["k", "v"]).to_pydict().values()))
    want = {k: (-2 if 50 <= i < 150 else -1 if i < 100 else i) for i, k in enumerate(keys)}
    assert got == want
    scan = t.scan()
    for split in scan.plan():  # every bucket holds only keys laketide's own hash puts there
        rows = pa.Table.from_batches(list(scan.read_split(split)), schema=schema)
        assert set(bucket_ids(rows, ["k"], [VarCharType(MAX_LENGTH)], 3).tolist()) <= {split.bucket}


@needs_jdk
def test_a_new_session_registers_the_function_again(spark) -> None:  # noqa: ANN001
    """Functions are per SparkSession: a second session on the same context gets the UDF too."""
    other = spark.newSession()
    df = other.createDataFrame(pa.table({"k": pa.array([1, 2, 3], pa.int64())}))
    column = jvm_bucket_column(df, ["k"], [BigIntType()], 4)
    assert column is not None
    got = df.withColumn("bucket", column).toArrow()
    assert got.column("bucket").to_pylist() == bucket_ids(got, ["k"], [BigIntType()], 4).tolist()


def test_no_javac_means_no_jar(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    """Without a JDK the jar is not built (the write path then hashes in Python)."""
    from laketide.spark import jvm_bucket

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_bucket, "_javac", lambda: None)
    assert jvm_bucket._jar("0.0.0-test") is None
    assert not list(tmp_path.rglob("*.jar"))


def test_duplicate_keys_in_one_write_keep_the_last_as_the_python_api(spark, wh: str, cat) -> None:  # noqa: ANN001
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])
    rows = pa.table({"k": [WORDS[i % 5] + "-key" for i in range(50)], "v": list(range(50))}, schema=schema)
    spark_table = cat.create_table("db.dup_spark", schema, primary_key=["k"], options={"bucket": "2"})
    python_table = cat.create_table("db.dup_python", schema, primary_key=["k"], options={"bucket": "2"})
    ls.write(spark.createDataFrame(rows).coalesce(1), "db.dup_spark", warehouse=wh)
    python_table.write(rows)
    got = spark_table.read().sort_by("k")
    assert got.to_pydict() == python_table.read().sort_by("k").to_pydict()
    assert sorted(got.column("v").to_pylist()) == [45, 46, 47, 48, 49]
