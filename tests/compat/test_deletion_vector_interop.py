"""Deletion vectors laketide writes, read back by pypaimon; Java-written DV tables written on by laketide."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laketide
from laketide.schema.changes import RemoveOption

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("name", pa.string()), ("amount", pa.float64())])


def _batch(ids: range, dt: str, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "dt": [dt] * len(ids), "name": [f"{tag}-{i}" for i in ids],
                     "amount": [i * 0.5 for i in ids]}, schema=SCHEMA)


def _by_key(table: pa.Table, keys: list[str]) -> dict:
    return {tuple(r[k] for k in keys): r for r in table.to_pylist()}


def _vector_count(t) -> int:  # noqa: ANN001
    latest = t.latest_snapshot()
    return sum(m.cardinality for e in t.file_scan().index_entries(latest)
               if e.index_file.index_type == "DELETION_VECTORS" for m in e.index_file.dv_ranges or ())


# pypaimon 2.1.0 reads 32-bit vectors only (BitmapDeletionVector): the 64-bit layout is checked byte for byte
# against Java's vectors in tests/unit/test_deletion_vectors.py, and read back by laketide here.
@pytest.mark.parametrize("bit64", ["false", "true"])
def test_pypaimon_reads_laketide_deletion_vectors(catalog, warehouse, pypaimon, bit64: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.dv", SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={
        "bucket": "2", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": bit64,
        "compaction.max-size-amplification-percent": "100000"})
    t.write(pa.concat_tables([_batch(range(0, 200), "d1", "base"), _batch(range(0, 50), "d2", "base")]))
    t.write(_batch(range(10, 40), "d1", "upd"))
    w = t.new_write()
    w.delete(pa.table({"id": [0, 1, 150], "dt": ["d1", "d1", "d1"]}))
    t.commit(w.prepare_commit())
    assert _vector_count(t) > 0
    ours = _by_key(t.read(), ["id", "dt"])
    assert len(ours) == 247 and ours[(10, "d1")]["name"] == "upd-10"
    if bit64 == "false":
        theirs = pypaimon.read(warehouse, "db.dv").select(SCHEMA.names).cast(SCHEMA)
        assert _by_key(theirs, ["id", "dt"]) == ours
    t.compact(full=True)
    assert _vector_count(t) == 0
    assert _by_key(t.read(), ["id", "dt"]) == ours


def test_laketide_writes_on_a_copy_of_pk_09(java_table) -> None:  # noqa: ANN001
    """Java's vectors are restored, extended and folded in; pypaimon cannot read pk_09 (0.9 manifests)."""
    t = laketide.load_catalog(warehouse=java_table("pk_09")).table("pk_09.pk_09")
    expected = _by_key(t.read(), ["f0", "f1", "f2"])
    schema = t.arrow_schema
    rows = pa.Table.from_pylist([
        {"f0": "Alice", "f1": 10, "f2": 1, "f3": 99.5},   # update a row of a file with a Java vector
        {"f0": "Zed", "f1": 20, "f2": 0, "f3": 1.5},      # a new key
    ], schema=schema)
    t.write(rows)
    for r in rows.to_pylist():
        expected[(r["f0"], r["f1"], r["f2"])] = r
    w = t.new_write()
    w.delete(pa.Table.from_pylist([{"f0": "Bob", "f1": 10, "f2": 0, "f3": None}], schema=schema))
    t.commit(w.prepare_commit())
    del expected[("Bob", 10, 0)]
    assert _by_key(t.read(), ["f0", "f1", "f2"]) == expected
    t.compact(full=True)
    assert _by_key(t.read(), ["f0", "f1", "f2"]) == expected
    assert _vector_count(t) == 0


def test_laketide_writes_on_a_copy_of_pk_with_bitmap_dv(java_table, pypaimon) -> None:  # noqa: ANN001
    warehouse = java_table("pk_with_bitmap_dv")
    t = laketide.load_catalog(warehouse=warehouse).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    # laketide writes no file indexes yet: the table's bitmap index option has to go before it can write.
    t.alter(RemoveOption("file-index.bitmap.columns"))
    expected = _by_key(t.read(), ["key"])
    assert expected
    schema = t.arrow_schema
    some = sorted(expected)[:3]
    updates = [{**expected[k], "f3": 1000.0 + i} for i, k in enumerate(some)]
    t.write(pa.Table.from_pylist(updates + [{"key": 10_000, "f0": "new", "f1": 1, "f2": 2, "f3": 3.0}],
                                 schema=schema))
    for r in updates:
        expected[(r["key"],)] = r
    expected[(10_000,)] = {"key": 10_000, "f0": "new", "f1": 1, "f2": 2, "f3": 3.0}
    assert _vector_count(t) > 0
    assert _by_key(t.read(), ["key"]) == expected
    theirs = pypaimon.read(warehouse, "pk_with_bitmap_dv.pk_with_bitmap_dv").select(schema.names).cast(schema)
    assert _by_key(theirs, ["key"]) == expected


def test_pypaimon_reads_a_table_with_input_changelog(catalog, warehouse, pypaimon) -> None:  # noqa: ANN001
    t = catalog.create_table("db.cl", SCHEMA, primary_key=["id", "dt"], options={
        "bucket": "2", "changelog-producer": "input"})
    t.write(_batch(range(0, 30), "d1", "a"))
    t.write(_batch(range(20, 40), "d1", "b"))
    assert t.latest_snapshot().changelog_manifest_list
    ours = _by_key(t.read(), ["id", "dt"])
    theirs = pypaimon.read(warehouse, "db.cl").select(SCHEMA.names).cast(SCHEMA)
    assert _by_key(theirs, ["id", "dt"]) == ours


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_pypaimon_reads_an_append_table_deleted_by_vectors(catalog, warehouse, pypaimon, bucket: str) -> None:  # noqa: ANN001
    options = {"bucket": bucket, "deletion-vectors.enabled": "true", **({"bucket-key": "id"} if bucket != "-1" else {})}
    t = catalog.create_table("db.adv", SCHEMA, partition_keys=["dt"], options=options)
    t.write(pa.concat_tables([_batch(range(0, 120), "d1", "base"), _batch(range(0, 30), "d2", "base")]))
    t.delete(where="id < 10 OR id IN (50, 51, 119)")
    t.update({"name": "'changed'"}, where="id BETWEEN 20 AND 24")
    assert _vector_count(t) > 0
    ours = sorted(t.read().to_pylist(), key=lambda r: (r["id"], r["dt"]))
    assert len(ours) == 150 - 10 * 2 - 3 and sum(r["name"] == "changed" for r in ours) == 10
    theirs = pypaimon.read(warehouse, "db.adv").select(SCHEMA.names).cast(SCHEMA)
    assert sorted(theirs.to_pylist(), key=lambda r: (r["id"], r["dt"])) == ours
