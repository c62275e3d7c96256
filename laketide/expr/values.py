"""Value expressions for UPDATE SET / MERGE: ``"amount * 2 + 1"``, ``"'fixed'"``, ``"NULL"`` -> Arrow expressions.

The text is SQL-like arithmetic over column names: numbers, 'quoted strings', TRUE / FALSE / NULL, ``+ - * / %``,
unary minus and parentheses. Python's own parser reads it (the grammar of arithmetic is the same); only the node
kinds listed here are accepted, so nothing is ever evaluated as Python.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from laketide.exceptions import PredicateError

__all__ = ["parse_value_expression"]

_BINARY: dict[type[ast.operator], Callable[[pc.Expression, pc.Expression], pc.Expression]] = {
    ast.Add: lambda a, b: pc.add_checked(a, b),
    ast.Sub: lambda a, b: pc.subtract_checked(a, b),
    ast.Mult: lambda a, b: pc.multiply_checked(a, b),
    ast.Div: lambda a, b: pc.divide_checked(a, b),
    ast.Mod: lambda a, b: pc.subtract_checked(a, pc.multiply_checked(pc.floor(pc.divide(a, b)), b)),
}
_CONSTANTS = {"NULL": None, "TRUE": True, "FALSE": False}


def parse_value_expression(text: str, columns: Mapping[str, pa.DataType], *, context: str) -> pc.Expression:
    """``text`` as an Arrow expression over ``columns``; PredicateError (naming ``context``) when it is not one."""
    # SQL quotes strings with '...' and doubles a quote inside; Python reads '...' too, with \' instead.
    try:
        tree = ast.parse(text.replace("''", "\\'"), mode="eval")
    except SyntaxError as e:
        raise PredicateError(f"{context}: cannot parse value expression {text!r}: {e.msg}") from None
    return _convert(tree.body, columns, text=text, context=context)


def _convert(node: ast.AST, columns: Mapping[str, pa.DataType], *, text: str, context: str) -> pc.Expression:
    def again(child: ast.AST) -> pc.Expression:
        return _convert(child, columns, text=text, context=context)

    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, float, str, bool))):
        return pc.scalar(node.value)
    if isinstance(node, ast.Name):
        if node.id in columns:
            return pc.field(node.id)
        if node.id.upper() in _CONSTANTS:
            return pc.scalar(_CONSTANTS[node.id.upper()])
        raise PredicateError(
            f"{context}: unknown column {node.id!r} in value expression {text!r}; columns are {list(columns)}"
        )
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):  # alias.column (MERGE)
        qualified = f"{node.value.id}.{node.attr}"
        if qualified in columns:
            return pc.field(qualified)
        raise PredicateError(
            f"{context}: unknown column {qualified!r} in value expression {text!r}; columns are {list(columns)}"
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = again(node.operand)
        return pc.negate_checked(inner) if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](again(node.left), again(node.right))
    raise PredicateError(
        f"{context}: unsupported syntax {ast.dump(node)[:40]!r} in value expression {text!r}; use column names, "
        f"literals ('text', 1.5, TRUE, NULL), + - * / % and parentheses"
    )
