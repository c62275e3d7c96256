"""A SQL-like WHERE clause to a :data:`Predicate`.

Grammar (keywords case-insensitive, SQL precedence NOT > AND > OR)::

    expr       := and_expr (OR and_expr)*
    and_expr   := not_expr (AND not_expr)*
    not_expr   := NOT not_expr | '(' expr ')' | condition
    condition  := operand cmp operand                  -- column on either side
                | column [NOT] IN '(' literal, ... ')'
                | column IS [NOT] NULL
                | column [NOT] LIKE 'pattern'
                | column [NOT] BETWEEN literal AND literal
    literal    := integer | decimal | float | 'string' | X'hex' | TRUE | FALSE | NULL
                | DATE 'yyyy-mm-dd' | TIME 'hh:mm:ss' | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.f][+hh:mm]'

Paimon has no text parser (engines hand it predicates); this is laketide's user-facing front end
to org.apache.paimon.predicate.PredicateBuilder.
"""

from __future__ import annotations

import datetime as _dt
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa

from laketide.exceptions import PredicateError
from laketide.expr.arrow import coerce_literal
from laketide.expr.predicate import FLIPPED, And, Leaf, Not, Op, Predicate, and_, or_

__all__ = ["parse_where"]


class _Kind(enum.Enum):
    IDENT = "identifier"
    NUMBER = "number"
    STRING = "string"
    HEX = "binary literal"
    OP = "operator"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    KEYWORD = "keyword"
    END = "end of input"


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str  # identifiers unquoted, strings unescaped, keywords upper-cased
    pos: int


_KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN", "TRUE", "FALSE", "DATE", "TIME", "TIMESTAMP"}
)
_CMP_OPS: dict[str, Op] = {
    "=": Op.EQ,
    "==": Op.EQ,
    "!=": Op.NE,
    "<>": Op.NE,
    "<": Op.LT,
    "<=": Op.LE,
    ">": Op.GT,
    ">=": Op.GE,
}
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_OPERATOR = re.compile(r"==|!=|<>|<=|>=|=|<|>")


def _error(text: str, pos: int, message: str) -> PredicateError:
    caret = " " * pos + "^"
    return PredicateError(f"{message} at position {pos}\n  {text}\n  {caret}")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "(":
            tokens.append(_Token(_Kind.LPAREN, c, i))
            i += 1
        elif c == ")":
            tokens.append(_Token(_Kind.RPAREN, c, i))
            i += 1
        elif c == ",":
            tokens.append(_Token(_Kind.COMMA, c, i))
            i += 1
        elif c in "'`":
            body, end = _quoted(text, i, c)
            tokens.append(_Token(_Kind.STRING if c == "'" else _Kind.IDENT, body, i))
            i = end
        elif c in "xX" and i + 1 < n and text[i + 1] == "'":
            body, end = _quoted(text, i + 1, "'")
            tokens.append(_Token(_Kind.HEX, body, i))
            i = end
        elif m := _NUMBER.match(text, i):
            tokens.append(_Token(_Kind.NUMBER, m.group(), i))
            i = m.end()
        elif m := _IDENT.match(text, i):
            word = m.group()
            if word.upper() in _KEYWORDS:
                tokens.append(_Token(_Kind.KEYWORD, word.upper(), i))
            else:
                tokens.append(_Token(_Kind.IDENT, word, i))
            i = m.end()
        elif m := _OPERATOR.match(text, i):
            tokens.append(_Token(_Kind.OP, m.group(), i))
            i = m.end()
        elif c in "+-":
            tokens.append(_Token(_Kind.OP, c, i))
            i += 1
        else:
            raise _error(text, i, f"unexpected character {c!r}")
    tokens.append(_Token(_Kind.END, "", n))
    return tokens


def _quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """Body of the quoted token at `start` (doubled quotes are one quote) and the index after it."""
    parts: list[str] = []
    i = start + 1
    while True:
        j = text.find(quote, i)
        if j < 0:
            what = "string" if quote == "'" else "identifier"
            raise _error(text, start, f"unterminated quoted {what}")
        parts.append(text[i:j])
        if j + 1 < len(text) and text[j + 1] == quote:
            parts.append(quote)
            i = j + 2
            continue
        return "".join(parts), j + 1


@dataclass(frozen=True, slots=True)
class _Operand:
    """A column reference or a literal, with where it starts in the text."""

    pos: int
    column: str | None = None
    value: object = None


