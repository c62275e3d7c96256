"""SQL text -> a sqlglot tree (Spark dialect), or a command sqlglot does not model (CALL, SHOW, SET, UNSET).

Why sqlglot and not Spark's own parser through Py4J: Spark's parser reads all of this too, but hands back Scala
case classes whose shape changes between Spark versions and whose expressions would have to be walked one Py4J
call per node; sqlglot is pure Python, gives sub-expressions back as Spark SQL text, and costs < 1 ms a statement.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from laketide.exceptions import SqlError

__all__ = ["Command", "parse_statement", "split_call_arguments"]


@dataclass(frozen=True, slots=True)
class Command:
    """A statement recognized before sqlglot: ``kind`` is CALL / SHOW / SET / UNSET, ``text`` the rest."""

    kind: str
    text: str


_CALL = re.compile(r"^\s*CALL\s+(?P<name>[A-Za-z_][\w.]*)\s*\((?P<args>.*)\)\s*;?\s*$", re.S | re.I)
_SHOW = re.compile(r"^\s*SHOW\s+(?P<rest>.*?)\s*;?\s*$", re.S | re.I)
_SET = re.compile(r"^\s*SET\s+(?P<key>[^=\s]+)\s*=\s*(?P<value>.*?)\s*;?\s*$", re.S | re.I)
_RESET = re.compile(r"^\s*RESET\s+(?P<key>\S+?)\s*;?\s*$", re.S | re.I)
_UNSET = re.compile(r"^\s*ALTER\s+TABLE\s+(?P<table>\S+)\s+UNSET\s+TBLPROPERTIES\s*(IF\s+EXISTS\s*)?"
                    r"\((?P<keys>.*)\)\s*;?\s*$", re.S | re.I)


def parse_statement(text: str) -> Any:
    """One statement: a sqlglot expression, or a :class:`Command`; SqlError on a syntax error."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    if not text or not text.strip():
        raise SqlError("laketide SQL: empty statement")
    for kind, pattern in (("CALL", _CALL), ("UNSET", _UNSET), ("SHOW", _SHOW), ("SET", _SET), ("RESET", _RESET)):
        if pattern.match(text):
            return Command(kind, text)
    # sqlglot logs (not warns) when it falls back to an opaque command; that case is refused below instead.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        trees = sqlglot.parse(text, read="spark")
    except (ParseError, TokenError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SqlError(f"laketide SQL: syntax error in {_short(text)}: {first}") from None
    finally:
        logger.setLevel(level)
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlError(f"laketide SQL: give one statement at a time, got {len(trees)} in {_short(text)}")
    return trees[0]


def _short(text: str) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= 80 else one[:77] + "...")


def split_call_arguments(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``CALL sys.p(a => 'x', 1)`` -> (``sys.p``, positional values, named values)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    m = _CALL.match(text)
    if m is None:
        raise SqlError(f"laketide SQL: cannot read CALL statement {_short(text)}")
    name, body = m.group("name"), m.group("args").strip()
    positional: list[Any] = []
    named: dict[str, Any] = {}
    if not body:
        return name, positional, named
    try:
        call = sqlglot.parse_one(f"SELECT f({body})", read="spark")
    except (ParseError, TokenError) as e:
        raise SqlError(f"laketide SQL: cannot read the arguments of {_short(text)}: {e}") from None
    func = call.expressions[0]
    for arg in func.expressions:
        if isinstance(arg, exp.Kwarg):
            named[arg.this.name.lower()] = _literal(arg.expression, text)
        else:
            if named:
                raise SqlError(f"laketide SQL: positional argument after named ones in {_short(text)}")
            positional.append(_literal(arg, text))
    return name, positional, named


def _literal(node: Any, text: str) -> Any:
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (int(node.this) if node.this.lstrip("-").isdigit()
                                                 else float(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal(node.this, text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    raise SqlError(f"laketide SQL: procedure arguments must be literals, not {node.sql(dialect='spark')!r} "
                   f"in {_short(text)}")
