"""Deletion vectors: which row positions of a data file are deleted, and the index files that store them.

An index file is a version byte (1) followed by one entry per data file. Every entry is framed the same way:
``int32 BE size | size bytes of body | int32 BE CRC32(body)``. The body is either

* 32-bit (``BitmapDeletionVector``): ``int32 BE magic 1581511376`` + a RoaringBitmap in the portable format,
  and the range length recorded in the index manifest is ``size``;
* 64-bit (``Bitmap64DeletionVector``, Iceberg-compatible): ``int32 LE magic 1681511377`` + ``uint64 LE count``
  + for each key 0..count-1 ``uint32 LE key`` + a portable 32-bit RoaringBitmap of the low 32 bits; the
  range length is the whole entry (``size + 8``).

Roaring bitmaps are serialized here rather than by pyroaring: Java's 64-bit layout writes an (empty) bitmap
for every key below the largest where CRoaring's omits them, and the 32-bit container choices (array / bitmap /
run after ``runOptimize``) are pinned to Java RoaringBitmap's rules (checked against RoaringBitmap 1.3.0). A
vector built from a set of positions gets the bytes Java writes for the same set built by ``delete`` calls;
Java vectors that went through deserialize + merge may keep other (equally valid) container choices.

Paimon: org.apache.paimon.deletionvectors.DeletionVector, BitmapDeletionVector, Bitmap64DeletionVector,
DeletionVectorsIndexFile, DeletionFileWriter, DeletionVectorIndexFileWriter; utils.OptimizedRoaringBitmap64
"""

from __future__ import annotations

import array
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
from pyroaring import BitMap, BitMap64, FrozenBitMap, FrozenBitMap64

from laketide.exceptions import CorruptMetadataError, UnsupportedFeatureError
from laketide.index.roaring import RoaringFormatError as _Corrupt
from laketide.index.roaring import parse_roaring32 as _parse_roaring32
from laketide.index.roaring import serialize_roaring32 as _roaring32_bytes
from laketide.meta.manifest import DeletionVectorMeta, FileKind, IndexFileMeta, IndexManifestEntry

if TYPE_CHECKING:
    from laketide.fs.file_io import FileIO

__all__ = [
    "DELETION_VECTORS_INDEX",
    "DV_INDEX_VERSION",
    "DeletionVector",
    "DeletionVectorIndex",
    "serialize_dv",
    "deserialize_dv",
    "read_dv",
    "read_dv_index_file",
    "write_dv_index_file",
]

DELETION_VECTORS_INDEX: Final = "DELETION_VECTORS"
DV_INDEX_VERSION: Final = 1

_MAGIC_32: Final = 1581511376
_MAGIC_64: Final = 1681511377
_MAX_POSITION_32: Final = 2**31 - 1  # RoaringBitmap32.MAX_VALUE
# OptimizedRoaringBitmap64.MAX_VALUE: key Integer.MAX_VALUE - 1, low bits Integer.MIN_VALUE.
_MAX_POSITION_64: Final = ((2**31 - 2) << 32) | 0x80000000
_MAX_ENTRY_BYTES: Final = 2**31 - 1


_AnyBitMap = FrozenBitMap | FrozenBitMap64


