"""Paimon's ``.blob`` file: the values of one BLOB column, one record per row, with an index at the end.

Layout: records, then the index (the records' lengths, delta + ZigZag + varint encoded), then the index length
(int32 little-endian) and a version byte (1). A record is ``magic (4 bytes) | payload | 12 bytes`` (its length
and a checksum), so the payload of a record of length ``L`` at offset ``o`` is ``L - 16`` bytes at ``o + 4``.
Length ``-1`` is a null (no bytes), ``-2`` a placeholder: the value lives in an older blob file of the same rows.

Paimon: format.blob.BlobFileMeta, BlobFormatWriter, BlobFormatReader, utils.DeltaVarintCompressor
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import CorruptMetadataError

__all__ = ["BLOB_EXTENSION", "BlobFile", "encode_blob_file", "is_blob_file", "split_blob_values"]

BLOB_EXTENSION = ".blob"
_VERSION = 1
_NULL, _PLACEHOLDER = -1, -2
_MIN_RECORD = 4 + 8 + 4
_MAGIC = (1481511375).to_bytes(4, "little")  # BlobFormatWriter.MAGIC_NUMBER


def is_blob_file(name: str) -> bool:
    return name.endswith(BLOB_EXTENSION)


def _decode_lengths(index: bytes, path: str) -> np.ndarray:
    values: list[int] = []
    shift = acc = 0
    for b in index:  # the index holds one varint per row: small next to the payloads it describes
        acc |= (b & 0x7F) << shift
        if b & 0x80:
            shift += 7
            if shift > 63:
                raise CorruptMetadataError(f"Blob file {path}: malformed index varint", path=path)
            continue
        values.append((acc >> 1) ^ -(acc & 1))  # ZigZag
        shift = acc = 0
    if shift:
        raise CorruptMetadataError(f"Blob file {path}: truncated index", path=path)
    return np.cumsum(np.asarray(values, dtype=np.int64)) if values else np.zeros(0, dtype=np.int64)


class BlobFile:
    """One parsed ``.blob`` file (its bytes are held: blob files are read whole, once per read)."""

    def __init__(self, data: bytes, path: str) -> None:
        self.path = path
        if len(data) < 5 or data[-1] != _VERSION:
            raise CorruptMetadataError(f"Blob file {path}: missing footer or unsupported version", path=path)
        index_length = int.from_bytes(data[-5:-1], "little", signed=True)
        index_start = len(data) - 5 - index_length
        if index_length < 0 or index_start < 0:
            raise CorruptMetadataError(f"Blob file {path}: invalid index length {index_length}", path=path)
        self.lengths = _decode_lengths(data[index_start:len(data) - 5], path)
        stored = np.where(self.lengths >= 0, self.lengths, 0)
        if ((self.lengths >= 0) & (self.lengths < _MIN_RECORD)).any() or int(stored.sum()) != index_start:
            raise CorruptMetadataError(f"Blob file {path}: index does not match the data region", path=path)
        self.offsets = np.concatenate([[0], np.cumsum(stored)[:-1]]) if len(stored) else stored
        self._data = data

    @property
    def row_count(self) -> int:
        return len(self.lengths)

    @property
    def placeholders(self) -> np.ndarray:
        return np.asarray(self.lengths == _PLACEHOLDER, dtype=bool)

    def values(self) -> pa.Array:
        """Every row's value as ``large_binary`` (placeholders read as null; see ``placeholders``)."""
        present = self.lengths >= 0
        sizes = np.where(present, self.lengths - 16, 0)
        starts = self.offsets + 4
        # One buffer of all payloads and their offsets: an Arrow array without a Python object per row.
        pieces = [self._data[s:s + n] for s, n in zip(starts[present].tolist(), sizes[present].tolist())]
        value_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        validity = pa.array(present).buffers()[1] if not present.all() else None
        return pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), len(present), [validity, pa.py_buffer(value_offsets), pa.py_buffer(b"".join(pieces))],
            null_count=int((~present).sum()),
        )


def _encode_lengths(lengths: np.ndarray) -> bytes:
    # DeltaVarintCompressor: the first length, then differences, each ZigZag + 7-bit varint.
    out = bytearray()
    previous = 0
    for value in lengths.tolist():  # one small varint per row (the payloads dominate the cost)
        delta = value - previous
        previous = value
        z = ((delta << 1) ^ (delta >> 63)) & 0xFFFFFFFFFFFFFFFF
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


def encode_blob_file(values: pa.Array) -> bytes:
    """``values`` (binary; null -> length -1) as a ``.blob`` file, byte for byte as Java's BlobFormatWriter."""
    records: list[bytes] = []
    lengths = np.empty(len(values), dtype=np.int64)
    for i, payload in enumerate(values.to_pylist()):  # one record per row, each a whole (large) value
        if payload is None:
            lengths[i] = _NULL
            continue
        length = len(payload) + 16
        head = _MAGIC + payload + length.to_bytes(8, "little", signed=True)
        records.append(head + zlib.crc32(head).to_bytes(4, "little"))
        lengths[i] = length
    index = _encode_lengths(lengths)
    return b"".join(records) + index + len(index).to_bytes(4, "little", signed=True) + bytes([_VERSION])


def split_blob_values(values: pa.Array, target_size: int) -> list[pa.Array]:
    """``values`` cut into the files Java's blob writer rolls: a file closes after the record that reaches
    ``target_size`` bytes (checked after every record)."""
    sizes = np.where(_is_valid(values), _value_sizes(values) + 16, 0)
    out = []
    start = 0
    written = 0
    for i, size in enumerate(sizes.tolist()):
        written += size
        if written >= target_size:
            out.append(values.slice(start, i + 1 - start))
            start, written = i + 1, 0
    if start < len(values) or not out:
        out.append(values.slice(start))
    return [a for a in out if len(a)] or [values]


def _is_valid(values: pa.Array) -> np.ndarray:
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _value_sizes(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