class _Parser:
    def __init__(self, text: str, field_types: Mapping[str, pa.DataType] | None) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.field_types = field_types

    # -- token helpers

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def advance(self) -> _Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def at_keyword(self, *words: str) -> bool:
        return self.tok.kind is _Kind.KEYWORD and self.tok.text in words

    def expect_keyword(self, word: str) -> _Token:
        if not self.at_keyword(word):
            raise self.fail(f"expected {word}")
        return self.advance()

    def expect(self, kind: _Kind) -> _Token:
        if self.tok.kind is not kind:
            raise self.fail(f"expected {kind.value}")
        return self.advance()

    def fail(self, message: str, pos: int | None = None) -> PredicateError:
        t = self.tok
        found = t.kind.value if t.kind is _Kind.END else f"{t.text!r}"
        if pos is None:
            message = f"{message}, found {found}"
        return _error(self.text, t.pos if pos is None else pos, message)

    # -- grammar

    def parse(self) -> Predicate:
        if self.tok.kind is _Kind.END:
            raise self.fail("empty filter expression")
        p = self.or_expr()
        if not self._at_end():  # a call: the parse moved self.tok, which mypy's narrowing does not know
            raise self.fail("expected AND, OR or end of input")
        return p

    def _at_end(self) -> bool:
        return self.tok.kind is _Kind.END

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while self.at_keyword("OR"):
            self.advance()
            parts.append(self.and_expr())
        return or_(*parts)

    def and_expr(self) -> Predicate:
        parts = [self.not_expr()]
        while self.at_keyword("AND"):
            self.advance()
            parts.append(self.not_expr())
        return and_(*parts)

    def not_expr(self) -> Predicate:
        if self.at_keyword("NOT"):
            self.advance()
            return Not(self.not_expr())
        if self.tok.kind is _Kind.LPAREN:
            self.advance()
            p = self.or_expr()
            self.expect(_Kind.RPAREN)
            return p
        return self.condition()

    def condition(self) -> Predicate:
        left = self.operand()
        t = self.tok
        if t.kind is _Kind.OP and t.text in _CMP_OPS:
            self.advance()
            return self.comparison(_CMP_OPS[t.text], left, self.operand(), t.pos)
        column = self.need_column(left)
        negated = False
        if self.at_keyword("IS"):
            self.advance()
            negated = self.at_keyword("NOT")
            if negated:
                self.advance()
            self.expect_keyword("NULL")
            return Leaf(Op.IS_NOT_NULL if negated else Op.IS_NULL, column)
        if self.at_keyword("NOT"):
            self.advance()
            negated = True
            if not self.at_keyword("IN", "LIKE", "BETWEEN"):
                raise self.fail("expected IN, LIKE or BETWEEN after NOT")
        if self.at_keyword("IN"):
            self.advance()
            values = self.literal_list(column)
            return Leaf(Op.NOT_IN if negated else Op.IN, column, tuple(values))
        if self.at_keyword("LIKE"):
            self.advance()
            pattern_tok = self.expect(_Kind.STRING)
            leaf = self.like(column, pattern_tok)
            return Not(leaf) if negated else leaf
        if self.at_keyword("BETWEEN"):
            self.advance()
            low = self.literal_for(column)
            self.expect_keyword("AND")
            high = self.literal_for(column)
            p = And((Leaf(Op.GE, column, (low,)), Leaf(Op.LE, column, (high,))))
            return Not(p) if negated else p
        raise self.fail("expected a comparison, IN, IS [NOT] NULL, LIKE or BETWEEN")

    def comparison(self, op: Op, left: _Operand, right: _Operand, op_pos: int) -> Predicate:
        if left.column is not None and right.column is not None:
            raise _error(self.text, left.pos, f"comparing two columns ({left.column}, {right.column}) is not supported")
        if left.column is None and right.column is None:
            raise _error(self.text, left.pos, "a comparison needs a column on one side")
        if left.column is None:
            left, right, op = right, left, FLIPPED[op]
        assert left.column is not None
        if right.value is None:
            hint = " use IS NULL" if op is Op.EQ else " use IS NOT NULL" if op is Op.NE else ""
            raise _error(self.text, right.pos, f"comparison with NULL is never true;{hint or ' drop it'}")
        return Leaf(op, left.column, (self.coerce(left.column, right.value, right.pos),))

    def like(self, column: str, tok: _Token) -> Leaf:
        parsed = _like_pattern(tok.text)
        if parsed is None:
            raise _error(
                self.text,
                tok.pos,
                "unsupported LIKE pattern; use 'abc%', '%abc', '%abc%' or no wildcard "
                "(escape a literal % or _ with a backslash)",
            )
        lead, body, trail = parsed
        lit = self.coerce(column, body, tok.pos)
        if lead and trail:
            return Leaf(Op.CONTAINS, column, (lit,))
        if trail:
            return Leaf(Op.STARTS_WITH, column, (lit,))
        if lead:
            return Leaf(Op.ENDS_WITH, column, (lit,))
        return Leaf(Op.EQ, column, (lit,))

    def need_column(self, operand: _Operand) -> str:
        if operand.column is None:
            raise _error(self.text, operand.pos, "expected a column name")
        return operand.column

    def operand(self) -> _Operand:
        t = self.tok
        if t.kind is _Kind.IDENT:
            self.advance()
            return _Operand(t.pos, column=self.check_column(t))
        return _Operand(t.pos, value=self.literal())

    def check_column(self, t: _Token) -> str:
        if self.field_types is not None and t.text not in self.field_types:
            raise _error(self.text, t.pos, f"unknown column {t.text!r}; columns are {', '.join(self.field_types)}")
        return t.text

    def literal_list(self, column: str) -> list[object]:
        self.expect(_Kind.LPAREN)
        values = [self.literal_for(column)]
        while self.tok.kind is _Kind.COMMA:
            self.advance()
            values.append(self.literal_for(column))
        self.expect(_Kind.RPAREN)
        return values

    def literal_for(self, column: str) -> object:
        pos = self.tok.pos
        return self.coerce(column, self.literal(), pos)

    def coerce(self, column: str, value: object, pos: int) -> object:
        if self.field_types is None or value is None:
            return value
        try:
            return coerce_literal(value, self.field_types[column], field=column)
        except PredicateError as e:
            raise _error(self.text, pos, str(e)) from e

    def literal(self) -> object:
        t = self.tok
        if t.kind is _Kind.OP and t.text in "+-":
            self.advance()
            if self.tok.kind is not _Kind.NUMBER:
                raise self.fail("expected a number after sign")
            # The sign joins the digits: negating a Decimal afterwards would round it to 28 digits.
            return self.number(self.advance(), sign=t.text)
        if t.kind is _Kind.NUMBER:
            return self.number(self.advance())
        if t.kind is _Kind.STRING:
            return self.advance().text
        if t.kind is _Kind.HEX:
            self.advance()
            try:
                return bytes.fromhex(t.text)
            except ValueError as e:
                raise _error(self.text, t.pos, "invalid hexadecimal literal") from e
        if t.kind is _Kind.KEYWORD:
            if t.text in ("TRUE", "FALSE"):
                self.advance()
                return t.text == "TRUE"
            if t.text == "NULL":
                self.advance()
                return None
            if t.text in ("DATE", "TIME", "TIMESTAMP"):
                self.advance()
                s = self.expect(_Kind.STRING)
                return self.temporal(t.text, s)
        raise self.fail("expected a column or a literal")

    def number(self, t: _Token, *, sign: str = "") -> int | float | Decimal:
        s = sign + t.text
        if "e" in s or "E" in s:
            return float(s)
        if "." in s:
            return Decimal(s)
        return int(s)

    def temporal(self, kind: str, t: _Token) -> object:
        s = t.text.strip()
        try:
            if kind == "DATE":
                return _dt.date.fromisoformat(s)
            if kind == "TIME":
                return _dt.time.fromisoformat(s)
            return _dt.datetime.fromisoformat(s)
        except ValueError as e:
            raise _error(self.text, t.pos, f"invalid {kind} literal {t.text!r}") from e


