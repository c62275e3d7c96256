"""Removing a dropped table's files: its directory and, as Java does, every ``data-file.external-paths`` root that
any of its schemas (of any branch) names.

Java deletes those roots recursively, so a root must belong to one table. A root that holds the table itself (or
the warehouse: the table directory lies under it) is never deleted: that would remove other tables.

Paimon: catalog.AbstractCatalog#dropTable (getSchemaExternalPaths), FileSystemCatalog#dropTableImpl
"""

from __future__ import annotations

import logging

from laketide.fs import FileIO, file_io_for, scheme_of
from laketide.meta.deletion import EXTERNAL_PATHS_KEY, same_location
from laketide.mergetree.lookup_files import drop_writer_lookup_files
from laketide.scan.lookup_cache import drop_lookup_caches
from laketide.schema.schema_manager import SchemaManager

__all__ = ["delete_table_files", "schema_external_roots"]

_LOG = logging.getLogger(__name__)


def schema_external_roots(file_io: FileIO, table_path: str) -> list[str]:
    """Every external root named by any schema of the table or of its branches (in first-seen order)."""
    schema_dirs = [f"{table_path}/schema"]
    schema_dirs += [f"{st.path.rstrip('/')}/schema" for st in file_io.list_status(f"{table_path}/branch") if st.is_dir]
    roots: dict[str, None] = {}
    for d in schema_dirs:
        manager = SchemaManager(file_io, table_path, schema_dir=d)
        for sid in manager.list_ids():
            raw = manager.schema(sid).options.get(EXTERNAL_PATHS_KEY) or ""
            roots.update((r.strip().rstrip("/"), None) for r in raw.split(",") if r.strip())
    return list(roots)


def delete_table_files(file_io: FileIO, table_path: str) -> None:
    roots = schema_external_roots(file_io, table_path)
    # This process's local lookup files of the table go with it (other processes' expire by retention).
    drop_writer_lookup_files(table_path)
    drop_lookup_caches(table_path)
    file_io.delete(table_path, recursive=True)
    for root in roots:
        if _holds(root, table_path):
            _LOG.warning("Not deleting external path %r of dropped table %s: the table directory lies under it",
                         root, table_path)
            continue
        local = scheme_of(root) in ("", "file") and scheme_of(table_path) in ("", "file")
        root_io = file_io if local or scheme_of(root) == scheme_of(table_path) else file_io_for(root)
        root_io.delete(root, recursive=True)


def _holds(root: str, path: str) -> bool:
    """Whether ``path`` is ``root`` or lies under it (spellings with and without ``file:`` compare equal)."""
    parts = path.rstrip("/").split("/")
    return any(same_location(root, "/".join(parts[:i]) or "/") for i in range(len(parts), 0, -1))
