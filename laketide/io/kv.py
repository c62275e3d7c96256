"""The key-value layout of primary-key data files and row kinds.

A PK data file holds ``_KEY_<k>`` copies of the (trimmed) primary key, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and then
every table column; with ``data-file.thin-mode`` the ``_KEY_`` copies are left out (readers take the key from the
value columns, which is what laketide always does).

Paimon: KeyValue, KeyValueFileStore#keyType, table.SpecialFields, types.RowKind
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError

__all__ = [
    "RowKind",
    "SEQUENCE_NUMBER",
    "VALUE_KIND",
    "KEY_PREFIX",
    "kv_schema",
    "to_kv_table",
    "parse_row_kinds",
    "is_retract",
    "count_retracts",
]

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
# Java's SpecialFields: key copies are numbered from Integer.MAX_VALUE / 2 + field id.
KEY_FIELD_ID_START = 2_147_483_647 // 2
SEQUENCE_NUMBER_ID = 2_147_483_647 - 1
VALUE_KIND_ID = 2_147_483_647 - 2


class RowKind(enum.IntEnum):
    INSERT = 0  # +I
    UPDATE_BEFORE = 1  # -U
    UPDATE_AFTER = 2  # +U
    DELETE = 3  # -D

    @property
    def short_string(self) -> str:
        return _SHORT[self]


_SHORT = {RowKind.INSERT: "+I", RowKind.UPDATE_BEFORE: "-U", RowKind.UPDATE_AFTER: "+U", RowKind.DELETE: "-D"}
_BY_SHORT = {v: k for k, v in _SHORT.items()}


def _field_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(b"PARQUET:field_id")
    return int(raw) if raw is not None else None


def _with_id(f: pa.Field, field_id: int) -> pa.Field:
    return f.with_metadata({b"PARQUET:field_id": str(field_id).encode()})


def kv_schema(value_schema: pa.Schema, key_names: Sequence[str], *, thin: bool) -> pa.Schema:
    """The Arrow schema of a PK data file for a table whose columns are ``value_schema``."""
    fields: list[pa.Field] = []
    if not thin:
        for name in key_names:
            f = value_schema.field(name)
            fid = _field_id(f)
            key = pa.field(KEY_PREFIX + name, f.type, nullable=False)
            fields.append(_with_id(key, KEY_FIELD_ID_START + fid) if fid is not None else key)
    fields.append(_with_id(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False), SEQUENCE_NUMBER_ID))
    fields.append(_with_id(pa.field(VALUE_KIND, pa.int8(), nullable=False), VALUE_KIND_ID))
    fields.extend(value_schema)
    return pa.schema(fields)


def to_kv_table(
    values: pa.Table, key_names: Sequence[str], sequence: np.ndarray, kinds: np.ndarray, schema: pa.Schema
) -> pa.Table:
    """Lay ``values`` out as ``schema`` (from :func:`kv_schema`) with the given sequence numbers and kinds."""
    columns: list[pa.Array | pa.ChunkedArray] = []
    for f in schema:
        if f.name == SEQUENCE_NUMBER:
            columns.append(pa.array(sequence, pa.int64()))
        elif f.name == VALUE_KIND:
            columns.append(pa.array(kinds, pa.int8()))
        elif f.name.startswith(KEY_PREFIX) and f.name[len(KEY_PREFIX):] in key_names:
            columns.append(values.column(f.name[len(KEY_PREFIX):]))
        else:
            columns.append(values.column(f.name))
    return pa.Table.from_arrays(columns, schema=schema)


def parse_row_kinds(column: pa.ChunkedArray | pa.Array, *, field: str) -> np.ndarray:
    """Row kinds from a ``rowkind.field`` column ("+I", "-U", "+U", "-D"; or their tinyint codes)."""
    if pa.types.is_integer(column.type):
        codes = np.asarray(pc.fill_null(column, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    else:
        strings = pc.cast(column, pa.string())
        codes = np.full(len(strings), -1, dtype=np.int64)
        for text, kind in _BY_SHORT.items():
            mask = pc.fill_null(pc.equal(strings, text), False).to_numpy(zero_copy_only=False)
            codes[mask] = int(kind)
    bad = (codes < 0) | (codes > 3)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise SchemaError(
            f"rowkind.field column {field!r} has {int(bad.sum())} invalid row kinds (first at row {first}: "
            f"{column[first].as_py()!r}); expected +I, -U, +U or -D"
        )
    return codes.astype(np.int8)


def is_retract(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """-U and -D rows (Paimon: RowKind#isRetract)."""
    return pc.or_(pc.equal(kinds, 1), pc.equal(kinds, 3))


def count_retracts(kinds: pa.Array | pa.ChunkedArray) -> int:
    """How many -U / -D rows ``kinds`` holds: ``is_retract`` counted in numpy over each chunk's values (no
    boolean arrays built through Arrow's kernels; a file's flush counts them on every batch)."""
    if kinds.null_count:
        return int(pc.sum(is_retract(kinds)).as_py() or 0)
    chunks = kinds.chunks if isinstance(kinds, pa.ChunkedArray) else [kinds]
    total = 0
    for chunk in chunks:
        k = chunk.to_numpy()
        total += int(np.count_nonzero((k == RowKind.UPDATE_BEFORE) | (k == RowKind.DELETE)))
    return total
