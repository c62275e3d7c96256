from __future__ import annotations

import hashlib
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from laketide.exceptions import CorruptMetadataError, UnsupportedFeatureError
from laketide.fs.local import LocalFileIO
from laketide.index.deletion_vectors import (
    DELETION_VECTORS_INDEX,
    DeletionVector,
    DeletionVectorIndex,
    _roaring32_bytes,
    deserialize_dv,
    dv_index_file_meta,
    read_dv,
    read_dv_index_file,
    serialize_dv,
    write_dv_index_file,
)
from laketide.meta.manifest import DeletionVectorMeta, FileKind, IndexFileMeta, IndexManifestEntry
from laketide.meta.manifest_io import decode_records

PK_09 = ("tables", "pk_09.db", "pk_09")
# BinaryRow of the single INT partition field f1 = 10, as the index manifests store it.
PART_10 = b"\x00\x00\x00\x01" + b"\x00" * 8 + b"\x0a" + b"\x00" * 7
TONY_FILE = "data-6d416200-c9db-49ff-bc27-79837bf1aaab-0.parquet"


def _dv(*positions: int, bit64: bool = False) -> DeletionVector:
    return DeletionVector.from_positions(list(positions), bit64=bit64)


# ---------------------------------------------------------------------------------------------------------
# Java-written vectors


@pytest.mark.parametrize(
    ("name", "bit64", "lengths", "sizes"),
    [("dvindex-32", False, (24, 22), (24, 22)), ("dvindex-64", True, (44, 42), (36, 34))],
)
def test_compat_vectors_read_and_write_identically(
    compat_dir: Path, name: str, bit64: bool, lengths: tuple[int, int], sizes: tuple[int, int]
) -> None:
    data = (compat_dir / "vectors" / name).read_bytes()
    # The size fields sit where the README says: byte 1 and after the first entry.
    assert struct.unpack_from(">i", data, 1)[0] == sizes[0]
    second = 1 + sizes[0] + 8
    assert struct.unpack_from(">i", data, second)[0] == sizes[1]

    written, ranges = write_dv_index_file({"a": _dv(2, 3), "b": _dv(1)}, bit64=bit64)
    assert written == data
    assert ranges == [
        DeletionVectorMeta(data_file_name="a", offset=1, length=lengths[0], cardinality=2),
        DeletionVectorMeta(data_file_name="b", offset=second, length=lengths[1], cardinality=1),
    ]

    dvs = read_dv_index_file(data, ranges, path=name)
    assert {k: v.positions().tolist() for k, v in dvs.items()} == {"a": [2, 3], "b": [1]}
    assert all(v.bit64 is bit64 for v in dvs.values())
    assert read_dv(data, second, lengths[1]).positions().tolist() == [1]
    # Each framed entry alone is what serialize_dv produces.
    first_entry = data[1:second]
    assert serialize_dv(_dv(2, 3), bit64=bit64) == first_entry
    assert deserialize_dv(first_entry) == _dv(2, 3, bit64=bit64)


def test_compat_64_bit_layout_details(compat_dir: Path) -> None:
    data = (compat_dir / "vectors" / "dvindex-64").read_bytes()
    assert struct.unpack_from("<i", data, 5)[0] == 1681511377  # magic little-endian
    assert struct.unpack_from("<q", data, 9)[0] == 1  # one 32-bit bitmap (key 0)
    # The CRC is big-endian and covers magic + bitmap, not the size field.
    body = data[5 : 5 + 36]
    assert struct.unpack_from(">I", data, 5 + 36)[0] == zlib.crc32(body)


# SHA-256 of org.roaringbitmap.RoaringBitmap 1.3.0 bytes after add(each) + runOptimize() + serialize(),
# generated once with the Java library; they pin the array / bitmap / run container choices.
def _r(a: int, b: int, step: int = 1) -> list[int]:
    return list(range(a, b, step))


