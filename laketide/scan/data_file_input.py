"""Opening a data file for the format readers.

Parquet files on local storage are opened as native Arrow files: pyarrow then reads them with ``pread`` outside
the GIL, where a Python file object makes every read of the decoder take the GIL and copy through a ``bytes``
object (~10% of the CPU of a full read). Everything else (ORC / Avro, fsspec stores, the failure-injecting test
file system, a LocalFileIO subclass with its own ``open_input``) goes through ``FileIO.open_input`` as before.
"""

from __future__ import annotations

from typing import BinaryIO, cast

import pyarrow as pa
import pyarrow.fs

from laketide.fs import FileIO
from laketide.fs.file_io import translate_errors
from laketide.fs.local import LocalFileIO

__all__ = ["open_data_file"]


class _LocalDataFile(pa.OSFile):  # type: ignore[misc]  # pyarrow has no type stubs
    """A native local file that keeps its path as ``name``: the format readers name the file in their errors."""

    def __init__(self, path: str) -> None:  # pa.OSFile's __cinit__ has opened ``path`` already
        self.name = path


def open_data_file(file_io: FileIO, path: str, *, format_name: str) -> BinaryIO:
    """``path`` opened for reading: a native file for local Parquet, ``file_io.open_input`` otherwise.

    Failures raise what ``open_input`` raises (NotFoundError for a missing file, FileIOError otherwise), naming
    ``path``.
    """
    if format_name == "parquet" and _plain_local(file_io):
        with translate_errors("open", path):
            return cast(BinaryIO, _LocalDataFile(file_io.pyarrow_path(path)))
    return file_io.open_input(path)


def _plain_local(file_io: FileIO) -> bool:
    # A subclass that overrides open_input (to count, throttle or fail reads) must see every read.
    return type(file_io).open_input is LocalFileIO.open_input and isinstance(
        file_io.pyarrow_filesystem(), pyarrow.fs.LocalFileSystem)
