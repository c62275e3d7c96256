"""pypaimon reads the tables laketide's delete / update / upsert left behind, with the same rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.integration.test_dml import LAYOUTS, SCHEMA, as_frame, frame


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_pypaimon_reads_changed_tables(catalog, warehouse, pypaimon, layout: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, **LAYOUTS[layout])
    t.write(frame(list(range(0, 40)), 1))
    t.write(frame(list(range(20, 60)) if "primary_key" not in LAYOUTS[layout] else list(range(40, 60)), 2))
    assert t.delete("v > 70 OR s IS NULL").snapshot_id is not None
    assert t.update({"v": "v + 1000", "s": "'upd'"}, "id < 30").snapshot_id is not None
    assert t.delete("p = 'c'").snapshot_id is not None
    if "primary_key" in LAYOUTS[layout]:
        t.upsert(pa.table({"id": [5, 500], "p": ["a", "b"], "v": [1, 2], "s": ["u", "v"]}, schema=SCHEMA))
    ours = as_frame(t.read())
    theirs = as_frame(pypaimon.read(warehouse, "db.t").cast(SCHEMA))
    assert len(ours) > 0
    assert theirs.equals(ours)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_pypaimon_reads_merged_tables(catalog, warehouse, pypaimon, layout: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.m", SCHEMA, **LAYOUTS[layout])
    t.write(frame(list(range(0, 40)), 3))
    source = frame(list(range(30, 70)), 4)
    if layout == "pk-partitioned":  # keep each matched key's partition
        source = source.set_column(1, SCHEMA.field("p"), pa.array(
            [t.read(where=f"id = {i}").column("p")[0].as_py() if i < 40 else "a"
             for i in source.column("id").to_pylist()], pa.string()))
    result = (t.merge(source, on="id")
              .when_matched_update({"v": "source.v * 10"}, condition="source.v > 40")
              .when_matched_delete()
              .when_not_matched_insert_all()
              .when_not_matched_by_source_delete(condition="target.v < 20")
              .execute())
    assert result.snapshot_id is not None and result.rows_inserted == 30
    ours = as_frame(t.read())
    assert as_frame(pypaimon.read(warehouse, "db.m").cast(SCHEMA)).equals(ours)