_TWELVE = [
    v
    for k in range(12)
    for v in (_r(k * 65536, k * 65536 + 10) if k % 2 == 0 else _r(k * 65536, k * 65536 + 20, 2))
]
JAVA_ROARING = [
    ([], 8, "0f483b868cd831d0846064a2fdd9b83c5c4946d4873ffb5b8c9a37224705b162"),
    ([1, 2, 3], 22, "e62efae301d923a2f66c6b02113561f1ff08be14f106285ff0e1dfb5da87d1ff"),
    ([0, 1, 2, 5, 6], 26, "b05d3d2346afedcb3d7f14e911e95b23e7ef3fa5103e8833dbb2ff18f29d6380"),
    (_r(0, 100), 15, "9c5c48b97cdccb78ed5dfcf9e9d5918dc55ca7f51624569986490de2f6e1070e"),
    (_r(0, 15000, 3), 8208, "bced20c87c022c635fb19ad94120cb2aba3b19c6c61d9885b9b60d2a8a8b0297"),
    (_r(0, 70000), 25, "69f809a77685554d4f02be5a3220d6922392891197931f4572dadab3d66b7e4a"),
    (_r(65530, 65540), 25, "8c7a21b041dce46a2cb9143d016d407eab36e0b39ffa177bd4cbcdb49d60231f"),
    (_TWELVE, 258, "d400bf46eb71ed0989c3db94cff2f600dbd10fddf3e58ee9750367b7c1e20722"),
    (_r(0, 10000) + _r(20000, 30000, 2), 8208, "d5ffed3afe2d3869202a4588cdf7ceaa1f86ee278b4eeac40256e0053881dad8"),
    (_r(0, 4096 * 7, 7), 8208, "2543391bcfc135cd2149e8652518b7b8372ae6b85c5a9859c0dab18784f55c16"),
    (_r(0, 4097 * 7, 7), 8208, "c51bcb73f2f26f66eff26825205570c01d7aa9ff478fdbeab712a1d177b09860"),
    (_r(2147483000, 2147483647, 5) + [2147483647], 278,
     "f3ecbe847771e29f1bea2e9d99838e8ce1b433d1c4aecf55b90a523e07ff72af"),
    (_r(0, 3) + _r(65536, 65586), 25, "12ce6685dcbb58614df76b10ccc5fa4218376002381407d9be392a799e54f10a"),
]


@pytest.mark.parametrize(("values", "size", "sha"), JAVA_ROARING, ids=[str(i) for i in range(len(JAVA_ROARING))])
def test_roaring_bytes_match_java_roaringbitmap(values: list[int], size: int, sha: str) -> None:
    raw = _roaring32_bytes(np.array(values, dtype=np.uint32))
    assert (len(raw), hashlib.sha256(raw).hexdigest()) == (size, sha)
    # The whole entry round-trips through our parser, and CRoaring reads the same set.
    assert BitMap.deserialize(raw) == BitMap(values)
    assert deserialize_dv(serialize_dv(_dv(*values))).positions().tolist() == values
    wide = deserialize_dv(serialize_dv(_dv(*values), bit64=True))
    assert wide.bit64 and wide.positions().tolist() == values


# ---------------------------------------------------------------------------------------------------------
# The pk_09 table written by Java Paimon 0.9


def _index_entries(table: Path, manifest: str) -> list[IndexManifestEntry]:
    path = table / "manifest" / manifest
    return [IndexManifestEntry.from_record(r) for r in decode_records(path.read_bytes(), path=str(path))]


def test_pk_09_deletion_vectors_match_the_deleted_rows(compat_dir: Path) -> None:
    table = compat_dir.joinpath(*PK_09)
    # snapshot-6: Tony deleted in bucket 1, Alice (updated) and Lily (deleted) in two files of bucket 0.
    index = DeletionVectorIndex(
        LocalFileIO(), str(table / "index"),
        entries=_index_entries(table, "index-manifest-03e2700b-8409-499b-8c27-a09ccee9348c-0"),
    )
    bucket1 = index.dvs_for(PART_10, 1)
    assert list(bucket1) == [TONY_FILE]
    keys = pq.read_table(table / "f1=10" / "bucket-1" / TONY_FILE).column("_KEY_f0").to_pylist()
    mask = bucket1[TONY_FILE].is_deleted_mask(len(keys))
    assert [k for k, d in zip(keys, mask) if d] == ["Tony"]
    assert bucket1[TONY_FILE].positions().tolist() == [4]

    bucket0 = index.dvs_for(PART_10, 0)
    deleted = set()
    for name, dv in bucket0.items():
        keys = pq.read_table(table / "f1=10" / "bucket-0" / name).column("_KEY_f0").to_pylist()
        deleted |= {keys[i] for i in dv.positions()}
        assert not dv.bit64 and dv.cardinality == 1
    assert deleted == {"Alice", "Lily"}
    assert index.dvs_for(PART_10, 5) == {} and index.dvs_for(b"other", 0) == {}


