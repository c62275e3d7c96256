"""JSON the way Java Paimon writes it (Jackson's default pretty printer), so metadata files diff cleanly.

Paimon: org.apache.paimon.utils.JsonSerdeUtil (Jackson ``writerWithDefaultPrettyPrinter``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["jackson_dumps", "loads"]


def jackson_dumps(value: Any) -> str:
    """Serialize like Jackson's DefaultPrettyPrinter: ``"key" : value``, 2-space indent, ``{ }`` / ``[ ]``."""
    parts: list[str] = []
    _write(value, 0, parts)
    return "".join(parts)


def _write(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        pad = "  " * (depth + 1)
        out.append("{\n")
        for i, (k, v) in enumerate(value.items()):
            out.append(f"{pad}{json.dumps(k, ensure_ascii=False)} : ")
            _write(v, depth + 1, out)
            out.append(",\n" if i < len(value) - 1 else "\n")
        out.append("  " * depth + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        # Jackson keeps arrays on one line, with objects inside indented like the parent.
        out.append("[ ")
        for i, v in enumerate(value):
            _write(v, depth, out)
            if i < len(value) - 1:
                out.append(", ")
        out.append(" ]")
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def loads(text: str | bytes) -> Any:
    return json.loads(text)
