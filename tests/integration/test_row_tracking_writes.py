"""Row-tracking tables laketide creates and appends to: row ids assigned at commit from ``nextRowId``.

Paimon: RowTrackingCommitUtils, SchemaValidation#validateRowTracking.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
TRACKING = {"row-tracking.enabled": "true", "bucket": "-1"}


def rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def ids_by_row_id(t) -> dict[int, int]:  # noqa: ANN001
    out = t.read(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"])
    return dict(zip(out.column("_ROW_ID").to_pylist(), out.column("id").to_pylist()))


def test_row_ids_are_consecutive_across_commits(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=TRACKING)
    t.write(rows(range(0, 3)))
    t.write(rows(range(10, 12)))
    assert ids_by_row_id(t) == {0: 0, 1: 1, 2: 2, 3: 10, 4: 11}
    assert t.latest_snapshot().next_row_id == 5
    seq = t.read(columns=["id", "_SEQUENCE_NUMBER"]).to_pydict()
    assert dict(zip(seq["id"], seq["_SEQUENCE_NUMBER"])) == {0: 1, 1: 1, 2: 1, 10: 2, 11: 2}


def test_a_writer_committed_after_another_gets_the_next_ids(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=TRACKING)
    first, second = t.new_write(), t.new_write()
    first.write(rows(range(0, 2)))
    second.write(rows(range(100, 103)))
    late = second.prepare_commit()
    t.commit(first.prepare_commit())
    t.commit(late)  # prepared before the first commit landed: its ids come from the latest nextRowId
    assert sorted(ids_by_row_id(t).items()) == [(0, 0), (1, 1), (2, 100), (3, 101), (4, 102)]


def test_empty_input_assigns_nothing(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=TRACKING)
    t.write(rows(range(0, 2)))
    t.write(rows(range(0, 0)))
    assert t.latest_snapshot().next_row_id == 2


@pytest.mark.parametrize("options, primary_key", [
    ({"row-tracking.enabled": "true", "bucket": "2"}, None),
    ({"row-tracking.enabled": "true", "bucket": "1"}, ["id"]),
    ({"data-evolution.enabled": "true"}, None),
], ids=["fixed-bucket", "primary-key", "evolution-without-tracking"])
def test_row_tracking_needs_an_unaware_append_table(catalog, options, primary_key) -> None:  # noqa: ANN001
    extra = {"bucket-key": "id"} if options.get("bucket") == "2" else {}
    with pytest.raises(InvalidOptionError, match="row-tracking.enabled|data-evolution.enabled"):
        catalog.create_table("db.t", SCHEMA, primary_key=primary_key, options={**options, **extra})
    assert not catalog.table_exists("db.t")


def test_row_ids_a_file_stores_itself_win_over_computed_ones(catalog) -> None:  # noqa: ANN001
    """A file Java's compaction rewrote holds _ROW_ID / _SEQUENCE_NUMBER and lists them in write_cols; a null
    falls back to first_row_id + position / the file's max sequence number (Java's FallbackMappingRow)."""
    import dataclasses

    import pyarrow.parquet as pq

    t = catalog.create_table("db.t", SCHEMA, options=TRACKING)
    w = t.new_write()
    w.write(rows(range(0, 3)))
    (msg,) = w.prepare_commit()
    (f,) = msg.new_files
    path = f"{t.store.path_factory.bucket_dir(msg.partition, msg.bucket)}/{f.file_name}"
    data = pq.read_table(path)
    data = data.append_column("_ROW_ID", pa.array([40, None, 47], pa.int64()))
    data = data.append_column("_SEQUENCE_NUMBER", pa.array([None, 9, None], pa.int64()))
    pq.write_table(data, path)
    # A file listing _ROW_ID in write_cols gets no first_row_id at commit (Java's assignRowTrackingMeta): give one.
    stored = dataclasses.replace(f, file_size=os.path.getsize(path), first_row_id=0,
                                 write_cols=("id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"))
    t.commit([dataclasses.replace(msg, new_files=(stored,))])
    out = t.read(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("id").to_pydict()
    assert out["_ROW_ID"] == [40, 1, 47]  # row 1: first_row_id 0 + position 1
    assert out["_SEQUENCE_NUMBER"] == [1, 9, 1]  # nulls: the file's max sequence number (snapshot 1)


def test_compaction_keeps_row_ids_and_sequence_numbers(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options=TRACKING)
    for start in range(0, 12, 3):
        t.write(rows(range(start, start + 3)))
    before = t.read(columns=["id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("_ROW_ID")
    first = t.compact(full=True)
    assert first is not None and t.latest_snapshot().commit_kind.name == "COMPACT"
    (f,) = [e.file for e in t.file_scan().plan(t.latest_snapshot())]
    assert f.write_cols == ("id", "v", "_ROW_ID", "_SEQUENCE_NUMBER") and f.first_row_id is None
    assert (f.min_sequence_number, f.max_sequence_number) == (1, 4)
    assert t.read(columns=["id", "v", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("_ROW_ID") == before
    t.write(rows(range(100, 102)))  # new ids after the compacted ones
    t.compact(full=True)  # a compacted file compacted again keeps the stored ids
    got = t.read(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("_ROW_ID").to_pydict()
    assert got["_ROW_ID"] == list(range(14)) and got["id"] == [*range(12), 100, 101]
    assert got["_SEQUENCE_NUMBER"] == [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3 + [6, 6]
    assert t.latest_snapshot().next_row_id == 14


def test_compaction_of_data_evolution_tables_is_refused(catalog) -> None:  # noqa: ANN001
    from laketide.exceptions import UnsupportedFeatureError

    t = catalog.create_table("db.t", SCHEMA, options={**TRACKING, "data-evolution.enabled": "true"})
    t.write(rows(range(0, 2)))
    t.write(rows(range(2, 4)))
    sid = t.latest_snapshot().id
    with pytest.raises(UnsupportedFeatureError, match="data-evolution.enabled"):
        t.compact(full=True)
    assert t.latest_snapshot().id == sid
