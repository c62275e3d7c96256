"""The core Spark cases as a driver program for a standalone cluster (run by test_standalone.py).

    python -m tests.spark.standalone_cases spark://127.0.0.1:PORT /path/to/warehouse

Executors are separate JVMs and Python workers: nothing the driver process holds reaches them but what Spark
ships, which is what this run checks. Exits non-zero (an AssertionError) on the first wrong answer.
"""

from __future__ import annotations

import sys
import warnings


def main(master: str, warehouse: str) -> None:
    import pyarrow as pa

    import laketide
    import laketide.spark as ls

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        spark = ls.session(master, app_name="laketide-standalone", warehouse=warehouse, conf={
            "spark.executor.memory": "512m", "spark.executor.cores": "2", "spark.cores.max": "2",
            "spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4",
        })
    spark.sparkContext.setLogLevel("ERROR")
    try:
        cat = laketide.load_catalog(warehouse=warehouse)
        cat.create_database("db", exist_ok=True)
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
        ddl = "id long, v string, dt string"

        # batch write + read
        t = cat.create_table("db.t", schema, partition_keys=["dt"])
        df = spark.createDataFrame([(i, f"v{i}", f"d{i % 3}") for i in range(300)], ddl).repartition(4)
        ls.write(df, "db.t")
        assert t.read().num_rows == 300, t.read().num_rows
        loaded = spark.read.format("laketide").load("db.t")
        assert loaded.count() == 300
        assert loaded.where("id < 10").count() == 10

        # the same DataFrame after a commit (and after a filtered query)
        spark.createDataFrame([(i, "new", "d9") for i in range(300, 310)], ddl) \
            .write.format("laketide").mode("append").save("db.t")
        assert loaded.count() == 310, loaded.count()
        assert sorted(r["id"] for r in loaded.where("dt = 'd9'").collect()) == list(range(300, 310))

        # primary-key upserts through laketide.spark.write
        pk = cat.create_table("db.pk", schema, primary_key=["id"], options={"bucket": "3"})
        ls.write(spark.createDataFrame([(i, "a", "x") for i in range(100)], ddl).repartition(4), "db.pk")
        ls.write(spark.createDataFrame([(i, "b", "x") for i in range(50, 150)], ddl).repartition(4), "db.pk")
        got = {r["id"]: r["v"] for r in ls.read(spark, "db.pk").collect()}
        assert len(got) == 150 and got[0] == "a" and got[50] == "b" and got[149] == "b", len(got)
        assert pk.read().num_rows == 150

        # empty scans
        assert loaded.where("id > 100000").count() == 0
        empty = cat.create_table("db.empty", schema)
        assert spark.read.format("laketide").load("db.empty").collect() == []
        assert empty.latest_snapshot() is None
    finally:
        spark.stop()
    print("standalone cases passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
