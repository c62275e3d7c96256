"""The ``.blob`` file layout, built byte for byte from Paimon's BlobFormatWriter / DeltaVarintCompressor, and the
assembly of one BLOB column from several blob files (newest wins, placeholders fall back, missing rows are null)."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest

from laketide.exceptions import CorruptMetadataError
from laketide.format.blob import BlobFile
from laketide.fs import LocalFileIO
from laketide.meta.manifest import DataFileMeta
from laketide.scan.blob_read import read_blob_column
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import BigIntType, BlobType, DataField

NULL, PLACEHOLDER = object(), object()


def _varint(value: int) -> bytes:
    zz = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zz & ~0x7F:
        out.append((zz & 0x7F) | 0x80)
        zz >>= 7
    out.append(zz)
    return bytes(out)


def blob_file(values: list) -> bytes:  # noqa: ANN401 - bytes / NULL / PLACEHOLDER
    """As BlobFormatWriter writes it: magic | payload | length (8) | crc (4) per record, then the index."""
    body, lengths = bytearray(), []
    for v in values:
        if v is NULL:
            lengths.append(-1)
        elif v is PLACEHOLDER:
            lengths.append(-2)
        else:
            record = struct.pack("<i", 1481511375) + v + struct.pack("<q", len(v) + 16) + b"\0\0\0\0"
            body += record
            lengths.append(len(record))
    index = b"".join(_varint(cur - prev) for prev, cur in zip([0, *lengths], lengths))
    return bytes(body) + index + struct.pack("<i", len(index)) + b"\x01"


def test_values_nulls_and_placeholders() -> None:
    blob = BlobFile(blob_file([b"abc", NULL, b"", PLACEHOLDER, b"x" * 300]), "f.blob")
    assert blob.row_count == 5
    assert blob.values().to_pylist() == [b"abc", None, b"", None, b"x" * 300]
    assert blob.placeholders.tolist() == [False, False, False, True, False]


@pytest.mark.parametrize("data", [b"", b"\x02", blob_file([b"abc"])[:-3] + b"\x01\x01\x01",
                                  blob_file([b"abc"])[:-1] + b"\x07"], ids=["empty", "no-footer", "bad-index",
                                                                          "version"])
def test_corrupt_blob_files_name_the_file(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match="bad.blob"):
        BlobFile(data, "bad.blob")


def _meta(name: str, first_row_id: int, rows: int, seq: int) -> DataFileMeta:
    return DataFileMeta(file_name=name, file_size=0, row_count=rows, min_key=b"", max_key=b"",
                        key_stats=None, value_stats=None, min_sequence_number=seq,  # type: ignore[arg-type]
                        max_sequence_number=seq, schema_id=0, level=0, first_row_id=first_row_id,
                        write_cols=("payload",))


def test_newest_file_wins_and_placeholders_fall_back(tmp_path: Path) -> None:
    io = LocalFileIO()
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "payload", BlobType()))
    SchemaManager(io, str(tmp_path)).create(TableSchema(id=0, fields=fields, highest_field_id=1))
    files = {
        "old-a.blob": (_meta("old-a.blob", 10, 2, 1), [b"a0", b"a1"]),          # rows 10..11
        "old-b.blob": (_meta("old-b.blob", 12, 2, 1), [b"b2", NULL]),            # rows 12..13 (rolled)
        "new.blob": (_meta("new.blob", 10, 4, 2), [PLACEHOLDER, b"N1", PLACEHOLDER, b"N3"]),
    }
    blobs = []
    for name, (meta, values) in files.items():
        (tmp_path / name).write_bytes(blob_file(values))
        blobs.append((meta, str(tmp_path / name)))
    column = read_blob_column(io, SchemaManager(io, str(tmp_path)), fields[1], blobs, first_row_id=10, row_count=5)
    assert column.type == pa.large_binary()
    assert column.to_pylist() == [b"a0", b"N1", b"b2", b"N3", None]  # row 14: no file holds it
