"""Evaluate a predicate against one data file's indexes: skip the file, keep it, or select rows.

Leaves go to every index the container holds for their column, and the answers are ANDed (as Java's
FileIndexPredicate does); AND / OR combine as :mod:`laketide.index.file_index.result` says. NOT is pushed to
the leaves first (``NOT x = 1`` is ``x != 1``, De Morgan for AND / OR), which is exact under SQL's
three-valued logic for every operator an index answers; a NOT that cannot be pushed (over LIKE-style
functions) keeps every row. A bloom filter's "maybe" is never turned into a row set, so negating it cannot
drop rows.

Paimon: org.apache.paimon.fileindex.FileIndexPredicate, io.FileIndexEvaluator
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from laketide.expr.predicate import And, Leaf, Not, Or, Predicate, negate
from laketide.index.file_index.container import FileIndexContainer
from laketide.index.file_index.result import FileIndexResult, ResultKind, all_of, any_of
from laketide.types import DataType

__all__ = ["FileIndexEvaluation", "IndexUse", "evaluate_file_index", "push_not"]


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexUse:
    """What one index said about one leaf of the predicate."""

    column: str
    index_type: str
    predicate: str
    outcome: ResultKind
    rows: int | None = None  # selected rows, for a ROWS outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class FileIndexEvaluation:
    """The answer for one data file, and which index said what (for scan reports / explain)."""

    result: FileIndexResult
    uses: tuple[IndexUse, ...] = field(default=())

    @property
    def skipped(self) -> bool:
        return self.result.skipped

    def skipped_by(self) -> tuple[str, ...]:
        """Index types whose SKIP answers decided the file is skipped (empty when it is not)."""
        if not self.result.skipped:
            return ()
        return tuple(dict.fromkeys(u.index_type for u in self.uses if u.outcome is ResultKind.SKIP))

    def selected_by(self) -> tuple[str, ...]:
        """Index types that contributed row selections."""
        return tuple(dict.fromkeys(u.index_type for u in self.uses if u.outcome is ResultKind.ROWS))


def push_not(p: Predicate) -> Predicate:
    """``p`` with every NOT pushed down to the leaves; only NOT over a LIKE-style leaf remains."""
    if isinstance(p, Leaf):
        return p
    if isinstance(p, And):
        return And(tuple(push_not(c) for c in p.children))
    if isinstance(p, Or):
        return Or(tuple(push_not(c) for c in p.children))
    child = p.child
    if isinstance(child, Not):
        return push_not(child.child)
    if isinstance(child, Leaf):
        return negate(child)  # a flipped leaf, or Not(leaf) for the string functions
    return push_not(negate(child))


class _Evaluator:
    def __init__(self, container: FileIndexContainer, fields: Mapping[str, DataType]) -> None:
        self._container = container
        self._fields = fields
        self._indexed = set(container.columns())
        self.uses: list[IndexUse] = []

    def visit(self, p: Predicate) -> FileIndexResult:
        if isinstance(p, Leaf):
            return self.leaf(p)
        if isinstance(p, And):
            results = []
            for c in p.children:
                r = self.visit(c)
                if r.skipped:
                    return r  # no need to ask the other children (nor to read their indexes)
                results.append(r)
            return all_of(results)
        if isinstance(p, Or):
            return any_of([self.visit(c) for c in p.children])
        return FileIndexResult.remain()  # NOT over a function no index answers

    def leaf(self, leaf: Leaf) -> FileIndexResult:
        dt = self._fields.get(leaf.field)
        if dt is None or leaf.field not in self._indexed:
            return FileIndexResult.remain()
        results = []
        for reader in self._container.readers(leaf.field, dt):
            r = reader.evaluate(leaf)
            rows = len(r.rows) if r.rows is not None else None
            self.uses.append(
                IndexUse(column=leaf.field, index_type=reader.index_type, predicate=str(leaf), outcome=r.kind,
                         rows=rows)
            )
            results.append(r)
            if r.skipped:
                break
        return _same_leaf(results)


def _same_leaf(results: list[FileIndexResult]) -> FileIndexResult:
    """Several indexes' answers to one leaf: each is the truth or a superset of it, so they intersect, and
    one exact answer makes the intersection exact (unlike an AND of two leaves, where REMAIN is unknown)."""
    answers = [r for r in results if r.kind is not ResultKind.REMAIN]
    if not answers:
        return FileIndexResult.remain()
    combined = all_of(answers)
    if combined.kind is ResultKind.ROWS and not combined.exact and any(r.exact for r in answers):
        assert combined.rows is not None
        return FileIndexResult.of_rows(combined.rows, exact=True)
    return combined


def evaluate_file_index(
    container: FileIndexContainer, predicate: Predicate | None, *, fields: Mapping[str, DataType]
) -> FileIndexEvaluation:
    """What ``container`` (one data file's indexes) says about ``predicate``.

    ``fields`` maps the data file's column names to their types in the schema the file was written with
    (the index was built for those names and types). Columns without an index, unknown index types and
    operators an index cannot answer keep every row. Raises FileIndexCorruptError when an index the
    predicate needs cannot be decoded; callers then read the file without its index.
    """
    if predicate is None or not container.supported:
        return FileIndexEvaluation(result=FileIndexResult.remain())
    ev = _Evaluator(container, fields)
    result = ev.visit(push_not(predicate))
    return FileIndexEvaluation(result=result, uses=tuple(ev.uses))
