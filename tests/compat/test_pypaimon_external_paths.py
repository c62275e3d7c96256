"""pypaimon reads a table whose data files laketide wrote under ``data-file.external-paths``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])


def test_pypaimon_reads_laketide_external_data_files(warehouse, catalog, pypaimon, tmp_path: Path) -> None:  # noqa: ANN001
    roots = [tmp_path / "ext0", tmp_path / "ext1"]
    t = catalog.create_table("db.ext", SCHEMA, partition_keys=["dt"], primary_key=["id", "dt"], options={
        "bucket": "2", "data-file.external-paths": ",".join(f"file://{r}" for r in roots),
        "data-file.external-paths.strategy": "round-robin"})
    t.write(pa.table({"id": [1, 2, 3, 4], "v": list("abcd"), "dt": ["x", "x", "y", "y"]}, schema=SCHEMA))
    t.write(pa.table({"id": [2, 5], "v": ["B", "e"], "dt": ["x", "y"]}, schema=SCHEMA))
    assert not list(Path(warehouse).rglob("data-*"))
    assert list(roots[0].rglob("data-*")) or list(roots[1].rglob("data-*"))
    theirs = pypaimon.read(warehouse, "db.ext").sort_by("id")
    assert theirs.to_pydict() == t.read().sort_by("id").to_pydict()
    assert theirs.column("v").to_pylist() == ["a", "B", "c", "d", "e"]
