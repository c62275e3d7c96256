"""Output: rich tables for people, ``--json`` for scripts (one JSON document on stdout)."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import sys
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

__all__ = ["Output"]


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    return str(value)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


class Output:
    def __init__(self, *, as_json: bool) -> None:
        from rich.console import Console

        self.as_json = as_json
        # Piped output keeps wide tables on one line per row instead of folding them to 80 columns.
        width = None if sys.stdout.isatty() else 250
        self.console = Console(file=sys.stdout, highlight=False, width=width)
        self.err = Console(file=sys.stderr, highlight=False)

    def json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(data, default=_json_default, ensure_ascii=False) + "\n")

    def table(self, table: pa.Table, *, title: str | None = None, text_columns: list[str] | None = None) -> None:
        """``text_columns`` narrows what people see; ``--json`` always gets every column."""
        if self.as_json:
            self.json(table.to_pylist())
            return
        if text_columns is not None:
            table = table.select(text_columns)
        from rich.table import Table as RichTable

        out = RichTable(title=title, show_lines=False)
        for name in table.column_names:
            out.add_column(name, overflow="fold")
        for row in table.to_pylist():
            out.add_row(*(_cell(v) for v in row.values()))
        self.console.print(out)

    def mapping(self, data: Mapping[str, Any], *, title: str | None = None) -> None:
        if self.as_json:
            self.json(data)
            return
        from rich.table import Table as RichTable

        out = RichTable(title=title, show_header=False)
        out.add_column("key", style="bold")
        out.add_column("value", overflow="fold")
        for k, v in data.items():
            out.add_row(k, _cell(v))
        self.console.print(out)

    def lines(self, items: list[str]) -> None:
        if self.as_json:
            self.json(items)
            return
        for item in items:
            sys.stdout.write(item + "\n")

    def result(self, data: Mapping[str, Any], message: str) -> None:
        """The outcome of a command that changed something."""
        if self.as_json:
            self.json(data)
        else:
            self.console.print(message)