def _like_pattern(pattern: str) -> tuple[bool, str, bool] | None:
    """(leading %, literal body, trailing %) of a LIKE pattern, or None if it needs a real matcher.

    Backslash escapes %, _ and itself; '_' and '%' inside the body are not supported.
    """
    items: list[tuple[bool, str]] = []  # (is_wildcard, char)
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            items.append((False, pattern[i + 1]))
            i += 2
            continue
        items.append((c in "%_", c))
        i += 1
    lead = trail = False
    while items and items[0] == (True, "%"):
        items.pop(0)
        lead = True
    while items and items[-1] == (True, "%"):
        items.pop()
        trail = True
    if any(wild for wild, _ in items):
        return None
    body = "".join(c for _, c in items)
    if lead and not body:
        return False, "", True  # '%' alone: any non-null string
    return lead, body, trail


def parse_where(text: str, field_types: Mapping[str, pa.DataType] | None = None) -> Predicate:
    """Parse a SQL-like filter such as ``"amount > 10 AND dt = '2026-11-21'"``.

    With `field_types` (column name -> Arrow type), unknown columns are rejected and literals are
    coerced to their column's type. Errors are PredicateError with the position in `text`.
    """
    if not isinstance(text, str):
        raise PredicateError(f"filter must be a string, got {type(text).__name__}")
    return _Parser(text, field_types).parse()
