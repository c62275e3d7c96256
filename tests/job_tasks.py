"""One Spark task attempt's write, without Spark (laketide.spark.job_files): shared by the tests of the protocol."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def task_attempt(table: Any, job: Any, rows: pa.Table, inner: Any = None) -> tuple[str, list[Any]]:
    """What laketide.spark.writer._write_task does: write ``rows`` through the job's TaskFiles (over ``inner``, by
    default the table's FileIO); on any failure delete the attempt's files. Returns (attempt, commit messages)."""
    files = job.task_files(inner or table.file_io, table.name)
    w = table.with_file_io(files).new_write()
    try:
        w.write(rows)
        messages = w.prepare_commit()
    except BaseException:
        w.abort()
        files.discard()
        raise
    finally:
        w.close()
    assert any(m.new_files for m in messages)
    return files.attempt, messages
