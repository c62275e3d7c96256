"""Storage access: one small FileIO interface, backends chosen by URI scheme.

``file_io_for("/wh")`` / ``file_io_for("file:///wh")`` give LocalFileIO; every other scheme (s3://, gs://,
memory://, ...) goes through fsspec, imported only then.
"""

from __future__ import annotations

import re
from typing import Any

from laketide.fs.file_io import FileIO, FileStatus, join_path
from laketide.fs.local import LocalFileIO

__all__ = ["FileIO", "FileStatus", "FsspecFileIO", "LocalFileIO", "file_io_for", "join_path", "scheme_of"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def scheme_of(path: str) -> str:
    """The lower-case URI scheme of ``path``; "" for a plain path (including Windows "C:\\...")."""
    match = _SCHEME.match(path)
    if match is None or len(match.group(1)) == 1:
        return ""
    return match.group(1).lower()


def file_io_for(path: str, *, allow_unsafe_publish: bool = False, **storage_options: Any) -> FileIO:
    """A FileIO that can reach ``path``; ``storage_options`` go to the fsspec filesystem (credentials, ...).

    ``allow_unsafe_publish`` lets backends without an atomic write-if-absent publish with check-then-write
    (see laketide.fs.fsspec_io).
    """
    scheme = scheme_of(path)
    if scheme in ("", "file"):
        return LocalFileIO()
    import fsspec

    from laketide.fs.fsspec_io import FsspecFileIO

    return FsspecFileIO(fsspec.filesystem(scheme, **storage_options), allow_unsafe_publish=allow_unsafe_publish)


def __getattr__(name: str) -> Any:
    # FsspecFileIO lives behind a lazy attribute so that importing laketide.fs never imports fsspec.
    if name == "FsspecFileIO":
        from laketide.fs.fsspec_io import FsspecFileIO

        return FsspecFileIO
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
