"""``laketide write``: import Parquet, CSV and JSON files into a table as one commit."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from laketide.cli.progress import ImportProgress, import_progress
from laketide.exceptions import CommitStateUnknownError, InvalidOptionError, LaketideError
from laketide.table.table import Table
from laketide.write.table_write import TableWrite

__all__ = ["ImportResult", "import_files"]

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
            ".ndjson": "json"}


@dataclass(frozen=True, slots=True)
class ImportResult:
    snapshot_id: int | None
    files: int
    rows: int
    bytes: int


def _format_of(path: str, forced: str | None) -> str:
    if forced:
        return forced
    ext = os.path.splitext(path)[1].lower()
    if ext not in _FORMATS:
        raise InvalidOptionError(f"write: cannot tell the format of {path} from its extension; pass --format")
    return _FORMATS[ext]


def _batches(path: str, fmt: str, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The file's rows in batches; CSV and JSON columns are read with the table's types."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        yield from pq.ParquetFile(path).iter_batches(batch_size=64 * 1024)
    elif fmt == "csv":
        import pyarrow.csv as pcsv

        reader = pcsv.open_csv(path, convert_options=pcsv.ConvertOptions(
            column_types={f.name: f.type for f in schema}))
        yield from reader
    else:
        import pyarrow.json as pjson

        table = pjson.read_json(path)  # JSON lines; conform() casts to the table's types
        yield from table.to_batches()


def import_files(
    table: Table, paths: Sequence[str], *, fmt: str | None = None, overwrite: bool = False
) -> ImportResult:
    """Write every file through one writer and commit once: all files land, or none."""
    for p in paths:
        if not os.path.isfile(p):
            raise InvalidOptionError(f"write: input file {p} does not exist")
    formats = [_format_of(p, fmt) for p in paths]
    sizes = [os.path.getsize(p) for p in paths]
    schema = table.arrow_schema
    rows = 0
    w = table.new_write()
    messages = None
    try:
        with import_progress(len(paths), sum(sizes)) as bar:
            for path, f, size in zip(paths, formats, sizes):
                rows += _write_file(w, path, f, schema, bar)
                bar.advance(files=1, nbytes=size)
        messages = w.prepare_commit()
        sid = table.commit(messages, overwrite=overwrite)
    except CommitStateUnknownError:
        raise  # the snapshot may hold the files: only orphan cleanup may remove them
    except BaseException:
        w.abort()
        if messages is not None:
            table.abort(messages)
        raise
    finally:
        w.close()
    return ImportResult(snapshot_id=sid, files=len(paths), rows=rows, bytes=sum(sizes))


def _write_file(w: TableWrite, path: str, fmt: str, schema: pa.Schema, bar: ImportProgress) -> int:
    rows = 0
    try:
        for batch in _batches(path, fmt, schema):
            if batch.num_rows:
                w.write(pa.Table.from_batches([batch]))
                rows += batch.num_rows
                bar.advance(rows=batch.num_rows)
    except LaketideError:
        raise
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as e:
        raise InvalidOptionError(f"write: cannot read {path} as {fmt}: {str(e).splitlines()[0]}") from None
    return rows
