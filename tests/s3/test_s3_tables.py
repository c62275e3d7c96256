"""Tables on S3 (s3fs) against a local S3-compatible server: the whole life of a table, and many writers."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import NoSuchWarehouseError
from laketide.fs.fsspec_io import PublishMode
from tests.cli.conftest import assert_one_line_error, run_cli
from tests.s3.conftest import REPO, S3Server, start_server, stop_server

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def test_snapshots_publish_with_conditional_put(s3_server: S3Server, s3_warehouse: str) -> None:
    cat = laketide.load_catalog(s3_warehouse, **s3_server.options())
    io = cat.file_io
    assert io.publish_mode is PublishMode.CONDITIONAL_CREATE
    path = f"{s3_warehouse}/probe/snapshot-1"
    assert io.try_write_atomic(path, b"first") is True
    assert io.try_write_atomic(path, b"second") is False  # the server refused: If-None-Match: *
    assert io.read_bytes(path) == b"first"


def test_table_life_on_s3(s3_server: S3Server, s3_warehouse: str) -> None:
    import s3fs

    cat = laketide.load_catalog(s3_warehouse, **s3_server.options())
    with pytest.raises(NoSuchWarehouseError):
        cat.list_databases()  # nothing written yet: the warehouse does not exist
    cat.create_database("db")
    assert cat.list_databases() == ["db"] and cat.list_tables("db") == []
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    assert cat.list_tables("db") == ["t"]
    first = t.write(_rows(range(0, 10), "a"))
    second = t.write(_rows(range(5, 15), "b"))
    t.write(_rows(range(10, 20), "c"))
    latest = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert latest == {i: ("a" if i < 5 else "b" if i < 10 else "c") + str(i) for i in range(20)}
    # time travel: by id and by commit time
    assert sorted(t.read(snapshot_id=first)["id"].to_pylist()) == list(range(10))
    when = t.snapshot(second).time_millis
    assert sorted(t.read(timestamp_ms=when)["id"].to_pylist()) == list(range(15))
    # a second catalog object (another process would do the same) sees the same table
    other = laketide.load_catalog(s3_warehouse, **s3_server.options()).table("db.t")
    assert other.read().sort_by("id").equals(t.read().sort_by("id"))

    compacted = t.compact(full=True)
    assert compacted is not None and t.snapshot(compacted).commit_kind.value == "COMPACT"
    live = t.file_scan().plan(t.latest_snapshot())
    assert {e.file.level for e in live} == {t.options.num_levels - 1}
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == latest

    fs = s3fs.S3FileSystem(**s3_server.options(), skip_instance_cache=True)
    bucket_dir = t.path.removeprefix("s3://") + "/bucket-0"
    files_before = set(fs.ls(bucket_dir))
    expired = t.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    assert expired == 3
    assert t.snapshot_manager.snapshot_ids() == [compacted]
    fs.invalidate_cache()
    assert set(fs.ls(bucket_dir)) < files_before  # files only the expired snapshots used are gone
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == latest
    with pytest.raises(laketide.NoSuchSnapshotError):
        t.read(snapshot_id=first)

    # an object no snapshot references (a crashed writer's file) is an orphan
    orphan = f"{bucket_dir}/data-crashed-0.parquet"
    fs.pipe_file(orphan, b"junk")
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=5)
    dry = t.remove_orphan_files(older_than=future, dry_run=True)
    assert [p.rsplit("/", 1)[-1] for p in dry.paths] == ["data-crashed-0.parquet"]
    assert t.remove_orphan_files(older_than=future).count == 1
    fs.invalidate_cache()
    assert not fs.exists(orphan)
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == latest

    # rollback on S3: the older snapshot becomes the latest again
    t.write(_rows(range(100, 101), "z"))
    t.rollback_to(compacted)
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == latest
    cat.drop_table("db.t")
    assert cat.list_tables("db") == []


def test_cli_on_s3(tmp_path: Path, s3_server: S3Server, s3_warehouse: str) -> None:
    cat = laketide.load_catalog(s3_warehouse, **s3_server.options())
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA).write(_rows(range(3), "x"))
    flags = ["--warehouse", s3_warehouse, "-o", f"endpoint_url={s3_server.endpoint}", "-o", "key=test-key",
             "-o", "secret=test-secret"]
    assert run_cli(*flags, "tables", "db", "--json").json() == ["t"]
    assert sorted(r["id"] for r in run_cli(*flags, "read", "db.t", "--json").json()) == [0, 1, 2]
    config = tmp_path / "s3.toml"
    config.write_text(f'warehouse = "{s3_warehouse}"\n[storage-options]\nendpoint_url = "{s3_server.endpoint}"\n'
                      f'key = "test-key"\nsecret = "test-secret"\n')
    src = tmp_path / "more.parquet"
    import pyarrow.parquet as pq

    pq.write_table(_rows(range(3, 6), "y"), src)
    assert run_cli("--config", str(config), "write", "db.t", str(src), "--json").json()["rows"] == 3
    assert run_cli("--config", str(config), "describe", "db.t", "--json").json()["record_count"] == 6
    assert run_cli("--config", str(config), "doctor", "db.t", "--json").json()["findings"] == []


def test_unreachable_endpoint_and_wrong_credentials(tmp_path: Path) -> None:
    import boto3

    # A server that checks credentials: its first four requests (the setup below) go unchecked.
    server = start_server({"INITIAL_NO_AUTH_ACTION_COUNT": "4"})
    try:
        kw = {"endpoint_url": server.endpoint, "region_name": "us-east-1", "aws_access_key_id": "setup",
              "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="laketide")
        key = iam.create_access_key(UserName="laketide")["AccessKey"]
        iam.put_user_policy(UserName="laketide", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        boto3.client("s3", **kw).create_bucket(Bucket="locked")
        good = {"endpoint_url": server.endpoint, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
        cat = laketide.load_catalog("s3://locked/wh", **good)
        cat.create_database("db")
        assert cat.list_databases() == ["db"]
        for wrong_key, wrong_secret in ((key["AccessKeyId"], "not-the-secret"), ("AKIANOSUCHKEY", "x")):
            r = run_cli("--warehouse", "s3://locked/wh", "-o", f"endpoint_url={server.endpoint}",
                        "-o", f"key={wrong_key}", "-o", f"secret={wrong_secret}", "databases")
            assert_one_line_error(r, "s3://locked/wh", "credentials")
            assert len(r.err.strip().splitlines()) == 1
    finally:
        stop_server(server)
    # the same server, now stopped: nothing listens on its port
    r = run_cli("--warehouse", "s3://locked/wh", "-o", f"endpoint_url={server.endpoint}", "-o", "key=k",
                "-o", "secret=s", "tables", "db")
    assert_one_line_error(r, "s3://locked/wh", "endpoint")
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_four_writer_processes_lose_no_commit(s3_server: S3Server, s3_warehouse: str) -> None:
    """4 processes x 50 commits on one table: every commit lands exactly once (Paimon issue #8226)."""
    cat = laketide.load_catalog(s3_warehouse, **s3_server.options())
    cat.create_database("db")
    cat.create_table("db.events", pa.schema([("writer", pa.int32()), ("seq", pa.int32())]),
                     options={"write-only": "true", "commit.max-retries": "1000"})
    writers, commits = 4, 50
    procs = [
        subprocess.Popen([sys.executable, "-m", "tests.s3.concurrent_writer", s3_warehouse, s3_server.endpoint,
                          str(w), str(commits)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(writers)
    ]
    reported: list[int] = []
    for p in procs:
        out, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err[-2000:]
        reported += json.loads(out)
    t = cat.table("db.events")
    total = writers * commits
    # every writer's snapshot id is its own, and together they are 1..200 without a gap
    assert sorted(reported) == list(range(1, total + 1))
    assert t.snapshot_manager.snapshot_ids() == list(range(1, total + 1))
    rows = t.read()
    pairs = sorted(zip(rows["writer"].to_pylist(), rows["seq"].to_pylist()))
    assert pairs == [(w, i) for w in range(writers) for i in range(commits)]  # none lost, none doubled
    assert t.latest_snapshot().total_record_count == total


def test_spark_job_files_on_s3(s3_server: S3Server, s3_warehouse: str) -> None:
    """laketide.spark.job_files on an object store (files appear at close, no directories): an ended job's
    recorded files go, a task writing after the end deletes its own, a committed attempt stays."""
    import pyarrow as pa

    from laketide.spark.job_files import JobEndedError, SparkJob
    from tests.job_tasks import task_attempt

    cat = laketide.load_catalog(s3_warehouse, **s3_server.options())
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_key=["id"], options={"bucket": "2"})
    rows = pa.table({"id": list(range(10)), "v": ["x"] * 10}, schema=schema)
    io = t.file_io

    def task(job: SparkJob):  # noqa: ANN202
        return task_attempt(t, job, rows, io)

    def data_files() -> set[str]:
        return {st.path for p in ("bucket-0", "bucket-1") for st in io.list_status(f"{t.path}/{p}")}

    failed = SparkJob(t.path)
    task(failed)
    assert len(data_files()) == 2
    failed.end(io)
    assert data_files() == set()
    with pytest.raises(JobEndedError):
        task(failed)
    assert data_files() == set()
    done = SparkJob(t.path)
    kept, messages = task(done)
    task(done)  # an attempt Spark did not hand over
    t.commit(messages)
    done.end(io, kept={kept})
    assert t.read().num_rows == 10 and len(data_files()) == 2
    assert sorted(st.path.rsplit("/", 1)[-1] for st in io.list_status(f"{t.path}/_laketide_jobs")) == sorted(
        [f"{failed.job_id}.ended", f"{done.job_id}.ended"])