@dataclass(frozen=True, slots=True)
class DeletionVector:
    """The deleted row positions of one data file, as an immutable roaring bitmap.

    ``bit64`` picks the in-memory bitmap (``FrozenBitMap64`` instead of ``FrozenBitMap``) and the default
    serialization; 32-bit vectors hold positions up to 2**31 - 1, as Java's ``BitmapDeletionVector``.
    """

    bitmap: _AnyBitMap
    bit64: bool = False

    def __post_init__(self) -> None:
        bitmap = self.bitmap
        if not isinstance(bitmap, (BitMap, BitMap64, FrozenBitMap, FrozenBitMap64)):
            raise TypeError(f"DeletionVector needs a pyroaring bitmap, got {type(bitmap).__name__}")
        if len(bitmap):
            _check_max_position(int(bitmap.max()), bit64=self.bit64)
        if type(bitmap) is not (FrozenBitMap64 if self.bit64 else FrozenBitMap):
            positions = np.frombuffer(bitmap.to_array(), dtype=_np_dtype(bitmap))
            object.__setattr__(self, "bitmap", _frozen(positions, bit64=self.bit64))

    @classmethod
    def empty(cls, *, bit64: bool = False) -> DeletionVector:
        return cls(FrozenBitMap64() if bit64 else FrozenBitMap(), bit64=bit64)

    @classmethod
    def from_positions(cls, positions: Iterable[int] | np.ndarray, *, bit64: bool = False) -> DeletionVector:
        """A vector deleting ``positions`` (any order, duplicates allowed)."""
        arr = _as_position_array(positions)
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0:
                raise ValueError(f"Deletion vector positions must be >= 0, got {lo}")
            _check_max_position(hi, bit64=bit64)
        return cls(_frozen(arr, bit64=bit64), bit64=bit64)

    @property
    def cardinality(self) -> int:
        """How many rows are deleted."""
        return len(self.bitmap)

    @property
    def is_empty(self) -> bool:
        return len(self.bitmap) == 0

    def is_deleted(self, position: int) -> bool:
        limit = _MAX_POSITION_64 if self.bit64 else _MAX_POSITION_32
        return 0 <= position <= limit and position in self.bitmap

    def positions(self) -> np.ndarray:
        """The deleted positions, ascending, as int64."""
        return np.frombuffer(self.bitmap.to_array(), dtype=_np_dtype(self.bitmap)).astype(np.int64)

    def is_deleted_mask(self, num_rows: int) -> np.ndarray:
        """A boolean array of ``num_rows`` that is True at deleted positions (positions past the end are ignored)."""
        mask = np.zeros(num_rows, dtype=np.bool_)
        pos = self.positions()
        if pos.size and pos[-1] >= num_rows:
            pos = pos[: np.searchsorted(pos, num_rows)]
        mask[pos] = True
        return mask

    def merge(self, other: DeletionVector) -> DeletionVector:
        """The union; 64-bit if either side is."""
        if self.bit64 == other.bit64:
            return DeletionVector(self.bitmap | other.bitmap, bit64=self.bit64)  # type: ignore[operator]
        wide_self = self if self.bit64 else DeletionVector(self.bitmap, bit64=True)
        wide_other = other if other.bit64 else DeletionVector(other.bitmap, bit64=True)
        return wide_self.merge(wide_other)

    def __repr__(self) -> str:
        shown = self.positions()[:8].tolist()
        more = ", ..." if self.cardinality > 8 else ""
        return f"DeletionVector({shown}{more}, cardinality={self.cardinality}, bit64={self.bit64})"


def _np_dtype(bitmap: object) -> type[np.unsignedinteger]:
    return np.uint64 if isinstance(bitmap, (BitMap64, FrozenBitMap64)) else np.uint32


def _frozen(positions: np.ndarray, *, bit64: bool) -> _AnyBitMap:
    # array.array is pyroaring's bulk-add fast path; a numpy array would be iterated element by element.
    buf = array.array("Q" if bit64 else "I")
    buf.frombytes(positions.astype(np.uint64 if bit64 else np.uint32, copy=False).tobytes())
    return FrozenBitMap64(buf) if bit64 else FrozenBitMap(buf)


def _as_position_array(positions: Iterable[int] | np.ndarray) -> np.ndarray:
    if isinstance(positions, np.ndarray):
        arr = positions.ravel()
    else:
        try:
            arr = np.fromiter(positions, dtype=np.int64)
        except OverflowError as e:
            raise ValueError(f"Deletion vector position out of range: {e}") from e
    if arr.dtype.kind not in "iu":
        raise TypeError(f"Deletion vector positions must be integers, got dtype {arr.dtype}")
    return arr


def _check_max_position(position: int, *, bit64: bool) -> None:
    if bit64:
        if position > _MAX_POSITION_64:
            raise ValueError(f"Deletion vector position {position} exceeds the 64-bit maximum {_MAX_POSITION_64}")
    elif position > _MAX_POSITION_32:
        raise UnsupportedFeatureError(
            f"Row position {position} does not fit a 32-bit deletion vector (at most {_MAX_POSITION_32}); "
            "enable 64-bit deletion vectors ('deletion-vectors.bitmap64' = 'true')"
        )


# ---------------------------------------------------------------------------------------------------------
# 64-bit roaring bitmaps (the 32-bit codec is laketide.index.roaring).


def _roaring64_bytes(values: np.ndarray) -> bytes:
    """OptimizedRoaringBitmap64.serialize: a bitmap for every key from 0 to the largest, empty ones included."""
    v = values.astype(np.uint64, copy=False)
    n_keys = int(v[-1] >> np.uint64(32)) + 1 if v.size else 0
    if 8 + 12 * n_keys > _MAX_ENTRY_BYTES:
        raise UnsupportedFeatureError(f"A 64-bit deletion vector with {n_keys} keys would exceed 2 GB")
    keys = (v >> np.uint64(32)).astype(np.int64)
    bounds = np.searchsorted(keys, np.arange(n_keys + 1))
    low = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    parts = [struct.pack("<Q", n_keys)]
    for key in range(n_keys):
        parts.append(struct.pack("<I", key))
        parts.append(_roaring32_bytes(low[bounds[key] : bounds[key + 1]]))
    return b"".join(parts)


