"""Every read-only command's ``--json`` output against the table it describes."""

from __future__ import annotations

import pyarrow as pa

import laketide
from tests.cli.conftest import assert_one_line_error, run_cli


def test_databases_tables_and_describe(warehouse: str, pk_table: laketide.Table) -> None:
    assert run_cli("--warehouse", warehouse, "databases", "--json").json() == ["db"]
    assert run_cli("--warehouse", warehouse, "tables", "db", "--json").json() == ["t"]
    info = run_cli("--warehouse", warehouse, "describe", "db.t", "--json").json()
    assert info["primary_keys"] == ["id", "dt"] and info["partition_keys"] == ["dt"]
    assert info["bucket_mode"] == "fixed (2)"
    assert [c["name"] for c in info["columns"]] == ["id", "v", "dt"]
    assert info["columns"][0]["type"] == "BIGINT NOT NULL"
    assert info["options"] == {"bucket": "2"}
    assert info["snapshot_count"] == 3 and info["latest_snapshot_id"] == 3
    assert info["record_count"] == pk_table.latest_snapshot().total_record_count
    files = run_cli("--warehouse", warehouse, "files", "db.t", "--json").json()
    assert info["file_count"] == len(files) and info["total_size"] == sum(f["file_size"] for f in files)
    # the human rendering names the same things
    text = run_cli("--warehouse", warehouse, "describe", "db.t")
    assert text.code == 0 and "fixed (2)" in text.out and "BIGINT NOT NULL" in text.out


def test_read_head_where_columns_snapshot(warehouse: str, pk_table: laketide.Table) -> None:
    rows = run_cli("--warehouse", warehouse, "read", "db.t", "--where", "id >= 25 AND dt = 'b'", "--json").json()
    expected = pk_table.read(where="id >= 25 AND dt = 'b'").to_pylist()
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in expected) == list(range(25, 40))
    assert {(r["id"], r["v"]) for r in rows} == {(r["id"], r["v"]) for r in expected}
    only = run_cli("--warehouse", warehouse, "read", "db.t", "--columns", "id", "--limit", "3", "--json").json()
    assert len(only) == 3 and all(set(r) == {"id"} for r in only)
    head = run_cli("--warehouse", warehouse, "head", "db.t", "--json").json()
    assert len(head) == 10
    first = run_cli("--warehouse", warehouse, "read", "db.t", "--snapshot", "1", "--json").json()
    assert len(first) == 20 and {r["v"] for r in first} == {"v0"}
    system = run_cli("--warehouse", warehouse, "read", "db.t$options", "--json").json()
    assert system == [{"key": "bucket", "value": "2"}]


def test_snapshots_history_files_partitions_buckets(warehouse: str, pk_table: laketide.Table) -> None:
    snaps = run_cli("--warehouse", warehouse, "snapshots", "db.t", "--json").json()
    assert [s["snapshot_id"] for s in snaps] == [1, 2, 3]
    assert all(s["commit_kind"] == "APPEND" for s in snaps)
    history = run_cli("--warehouse", warehouse, "history", "db.t", "-n", "2", "--json").json()
    assert [h["snapshot_id"] for h in history] == [3, 2]
    files = run_cli("--warehouse", warehouse, "files", "db.t", "--json").json()
    live = pk_table.file_scan().plan(pk_table.latest_snapshot())
    assert sorted(f["file_name"] for f in files) == sorted(e.file.file_name for e in live)
    assert {f["partition"] for f in files} == {"dt=a", "dt=b"}
    # min/max keys are decoded primary keys (the trimmed key: dt is a partition column)
    for f in files:
        assert int(f["min_key"]) <= int(f["max_key"])
        assert f["min_sequence_number"] <= f["max_sequence_number"]
    old = run_cli("--warehouse", warehouse, "files", "db.t", "--snapshot", "1", "--json").json()
    assert len(old) < len(files)
    parts = run_cli("--warehouse", warehouse, "partitions", "db.t", "--json").json()
    assert [p["partition"] for p in parts] == ["dt=a", "dt=b"]
    assert sum(p["file_count"] for p in parts) == len(files)
    assert sum(p["record_count"] for p in parts) == sum(f["row_count"] for f in files)
    buckets = run_cli("--warehouse", warehouse, "buckets", "db.t", "--json").json()
    assert {(b["partition"], b["bucket"]) for b in buckets} == {(p, b) for p in ("dt=a", "dt=b") for b in (0, 1)}
    for b in buckets:
        mine = [f for f in files if (f["partition"], f["bucket"]) == (b["partition"], b["bucket"])]
        assert b["file_count"] == len(mine) and b["total_size"] == sum(f["file_size"] for f in mine)
        assert b["sorted_runs"] == len(mine)  # three level-0 files: three runs


