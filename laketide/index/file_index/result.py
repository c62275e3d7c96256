"""What a file index says about a predicate: skip the file, keep it whole, or keep only some rows.

Paimon: org.apache.paimon.fileindex.FileIndexResult (REMAIN / SKIP), fileindex.bitmap.BitmapIndexResult.
Unlike Java's, a row selection here says whether it is *exact* (exactly the rows where the predicate is
true) or only a superset, so callers know whether the rows still need filtering.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from pyroaring import BitMap, FrozenBitMap

__all__ = ["FileIndexResult", "ResultKind"]


class ResultKind(enum.Enum):
    SKIP = "skip"  # no row of the file can match
    REMAIN = "remain"  # every row may match (the index cannot tell)
    ROWS = "rows"  # only these row positions may match


@dataclass(frozen=True, slots=True)
class FileIndexResult:
    """SKIP, REMAIN or a row selection.

    ``rows`` (ROWS only) holds 0-based row positions of the data file; ``exact`` says the selection (or the
    SKIP) is exactly the set of rows the predicate holds for, not a superset. A REMAIN is never exact.
    """

    kind: ResultKind
    rows: FrozenBitMap | None = None
    exact: bool = False

    def __post_init__(self) -> None:
        if (self.kind is ResultKind.ROWS) != (self.rows is not None):
            raise ValueError("a ROWS result carries rows, SKIP and REMAIN do not")
        if self.kind is ResultKind.REMAIN and self.exact:
            raise ValueError("a REMAIN result is never exact")

    @staticmethod
    def skip() -> FileIndexResult:
        return _SKIP

    @staticmethod
    def remain() -> FileIndexResult:
        return _REMAIN

    @staticmethod
    def of_rows(rows: BitMap | FrozenBitMap, *, exact: bool) -> FileIndexResult:
        """A selection; an empty one is a SKIP (no row can match, so nothing to read)."""
        if not rows:
            return _SKIP
        frozen = rows if isinstance(rows, FrozenBitMap) else FrozenBitMap(rows)
        return FileIndexResult(ResultKind.ROWS, frozen, exact)

    @property
    def skipped(self) -> bool:
        return self.kind is ResultKind.SKIP

    @property
    def remains(self) -> bool:
        """Whether the file must be read (Java's ``remain()``)."""
        return self.kind is not ResultKind.SKIP

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return all_of((self, other))

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return any_of((self, other))

    def __repr__(self) -> str:
        if self.kind is ResultKind.ROWS:
            assert self.rows is not None
            shown = list(self.rows)[:8]
            more = ", ..." if len(self.rows) > 8 else ""
            return f"FileIndexResult(ROWS {shown}{more}, cardinality={len(self.rows)}, exact={self.exact})"
        return f"FileIndexResult({self.kind.name})"


_SKIP = FileIndexResult(ResultKind.SKIP, None, True)
_REMAIN = FileIndexResult(ResultKind.REMAIN, None, False)


def all_of(results: Iterable[FileIndexResult]) -> FileIndexResult:
    """AND: a SKIP wins; selections intersect; a REMAIN adds nothing but makes the result inexact."""
    rows: FrozenBitMap | None = None
    exact = True
    for r in results:
        if r.kind is ResultKind.SKIP:
            return _SKIP
        if r.kind is ResultKind.REMAIN:
            exact = False
            continue
        assert r.rows is not None
        rows = r.rows if rows is None else rows & r.rows
        exact = exact and r.exact
    if rows is None:
        return _REMAIN
    return FileIndexResult.of_rows(rows, exact=exact)


def any_of(results: Iterable[FileIndexResult]) -> FileIndexResult:
    """OR: a REMAIN wins; selections unite; a SKIP adds nothing."""
    parts: list[FrozenBitMap] = []
    exact = True
    for r in results:
        if r.kind is ResultKind.REMAIN:
            return _REMAIN
        if r.kind is ResultKind.ROWS:
            assert r.rows is not None
            parts.append(r.rows)
            exact = exact and r.exact
    if not parts:
        return _SKIP
    return FileIndexResult.of_rows(FrozenBitMap.union(*parts) if len(parts) > 1 else parts[0], exact=exact)
