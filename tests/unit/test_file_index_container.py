"""The file-index container: layout, lazy reads, unknown types and versions skipped, corrupt bytes refused."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from laketide.exceptions import CorruptMetadataError, FileIndexCorruptError
from laketide.expr.predicate import col
from laketide.index.file_index import (
    BITMAP,
    BLOOM_FILTER,
    BSI,
    BitmapIndexWriter,
    BsiIndexWriter,
    FileIndexContainer,
    ResultKind,
    evaluate_file_index,
    java_container_order,
    write_container,
)
from laketide.index.file_index.container import MAGIC
from laketide.index.file_index.java import read_utf, write_utf
from laketide.types import IntType, VarCharType

FIELDS = {"a": IntType(), "b": VarCharType(10)}
_INT = IntType()  # one instance as the default, not a call per definition


def _bitmap(values: list[object], dtype=_INT, version: int = 2) -> bytes:  # noqa: ANN001
    w = BitmapIndexWriter(dtype, version=version)
    w.write(pa.array(values))
    return w.serialize()


def _bsi(values: list[int | None]) -> bytes:
    w = BsiIndexWriter(IntType())
    w.write(pa.array(values, pa.int32()))
    return w.serialize()


def _container() -> bytes:
    return write_container(
        {"a": {BITMAP: _bitmap([1, 2, 2, None]), BSI: _bsi([1, 2, 2, None])},
         "b": {BITMAP: _bitmap(["x", "y", "x", "z"], VarCharType(10))}}
    )


def test_layout_round_trip() -> None:
    data = _container()
    magic, version, head_length, n_columns = struct.unpack_from(">qiii", data)
    assert (magic, version, n_columns) == (MAGIC, 1, 2)
    c = FileIndexContainer(data, path="f.index")
    assert c.columns() == ("a", "b")
    assert [(e.column, e.index_type) for e in c.entries] == [("a", BITMAP), ("a", BSI), ("b", BITMAP)]
    assert c.entries[0].offset == head_length  # the body starts right after the head
    assert bytes(c.index_bytes(c.entries[1])) == _bsi([1, 2, 2, None])
    ev = evaluate_file_index(c, (col("a") == 2) & (col("b") == "x"), fields=FIELDS)
    assert set(ev.result.rows or ()) == {2} and ev.result.exact


def test_names_use_modified_utf8() -> None:
    for name in ("f0", "é", "列", "a\x00b", "😀", ""):
        encoded = write_utf(name)
        assert read_utf(encoded, 0) == (name, len(encoded))
    assert write_utf("a\x00") == b"\x00\x03a\xc0\x80"  # NUL as two bytes, as Java writes it
    assert write_utf("😀") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"  # a surrogate pair, three bytes each
    data = write_container({"列 x": {BITMAP: _bitmap([1])}})
    assert FileIndexContainer(data).columns() == ("列 x",)


def test_reads_only_the_requested_index() -> None:
    data = _container()
    reads: list[tuple[int, int]] = []

    def ranged(offset: int, length: int) -> bytes:
        reads.append((offset, length))
        return data[offset : offset + length]

    c = FileIndexContainer(ranged, path="f.index", size=len(data))
    assert len(reads) == 2  # the fixed header, then the head
    evaluate_file_index(c, col("b") == "y", fields=FIELDS)
    b_entry = c.entry("b", BITMAP)
    assert b_entry is not None
    assert reads[2:] == [(b_entry.offset, b_entry.length)]
    evaluate_file_index(c, col("b") == "x", fields=FIELDS)
    assert len(reads) == 3  # decoded readers are cached


def test_unknown_index_types_are_skipped() -> None:
    data = write_container({"a": {"range-bitmap": b"\x01whatever", "made-up": b"", BITMAP: _bitmap([5, 6])}})
    c = FileIndexContainer(data, path="f.index")
    assert c.reader("a", "range-bitmap", IntType()) is None
    assert len(c.readers("a", IntType())) == 1
    result = evaluate_file_index(c, col("a") == 6, fields=FIELDS).result
    assert set(result.rows or ()) == {1}
    only_unknown = FileIndexContainer(write_container({"a": {"made-up": b"\xff"}}), path="g.index")
    assert evaluate_file_index(only_unknown, col("a") == 6, fields=FIELDS).result.kind is ResultKind.REMAIN


def test_newer_versions_are_skipped() -> None:
    data = bytearray(_container())
    struct.pack_into(">i", data, 8, 2)  # a container version laketide does not know
    c = FileIndexContainer(bytes(data), path="f.index")
    assert not c.supported and c.entries == ()
    assert evaluate_file_index(c, col("a") == 1, fields=FIELDS).result.kind is ResultKind.REMAIN
    # An index of a newer format version inside a known container: that index alone is ignored.
    bitmap = bytearray(_bitmap([1, 2]))
    bitmap[0] = 3
    bsi = bytearray(_bsi([1, 2]))
    bsi[0] = 2
    c = FileIndexContainer(write_container({"a": {BITMAP: bytes(bitmap), BSI: bytes(bsi)}}), path="f.index")
    for p in (col("a") == 1, col("a") > 1, col("a").is_null()):
        assert evaluate_file_index(c, p, fields=FIELDS).result.kind is ResultKind.REMAIN


def test_empty_index_entry_means_no_rows() -> None:
    c = FileIndexContainer(write_container({"a": {BLOOM_FILTER: None}}), path="f.index")
    assert c.entries[0].empty and c.entries[0].offset == -1
    assert evaluate_file_index(c, col("a") == 1, fields=FIELDS).result.kind is ResultKind.SKIP
    assert evaluate_file_index(c, col("a").is_null(), fields=FIELDS).result.kind is ResultKind.REMAIN


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:10],  # truncated fixed header
        lambda d: b"\x00" * 8 + d[8:],  # bad magic
        lambda d: d[:20],  # head cut short
        lambda d: d[:16] + struct.pack(">i", 1000) + d[20:],  # more columns than the head holds
        lambda d: d[: len(d) - 5],  # last index runs past the end
        lambda d: d[:12] + struct.pack(">i", 10**6) + d[16:],  # head length past the end
    ],
)
def test_corrupt_containers_raise_a_typed_error_naming_the_file(damage) -> None:  # noqa: ANN001
    with pytest.raises(FileIndexCorruptError, match="bucket-0/data-1.parquet.index") as info:
        FileIndexContainer(damage(_container()), path="bucket-0/data-1.parquet.index")
    assert isinstance(info.value, CorruptMetadataError)
    assert info.value.path == "bucket-0/data-1.parquet.index"


def test_corrupt_index_inside_a_valid_container_raises_when_used() -> None:
    bitmap = bytearray(_bitmap([1, 2, 1, 2, 3, 3]))
    bitmap[-3] ^= 0xFF  # inside the last serialized roaring bitmap
    bsi = bytearray(_bsi([1, 2, 3, 4]))
    bsi = bsi[:-6]
    data = write_container({"a": {BITMAP: bytes(bitmap)}, "b": {BSI: bytes(bsi)}})
    c = FileIndexContainer(data, path="f.index")  # the head is fine
    with pytest.raises(FileIndexCorruptError, match="f.index"):
        evaluate_file_index(c, col("a") == 3, fields=FIELDS)
    with pytest.raises(FileIndexCorruptError, match="f.index"):
        evaluate_file_index(c, col("b") > 1, fields={"b": IntType()})


def test_java_order_of_names() -> None:
    # Java iterates its HashMaps: for f0..f4 that is ascending (consecutive hash codes, distinct buckets).
    indexes = {c: {t: b"" for t in (BSI, BLOOM_FILTER, BITMAP)} for c in ("f4", "f1", "f0", "f3", "f2")}
    ordered = java_container_order(indexes)
    assert list(ordered) == ["f0", "f1", "f2", "f3", "f4"]
    assert list(ordered["f1"]) == [BLOOM_FILTER, BITMAP, BSI]  # as Java wrote append_with_bsi_bitmap_bloomfilter
