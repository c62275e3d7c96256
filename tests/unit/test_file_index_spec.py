"""``file-index.*`` options: what they ask for, refused when they name the wrong column, type or option."""

from __future__ import annotations

import pyarrow as pa
import pytest

from laketide.exceptions import InvalidOptionError, UnsupportedOptionError
from laketide.expr.predicate import col
from laketide.index.file_index import (
    BITMAP,
    BLOOM_FILTER,
    BSI,
    FileIndexBuilder,
    FileIndexContainer,
    ResultKind,
    build_file_index,
    evaluate_file_index,
    parse_file_index_options,
)
from laketide.types import BooleanType, DecimalType, DoubleType, IntType, MapType, VarCharType

FIELDS = {"id": IntType(), "name": VarCharType(20), "price": DecimalType(10, 2), "ok": BooleanType(),
          "score": DoubleType(), "tags": MapType(VarCharType(5), IntType())}


def test_parse() -> None:
    spec = parse_file_index_options(
        {
            "file-index.bloom-filter.columns": "id, name",
            "file-index.bloom-filter.name.fpp": "0.01",
            "file-index.bloom-filter.name.items": "200",
            "file-index.bitmap.columns": "name,ok",
            "file-index.bitmap.ok.version": "1",
            "file-index.bsi.columns": "price",
            "file-index.in-manifest-threshold": "1 kb",
            "file-index.read.enabled": "false",
            "bucket": "4",
        },
        fields=FIELDS,
    )
    got = {(s.column, s.index_type): dict(s.options) for s in spec.indexes}
    assert got == {
        ("id", BLOOM_FILTER): {},
        ("name", BLOOM_FILTER): {"fpp": "0.01", "items": "200"},
        ("name", BITMAP): {},
        ("ok", BITMAP): {"version": "1"},
        ("price", BSI): {},
    }
    assert spec.in_manifest_threshold == 1024
    assert spec.embed(1024) and not spec.embed(1025)
    assert set(spec.columns()) == {"id", "name", "ok", "price"}
    empty = parse_file_index_options({"bucket": "1"})
    assert empty.empty and empty.in_manifest_threshold == 500 and empty.embed(500) and not empty.embed(501)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"file-index.bitmap.columns": "nope"}, InvalidOptionError, "nope"),
        ({"file-index.bitmap.columns": "price"}, InvalidOptionError, "DECIMAL"),
        ({"file-index.bloom-filter.columns": "ok"}, InvalidOptionError, "BOOLEAN"),
        ({"file-index.bsi.columns": "score"}, InvalidOptionError, "DOUBLE"),
        ({"file-index.bsi.columns": "tags"}, InvalidOptionError, "tags"),
        ({"file-index.bitmap.columns": "id,,name"}, InvalidOptionError, "empty column"),
        ({"file-index.bitmap.columns": "id", "file-index.bitmap.name.version": "1"}, InvalidOptionError,
         "not declared"),
        ({"file-index.bitmap.columns": "id", "file-index.bitmap.id.colour": "red"}, InvalidOptionError, "colour"),
        ({"file-index.bitmap.columns": "id", "file-index.bitmap.id.version": "7"}, InvalidOptionError, "version"),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "2"}, InvalidOptionError, "fpp"),
        ({"file-index.bsi.columns": "id", "file-index.bsi.id.items": "3"}, InvalidOptionError, "items"),
        ({"file-index.zorder.columns": "id"}, InvalidOptionError, "zorder"),
        ({"file-index.range-bitmap.columns": "id"}, UnsupportedOptionError, "range-bitmap"),
        ({"file-index.bitmap.columns": "tags[a]"}, UnsupportedOptionError, "map keys"),
        ({"file-index.in-manifest-threshold": "lots"}, InvalidOptionError, "in-manifest-threshold"),
    ],
)
def test_refused(options: dict[str, str], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_file_index_options(options, fields=FIELDS)


def test_builder_collects_batches_and_skips_nothing_it_indexes() -> None:
    spec = parse_file_index_options(
        {"file-index.bitmap.columns": "name", "file-index.bsi.columns": "id", "file-index.bloom-filter.columns": "id"},
        fields=FIELDS,
    )
    fields = {k: v for k, v in FIELDS.items() if k in ("id", "name")}
    batches = [
        pa.record_batch({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]}),
        pa.record_batch({"id": pa.array([3, None], pa.int32()), "name": ["a", None]}),
    ]
    builder = FileIndexBuilder(spec, fields=fields)
    for b in batches:
        builder.write(b)
    data = builder.finish()
    assert data is not None and builder.row_count == 4
    assert data == build_file_index(pa.Table.from_batches(batches), spec, fields=fields)
    c = FileIndexContainer(data, path="x.index")
    assert set(evaluate_file_index(c, col("name") == "a", fields=fields).result.rows or ()) == {0, 2}
    assert set(evaluate_file_index(c, col("id") > 1, fields=fields).result.rows or ()) == {1, 2}
    assert evaluate_file_index(c, col("id") == 9, fields=fields).result.kind is ResultKind.SKIP
    assert build_file_index(batches[0], parse_file_index_options({}), fields=fields) is None
    with pytest.raises(InvalidOptionError, match="name"):
        FileIndexBuilder(spec, fields={"id": IntType()})


def test_builder_on_an_empty_file() -> None:
    spec = parse_file_index_options(
        {"file-index.bitmap.columns": "name", "file-index.bsi.columns": "id",
         "file-index.bloom-filter.columns": "name"},
        fields=FIELDS,
    )
    fields = {"id": IntType(), "name": VarCharType(20)}
    data = FileIndexBuilder(spec, fields=fields).finish()
    assert data is not None
    c = FileIndexContainer(data, path="e.index")
    for p in (col("name") == "a", col("id") < 3, col("name").is_not_null()):
        assert evaluate_file_index(c, p, fields=fields).result.kind is ResultKind.SKIP


def test_finishing_twice_gives_the_same_container() -> None:
    spec = parse_file_index_options(
        {"file-index.bitmap.columns": "name", "file-index.bsi.columns": "id",
         "file-index.bloom-filter.columns": "name"},
        fields=FIELDS,
    )
    fields = {"id": IntType(), "name": VarCharType(20)}
    builder = FileIndexBuilder(spec, fields=fields)
    builder.write(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a/..", "b"]}))
    first = builder.finish()
    assert first == builder.finish()
    c = FileIndexContainer(first or b"", path="x.index")
    assert set(evaluate_file_index(c, col("name") == "a/..", fields=fields).result.rows or ()) == {0}