def _parse_roaring64(buf: memoryview, pos: int) -> tuple[np.ndarray, int]:
    (count,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    if count > 2**31 - 1:
        raise _Corrupt(f"invalid 64-bit bitmap count {count}")
    chunks: list[np.ndarray] = []
    last_key = -1
    for _ in range(count):
        (key,) = struct.unpack_from("<i", buf, pos)
        if key < 0 or key > 2**31 - 2 or key <= last_key:
            raise _Corrupt(f"invalid or unordered 64-bit bitmap key {key}")
        low, pos = _parse_roaring32(buf, pos + 4)
        chunks.append(low.astype(np.uint64) | np.uint64(key << 32))
        last_key = key
    values = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.uint64)
    return values, pos


# ---------------------------------------------------------------------------------------------------------
# One entry: size | body | crc.


def serialize_dv(dv: DeletionVector, *, bit64: bool | None = None) -> bytes:
    """One framed entry as Java's ``serializeTo`` writes it; ``bit64`` overrides the vector's own width."""
    wide = dv.bit64 if bit64 is None else bit64
    pos = dv.positions()
    if wide:
        body = struct.pack("<i", _MAGIC_64) + _roaring64_bytes(pos)
    else:
        if pos.size:
            _check_max_position(int(pos[-1]), bit64=False)
        body = struct.pack(">i", _MAGIC_32) + _roaring32_bytes(pos)
    if len(body) + 8 > _MAX_ENTRY_BYTES:
        raise UnsupportedFeatureError("A deletion vector larger than 2 GB cannot be serialized")
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def _range_length(entry: bytes, *, bit64: bool) -> int:
    # What Java's serializeTo returns and DeletionFileWriter records: the body for 32-bit, all of it for 64-bit.
    return len(entry) if bit64 else len(entry) - 8


def _describe(path: str | None) -> str:
    return f"deletion vector index file {path}" if path else "deletion vector data"


def _read_entry(buf: memoryview, offset: int, length: int | None, path: str | None) -> DeletionVector:
    where = f"{_describe(path)} at offset {offset}"
    try:
        if offset < 0 or offset + 8 > len(buf):
            raise _Corrupt(f"entry header lies beyond the end ({len(buf)} bytes)")
        size, magic_be = struct.unpack_from(">ii", buf, offset)
        (magic_le,) = struct.unpack_from("<i", buf, offset + 4)
        if magic_be == _MAGIC_32:
            bit64 = False
            if length is not None and size != length:
                raise _Corrupt(f"size {size} does not match the recorded length {length}")
        elif magic_le == _MAGIC_64:
            bit64 = True
            if length is not None and size != length - 8:
                raise _Corrupt(f"size {size} does not match the recorded length {length} - 8")
        else:
            raise _Corrupt(f"invalid magic number {magic_be} (expected {_MAGIC_32} or {_MAGIC_64} little-endian)")
        end = offset + 4 + size
        if size < 4 or end + 4 > len(buf):
            raise _Corrupt(f"entry of {size} bytes runs past the end ({len(buf)} bytes)")
        body = buf[offset + 4 : end]
        (crc,) = struct.unpack_from(">I", buf, end)
        if zlib.crc32(body) != crc:
            raise _Corrupt(f"CRC32 mismatch (stored {crc:#010x}, computed {zlib.crc32(body):#010x})")
        values, stop = (_parse_roaring64 if bit64 else _parse_roaring32)(body, 4)
        if stop != size:
            raise _Corrupt(f"bitmap ends at byte {stop} of a {size}-byte entry")
        # Positions past Java's limits (a 32-bit one from 2**31 on) cannot come from a valid writer.
        return DeletionVector(_frozen(values, bit64=bit64), bit64=bit64)
    except (_Corrupt, struct.error, ValueError, UnsupportedFeatureError) as e:
        raise CorruptMetadataError(f"Corrupt deletion vector in {where}: {e}", path=path) from e


def deserialize_dv(data: bytes, *, path: str | None = None) -> DeletionVector:
    """Parse one framed entry (as ``serialize_dv`` makes), 32- or 64-bit by its magic number."""
    buf = memoryview(data)
    dv = _read_entry(buf, 0, None, path)
    size = struct.unpack_from(">i", buf, 0)[0]
    if size + 8 != len(buf):
        raise CorruptMetadataError(
            f"Corrupt deletion vector in {_describe(path)}: {len(buf) - size - 8} trailing bytes", path=path
        )
    return dv


# ---------------------------------------------------------------------------------------------------------
# Index files: version byte + entries.


def _check_version(buf: memoryview, path: str | None) -> None:
    if len(buf) == 0 or buf[0] != DV_INDEX_VERSION:
        actual = "nothing (empty file)" if len(buf) == 0 else str(buf[0])
        raise CorruptMetadataError(
            f"Unsupported {_describe(path)}: version byte is {actual}, expected {DV_INDEX_VERSION}", path=path
        )