def test_pk_09_snapshot_8_clears_bucket_0(compat_dir: Path) -> None:
    table = compat_dir.joinpath(*PK_09)
    index = DeletionVectorIndex(
        LocalFileIO(), str(table / "index"),
        entries=_index_entries(table, "index-manifest-03e2700b-8409-499b-8c27-a09ccee9348c-1"),
    )
    assert index.dvs_for(PART_10, 0) == {}  # an index file holding only the version byte
    assert not index.has_deletion_vectors(PART_10, 0)
    assert index.dvs_for(PART_10, 1)[TONY_FILE].positions().tolist() == [4]


def test_pk_09_index_files_rewrite_byte_for_byte(compat_dir: Path) -> None:
    table = compat_dir.joinpath(*PK_09)
    entries = _index_entries(table, "index-manifest-03e2700b-8409-499b-8c27-a09ccee9348c-0")
    entries += _index_entries(table, "index-manifest-03e2700b-8409-499b-8c27-a09ccee9348c-1")
    for entry in entries:
        meta = entry.index_file
        assert meta.dv_ranges is not None
        data = (table / "index" / meta.file_name).read_bytes()
        dvs = read_dv_index_file(data, meta.dv_ranges, path=meta.file_name)
        written, ranges = write_dv_index_file(dvs)
        assert written == data
        # Paimon 0.9 did not record cardinalities; everything else is what Java recorded.
        assert [(m.data_file_name, m.offset, m.length) for m in ranges] == [
            (m.data_file_name, m.offset, m.length) for m in meta.dv_ranges
        ]
        rebuilt = dv_index_file_meta(meta.file_name, written, ranges=ranges)
        assert (rebuilt.index_type, rebuilt.file_size, rebuilt.row_count) == (
            meta.index_type, meta.file_size, meta.row_count,
        )


# ---------------------------------------------------------------------------------------------------------
# DeletionVectorIndex bookkeeping


class _CountingIO(LocalFileIO):
    def __init__(self) -> None:
        self.reads: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        self.reads.append(path)
        return super().read_bytes(path)


def _entry(
    kind: FileKind, name: str, ranges: list[DeletionVectorMeta], size: int, *, bucket: int = 0
) -> IndexManifestEntry:
    meta = IndexFileMeta(
        index_type=DELETION_VECTORS_INDEX, file_name=name, file_size=size,
        row_count=len(ranges), dv_ranges=tuple(ranges),
    )
    return IndexManifestEntry(kind=kind, partition=b"p", bucket=bucket, index_file=meta)


def test_index_reads_each_file_once_and_honours_delete_entries(tmp_path: Path) -> None:
    io = _CountingIO()
    old, old_ranges = write_dv_index_file({"f1": _dv(1)})
    new, new_ranges = write_dv_index_file({"f1": _dv(1, 7), "f2": _dv(0)})
    other, other_ranges = write_dv_index_file({"g": _dv(3)}, bit64=True)
    for name, data in [("index-old", old), ("index-new", new), ("index-other", other)]:
        io.write_bytes(str(tmp_path / name), data)
    hash_entry = IndexManifestEntry(
        kind=FileKind.ADD, partition=b"p", bucket=0,
        index_file=IndexFileMeta(index_type="HASH", file_name="index-hash", file_size=4, row_count=1),
    )
    entries = [
        _entry(FileKind.ADD, "index-old", old_ranges, len(old)),
        hash_entry,
        _entry(FileKind.ADD, "index-new", new_ranges, len(new)),
        _entry(FileKind.DELETE, "index-old", old_ranges, len(old)),
        _entry(FileKind.ADD, "index-other", other_ranges, len(other), bucket=1),
    ]
    index = DeletionVectorIndex(io, str(tmp_path), entries=entries)
    assert [f.file_name for f in index.index_files(b"p", 0)] == ["index-new"]
    first = index.dvs_for(b"p", 0)
    assert {k: v.positions().tolist() for k, v in first.items()} == {"f1": [1, 7], "f2": [0]}
    assert index.dvs_for(b"p", 0) == first
    assert index.dvs_for(b"p", 1)["g"] == _dv(3, bit64=True)
    assert io.reads == [str(tmp_path / "index-new"), str(tmp_path / "index-other")]


def test_index_entry_without_ranges_is_corrupt(tmp_path: Path) -> None:
    meta = IndexFileMeta(index_type=DELETION_VECTORS_INDEX, file_name="index-x", file_size=1, row_count=0)
    entry = IndexManifestEntry(kind=FileKind.ADD, partition=b"", bucket=0, index_file=meta)
    index = DeletionVectorIndex(LocalFileIO(), str(tmp_path), entries=[entry])
    with pytest.raises(CorruptMetadataError, match="index-x"):
        index.dvs_for(b"", 0)


