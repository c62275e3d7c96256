"""pypaimon reads tables whose data files carry laketide's file indexes, embedded and as sidecars."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.integration.test_file_index_write import INDEXES, SCHEMA, check_index_content, live_files, rows


@pytest.mark.parametrize("threshold", ["2 mb", "1 b"], ids=["embedded", "sidecar"])
def test_pypaimon_reads_indexed_append_table(catalog, warehouse, pypaimon, threshold: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": threshold})
    t.write(rows(300))
    t.write(rows(100, start=300))
    for f in live_files(t):
        assert (f.embedded_index is not None) == (threshold == "2 mb")
        check_index_content(t, f)
    theirs = pypaimon.read(warehouse, "db.t").sort_by("id")
    assert theirs.to_pylist() == rows(400).to_pylist()


def test_pypaimon_reads_indexed_pk_table(catalog, warehouse, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"],
                             options={**INDEXES, "bucket": "1", "deletion-vectors.enabled": "true",
                                      "file-index.in-manifest-threshold": "1 b"})
    t.write(rows(100))
    t.write(rows(100, start=50))
    theirs = pypaimon.read(warehouse, "db.pk").sort_by("id")
    assert theirs.to_pylist() == rows(150).to_pylist()
    assert pa.table(theirs).num_rows == 150
