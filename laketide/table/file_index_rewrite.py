"""``Table.rewrite_file_index``: give existing data files the indexes the table's options ask for now.

After ``file-index.*`` options change, files written before carry the old indexes (or none). This rebuilds each
live file's index container from its rows, as the current options say (indexes no longer configured are
dropped), and commits one COMPACT snapshot that replaces each changed file's manifest entry by one with the new
embedded index or sidecar. Data files are never rewritten. A new sidecar gets a new name
(``<data file>-1.index``, ``-2`` ...), so readers of older snapshots keep theirs until expiration removes it.

Columns are matched to the file by field id (a file written before a rename is indexed under its own column
names, as its readers expect); a column the file does not have, or whose type in the file the index cannot
take, is left out for that file.

Paimon: index.FileIndexProcessor, spark procedure.RewriteFileIndexProcedure (CompactIncrement before / after)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from laketide.index.file_index.builder import FileIndexBuilder
from laketide.index.file_index.spec import ColumnIndexSpec, FileIndexSpec, supports
from laketide.index.file_index.writer import file_index_spec
from laketide.meta.commit_message import CommitMessage
from laketide.meta.manifest import DataFileMeta, ManifestEntry
from laketide.meta.paths import FILE_INDEX_SUFFIX, FileStorePathFactory
from laketide.schema.table_schema import TableSchema

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["rewrite_file_index"]

_LOG = logging.getLogger(__name__)


def _spec_for_file(spec: FileIndexSpec, current: TableSchema, file_schema: TableSchema) -> FileIndexSpec:
    """``spec`` (named as in the current schema) in the names of the file's schema, minus what it cannot hold."""
    if file_schema.id == current.id:
        return spec
    by_id = {f.id: f for f in file_schema.fields}
    out: list[ColumnIndexSpec] = []
    for s in spec.indexes:
        old = by_id.get(current.field(s.column).id)
        if old is None or not supports(s.index_type, old.type):
            continue
        out.append(replace(s, column=old.name))
    return replace(spec, indexes=tuple(out))


def _new_sidecar_name(old: str | None, data_file_name: str) -> str:
    """Java's DataFilePathFactory#createNewFileIndexFilePath: ``x.parquet.index`` -> ``x.parquet-1.index``,
    ``x.parquet-1.index`` -> ``x.parquet-2.index``; a file without a sidecar gets ``x.parquet.index``."""
    if old is None:
        return FileStorePathFactory.file_index_name(data_file_name)
    stem = old[: -len(FILE_INDEX_SUFFIX)]
    head, dash, tail = stem.rpartition("-")
    if dash and tail.isdigit() and head == data_file_name:
        return f"{head}-{int(tail) + 1}{FILE_INDEX_SUFFIX}"
    return f"{stem}-1{FILE_INDEX_SUFFIX}"


class _Rewriter:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.store = table.store
        self.schema = table.schema
        self.spec = file_index_spec(self.schema, table_name=table.name)
        self.paths = self.store.path_factory
        self.written: list[str] = []

    def rewrite(self, e: ManifestEntry) -> DataFileMeta | None:
        """The entry's file with its new index; None when nothing changes."""
        f = e.file
        file_schema = self.schema if f.schema_id == self.schema.id else self.table.schema_manager.schema(f.schema_id)
        spec = _spec_for_file(self.spec, self.schema, file_schema)
        old_sidecars = [x for x in f.extra_files if x.endswith(FILE_INDEX_SUFFIX)]
        others = tuple(x for x in f.extra_files if not x.endswith(FILE_INDEX_SUFFIX))
        container = self._build(e, spec, file_schema) if not spec.empty else None
        if container is None:
            new = replace(f, extra_files=others, embedded_index=None)
        elif spec.embed(len(container)):
            new = replace(f, extra_files=others, embedded_index=container)
        else:
            old = old_sidecars[0] if old_sidecars else None
            if old is not None and self._read(e, old) == container:
                new = replace(f, extra_files=(*others, old), embedded_index=None)
            else:
                name = _new_sidecar_name(old, f.file_name)
                path = self.paths.extra_file_path(e.partition, e.bucket, f, name)
                self.store.file_io.write_bytes(path, container, overwrite=False)
                self.written.append(path)
                new = replace(f, extra_files=(*others, name), embedded_index=None)
        if new.extra_files == f.extra_files and new.embedded_index == f.embedded_index:
            return None
        return new

    def _build(self, e: ManifestEntry, spec: FileIndexSpec, file_schema: TableSchema) -> bytes | None:
        f = e.file
        fields = {fld.name: fld.type for fld in file_schema.fields}
        builder = FileIndexBuilder(spec, fields=fields)
        reader = self.store.new_read(read_schema=file_schema, columns=list(spec.columns()))
        path = self.paths.data_file_paths(e.partition, e.bucket, f)[0]
        for batch in reader.read_file(f, path):  # every row of the file, deleted ones too: positions matter
            builder.write(batch)
        return builder.finish()

    def _read(self, e: ManifestEntry, name: str) -> bytes | None:
        try:
            return self.store.file_io.read_bytes(self.paths.extra_file_path(e.partition, e.bucket, e.file, name))
        except OSError:
            return None

    def discard(self) -> None:
        for p in self.written:
            self.store.file_io.delete_quietly(p)


def rewrite_file_index(
    table: Table, *, partitions: Sequence[Mapping[str, object]] | None = None, commit_user: str | None = None
) -> int | None:
    """Rebuild the file indexes of the live files (of ``partitions``, default all) as the options say now.

    Returns the COMPACT snapshot id, None when no file changed. On a failed commit the new sidecars are
    deleted and nothing changed.
    """
    from laketide.table.compact import partition_predicate

    latest = table.latest_snapshot()
    if latest is None:
        return None
    rewriter = _Rewriter(table)
    scan = table.store.new_scan()
    entries = scan.plan(latest, predicate=partition_predicate(table, partitions, None))
    groups: dict[tuple[bytes, int], tuple[int, list[DataFileMeta], list[DataFileMeta]]] = {}
    try:
        for e in entries:
            new = rewriter.rewrite(e)
            if new is None:
                continue
            _, before, after = groups.setdefault((e.partition, e.bucket), (e.total_buckets, [], []))
            before.append(e.file)
            after.append(new)
        messages = [
            CommitMessage(partition=part, bucket=bucket, total_buckets=total, compact_before=tuple(before),
                          compact_after=tuple(after))
            for (part, bucket), (total, before, after) in groups.items()
        ]
        if not messages:
            return None
        sid = table.commit(messages, commit_user=commit_user)
    except BaseException:
        rewriter.discard()
        raise
    _LOG.info("Table %s: rewrote the file indexes of %d files (snapshot %s)", table.name,
              sum(len(m.compact_after) for m in messages), sid)
    return sid