def test_empty_table_lists_nothing(warehouse: str) -> None:
    cat = laketide.load_catalog(warehouse)
    cat.create_database("db")
    cat.create_table("db.e", pa.schema([("a", pa.int32())]))
    assert run_cli("--warehouse", warehouse, "files", "db.e", "--json").json() == []
    assert run_cli("--warehouse", warehouse, "buckets", "db.e", "--json").json() == []
    assert run_cli("--warehouse", warehouse, "snapshots", "db.e", "--json").json() == []
    assert run_cli("--warehouse", warehouse, "read", "db.e", "--json").json() == []
    info = run_cli("--warehouse", warehouse, "describe", "db.e", "--json").json()
    assert info["latest_snapshot_id"] is None and info["file_count"] == 0 and info["bucket_mode"] == "unaware"


def test_bad_input_gives_one_line(warehouse: str, pk_table: laketide.Table) -> None:
    r = run_cli("--warehouse", warehouse, "read", "db.t", "--where", "id >= 3 AND AND v = 'x'")
    assert_one_line_error(r, "position 12")
    lines = r.err.splitlines()
    # the message, the filter, and a caret under the offending token
    assert lines[1].strip() == "id >= 3 AND AND v = 'x'"
    assert lines[2].index("^") - lines[1].index("i") == 12
    assert_one_line_error(run_cli("--warehouse", warehouse, "read", "db.t", "--where", "nope = 1"),
                          "unknown column 'nope'")
    assert_one_line_error(run_cli("--warehouse", warehouse, "describe", "db.missing"), "db.missing")
    assert_one_line_error(run_cli("--warehouse", warehouse, "describe", "db.."), "db..")
    assert_one_line_error(run_cli("--warehouse", warehouse, "tables", "../etc"), "../etc")
    assert_one_line_error(run_cli("--warehouse", warehouse, "read", "db.t", "--snapshot", "99"), "99")
    assert_one_line_error(run_cli("--warehouse", warehouse + "-typo", "databases"), "does not exist")
    assert_one_line_error(run_cli("databases", env={"LAKETIDE_WAREHOUSE": ""}), "--warehouse")
    r = run_cli("--warehouse", warehouse, "read")  # usage error: argparse, exit 2
    assert r.code == 2 and "Traceback" not in r.err and "usage:" in r.err
    r = run_cli("--warehouse", warehouse, "compact", "db.t", "--partition", "nope=1")
    assert_one_line_error(r, "nope", "partition keys")
    assert run_cli("--warehouse", warehouse, "snapshots", "db.t", "--json").json()[-1]["snapshot_id"] == 3


def test_catalog_from_config_file_and_env(tmp_path, warehouse: str, pk_table: laketide.Table) -> None:  # noqa: ANN001
    toml = tmp_path / "lt.toml"
    toml.write_text(f'warehouse = "{warehouse}"\n[storage-options]\n')
    assert run_cli("--config", str(toml), "tables", "db", "--json").json() == ["t"]
    yaml = tmp_path / "lt.yaml"
    yaml.write_text(f"warehouse: {warehouse}\nmetastore: filesystem\n")
    assert run_cli("--config", str(yaml), "tables", "db", "--json").json() == ["t"]
    assert run_cli("tables", "db", "--json", env={"LAKETIDE_WAREHOUSE": warehouse}).json() == ["t"]
    bad = tmp_path / "bad.toml"
    bad.write_text('warehouse = "x"\nwarehuose = "typo"\n')
    assert_one_line_error(run_cli("--config", str(bad), "databases"), "warehuose", str(bad))
    broken = tmp_path / "broken.toml"
    broken.write_text("warehouse = \n")
    assert_one_line_error(run_cli("--config", str(broken), "databases"), "not valid TOML")
    assert_one_line_error(run_cli("--config", str(tmp_path / "none.toml"), "databases"), "does not exist")
    assert_one_line_error(run_cli("--warehouse", warehouse, "--metastore", "hive", "databases"), "hive")
