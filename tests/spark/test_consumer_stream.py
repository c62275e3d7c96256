"""The Spark streaming source with ``consumer-id``: a query stopped and started again with a NEW checkpoint resumes
from the consumer's recorded progress, and expiration keeps the snapshots it still needs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import laketide.spark as ls


def test_spark_consumer_resumes_with_new_checkpoint(spark, cat, wh: str, tmp_path: Path) -> None:  # noqa: ANN001
    schema = pa.schema([("id", pa.int64())])
    t = cat.create_table("db.cs", schema, options={"snapshot.num-retained.min": "1",
                                                   "snapshot.num-retained.max": "1"})
    t.write(pa.table({"id": [1, 2]}, schema=schema))

    def run(name: str, **extra: str) -> list[int]:
        stream = ls.read_stream(spark, "db.cs", warehouse=wh, options={"consumer-id": "sp", **extra})
        q = (stream.writeStream.format("memory").queryName(name).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / name)).start())
        q.awaitTermination()
        assert q.exception() is None
        return sorted(r["id"] for r in spark.table(name).collect())

    assert run("first") == [1, 2]
    assert t.consumers.get("sp") == 2
    t.write(pa.table({"id": [3]}, schema=schema))
    t.write(pa.table({"id": [4]}, schema=schema))
    assert t.snapshot_manager.snapshot_ids() == [2, 3]  # the consumer pins snapshot 2
    assert run("second") == [3, 4]  # a new checkpoint, the same consumer: exactly the rest
    assert t.consumers.get("sp") == 4
    assert run("third") == []
    # consumer.ignore-progress: start as a new reader would (the full latest snapshot)
    assert run("fourth", **{"consumer.ignore-progress": "true"}) == [1, 2, 3, 4]
