"""The file-index container: every index of one data file, by column and index type, in one blob.

Layout (integers big-endian, names as ``DataOutput.writeUTF``)::

    magic: long 1493475289347502 | version: int (1) | head length: int
    column count: int
    per column: name | index count: int | per index: type name | start: int | length: int
    redundant length: int (0) | redundant bytes
    body: the indexes' bytes back to back

``start`` is absolute (from the container's first byte); ``-1`` (with length 0) marks an index written for
no rows. The blob is either embedded in the data file's manifest entry (``_EMBEDDED_FILE_INDEX``, when at
most ``file-index.in-manifest-threshold`` bytes) or stored as ``<data file>.index`` listed in its
``_EXTRA_FILES``.

Reading is lazy: the head is parsed when the container opens; an index's bytes are fetched and decoded only
when a predicate needs it. Index types and container versions laketide does not know are skipped, never an
error; bytes that cannot be a container raise :class:`~laketide.exceptions.FileIndexCorruptError`.

Paimon: org.apache.paimon.fileindex.FileIndexFormat, FileIndexPredicate; io.DataFileIndexWriter
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from laketide.exceptions import FileIndexCorruptError
from laketide.index.file_index.base import ColumnIndexReader, EmptyIndexReader
from laketide.index.file_index.bitmap import BITMAP, BitmapIndexReader
from laketide.index.file_index.bloom import BLOOM_FILTER, BloomFilterReader
from laketide.index.file_index.bsi import BSI, BsiIndexReader
from laketide.index.file_index.java import hashmap_order, java_string_hashcode, read_utf, write_utf
from laketide.types import DataType

__all__ = [
    "INDEX_FILE_SUFFIX",
    "KNOWN_INDEX_TYPES",
    "MAGIC",
    "FileIndexContainer",
    "FileIndexEntry",
    "java_container_order",
    "write_container",
]

MAGIC: Final = 1493475289347502
VERSION: Final = 1
EMPTY_INDEX_FLAG: Final = -1
INDEX_FILE_SUFFIX: Final = ".index"
"""A sidecar index is ``<data file name><INDEX_FILE_SUFFIX>`` (Paimon: DataFilePathFactory.INDEX_PATH_SUFFIX)."""

_READERS: Final[dict[str, Callable[..., ColumnIndexReader]]] = {
    BLOOM_FILTER: BloomFilterReader,
    BITMAP: BitmapIndexReader,
    BSI: BsiIndexReader,
}
KNOWN_INDEX_TYPES: Final = tuple(_READERS)

RangeReader = Callable[[int, int], bytes]
"""``read(offset, length) -> bytes``: a ranged read of a (sidecar) file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexEntry:
    """One index in a container's head."""

    column: str
    index_type: str
    offset: int
    length: int

    @property
    def empty(self) -> bool:
        """Written for no rows (Java's EMPTY_INDEX_FLAG): nothing can match."""
        return self.offset == EMPTY_INDEX_FLAG


# ---------------------------------------------------------------------------------------------------------
# Writing