def read_dv(data: bytes, offset: int, length: int | None, *, path: str | None = None) -> DeletionVector:
    """The vector stored at ``offset`` of an index file's bytes (Paimon: a DeletionFile of a split).

    ``length`` is the range length from the index manifest (None skips that check). Three positional
    parameters on purpose: they mirror Java's DeletionFile (path, offset, length).
    """
    buf = memoryview(data)
    _check_version(buf, path)
    return _read_entry(buf, offset, length, path)


def read_dv_index_file(
    data: bytes, ranges: Sequence[DeletionVectorMeta], *, path: str | None = None
) -> dict[str, DeletionVector]:
    """Data file name -> deletion vector for every range of one index file."""
    buf = memoryview(data)
    _check_version(buf, path)
    return {m.data_file_name: _read_entry(buf, m.offset, m.length, path) for m in ranges}


def write_dv_index_file(
    dvs: Mapping[str, DeletionVector], *, bit64: bool = False
) -> tuple[bytes, list[DeletionVectorMeta]]:
    """The bytes of one index file holding ``dvs`` in mapping order, and each vector's range.

    Paimon: DeletionVectorIndexFileWriter.writeSingleFile; every vector is written ``bit64`` wide.
    """
    parts = [bytes([DV_INDEX_VERSION])]
    ranges: list[DeletionVectorMeta] = []
    offset = 1
    for name, dv in dvs.items():
        entry = serialize_dv(dv, bit64=bit64)
        ranges.append(
            DeletionVectorMeta(
                data_file_name=name,
                offset=offset,
                length=_range_length(entry, bit64=bit64),
                cardinality=dv.cardinality,
            )
        )
        parts.append(entry)
        offset += len(entry)
    return b"".join(parts), ranges


def dv_index_file_meta(file_name: str, data: bytes, *, ranges: Sequence[DeletionVectorMeta]) -> IndexFileMeta:
    """The IndexFileMeta Java's DeletionFileWriter reports for an index file written from ``data``."""
    return IndexFileMeta(
        index_type=DELETION_VECTORS_INDEX,
        file_name=file_name,
        file_size=len(data),
        row_count=len(ranges),
        dv_ranges=tuple(ranges),
    )


class DeletionVectorIndex:
    """The deletion vectors of one snapshot, looked up by (partition, bucket) and read lazily.

    ``entries`` are the snapshot's index manifest entries; DELETE entries cancel earlier ADDs of the same
    file, other index types are ignored. Each index file is read at most once.
    """

    def __init__(self, file_io: FileIO, index_dir: str, *, entries: Iterable[IndexManifestEntry]) -> None:
        self._file_io = file_io
        self._index_dir = index_dir
        live: dict[tuple[bytes, int, str], IndexFileMeta] = {}
        for e in entries:
            if e.index_file.index_type != DELETION_VECTORS_INDEX:
                continue
            key = (e.partition, e.bucket, e.index_file.file_name)
            if e.kind == FileKind.ADD:
                live[key] = e.index_file
            else:
                live.pop(key, None)
        self._files: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
        for (partition, bucket, _), meta in live.items():
            self._files.setdefault((partition, bucket), []).append(meta)
        self._cache: dict[str, dict[str, DeletionVector]] = {}

    def index_files(self, partition: bytes, bucket: int) -> tuple[IndexFileMeta, ...]:
        """The live deletion-vector index files of a bucket."""
        return tuple(self._files.get((partition, bucket), ()))

    def has_deletion_vectors(self, partition: bytes, bucket: int) -> bool:
        return any(f.dv_ranges for f in self._files.get((partition, bucket), ()))

    def dvs_for(self, partition: bytes, bucket: int) -> dict[str, DeletionVector]:
        """Data file name -> deletion vector for one bucket (empty when it has none)."""
        out: dict[str, DeletionVector] = {}
        for meta in self._files.get((partition, bucket), ()):
            out.update(self._read(meta))
        return out

    def _path(self, meta: IndexFileMeta) -> str:
        return meta.external_path or self._file_io.join(self._index_dir, meta.file_name)

    def _read(self, meta: IndexFileMeta) -> dict[str, DeletionVector]:
        path = self._path(meta)
        cached = self._cache.get(path)
        if cached is None:
            if meta.dv_ranges is None:
                raise CorruptMetadataError(
                    f"Index manifest lists deletion vector file {path} without its ranges", path=path
                )
            if not meta.dv_ranges:
                cached = {}  # Java writes a bare version byte to clear a bucket; nothing to read
            else:
                cached = read_dv_index_file(self._file_io.read_bytes(path), meta.dv_ranges, path=path)
            self._cache[path] = cached
        return cached
