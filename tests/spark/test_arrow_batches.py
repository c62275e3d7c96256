"""A laketide write lifts Spark's per-row Arrow byte check for its job only (laketide.spark.arrow_batches)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from laketide.spark.arrow_batches import MAX_BYTES_PER_BATCH, uncapped_arrow_batches

NO_CAP = "2147483647"


@pytest.fixture()
def unset(spark) -> Iterator[None]:  # noqa: ANN001
    spark.conf.unset(MAX_BYTES_PER_BATCH)
    yield
    spark.conf.unset(MAX_BYTES_PER_BATCH)


def test_lifted_while_the_block_runs_and_restored_after(spark, unset) -> None:  # noqa: ANN001
    df = spark.range(3)
    with uncapped_arrow_batches(df):
        assert spark.conf.get(MAX_BYTES_PER_BATCH) == NO_CAP
    assert spark.conf.get(MAX_BYTES_PER_BATCH, None) is None


def test_restored_after_a_failure(spark, unset) -> None:  # noqa: ANN001
    with pytest.raises(RuntimeError), uncapped_arrow_batches(spark.range(3)):
        raise RuntimeError("the write failed")
    assert spark.conf.get(MAX_BYTES_PER_BATCH, None) is None


def test_overlapping_writes_share_one_lift(spark, unset) -> None:  # noqa: ANN001
    df = spark.range(3)
    outer = uncapped_arrow_batches(df)
    outer.__enter__()
    with uncapped_arrow_batches(df):
        assert spark.conf.get(MAX_BYTES_PER_BATCH) == NO_CAP
    assert spark.conf.get(MAX_BYTES_PER_BATCH) == NO_CAP  # the other write still runs
    outer.__exit__(None, None, None)
    assert spark.conf.get(MAX_BYTES_PER_BATCH, None) is None


def test_a_cap_the_session_sets_is_kept(spark, unset) -> None:  # noqa: ANN001
    spark.conf.set(MAX_BYTES_PER_BATCH, "32m")
    with uncapped_arrow_batches(spark.range(3)):
        assert spark.conf.get(MAX_BYTES_PER_BATCH) == "32m"
    assert spark.conf.get(MAX_BYTES_PER_BATCH) == "32m"


def test_binary_rows_keep_the_cap(spark, unset) -> None:  # noqa: ANN001
    flat = spark.sql("SELECT CAST('x' AS BINARY) AS b")
    nested = spark.sql("SELECT named_struct('b', CAST('x' AS BINARY)) AS s")
    for df in (flat, nested):
        with uncapped_arrow_batches(df):
            assert spark.conf.get(MAX_BYTES_PER_BATCH, None) is None


def test_write_leaves_the_session_as_it_was(spark, wh, cat, unset) -> None:  # noqa: ANN001
    import laketide.spark

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    cat.create_table("db.t", schema, primary_key=["id"], options={"bucket": "2"})
    rows = [(i, f"v{i}") for i in range(2000)]
    laketide.spark.write(spark.createDataFrame(rows, "id long, v string"), "db.t", warehouse=wh)
    assert spark.conf.get(MAX_BYTES_PER_BATCH, None) is None
    got = cat.table("db.t").to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(2000))
    assert got.column("v").to_pylist() == [f"v{i}" for i in range(2000)]