def write_container(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Assemble a container from ``{column: {index type: bytes}}`` in the mappings' order.

    ``None`` bytes write an empty-index entry. Use :func:`java_container_order` first for Java's order.
    """
    names = b"".join(write_utf(c) + b"".join(write_utf(t) for t in types) for c, types in indexes.items())
    n_indexes = sum(len(types) for types in indexes.values())
    head_length = 8 + 4 + 4 + 4 + 8 * n_indexes + 4 * len(indexes) + 4 + len(names)
    head = [struct.pack(">qiii", MAGIC, VERSION, head_length, len(indexes))]
    body: list[bytes] = []
    at = 0
    for column, types in indexes.items():
        head.append(write_utf(column) + struct.pack(">i", len(types)))
        for index_type, data in types.items():
            if data is None:
                head.append(write_utf(index_type) + struct.pack(">ii", EMPTY_INDEX_FLAG, 0))
            else:
                head.append(write_utf(index_type) + struct.pack(">ii", head_length + at, len(data)))
                body.append(bytes(data))
                at += len(data)
    head.append(struct.pack(">i", 0))  # redundant length: room for later versions
    out = b"".join(head)
    assert len(out) == head_length
    return out + b"".join(body)


def java_container_order(
    indexes: Mapping[str, Mapping[str, bytes | None]],
) -> dict[str, dict[str, bytes | None]]:
    """``indexes`` reordered as Java's ``DataFileIndexWriter`` lays them out (its HashMaps' iteration order).

    Java walks its options (``{Column: {index type: Options}}``), gathers ``{index type: {column: maintainer}}``
    and then builds ``{column: {index type: bytes}}``; every level iterates in HashMap order. The mapping's
    own order stands in for the order in which Java read the options, which only decides ties between names
    sharing a HashMap bucket.
    """
    # FileIndexOptions: Column keys (hashCode = Arrays.hashCode({name, null, false})), computeIfAbsent.
    columns = _ordered(list(indexes), _column_key_hash, head_insertion=True)
    by_type: dict[str, list[str]] = {}
    for column in columns:
        for index_type in _ordered(list(indexes[column]), java_string_hashcode, head_insertion=True):
            by_type.setdefault(index_type, []).append(column)  # computeIfAbsent(type), put(column)
    visits: dict[str, list[str]] = {}
    for index_type in _ordered(list(by_type), java_string_hashcode, head_insertion=True):
        for column in _ordered(by_type[index_type], java_string_hashcode, head_insertion=False):
            visits.setdefault(column, []).append(index_type)  # computeIfAbsent(column).put(type)
    return {
        column: {t: indexes[column][t] for t in _ordered(visits[column], java_string_hashcode, head_insertion=False)}
        for column in _ordered(list(visits), java_string_hashcode, head_insertion=True)
    }


def _column_key_hash(name: str) -> int:
    h = (31 * (31 * (31 + java_string_hashcode(name))) + 1237) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _ordered(names: Sequence[str], hashcode: Callable[[str], int], *, head_insertion: bool) -> list[str]:
    codes = np.array([hashcode(n) for n in names], dtype=np.int64).astype(np.int32)
    order, _ = hashmap_order(codes, head_insertion=head_insertion)
    return [names[i] for i in order]


# ---------------------------------------------------------------------------------------------------------
# Reading


class FileIndexContainer:
    """A parsed container: its head now, each index's bytes on demand.

    ``source`` is the container's bytes, or a ranged reader ``read(offset, length)`` over a sidecar file
    (then ``size``, the file length, lets offsets be checked up front). ``path`` names the container in
    errors: the sidecar's path, or the data file's name for an embedded index.
    """

    def __init__(
        self,
        source: bytes | bytearray | memoryview | RangeReader,
        *,
        path: str | None = None,
        size: int | None = None,
    ) -> None:
        self.path = path
        if callable(source):
            self._read: RangeReader = source
            self._size = size
        else:
            data = memoryview(source)
            self._read = lambda offset, length: data[offset : offset + length]  # type: ignore[assignment, return-value]
            self._size = len(data)
        self._readers: dict[tuple[str, str], ColumnIndexReader] = {}
        self.version, self.entries = self._parse_head()

    def _corrupt(self, what: str) -> FileIndexCorruptError:
        return FileIndexCorruptError(f"Corrupt file index {self.path}: {what}", path=self.path)

    def _fetch(self, offset: int, length: int) -> bytes | memoryview:
        try:
            data = self._read(offset, length)
        except OSError as e:
            raise self._corrupt(f"cannot read {length} bytes at {offset}: {e}") from e
        if len(data) != length:
            raise self._corrupt(f"{length} bytes at {offset} run past the end")
        return data

    def _parse_head(self) -> tuple[int, tuple[FileIndexEntry, ...]]:
        if self._size is not None and self._size < 16:
            raise self._corrupt(f"{self._size} bytes cannot hold a file index head")
        magic, version, head_length = struct.unpack(">qii", self._fetch(0, 16))
        if magic != MAGIC:
            raise self._corrupt(f"bad magic number {magic} (expected {MAGIC})")
        if version != VERSION:
            return version, ()  # a newer format: ignore the whole container, as an unknown index type
        if head_length < 24 or (self._size is not None and head_length > self._size):
            raise self._corrupt(f"head length {head_length} outside the file ({self._size} bytes)")
        head = self._fetch(16, head_length - 16)
        entries: list[FileIndexEntry] = []
        try:
            (n_columns,) = struct.unpack_from(">i", head, 0)
            pos = 4
            if not 0 <= n_columns <= len(head):
                raise self._corrupt(f"head claims {n_columns} columns")
            for _ in range(n_columns):
                column, pos = read_utf(head, pos)
                (n_indexes,) = struct.unpack_from(">i", head, pos)
                pos += 4
                if not 0 <= n_indexes <= len(head):
                    raise self._corrupt(f"column {column!r} claims {n_indexes} indexes")
                for _ in range(n_indexes):
                    index_type, pos = read_utf(head, pos)
                    start, length = struct.unpack_from(">ii", head, pos)
                    pos += 8
                    entry = FileIndexEntry(column=column, index_type=index_type, offset=start, length=length)
                    self._check_entry(entry, head_length)
                    entries.append(entry)
            struct.unpack_from(">i", head, pos)  # the redundant length must be there too
        except (struct.error, ValueError) as e:
            if isinstance(e, FileIndexCorruptError):
                raise
            raise self._corrupt(f"malformed head: {e}") from e
        return version, tuple(entries)

    def _check_entry(self, entry: FileIndexEntry, head_length: int) -> None:
        if entry.empty:
            return
        end = entry.offset + entry.length
        if entry.offset < head_length or entry.length < 0 or (self._size is not None and end > self._size):
            raise self._corrupt(
                f"index {entry.index_type!r} of column {entry.column!r} at {entry.offset} (+{entry.length}) "
                f"lies outside the body"
            )

    @property
    def supported(self) -> bool:
        """False when the container's version is newer than laketide knows (all its indexes are ignored)."""
        return self.version == VERSION

    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.column for e in self.entries))

    def entry(self, column: str, index_type: str) -> FileIndexEntry | None:
        for e in self.entries:
            if e.column == column and e.index_type == index_type:
                return e
        return None

    def index_bytes(self, entry: FileIndexEntry) -> bytes | memoryview:
        """The raw bytes of one index (empty for an empty-index entry)."""
        if entry.empty:
            return b""
        return self._fetch(entry.offset, entry.length)

    def reader(self, column: str, index_type: str, data_type: DataType) -> ColumnIndexReader | None:
        """The reader of one index of ``column`` (of type ``data_type`` in the data file's schema).

        None when the container has no such index or laketide does not know the index type.
        """
        key = (column, index_type)
        cached = self._readers.get(key)
        if cached is not None:
            return cached
        entry = self.entry(column, index_type)
        factory = _READERS.get(index_type)
        if entry is None or factory is None:
            return None
        reader: ColumnIndexReader
        if entry.empty:
            reader = EmptyIndexReader(index_type)
        else:
            reader = factory(self.index_bytes(entry), data_type, path=self.path)
        self._readers[key] = reader
        return reader

    def readers(self, column: str, data_type: DataType) -> list[ColumnIndexReader]:
        """Readers of every known index type on ``column``, in head order."""
        out = []
        for e in self.entries:
            if e.column == column:
                r = self.reader(column, e.index_type, data_type)
                if r is not None:
                    out.append(r)
        return out
