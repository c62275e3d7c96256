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