# ---------------------------------------------------------------------------------------------------------
# The value object


def test_deletion_vector_basics() -> None:
    dv = DeletionVector.from_positions(np.array([5, 1, 5, 3], dtype=np.int32))
    assert dv.cardinality == 3 and not dv.is_empty
    assert dv.positions().dtype == np.int64 and dv.positions().tolist() == [1, 3, 5]
    assert dv.is_deleted(3) and not dv.is_deleted(2) and not dv.is_deleted(-1) and not dv.is_deleted(2**40)
    assert dv.is_deleted_mask(6).tolist() == [False, True, False, True, False, True]
    assert dv.is_deleted_mask(4).tolist() == [False, True, False, True]  # positions past the end ignored
    assert dv.is_deleted_mask(0).tolist() == []
    assert DeletionVector.empty().is_empty and DeletionVector.empty(bit64=True).cardinality == 0
    assert DeletionVector.from_positions(iter([2, 4])) == _dv(4, 2)
    assert pickle.loads(pickle.dumps(dv)) == dv
    assert hash(dv) == hash(_dv(1, 3, 5))
    assert "cardinality=3" in repr(dv)


def test_merge_unions_and_widens() -> None:
    merged = _dv(1, 2).merge(_dv(2, 9))
    assert merged.positions().tolist() == [1, 2, 9] and not merged.bit64
    wide = _dv(1).merge(_dv(2**40, bit64=True))
    assert wide.bit64 and wide.positions().tolist() == [1, 2**40]
    assert _dv(1) == DeletionVector(BitMap([1]))  # type: ignore[arg-type]  # frozen on the way in
    assert DeletionVector(BitMap64([7]), bit64=False).bitmap == _dv(7).bitmap  # type: ignore[arg-type]


def test_position_limits() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        DeletionVector.from_positions([-1])
    with pytest.raises(UnsupportedFeatureError, match="bitmap64"):
        DeletionVector.from_positions([2**31])
    assert DeletionVector.from_positions([2**31 - 1]).cardinality == 1
    with pytest.raises(UnsupportedFeatureError):
        serialize_dv(_dv(2**31, bit64=True), bit64=False)
    with pytest.raises(TypeError):
        DeletionVector.from_positions(np.array([1.5]))
    with pytest.raises(UnsupportedFeatureError, match="2 GB"):
        serialize_dv(_dv(2**62, bit64=True))  # Java writes a bitmap per key below the largest


def test_empty_vectors_serialize_as_java_does() -> None:
    # magic + empty roaring (cookie 12346, zero containers); 64-bit: magic + zero bitmap count.
    narrow = serialize_dv(DeletionVector.empty())
    assert narrow[:16] == struct.pack(">ii", 12, 1581511376) + struct.pack("<II", 12346, 0)
    wide = serialize_dv(DeletionVector.empty(bit64=True))
    assert wide[:16] == struct.pack(">i", 12) + struct.pack("<iQ", 1681511377, 0)
    assert deserialize_dv(wide).is_empty


def test_64_bit_layout_writes_every_key_below_the_largest() -> None:
    raw = serialize_dv(_dv(1, 2 * 2**32 + 5, bit64=True))
    body = raw[4:-4]
    assert struct.unpack_from("<Q", body, 4)[0] == 3  # keys 0, 1 (empty) and 2
    assert struct.unpack_from("<I", body, 12)[0] == 0
    assert deserialize_dv(raw).positions().tolist() == [1, 2 * 2**32 + 5]


# ---------------------------------------------------------------------------------------------------------
# Property tests

_positions_32 = st.one_of(
    st.lists(st.integers(0, 2**31 - 1), max_size=60),
    st.lists(st.integers(0, 200_000), max_size=300),
    st.tuples(st.integers(0, 2**20), st.integers(0, 9000), st.integers(1, 3)).map(
        lambda t: list(range(t[0], t[0] + t[1], t[2]))
    ),
)
_positions_64 = st.one_of(
    st.lists(st.integers(0, 2**35), max_size=60),
    st.lists(st.integers(0, 2**31 - 1), max_size=60),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_positions_32)
