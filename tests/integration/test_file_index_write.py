"""Data files get the file indexes the table asks for (``file-index.*``), embedded or as a sidecar, on every
write path: flush, rolling, compaction; append and primary-key tables (issue 17, phase 2 step 1)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError
from laketide.expr.predicate import Leaf, Op
from laketide.index.file_index import BITMAP, BLOOM_FILTER, BSI, FileIndexContainer, ResultKind
from laketide.meta.manifest import DataFileMeta
from laketide.schema.changes import SetOption
from laketide.table.table import Table
from laketide.types import MAX_LENGTH, BigIntType, IntType, VarCharType
from tests.tree import tree

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("grp", pa.int32()), ("amount", pa.int64())])
INDEXES = {
    "file-index.bloom-filter.columns": "name",
    "file-index.bitmap.columns": "grp",
    "file-index.bsi.columns": "amount",
}


def rows(n: int, *, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": ids,
        "name": [f"name-{i}" for i in ids],
        "grp": [None if i % 10 == 9 else i % 4 for i in ids],
        "amount": [None if i % 13 == 0 else i * 3 for i in ids],
    }, schema=SCHEMA)


def live_files(t: Table) -> list[DataFileMeta]:
    snap = t.latest_snapshot()
    assert snap is not None
    return [e.file for e in t.file_scan().plan(snap)]


def bucket_dir(t: Table) -> str:
    return f"{t.path}/bucket-0"


def container_of(t: Table, f: DataFileMeta) -> FileIndexContainer:
    if f.embedded_index is not None:
        assert not f.extra_files
        return FileIndexContainer(f.embedded_index, path=f.file_name)
    (name,) = f.extra_files
    assert name.startswith(f.file_name) and name.endswith(".index")  # rewrites name it <file>-<n>.index
    return FileIndexContainer(Path(f"{bucket_dir(t)}/{name}").read_bytes(), path=name)


def file_rows(t: Table, f: DataFileMeta) -> pa.Table:
    import pyarrow.parquet as pq

    data = pq.read_table(f"{bucket_dir(t)}/{f.file_name}")
    return data.select([c for c in SCHEMA.names])


def check_index_content(t: Table, f: DataFileMeta) -> None:
    """Every index of ``f`` decodes to exactly what the file holds."""
    data = file_rows(t, f)
    c = container_of(t, f)
    assert {(e.column, e.index_type) for e in c.entries} == {("name", BLOOM_FILTER), ("grp", BITMAP),
                                                              ("amount", BSI)}
    fields = {"id": BigIntType(), "name": VarCharType(MAX_LENGTH), "grp": IntType(), "amount": BigIntType()}
    # bitmap: the value -> row positions dictionary is the file's
    bitmap = c.reader("grp", BITMAP, fields["grp"])
    decoded = {k: sorted(v) for k, v in bitmap.decode_all().items()}  # type: ignore[attr-defined]
    expected: dict[object, list[int]] = {}
    for pos, g in enumerate(data.column("grp").to_pylist()):
        expected.setdefault(g, []).append(pos)
    assert decoded == expected
    # bsi: each comparison selects exactly the matching rows
    bsi = c.reader("amount", BSI, fields["amount"])
    amounts = data.column("amount").to_pylist()
    pivot = sorted(a for a in amounts if a is not None)[len(amounts) // 2]
    for op, test in ((Op.LT, lambda a: a < pivot), (Op.EQ, lambda a: a == pivot), (Op.GE, lambda a: a >= pivot)):
        r = bsi.evaluate(Leaf(op, "amount", (pivot,)))
        assert r.kind is ResultKind.ROWS and r.exact
        assert sorted(r.rows) == [i for i, a in enumerate(amounts) if a is not None and test(a)]
    # bloom: every present name may be there; a name of no file is (with fpp 0.1, of 20) mostly absent
    bloom = c.reader("name", BLOOM_FILTER, fields["name"])
    for n in data.column("name").to_pylist()[:50]:
        assert bloom.evaluate(Leaf(Op.EQ, "name", (n,))).kind is ResultKind.REMAIN
    absent = [bloom.evaluate(Leaf(Op.EQ, "name", (f"absent-{i}",))).kind for i in range(20)]
    assert absent.count(ResultKind.SKIP) >= 10


@pytest.mark.parametrize("threshold", ["2 mb", "1 b"], ids=["embedded", "sidecar"])
def test_append_files_carry_every_index(catalog, threshold: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": threshold})
    t.write(rows(200))
    t.write(rows(100, start=200))
    files = live_files(t)
    assert len(files) == 2
    for f in files:
        if threshold == "1 b":
            assert f.embedded_index is None and f.extra_files == (f"{f.file_name}.index",)
        else:  # a bloom filter of 1M items (Java's default) needs about 600 kB
            assert f.embedded_index is not None and not f.extra_files
        check_index_content(t, f)
    assert t.read().sort_by("id") == rows(300)


def test_rolling_files_each_get_their_own_index(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "target-file-size": "1 kb",
                                                       "file-index.in-manifest-threshold": "1 b"})
    big = rows(5000)
    t.write(pa.Table.from_batches(big.to_batches(max_chunksize=500)))
    files = live_files(t)
    assert len(files) > 1
    assert sum(f.row_count for f in files) == 5000
    for f in files:
        check_index_content(t, f)


def test_append_compaction_rewrites_indexes_and_drops_old_sidecars(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": "1 b"})
    for i in range(4):
        t.write(rows(50, start=i * 50))
    old = {f.file_name for f in live_files(t)}
    t.compact(full=True)
    files = live_files(t)
    assert len(files) == 1 and files[0].file_name not in old
    check_index_content(t, files[0])
    t.expire_snapshots(retain_max=1, retain_min=1)
    leftovers = [p for p in tree(Path(bucket_dir(t))) if any(o in p for o in old)]
    assert leftovers == []  # the old files' sidecars went with them


def test_pk_table_indexes_value_columns_at_flush_and_compaction(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.pk", SCHEMA, primary_key=["id"],
                             options={**INDEXES, "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(rows(100))
    t.write(rows(100, start=50))
    t.compact(full=True)
    for f in live_files(t):
        c = container_of(t, f)
        assert {e.column for e in c.entries} == {"name", "grp", "amount"}
        bitmap = c.reader("grp", BITMAP, IntType())
        assert sum(len(v) for v in bitmap.decode_all().values()) == f.row_count  # type: ignore[attr-defined]
    assert t.read().sort_by("id").to_pylist() == rows(150).to_pylist()


def test_abort_deletes_sidecars(catalog) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA, options={**INDEXES, "file-index.in-manifest-threshold": "1 b"})
    before = tree(Path(t.path))
    w = t.new_write()
    w.write(rows(100))
    messages = w.prepare_commit()
    assert any(f.extra_files for m in messages for f in m.new_files)
    t.abort(messages)
    files = lambda: {k: v for k, v in tree(Path(t.path)).items() if v != "dir"}  # noqa: E731
    assert files() == {k: v for k, v in before.items() if v != "dir"}


@pytest.mark.parametrize(("options", "word"), [
    ({"file-index.bloom-filter.columns": "nope"}, "nope"),
    ({"file-index.bsi.columns": "name"}, "bsi"),
    ({"file-index.bitmap.columns": "grp", "file-index.bitmap.grp.index-block-size": "x"}, "index-block-size"),
])
def test_alter_refuses_bad_index_options_and_writes_nothing(catalog, options, word: str) -> None:  # noqa: ANN001
    t = catalog.create_table("db.t", SCHEMA)
    t.write(rows(10))
    before = tree(Path(t.path))
    with pytest.raises(InvalidOptionError, match=word) as info:
        t.alter(*(SetOption(k, v) for k, v in options.items()))
    assert "db.t" in str(info.value)
    assert tree(Path(t.path)) == before
