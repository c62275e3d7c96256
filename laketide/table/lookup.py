"""``Table.lookup(keys)``: the merged latest rows of a batch of primary keys, without scanning whole buckets.

The keys become ``k IN (...)`` per key column (exact for a one-column key, a superset for a composite one) and
go through the ordinary read: bucket pruning by the keys' hashes, files skipped by their key statistics, row
groups by their ``_KEY_`` statistics, rows filtered before the merge; the merge itself honours the merge engine,
deletion vectors, levels and sequence numbers as any read does. A composite key is then matched exactly with a
semi-join on all key columns. Same rows as ``t.read(where=<the keys>)``, by construction.

With ``cache`` (the default), a data file most of whose row groups the keys reach is decoded once into a local,
memory-mapped lookup file with a sorted key index (scan/lookup_cache.py: ``local-temp-dir``,
``lookup.cache-max-disk-size``); later lookups in this process binary-search it instead of decoding the file
again. Files are still planned from the latest snapshot at every call, so the cache never answers for a file
the table no longer has.

Paimon: table.query.LocalTableQuery (lookup joins)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import SchemaError, UnsupportedFeatureError
from laketide.expr import Leaf, Op, and_
from laketide.scan.lookup_cache import lookup_cache_for
from laketide.types import to_arrow_schema, without_field_ids

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["KeyBatch", "lookup"]

KeyBatch: TypeAlias = pa.Table | pa.RecordBatch | Mapping[str, Sequence[object]] | Sequence[object]


def lookup(table: Table, keys: KeyBatch, *, columns: Sequence[str] | None = None, cache: bool = True) -> pa.Table:
    key_names = list(table.schema.primary_keys)
    if not key_names:
        raise UnsupportedFeatureError(f"Table {table.name} has no primary key: lookup() needs one")
    schema = without_field_ids(to_arrow_schema(table.schema.row_type))
    out_names = list(columns) if columns is not None else schema.names
    unknown = [c for c in out_names if c not in schema.names]
    if unknown:
        raise SchemaError(f"Table {table.name}: unknown columns {unknown} in lookup(); columns are {schema.names}")
    wanted = _distinct_keys(table.name, _as_key_table(table.name, keys, key_names, schema), key_names)
    out_schema = pa.schema([schema.field(n) for n in out_names])
    if wanted.num_rows == 0:
        return out_schema.empty_table()
    predicate = and_(*(Leaf(Op.IN, k, tuple(pc.unique(wanted.column(k)).to_pylist())) for k in key_names))
    read_names = out_names + [k for k in key_names if k not in out_names]
    scan = table.scan(columns=read_names, where=predicate)
    if cache:
        options = table.store.options
        scan.reader.lookup_cache = lookup_cache_for(table.path, local_dir=options.local_temp_dir,
                                                    max_disk_size=options.lookup_cache_max_disk_size)
    found = scan.to_arrow()
    if len(key_names) > 1 and found.num_rows:
        # Per-column IN admits (k1 of one key, k2 of another): keep only the keys asked for.
        found = found.join(wanted, keys=key_names, join_type="left semi")
    return found.select(out_names).cast(out_schema)


def _as_key_table(name: str, keys: KeyBatch, key_names: list[str], schema: pa.Schema) -> pa.Table:
    """``keys`` as a table of the key columns in the table's types."""
    if isinstance(keys, pa.RecordBatch):
        keys = pa.Table.from_batches([keys])
    if isinstance(keys, Mapping):
        try:
            keys = pa.table({k: pa.array(v) for k, v in keys.items()})
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise SchemaError(f"Table {name}: lookup() keys are not columns of values: {e}") from e
    if isinstance(keys, pa.Table):
        missing = [k for k in key_names if k not in keys.column_names]
        if missing:
            raise SchemaError(f"Table {name}: lookup() keys lack the primary key columns {missing} "
                              f"(the primary key is {key_names})")
        columns = [keys.column(k) for k in key_names]
    elif isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise SchemaError(f"Table {name}: lookup() takes a pyarrow Table, a dict of columns or a list of key "
                          f"tuples, got {type(keys).__name__}")
    else:
        columns = _columns_of_tuples(name, keys, key_names)
    arrays = []
    for k, column in zip(key_names, columns):
        target = schema.field(k).type
        try:
            arrays.append(column.cast(target) if not column.type.equals(target) else column)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaError(f"Table {name}: lookup() key column {k!r} is not {target}: {e}") from e
    return pa.table(arrays, names=key_names)


def _columns_of_tuples(name: str, keys: Sequence[object], key_names: list[str]) -> list[pa.ChunkedArray]:
    n = len(key_names)
    if n == 1 and all(not isinstance(k, (tuple, list)) for k in keys):
        rows: list[tuple[object, ...]] = [(k,) for k in keys]
    else:
        rows = []
        for k in keys:
            if not isinstance(k, (tuple, list)) or len(k) != n:
                raise SchemaError(f"Table {name}: lookup() key {k!r} is not a tuple of {n} values "
                                  f"for the primary key {key_names}")
            rows.append(tuple(k))
    try:
        return [pa.chunked_array([pa.array([r[i] for r in rows])]) for i in range(n)]
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SchemaError(f"Table {name}: lookup() keys are not values of one type per column: {e}") from e


def _distinct_keys(name: str, keys: pa.Table, key_names: list[str]) -> pa.Table:
    """The distinct keys without nulls (a primary key column holds no null, so a null key finds nothing)."""
    valid = None
    for k in key_names:
        present = pc.is_valid(keys.column(k))
        valid = present if valid is None else pc.and_(valid, present)
    if valid is not None:
        keys = keys.filter(valid)
    if keys.num_rows == 0:
        return keys
    return keys.group_by(key_names, use_threads=False).aggregate([])
