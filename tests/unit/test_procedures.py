"""The engine-neutral procedure table (laketide.catalog.procedures), called without Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.catalog.procedures import PROCEDURES, call_procedure, parse_partitions
from laketide.exceptions import InvalidOptionError, NoSuchProcedureError
from laketide.schema.changes import SetOption


@pytest.fixture()
def cat(tmp_path: Path):  # noqa: ANN201
    c = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    c.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])
    t = c.create_table("db.t", schema, partition_keys=["dt"])
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [3], "dt": ["a"]}, schema=schema))
    return c


def test_unknown_procedure_lists_the_known_ones(cat) -> None:  # noqa: ANN001
    with pytest.raises(NoSuchProcedureError) as e:
        call_procedure(cat, "sys.nope", ["db.t"])
    assert all(name in str(e.value) for name in PROCEDURES)


def test_positional_and_named_arguments(cat) -> None:  # noqa: ANN001
    call_procedure(cat, "create_tag", ["db.t", "t1"], {"snapshot_id": 1})
    assert cat.table("db.t").tags.get("t1").snapshot_id == 1
    with pytest.raises(InvalidOptionError, match="given twice"):
        call_procedure(cat, "create_tag", ["db.t", "t2"], {"tag": "t3"})
    with pytest.raises(InvalidOptionError, match="snapshotid"):
        call_procedure(cat, "create_tag", [], {"table": "db.t", "tag": "t2", "snapshotid": 1})
    assert cat.table("db.t").tags.names() == ["t1"]
    assert call_procedure(cat, "rollback", [], {"table": "db.t", "tag": "t1"}) == [1]
    assert cat.table("db.t").latest_snapshot().id == 1


def test_mark_partition_done_writes_paimons_success_file(cat) -> None:  # noqa: ANN001
    call_procedure(cat, "mark_partition_done", [], {"table": "db.t", "partitions": "dt=a;dt=b"})
    path = Path(cat.table("db.t").path.replace("file://", "")) / "dt=a" / "_SUCCESS"
    first = json.loads(path.read_text())
    assert first["creationTime"] == first["modificationTime"] > 0
    call_procedure(cat, "mark_partition_done", [], {"table": "db.t", "partitions": "dt=a"})
    again = json.loads(path.read_text())
    assert again["creationTime"] == first["creationTime"] and again["modificationTime"] >= first["modificationTime"]
    with pytest.raises(InvalidOptionError, match="partition keys"):
        call_procedure(cat, "mark_partition_done", [], {"table": "db.t", "partitions": "hh=1"})


def test_parse_partitions() -> None:
    assert parse_partitions("dt=1,hh=2;dt=3,hh=4") == [{"dt": "1", "hh": "2"}, {"dt": "3", "hh": "4"}]
    assert parse_partitions("") is None
    with pytest.raises(InvalidOptionError):
        parse_partitions("dt")


def test_branch_fast_forward_and_rewrite_file_index(cat) -> None:  # noqa: ANN001
    call_procedure(cat, "create_tag", [], {"table": "db.t", "tag": "t1", "snapshot_id": 1})
    call_procedure(cat, "create_branch", [], {"table": "db.t", "branch": "b1", "tag": "t1"})
    branch = cat.table("db.t$branch_b1")
    branch.write(pa.table({"id": [7], "dt": ["c"]}, schema=branch.arrow_schema))
    call_procedure(cat, "fast_forward", ["db.t", "b1"])
    assert sorted(r["id"] for r in cat.table("db.t").read().to_pylist()) == [1, 2, 7]
    table = cat.table("db.t")
    table.alter(SetOption("file-index.bloom-filter.columns", "id"))
    before = table.latest_snapshot().id
    assert call_procedure(cat, "rewrite_file_index", [], {"table": "db.t"}) == [True]
    assert cat.table("db.t").latest_snapshot().id == before + 1


def test_every_result_is_a_plain_python_value(cat) -> None:  # noqa: ANN001
    # Spark builds the result rows from these: an int subclass (ExpireResult) is refused by its LongType.
    expired = call_procedure(cat, "expire_snapshots", ["db.t"], {"retain_max": 1, "retain_min": 1})
    orphans = call_procedure(cat, "remove_orphan_files", ["db.t"], {"dry_run": "true"})
    assert [type(v) for v in expired + orphans] == [int, int]
    assert expired == [1] and cat.table("db.t").snapshots().num_rows == 1
