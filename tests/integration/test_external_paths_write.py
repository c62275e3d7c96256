"""Writing data files under ``data-file.external-paths`` with each of Java's strategies.

A file lands at ``<root>/<partition>/bucket-N/<name>`` (entropy-inject adds four hash directories before the
name); its full path is recorded as the file's external path; maintenance (compaction, expiration, orphan cleanup,
drop table) follows it. Paimon: fs.*ExternalPathProvider, AbstractFileStore#createExternalPaths.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import re
from pathlib import Path

import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError, LaketideError
from laketide.meta.external_paths import ExternalPathProvider, entropy_dirs, murmur3_32
from laketide.options import ExternalPathStrategy
from laketide.table.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
_COUNTER = re.compile(r"-(\d+)\.parquet$")


def rows(ids: range, dt: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA)


def make(tmp_path: Path, roots: list[Path], *, pk: bool = True, name: str = "db.t", **options: str) -> Table:
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    opts = {"bucket": "1", **({} if pk else {"bucket-key": "id"}),
            "data-file.external-paths": ",".join(f"file://{r}" for r in roots), **options}
    return cat.create_table(name, SCHEMA, partition_keys=["dt"], primary_key=["id", "dt"] if pk else None,
                            options=opts)


def live_files(t: Table) -> list:  # noqa: ANN401 - DataFileMeta list
    return [e.file for e in t.file_scan().plan(t.latest_snapshot())]


def root_index(path: str, roots: list[Path]) -> int:
    matches = [i for i, r in enumerate(roots) if path.startswith(f"file://{r}/")]
    assert len(matches) == 1, path
    return matches[0]


def data_files_under(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("data-*") if p.is_file())


def test_round_robin_cycles_through_the_roots_in_order(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1", tmp_path / "e2"]
    # Tiny target size: one write rolls many files from one writer, so the cycle is visible within it.
    t = make(tmp_path, roots, pk=False, **{"data-file.external-paths.strategy": "round-robin",
                                            "target-file-size": "1 b"})
    t.write(pa.concat_tables([rows(range(i * 10, i * 10 + 10)) for i in range(7)]))
    files = sorted(live_files(t), key=lambda f: int(_COUNTER.search(f.file_name).group(1)))
    assert len(files) >= 6
    order = [root_index(f.external_path, roots) for f in files]
    assert order == [(order[0] + i) % 3 for i in range(len(order))]  # random start, then in turn
    for f in files:
        assert f.external_path.endswith(f"/dt=a/bucket-0/{f.file_name}")
    assert data_files_under(tmp_path / "wh") == []
    assert sorted(t.read().column("id").to_pylist()) == list(range(70))


def test_entropy_inject_adds_hash_directories_and_starts_at_the_second_root(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "entropy-inject"})
    t.write(rows(range(5)))
    (f,) = live_files(t)
    assert f.external_path == f"file://{roots[1]}/dt=a/bucket-0/{entropy_dirs(f.file_name)}/{f.file_name}"
    assert os.path.isfile(f.external_path[len("file://"):])
    assert sorted(t.read().column("id").to_pylist()) == list(range(5))


def test_entropy_directories_follow_guava_murmur3() -> None:
    # Guava's Hashing.murmur3_32() reference values (seed 0).
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723
    bits = format(0x248BFA47 | 0x80000000, "032b")[-20:]
    assert entropy_dirs("hello") == f"{bits[:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"


def test_specific_fs_uses_only_the_roots_of_that_scheme(tmp_path: Path) -> None:
    local = tmp_path / "e0"
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], primary_key=["id", "dt"], options={
        "bucket": "1", "data-file.external-paths": f"s3://nowhere/x,file://{local}",
        "data-file.external-paths.strategy": "specific-fs", "data-file.external-paths.specific-fs": "file"})
    t.write(rows(range(3)))
    t.write(rows(range(3, 6)))
    assert [root_index(f.external_path, [local]) for f in live_files(t)] == [0, 0]
    assert sorted(t.read().column("id").to_pylist()) == list(range(6))


def test_weight_robin_draws_roots_by_weight() -> None:
    provider = ExternalPathProvider(ExternalPathStrategy.WEIGHTED, ["file:///a", "file:///b"], "dt=x/bucket-0",
                                    (3, 1), rng=random.Random(7))
    picks = [provider.next_path(f"f{i}").split("/")[3] for i in range(4000)]
    share = picks.count("a") / len(picks)
    assert 0.7 < share < 0.8  # 3:1 -> 75 %
    assert provider.next_path("n").endswith("/dt=x/bucket-0/n")


def test_weight_robin_table_writes_under_its_roots(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "weight-robin",
                                  "data-file.external-paths.weights": "5,1"})
    for i in range(4):
        t.write(rows(range(i * 3, i * 3 + 3)))
    assert {root_index(f.external_path, roots) for f in live_files(t)} <= {0, 1}
    assert sorted(t.read().column("id").to_pylist()) == list(range(12))


def test_strategy_none_ignores_the_external_paths(tmp_path: Path) -> None:
    roots = [tmp_path / "e0"]
    t = make(tmp_path, roots)  # strategy defaults to none
    t.write(rows(range(3)))
    assert [f.external_path for f in live_files(t)] == [None]
    assert not roots[0].exists()
    assert len(data_files_under(tmp_path / "wh")) == 1


@pytest.mark.parametrize(("options", "message"), [
    ({"data-file.external-paths": "/no/scheme", "data-file.external-paths.strategy": "round-robin"}, "no scheme"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "specific-fs"}, "specific-fs"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "specific-fs",
      "data-file.external-paths.specific-fs": "s3"}, "leaves no external path"),
    ({"data-file.external-paths": "file:///x,file:///y", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1,2,3"}, "3 weights for 2"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "weight-robin",
      "data-file.external-paths.weights": "1,-2"}, "positive"),
    ({"data-file.external-paths": "file:///x", "data-file.external-paths.strategy": "sideways"}, "strategy"),
], ids=["no-scheme", "specific-fs-unset", "specific-fs-no-match", "weights-count", "weights-negative",
        "unknown-strategy"])
def test_bad_external_path_options_are_refused_and_nothing_is_created(tmp_path: Path, options, message) -> None:  # noqa: ANN001
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.create_database("db")
    with pytest.raises(InvalidOptionError, match=message):
        cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1", **options})
    assert not cat.table_exists("db.t")


def test_compaction_writes_its_output_under_the_external_roots(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "round-robin"})
    for i in range(3):
        t.write(rows(range(i, i + 2)))
    t.compact(full=True)
    files = live_files(t)
    assert len(files) == 1 and files[0].level > 0
    root_index(files[0].external_path, roots)
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2, 3]


def test_expire_and_orphan_cleanup_follow_the_external_files(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "round-robin"})
    t.write(rows(range(3)))
    first = live_files(t)[0].external_path[len("file://"):]
    t.write(rows(range(10, 12)), mode="overwrite")
    assert t.expire_snapshots(retain_min=1, retain_max=1) == 1
    assert not os.path.exists(first)  # the overwritten file went with its snapshot
    kept = live_files(t)[0].external_path[len("file://"):]
    # A file a failed job left under an external root is an orphan; the live one is not.
    stray = roots[0] / "dt=a" / "bucket-0" / "data-stray-0.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"x")
    result = t.remove_orphan_files(older_than=_dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=1))
    assert [p.split("/")[-1] for p in result.paths] == ["data-stray-0.parquet"]
    assert not stray.exists() and os.path.exists(kept)
    assert sorted(t.read().column("id").to_pylist()) == [10, 11]


def test_drop_table_removes_its_external_roots_as_java_does(tmp_path: Path) -> None:
    roots = [tmp_path / "e0", tmp_path / "e1"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "round-robin"})
    t.write(rows(range(3)))
    t.write(rows(range(3, 6)))
    cat = laketide.load_catalog(warehouse=str(tmp_path / "wh"))
    cat.drop_table("db.t")
    assert not any(r.exists() for r in roots)
    assert not (tmp_path / "wh" / "db.db" / "t").exists()


def test_drop_table_never_deletes_a_root_that_holds_the_warehouse(tmp_path: Path) -> None:
    t = make(tmp_path, [tmp_path], **{"data-file.external-paths.strategy": "round-robin"})
    t.write(rows(range(3)))
    other = make(tmp_path, [], pk=False, name="db.other")
    other.write(rows(range(2)))
    laketide.load_catalog(warehouse=str(tmp_path / "wh")).drop_table("db.t")
    assert sorted(other.read().column("id").to_pylist()) == [0, 1]


def test_a_missing_external_file_fails_the_read_naming_its_path(tmp_path: Path) -> None:
    roots = [tmp_path / "e0"]
    t = make(tmp_path, roots, **{"data-file.external-paths.strategy": "round-robin"})
    t.write(rows(range(3)))
    path = live_files(t)[0].external_path
    os.remove(path[len("file://"):])
    with pytest.raises(LaketideError, match=re.escape(path[len("file://"):])):
        t.read()
