"""Raw-convertible reads split by file: deletion-vector tables and primary-key buckets whose files sit in one level
are planned as packs of files (``source.split.target-size``), each read with its vector and no merge."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import laketide
from laketide.exceptions import InvalidOptionError
from laketide.schema.changes import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("s", pa.string())])
SMALL = {"source.split.target-size": "1 b", "source.split.open-file-cost": "1 b"}  # every file its own split


def _rows(keys: np.ndarray, v: int) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(np.full(len(keys), v), pa.int64()),
                     "s": pa.array([f"s{k % 7}" for k in keys])}, schema=SCHEMA)


def _write_updates(t, oracle: dict[int, tuple]) -> None:  # noqa: ANN001
    rng = np.random.default_rng(7)
    # A base run several times larger than the updates: universal compaction's size-ratio pick then keeps the
    # updates in their own levels (the tests need files in several levels), whatever the files' encoded sizes.
    base = np.arange(8000)
    t.write(_rows(base, -1))
    oracle.update({int(k): (-1, f"s{k % 7}") for k in base})
    for i in range(4):
        keys = np.sort(rng.choice(2000, size=300, replace=False))
        t.write(_rows(keys, i))
        oracle.update({int(k): (i, f"s{k % 7}") for k in keys})
    gone = [int(k) for k in rng.choice(2000, size=50, replace=False)]
    t.delete(where=f"k IN ({', '.join(map(str, gone))})")
    for k in gone:
        oracle.pop(k, None)


def _as_dict(table: pa.Table) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for r in table.to_pylist():
        assert r["k"] not in out, f"key {r['k']} read twice"
        out[r["k"]] = (r["v"], r["s"])
    return out


@pytest.fixture
def catalog(tmp_path):  # noqa: ANN001, ANN201
    cat = laketide.load_catalog(warehouse=str(tmp_path))
    cat.create_database("db")
    return cat


def test_dv_table_is_split_per_file_and_reads_like_the_oracle(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true", **SMALL})
    oracle: dict[int, tuple] = {}
    _write_updates(t, oracle)
    splits = t.scan().plan()
    assert all(len(s.files) == 1 and s.raw_convertible for s in splits)
    assert len(splits) > len({s.bucket for s in splits}), "some bucket should hold files in several levels"
    assert all(s.deletion_files is not None and len(s.deletion_files) == 1 for s in splits)
    assert any(d is not None for s in splits for d in s.deletion_files or ())
    assert _as_dict(t.read()) == oracle
    # The same table planned with the default target size: one pack per bucket, same rows.
    packed = t.alter(SetOption("source.split.target-size", "128 mb"), SetOption("source.split.open-file-cost", "4 mb"))
    assert len(packed.scan().plan()) == len({s.bucket for s in splits})
    assert _as_dict(packed.read()) == oracle
    # Streaming batch by batch reads the same rows as the parallel read.
    assert _as_dict(pa.Table.from_batches(list(t.scan().to_batches()), schema=t.scan().output_schema)) == oracle


def test_dv_value_filter_prunes_files_and_keeps_answers(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", **SMALL})
    oracle: dict[int, tuple] = {}
    _write_updates(t, oracle)
    everything = t.scan().explain().files
    only_latest = t.scan(where="v = 3").explain().files
    assert only_latest < everything, "value stats should drop files with no v = 3 on a DV table"
    got = _as_dict(t.read(where="v = 3"))
    assert got == {k: row for k, row in oracle.items() if row[0] == 3}
    # An older value that was updated away must not come back through a pruned newer file.
    assert _as_dict(t.read(where="v = -1")) == {k: row for k, row in oracle.items() if row[0] == -1}


def test_one_level_bucket_is_raw_and_split_per_file(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "target-file-size": "4 kb", **SMALL})
    oracle: dict[int, tuple] = {}
    _write_updates(t, oracle)
    before = t.scan().plan()
    assert len(before) == 1 and not before[0].raw_convertible, "overlapping runs must be merged in one split"
    t.compact(full=True)
    after = t.scan().plan()
    assert len(after) > 1, "full compaction with a small target file size leaves several files in one level"
    assert all(s.raw_convertible and len(s.files) == 1 for s in after)
    assert len({f.level for s in after for f in s.files}) == 1
    assert _as_dict(t.read()) == oracle
    assert _as_dict(t.read(where="k < 100")) == {k: r for k, r in oracle.items() if k < 100}


def test_empty_dv_table_plans_nothing(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    assert t.scan().plan() == []
    assert t.read().num_rows == 0


@pytest.mark.parametrize("key", ["source.split.target-size", "source.split.open-file-cost"])
@pytest.mark.parametrize("value", ["lots", "0", "-1 mb"])
def test_bad_split_sizes_are_refused(catalog, key: str, value: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.bad", SCHEMA, primary_key=["k"], options={"bucket": "1", key: value})
    assert "bad" not in catalog.list_tables("db")


def test_full_start_change_read_keeps_every_split_of_a_bucket(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", **SMALL})
    oracle: dict[int, tuple] = {}
    _write_updates(t, oracle)
    assert len(t.scan().plan()) > 1
    latest = t.latest_snapshot().id
    changes = t.read_changes(latest, latest, full_start=True)
    assert set(changes.column("rowkind").to_pylist()) == {"+I"}
    assert _as_dict(changes.drop_columns(["rowkind"])) == oracle
