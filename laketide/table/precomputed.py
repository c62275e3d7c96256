"""Row-level changes whose new values were computed elsewhere (by Spark, for SQL laketide's expressions cannot
evaluate), applied as one commit.

Append tables: the target is read here with each row's position (``target_rows``); the caller computes, per
position, whether the row changed and its new values; ``rewrite_append`` rewrites exactly the files holding a
changed row (copy-on-write) and adds the inserted rows. The commit deletes those files, so a concurrent
compaction or delete of one of them fails it with CommitConflictError, changing nothing.

Primary-key tables: ``write_keyed`` writes the new rows (+I) and deleted keys (-D) and refuses to commit when a
bucket it writes changed since the snapshot the values were computed from (laketide.table.change_base).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from laketide.exceptions import SchemaError
from laketide.meta.manifest import ManifestEntry
from laketide.table.change_base import refuse_changes_since
from laketide.table.dml import (
    ChangeResult,
    PendingChange,
    check_rewritable,
    with_deleted_files,
    write_row_kinds,
)

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["POSITION", "AppendTarget", "rewrite_append", "target_rows", "write_keyed"]

POSITION = "__laketide_position"  # a target row's position in AppendTarget.rows


@dataclass(frozen=True, slots=True)
class AppendTarget:
    """An append table's rows at ``snapshot_id``: ``rows`` (with POSITION), the file each row came from."""

    snapshot_id: int | None
    rows: pa.Table
    files: np.ndarray  # index into entries, per row
    entries: list[ManifestEntry]


def target_rows(table: Table, *, verb: str) -> AppendTarget:
    """Every row of the latest snapshot, with its position and file (what a copy-on-write rewrite needs)."""
    check_rewritable(table, verb=verb)
    snapshot = table.latest_snapshot()
    schema = table.arrow_schema
    if snapshot is None:
        rows = schema.empty_table()
        return AppendTarget(None, rows.append_column(POSITION, pa.array([], pa.int64())), np.zeros(0, np.int64), [])
    store = table.store
    entries = store.new_scan().plan(snapshot)
    reader = store.new_read()
    paths = store.path_factory
    parts, files = [], []
    for i, e in enumerate(entries):
        path = e.file.external_path or f"{paths.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}"
        part = pa.Table.from_batches(list(reader.read_file(e.file, path)), schema=reader.output_schema)
        parts.append(part.select(schema.names))
        files.append(np.full(part.num_rows, i, dtype=np.int64))
    rows = pa.concat_tables(parts) if parts else schema.empty_table()
    rows = pa.Table.from_arrays(rows.columns, schema=schema)
    rows = rows.append_column(POSITION, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    return AppendTarget(snapshot.id, rows, np.concatenate(files) if files else np.zeros(0, np.int64), entries)


def rewrite_append(table: Table, target: AppendTarget, changed: np.ndarray, new_rows: pa.Table, *,
                   updated: int, deleted: int, inserted: int) -> ChangeResult:
    """Commit: the files holding a ``changed`` position are replaced by their unchanged rows plus ``new_rows``
    (updated and inserted rows, in the table's schema); one commit, conflict-checked on the replaced files."""
    for f in table.arrow_schema:
        if not f.nullable and f.name in new_rows.column_names and new_rows.column(f.name).null_count:
            raise SchemaError(f"change of table {table.name}: column {f.name!r} is NOT NULL; the new values give "
                              f"null in {new_rows.column(f.name).null_count} rows. Nothing was changed.")
    touched_files = np.unique(target.files[changed]) if len(changed) else np.zeros(0, np.int64)
    keep = np.isin(target.files, touched_files)
    keep[changed] = False
    copied = target.rows.filter(pa.array(keep)).drop_columns([POSITION])
    out = pa.concat_tables([copied, new_rows.select(table.arrow_schema.names).cast(table.arrow_schema)])
    pending = PendingChange(table, rows_inserted=inserted, rows_updated=updated, rows_deleted=deleted)
    if not out.num_rows and not len(touched_files):
        return ChangeResult()
    messages = write_row_kinds(table, [(out, None)])
    pending.messages = with_deleted_files(messages, [target.entries[int(k)] for k in touched_files])
    return pending.commit()


def write_keyed(table: Table, base: int | None, upserts: pa.Table, deletes: pa.Table, *, updated: int,
                inserted: int, verb: str) -> ChangeResult:
    """Commit ``upserts`` (+I) and ``deletes`` (-D) of a primary-key table computed at snapshot ``base``."""
    from laketide.io.kv import RowKind

    pending = PendingChange(table, rows_inserted=inserted, rows_updated=updated, rows_deleted=deletes.num_rows)
    if not upserts.num_rows and not deletes.num_rows:
        return ChangeResult()
    pending.messages = write_row_kinds(table, [(deletes, RowKind.DELETE), (upserts, RowKind.INSERT)])
    try:
        refuse_changes_since(table, base, pending.messages, verb=verb)
    except BaseException:
        pending.abort()
        raise
    return pending.commit()
