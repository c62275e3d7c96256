"""Reads use laketide-written file indexes: PK tables with deletion vectors only, through renames, with row
selection over Parquet row groups, and the scan report says what was skipped."""

from __future__ import annotations

import pyarrow as pa

from laketide.expr.arrow import filter_table
from laketide.expr.predicate import col
from laketide.schema.changes import RenameColumn, SetOption
from tests.integration.test_file_index_write import INDEXES, SCHEMA, rows


def canonical(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


def test_pk_table_with_deletion_vectors_uses_its_indexes(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"],
                             options={**INDEXES, "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(400))
    t.write(rows(200, start=300))  # updates rows 300..399: the old versions are deleted by vectors
    everything = t.read()
    for p in (col("grp") == 2, col("amount") < 300, col("grp").is_null(), col("name") == "name-350"):
        scan = t.scan(where=p)
        assert canonical(scan.to_arrow()) == canonical(filter_table(everything, p)), str(p)
        report = scan.explain().file_index
        assert report.enabled and report.files_with_index == report.files_planned > 0
    assert t.scan(where=col("grp") == 2).explain().file_index.rows_selected > 0


def test_pk_table_without_deletion_vectors_ignores_indexes(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"], options={**INDEXES, "bucket": "1"})
    t.write(rows(100))
    t.write(rows(100).set_column(2, "grp", pa.array([7] * 100, pa.int32())))  # every row now has grp = 7
    scan = t.scan(where=col("grp") == 1)
    assert not scan.explain().file_index.enabled
    assert scan.to_arrow().num_rows == 0
    assert t.read(where=col("grp") == 7).num_rows == 100


def test_renamed_column_still_uses_the_index_built_under_the_old_name(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=INDEXES)
    t.write(rows(300))
    t.write(rows(300, start=300))
    # As in Java, the index options are not renamed with the column: the alter names the new column itself.
    t = t.alter(RenameColumn("grp", "group_id"), SetOption("file-index.bitmap.columns", "group_id"))
    scan = t.scan(where=col("group_id") == 3)
    got = scan.to_arrow()
    assert got.num_rows == 120 and set(got.column("group_id").to_pylist()) == {3}
    report = scan.explain().file_index
    assert report.files_with_row_selection == 2 and report.rows_selected == 120


def test_row_selection_reads_only_matching_row_groups(catalog, tmp_path) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=INDEXES)
    data = rows(20000)
    t.write(data)
    p = (col("amount") >= 30000) & (col("amount") < 30030)
    scan = t.scan(where=p)
    assert canonical(scan.to_arrow()) == canonical(filter_table(data, p))
    report = scan.explain().file_index
    assert report.rows_selected == 10 and report.rows_skipped == 20000 - 10


def test_parquet_read_selected_decodes_only_row_groups_with_selected_rows(tmp_path) -> None:  # noqa: ANN001
    import numpy as np
    import pyarrow.parquet as pq

    from laketide.format import file_format

    path = tmp_path / "f.parquet"
    pq.write_table(rows(10000), path, row_group_size=1000)
    selected = np.array([5, 2500, 2501, 9999], dtype=np.int64)
    with open(path, "rb") as stream:
        got = list(file_format("parquet").read_selected(stream, rows=selected, columns=["id"], batch_size=400))
    starts = sorted({pos - pos % 1000 for pos, _ in got})
    assert starts == [0, 2000, 9000]  # three of ten row groups
    for pos, batch in got:
        assert batch.column("id").to_pylist() == list(range(pos, pos + batch.num_rows))


def test_sidecars_live_beside_data_files_under_a_path_directory(catalog) -> None:  # noqa: ANN001
    from pathlib import Path

    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": "1 b",
                                                       "data-file.path-directory": "data"})
    t.write(rows(100))
    t.write(rows(100, start=100))
    sidecars = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*.index"))
    assert len(sidecars) == 2 and all(s.startswith("data/bucket-0/") for s in sidecars)
    scan = t.scan(where=col("grp") == 1)
    assert scan.to_arrow().num_rows == 40 and scan.explain().file_index.files_with_row_selection == 2
    assert not scan.explain().file_index.corrupt_indexes
    assert sorted(r["file_index_path"].rsplit("/", 3)[-3] for r in catalog.table("db.t$files").read().to_pylist()) \
        == ["data", "data"]