def test_round_trip_32(positions: list[int]) -> None:
    dv = DeletionVector.from_positions(positions)
    raw = serialize_dv(dv)
    back = deserialize_dv(raw)
    assert back == dv and back.positions().tolist() == sorted(set(positions))
    # CRoaring reads the same set from our bitmap bytes (after the 4-byte size and 4-byte magic).
    assert BitMap.deserialize(raw[8:-4]) == BitMap(positions)
    wide = deserialize_dv(serialize_dv(dv, bit64=True))
    assert wide.bit64 and wide.positions().tolist() == sorted(set(positions))


@settings(max_examples=40, deadline=None)
@given(_positions_64)
def test_round_trip_64(positions: list[int]) -> None:
    dv = DeletionVector.from_positions(positions, bit64=True)
    back = deserialize_dv(serialize_dv(dv))
    assert back == dv and back.positions().tolist() == sorted(set(positions))


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), _positions_64, max_size=4), st.booleans())
def test_index_file_round_trip(dvs_positions: dict[str, list[int]], bit64: bool) -> None:
    dvs = {k: DeletionVector.from_positions(v, bit64=True) for k, v in dvs_positions.items()}
    if not bit64:
        dvs = {k: v for k, v in dvs.items() if v.is_empty or v.positions()[-1] < 2**31}
    data, ranges = write_dv_index_file(dvs, bit64=bit64)
    back = read_dv_index_file(data, ranges)
    expected = {k: v.positions().tolist() for k, v in dvs.items()}
    assert {k: v.positions().tolist() for k, v in back.items()} == expected
    assert [m.cardinality for m in ranges] == [v.cardinality for v in dvs.values()]


# ---------------------------------------------------------------------------------------------------------
# Corrupt input


def _valid_file() -> tuple[bytes, list[DeletionVectorMeta]]:
    return write_dv_index_file({"a": _dv(*range(0, 300, 2)), "b": _dv(*range(100, 5000))})


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"\x02" + d[1:], "version byte is 2"),
        (lambda d: b"", "empty file"),
        (lambda d: d[:-3], "past the end"),
        (lambda d: d[:5] + b"\x00\x00\x00\x00" + d[9:], "magic"),
        (lambda d: d[:20] + bytes([d[20] ^ 0x40]) + d[21:], "CRC32"),
    ],
    ids=["version", "empty", "truncated", "magic", "crc"],
)
def test_corrupt_index_files_raise(mutate, message: str) -> None:  # noqa: ANN001
    data, ranges = _valid_file()
    with pytest.raises(CorruptMetadataError, match=message) as info:
        read_dv_index_file(mutate(data), ranges, path="index-abc")
    assert info.value.path == "index-abc" and "index-abc" in str(info.value)


def test_wrong_range_length_raises() -> None:
    data, ranges = _valid_file()
    with pytest.raises(CorruptMetadataError, match="recorded length"):
        read_dv(data, ranges[0].offset, ranges[0].length + 1, path="index-abc")
    with pytest.raises(CorruptMetadataError, match="beyond the end"):
        read_dv(data, len(data) + 3, None)
    with pytest.raises(CorruptMetadataError, match="trailing"):
        deserialize_dv(serialize_dv(_dv(1)) + b"\x00")


def _framed_32(bitmap: bytes) -> bytes:
    body = struct.pack(">i", 1581511376) + bitmap
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_well_framed_but_malformed_bitmap_raises() -> None:
    # Valid size, magic and CRC around bitmaps that lie: 5 containers promised, none there; a position of
    # 2**31 that no 32-bit Java writer can produce; array values out of order.
    too_big = _roaring32_bytes(np.array([2**31], dtype=np.uint32))
    unordered = struct.pack("<IIHHI", 12346, 1, 0, 1, 16) + struct.pack("<HH", 9, 3)
    for bitmap in (struct.pack("<II", 12346, 5), too_big, unordered):
        with pytest.raises(CorruptMetadataError):
            deserialize_dv(_framed_32(bitmap))
    assert deserialize_dv(_framed_32(_roaring32_bytes(np.array([3, 9], dtype=np.uint32)))) == _dv(3, 9)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_any_single_byte_change_is_detected(data: st.DataObject) -> None:
    raw, ranges = _valid_file()
    i = data.draw(st.integers(0, len(raw) - 1))
    flip = data.draw(st.integers(1, 255))
    bad = raw[:i] + bytes([raw[i] ^ flip]) + raw[i + 1 :]
    with pytest.raises(CorruptMetadataError):
        read_dv_index_file(bad, ranges, path="index-abc")
