"""Scan planning with file indexes: after stats pruning, ask each data file's index about the predicate.

A file the index rules out (SKIP) is dropped from the plan; for bitmap / BSI answers (ROWS) the split carries
the selected row positions, and the reader decodes only the row groups holding them. The predicate still runs
on every row read, so an index never changes what a read returns, only how much is read.

* The index was built with the names and types of the schema the file was written with: the predicate is
  mapped by field id onto that schema, and leaves on renamed-and-retyped or added columns are relaxed away
  (``pick_fields``), which keeps every matching row.
* An index that cannot be read (corrupt bytes, a missing sidecar) keeps the file whole and logs a warning
  naming it; unknown index types and container versions are ignored (phase 1's container does that).
* Primary-key tables use their indexes only with deletion vectors (Java: ``fileIndexReadEnabled &&
  deletionVectorsEnabled``): without them, a file's rows may be superseded by rows of other files.

Paimon: operation.AppendOnlyFileStoreScan#testFileIndex, KeyValueFileStoreScan#filterByFileIndex,
io.FileIndexEvaluator (row selection in RawFileSplitRead)
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields

from pyroaring import FrozenBitMap

from laketide.exceptions import FileIndexCorruptError
from laketide.expr import Predicate
from laketide.expr.predicate import pick_fields, rename_fields
from laketide.fs import FileIO
from laketide.index.file_index import (
    FileIndexContainer,
    FileIndexEvaluation,
    FileIndexResult,
    ResultKind,
    evaluate_file_index,
)
from laketide.meta.manifest import ManifestEntry
from laketide.meta.paths import FileStorePathFactory
from laketide.schema.schema_manager import SchemaManager
from laketide.schema.table_schema import TableSchema
from laketide.types import DataType

__all__ = ["FileIndexFilter", "FileIndexReport", "FileIndexUsage"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexUsage:
    """What the indexes said about one data file that has any."""

    file_name: str
    row_count: int
    where: str  # "embedded" or "sidecar"
    outcome: str  # "skipped", "rows" (some rows selected) or "kept" (read whole)
    index_types: tuple[str, ...] = ()  # the index types that decided (skipped by / selected by)
    rows_selected: int | None = None  # for "rows"
    error: str | None = None  # the index could not be read: the file is read whole


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexReport:
    """How file indexes shaped one scan plan (``TableScan.explain()``).

    ``files_planned`` counts files after partition / bucket / stats pruning, before the indexes;
    ``files_skipped`` those the indexes then ruled out, ``skipped_by`` per index type (a file may count for
    several); ``rows_selected`` / ``rows_in_selected_files`` cover files where bitmap or BSI picked rows.
    """

    enabled: bool
    # Kept as the expression and rendered on demand: a lookup's IN list of 1000 keys takes milliseconds to print,
    # and most scans never ask for their report.
    filter: Predicate | None = field(default=None, repr=False)
    files_planned: int = 0
    files_with_index: int = 0
    files_skipped: int = 0
    skipped_by: dict[str, int] = field(default_factory=dict)
    files_with_row_selection: int = 0
    rows_selected: int = 0
    rows_in_selected_files: int = 0
    rows_skipped: int = 0  # rows of skipped files plus rows left out of selected files
    corrupt_indexes: tuple[str, ...] = ()
    files: tuple[FileIndexUsage, ...] = ()

    @property
    def predicate(self) -> str | None:
        """The scan's predicate as text (None: no filter)."""
        return None if self.filter is None else str(self.filter)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"enabled": self.enabled, "predicate": self.predicate}
        out.update((f.name, getattr(self, f.name)) for f in fields(self) if f.name not in ("enabled", "filter"))
        out["skipped_by"] = dict(self.skipped_by)
        out["files"] = tuple(asdict(u) for u in self.files)
        return out


@dataclass(frozen=True, slots=True)
class FileIndexPlan:
    """The entries to read, the row selection of some of them (by file name) and the report."""

    entries: list[ManifestEntry]
    selections: dict[str, FrozenBitMap]
    report: FileIndexReport


