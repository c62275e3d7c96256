"""Postpone-bucket tables (``bucket = -2``) written by pypaimon: laketide's batch read sees what Java's does.

pypaimon writes new rows into ``bucket-postpone`` directories (bucket -2 in the manifests); batch reads do not
see them until a compaction moves them into real buckets (Java's ``onlyReadRealBuckets``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import UnsupportedOptionError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def test_postponed_rows_are_not_read_before_compaction(warehouse, catalog, pypaimon) -> None:  # noqa: ANN001
    pypaimon.create_table(warehouse, "db.postpone", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                          options={"bucket": "-2"})
    pypaimon.write(warehouse, "db.postpone", pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]},
                                                      schema=SCHEMA))
    assert sorted(p.parent.name for p in Path(warehouse).rglob("data-*")) == ["bucket-postpone"] * 2
    table = catalog.table("db.postpone")
    entries = table.file_scan().plan(table.latest_snapshot())
    assert sorted(e.bucket for e in entries) == [-2, -2]
    assert table.read().num_rows == 0
    assert pypaimon.read(warehouse, "db.postpone").num_rows == 0
    # laketide does not write postpone tables (yet): refused, nothing changes
    with pytest.raises(UnsupportedOptionError, match="bucket"):
        table.write(pa.table({"k": [5], "v": ["q"], "dt": ["x"]}, schema=SCHEMA))
    assert table.latest_snapshot().id == 1
