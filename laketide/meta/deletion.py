"""The one door every maintenance delete of a table goes through (expiration, orphan cleanup, rollback, abort).

Paths to delete are mostly computed from metadata: a manifest's file name, a snapshot's changelog manifest list,
a data file's external path. Metadata can be damaged, hand-edited or written by a buggy tool, and a name such as
``../../x`` or an external path of another table would make a cleanup delete a file it does not own. So a path
is deleted only when it is a plain path (no ``..`` segment) under the table's directory or under one of the
roots configured in ``data-file.external-paths``; anything else is skipped with a warning that names it.

Paimon: utils.FileStorePathFactory (where a table's files live), operation.FileDeletionBase
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Iterable

from laketide.exceptions import FileIOError
from laketide.fs import FileIO

__all__ = ["EXTERNAL_PATHS_KEY", "TableFileDeleter", "same_location"]

_LOG = logging.getLogger(__name__)

# Java's CoreOptions.DATA_FILE_EXTERNAL_PATHS: comma-separated roots data files may live under.
EXTERNAL_PATHS_KEY = "data-file.external-paths"

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://([^/]*)(.*)$")


def _canonical(path: str, *, root: bool = False) -> tuple[str, str] | None:
    """(scheme + authority, absolute posix path) of ``path``; None when it is not a plain absolute path.

    ``file:`` spellings of local paths compare equal to the bare path; a ``..`` segment makes the path suspect
    whatever it resolves to (it would let a name from metadata step into a sibling directory of the table).
    """
    if path.startswith("file://"):
        path = path[len("file://"):] or "/"
    elif path.startswith("file:"):
        path = path[len("file:"):]
    m = _URI.match(path)
    prefix, rest = (f"{m.group(1).lower()}://{m.group(2)}", m.group(3) or "/") if m else ("", path)
    if "\\" in rest or "\x00" in rest:
        return None
    if not rest.startswith("/"):
        if prefix:
            return None
        rest = f"{os.getcwd()}/{rest}"  # a relative local path, as the local FileIO resolves it
    segments = (rest.rstrip("/") or "/").split("/") if root else rest.split("/")
    if ".." in segments or "." in segments or (not root and not segments[-1]):
        return None  # a ".." can step into a sibling of the table; an empty last segment names a directory
    return prefix, posixpath.normpath(rest)


def same_location(a: str, b: str) -> bool:
    """Whether two spellings of a directory (``file:`` or not, trailing slashes) name the same place."""
    if a.rstrip("/") == b.rstrip("/"):
        return True
    ca, cb = _canonical(a, root=True), _canonical(b, root=True)
    return ca is not None and ca == cb


def _under(path: tuple[str, str], root: tuple[str, str]) -> bool:
    if path[0] != root[0]:
        return False
    base = root[1].rstrip("/") or "/"
    return path[1] != base and path[1].startswith(base if base.endswith("/") else base + "/")


class TableFileDeleter:
    """Deletes files of one table, but only under its directory (or its configured external roots)."""

    def __init__(
        self, file_io: FileIO, table_path: str, *, table_name: str | None = None, external_roots: Iterable[str] = ()
    ) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name or table_path
        roots = [_canonical(table_path, root=True)]
        roots += [_canonical(r.strip(), root=True) for r in external_roots if r.strip()]
        self._roots = [r for r in roots if r is not None]
        self.skipped: list[str] = []  # refused paths, for callers that report them

    @classmethod
    def for_options(
        cls, file_io: FileIO, table_path: str, options: dict[str, str], *, table_name: str | None = None
    ) -> TableFileDeleter:
        raw = options.get(EXTERNAL_PATHS_KEY) or ""
        return cls(file_io, table_path, table_name=table_name, external_roots=raw.split(","))

    def allows(self, path: str) -> bool:
        """Whether ``path`` is a file this table owns (under its directory or an external root)."""
        canon = _canonical(path)
        return canon is not None and any(_under(canon, root) for root in self._roots)

    def delete(self, path: str) -> bool:
        """Delete ``path`` if the table owns it (missing is fine); True if it was removed.

        Failures are swallowed: a cleanup must not mask the error it may be handling, and whatever stays behind
        is an orphan that ``remove_orphan_files`` gets later.
        """
        if not self.allows(path):
            self.skipped.append(path)
            _LOG.warning(
                "Not deleting %r: it is outside table %s (%s) and its configured '%s'; a path read from the "
                "table's metadata points elsewhere (damaged or foreign metadata?)",
                path, self.table_name, self.table_path, EXTERNAL_PATHS_KEY,
            )
            return False
        try:
            return self.file_io.delete(path)  # never recursive: only files are the table's to delete
        except FileIOError:
            return False

    def delete_all(self, paths: Iterable[str]) -> int:
        """Delete each of ``paths`` (duplicates once); returns how many were removed."""
        return sum(1 for p in dict.fromkeys(paths) if self.delete(p))