class FileIndexFilter:
    """Evaluates ``predicate`` (named as in ``schema``, the scan's schema) against the files' indexes."""

    def __init__(
        self,
        *,
        file_io: FileIO,
        schema_manager: SchemaManager,
        schema: TableSchema,
        path_factory: FileStorePathFactory,
        predicate: Predicate | None,
        enabled: bool,
    ) -> None:
        self.file_io = file_io
        self.schema_manager = schema_manager
        self.schema = schema
        self.path_factory = path_factory
        self.predicate = predicate
        self.enabled = enabled and predicate is not None
        self._per_schema: dict[int, tuple[Predicate | None, dict[str, DataType]]] = {}

    def _file_predicate(self, schema_id: int) -> tuple[Predicate | None, dict[str, DataType]]:
        """The predicate in the names of schema ``schema_id`` (only leaves on unchanged columns), its types."""
        cached = self._per_schema.get(schema_id)
        if cached is not None:
            return cached
        assert self.predicate is not None
        file_schema = self.schema if schema_id == self.schema.id else self.schema_manager.schema(schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        mapping: dict[str, str] = {}
        for f in self.schema.fields:
            old = by_id.get(f.id)
            if old is not None and old.type.copy(nullable=True) == f.type.copy(nullable=True):
                mapping[f.name] = old.name
        picked = pick_fields(self.predicate, set(mapping))
        renamed = None if picked is None else rename_fields(picked, mapping)
        out = (renamed, {f.name: f.type for f in file_schema.fields})
        self._per_schema[schema_id] = out
        return out

    def plan(self, entries: Sequence[ManifestEntry]) -> FileIndexPlan:
        if not self.enabled:
            report = FileIndexReport(enabled=False, filter=self.predicate, files_planned=len(entries))
            return FileIndexPlan(list(entries), {}, report)
        kept: list[ManifestEntry] = []
        selections: dict[str, FrozenBitMap] = {}
        usages: list[FileIndexUsage] = []
        skipped_by: dict[str, int] = {}
        corrupt: list[str] = []
        skipped = rows_skipped = with_rows = rows_selected = rows_in_selected = 0
        for e in entries:
            f = e.file
            if f.embedded_index is None and not any(x.endswith(".index") for x in f.extra_files):
                kept.append(e)
                continue
            where = "embedded" if f.embedded_index is not None else "sidecar"
            try:
                evaluation = self._evaluate(e)
            except (FileIndexCorruptError, OSError, ValueError, struct.error) as err:
                # An index only ever saves work: one that cannot be read costs a full read, never a failure.
                named = getattr(err, "path", None) or f"the index of {f.file_name}"
                _LOG.warning("Ignoring corrupt file index %s of data file %s (%s); reading the file whole",
                             named, f.file_name, err)
                corrupt.append(str(named))
                usages.append(FileIndexUsage(file_name=f.file_name, row_count=f.row_count, where=where,
                                             outcome="kept", error=str(err)))
                kept.append(e)
                continue
            result = evaluation.result
            if result.kind is ResultKind.SKIP:
                skipped += 1
                rows_skipped += f.row_count
                by = evaluation.skipped_by()
                for t in by:
                    skipped_by[t] = skipped_by.get(t, 0) + 1
                usages.append(FileIndexUsage(file_name=f.file_name, row_count=f.row_count, where=where,
                                             outcome="skipped", index_types=by))
                continue
            kept.append(e)
            if result.kind is ResultKind.ROWS and result.rows is not None and len(result.rows) < f.row_count:
                n = len(result.rows)
                selections[f.file_name] = result.rows
                with_rows += 1
                rows_selected += n
                rows_in_selected += f.row_count
                rows_skipped += f.row_count - n
                usages.append(FileIndexUsage(file_name=f.file_name, row_count=f.row_count, where=where,
                                             outcome="rows", index_types=evaluation.selected_by(), rows_selected=n))
            else:
                usages.append(FileIndexUsage(file_name=f.file_name, row_count=f.row_count, where=where,
                                             outcome="kept"))
        report = FileIndexReport(
            enabled=True, filter=self.predicate, files_planned=len(entries), files_with_index=len(usages),
            files_skipped=skipped, skipped_by=skipped_by, files_with_row_selection=with_rows,
            rows_selected=rows_selected, rows_in_selected_files=rows_in_selected, rows_skipped=rows_skipped,
            corrupt_indexes=tuple(corrupt), files=tuple(usages),
        )
        return FileIndexPlan(kept, selections, report)

    def _evaluate(self, e: ManifestEntry) -> FileIndexEvaluation:
        f = e.file
        predicate, fields = self._file_predicate(f.schema_id)
        if predicate is None:
            return FileIndexEvaluation(result=FileIndexResult.remain())
        if f.embedded_index is not None:
            container = FileIndexContainer(f.embedded_index, path=f"{f.file_name} (embedded index)")
            return evaluate_file_index(container, predicate, fields=fields)
        name = next(x for x in f.extra_files if x.endswith(".index"))
        path = self.path_factory.extra_file_path(e.partition, e.bucket, f, name)
        try:
            size = self.file_io.file_size(path)
            stream = self.file_io.open_input(path)
        except OSError as err:
            raise FileIndexCorruptError(f"Cannot open file index {path}: {err}", path=path) from err
        with stream:

            def read(offset: int, length: int) -> bytes:
                stream.seek(offset)
                return stream.read(length)

            container = FileIndexContainer(read, path=path, size=size)
            evaluation = evaluate_file_index(container, predicate, fields=fields)
        return evaluation


