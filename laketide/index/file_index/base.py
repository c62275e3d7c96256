"""The interface every column index reader implements, and shared helpers for leaf evaluation."""

from __future__ import annotations

from typing import Protocol

from laketide.expr.predicate import Leaf, Op
from laketide.index.file_index.keys import KeyLiteral
from laketide.index.file_index.result import FileIndexResult

__all__ = ["NO_KEY", "ColumnIndexReader", "EmptyIndexReader", "RangeStep", "equality_key", "range_step"]

NO_KEY: object = object()
"""Stands for the key of a literal no value of the column can equal (``int_col = 1.5``)."""


class ColumnIndexReader(Protocol):
    """One index of one column of one data file (bloom filter, bitmap, BSI, ...)."""

    @property
    def index_type(self) -> str: ...

    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        """What the index says about ``leaf`` (a predicate on this column); REMAIN when it cannot tell."""
        ...


class EmptyIndexReader:
    """An index written for no rows at all (Java's EMPTY_INDEX_FLAG entry): no value can match.

    Paimon: org.apache.paimon.fileindex.empty.EmptyFileIndexReader (same answers).
    """

    def __init__(self, index_type: str) -> None:
        self._index_type = index_type

    @property
    def index_type(self) -> str:
        return self._index_type

    def evaluate(self, leaf: Leaf) -> FileIndexResult:
        if leaf.op in (Op.NE, Op.NOT_IN, Op.IS_NULL):
            return FileIndexResult.remain()
        return FileIndexResult.skip()


def equality_key(lit: KeyLiteral, *, lossy: bool) -> tuple[object, bool]:
    """The key to look up for ``value = literal`` and whether its rows are exactly the matches.

    With lossy keys (values floored to a key) the literal's floor finds a superset even when the literal is
    not a key itself; otherwise a literal between keys equals no value: :data:`NO_KEY`, exactly no row.
    """
    if lit.exact:
        return lit.key, not lossy
    if lossy:
        return lit.key, False
    return NO_KEY, True


class RangeStep:
    """A comparison rewritten onto keys: ``key <op> bound``, and whether that is exactly the predicate."""

    __slots__ = ("op", "bound", "exact", "no_key")

    def __init__(self, op: Op, bound: int, exact: bool, *, no_key: bool = False) -> None:
        self.op = op
        self.bound = bound
        self.exact = exact
        self.no_key = no_key  # = / != against a literal no value equals (no row / every non-null row)


def range_step(op: Op, lit: KeyLiteral, *, lossy: bool) -> RangeStep | None:
    """Rewrite ``value <op> literal`` onto ordered integer keys ``key = floor(value)`` (in key units).

    ``lit.key`` is the floor of the literal and ``lit.exact`` whether the literal is a key itself; ``lossy``
    says distinct values can share a key (nanosecond timestamps keyed by micros). The rewritten comparison
    keeps every matching row; ``exact`` says it keeps no other. None: no rewrite keeps every row (``!=``
    against a lossy key or an in-between literal).
    """
    k = lit.key
    assert isinstance(k, int)
    if op in (Op.EQ, Op.NE):
        key, exact = equality_key(lit, lossy=lossy)
        if op is Op.NE and not exact:
            return None  # rows sharing the key may still differ from the literal
        return RangeStep(op, k, exact, no_key=key is NO_KEY)
    if lit.exact:
        if not lossy:
            return RangeStep(op, k, True)
        # floor(v) < k  <=>  v < k and  floor(v) >= k  <=>  v >= k  when k is a key; <= and > only narrow.
        match op:
            case Op.LT:
                return RangeStep(Op.LT, k, True)
            case Op.GE:
                return RangeStep(Op.GE, k, True)
            case Op.LE:
                return RangeStep(Op.LE, k, False)
            case _:
                return RangeStep(Op.GE, k, False)
    # The literal lies strictly between keys k and k + 1.
    match op:
        case Op.LT | Op.LE:
            return RangeStep(Op.LE, k, not lossy)
        case _:
            return RangeStep(Op.GT, k, not lossy) if not lossy else RangeStep(Op.GE, k, False)
