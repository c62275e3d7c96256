"""Spark's stream source on tables with a changelog producer: -U / +U before-images reach the consumer, and an
aggregation kept from the stream (stopped and restarted from its checkpoint) equals a batch GROUP BY."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa

import laketide.spark as ls

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("g", pa.string()), ("v", pa.int64())])


def _run(spark, wh: str, checkpoint: Path, sink: list) -> None:  # noqa: ANN001
    stream = ls.read_stream(spark, "db.ods$audit_log", warehouse=wh, options={"scan.mode": "from-snapshot",
                                                                           "scan.snapshot-id": "1"})
    q = (stream.writeStream.foreachBatch(lambda df, _: sink.extend(r.asDict() for r in df.collect()))
         .trigger(availableNow=True).option("checkpointLocation", str(checkpoint)).start())
    q.awaitTermination()


def test_lookup_changelog_stream_keeps_an_aggregation_equal_to_group_by(spark, cat, wh: str,  # noqa: ANN001
                                                                         tmp_path: Path) -> None:
    t = cat.create_table("db.ods", SCHEMA, primary_key=["id"], options={
        "bucket": "2", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"})
    rng = random.Random(18)
    changes: list[dict] = []
    for round_ in range(4):
        ids = rng.sample(range(40), 15)
        t.write(pa.table({"id": ids, "g": [rng.choice("ab") for _ in ids], "v": [rng.randint(0, 9) for _ in ids]},
                         schema=SCHEMA))
        gone = rng.sample(range(40), 3)
        w = t.new_write()
        w.delete(pa.table({"id": gone}, schema=pa.schema([pa.field("id", pa.int64(), nullable=False)])))
        t.commit(w.prepare_commit())
        if round_ % 2 == 1:  # the query stops and restarts from its checkpoint in the middle
            _run(spark, wh, tmp_path / "ckpt", changes)
    _run(spark, wh, tmp_path / "ckpt", changes)
    totals: dict[str, int] = {}
    for r in changes:
        sign = 1 if r["rowkind"] in ("+I", "+U") else -1
        totals[r["g"]] = totals.get(r["g"], 0) + sign * r["v"]
    expected: dict[str, int] = {}
    for r in t.read().to_pylist():
        expected[r["g"]] = expected.get(r["g"], 0) + r["v"]
    assert {g: v for g, v in totals.items() if v or g in expected} == expected
    assert any(r["rowkind"] == "-U" for r in changes)  # before-images, not just upserts
    assert sorted(tuple(sorted(r.items())) for r in changes) == sorted(
        tuple(sorted(r.items())) for r in t.read_changes(0).to_pylist())
