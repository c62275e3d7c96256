"""Progress bars on stderr, shown only when stderr is a terminal (never in pipes, logs or CI output)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console  # rich is imported lazily at run time

__all__ = ["ImportProgress", "import_progress", "spinner"]


class ImportProgress(Protocol):
    def advance(self, *, rows: int = 0, files: int = 0, nbytes: int = 0) -> None: ...


class _Silent:
    def advance(self, *, rows: int = 0, files: int = 0, nbytes: int = 0) -> None:
        return None


def _terminal_console() -> Console | None:
    from rich.console import Console

    console = Console(file=sys.stderr)
    return console if console.is_terminal else None


@contextmanager
def import_progress(total_files: int, total_bytes: int) -> Iterator[ImportProgress]:
    """A bar over the input bytes, with rows and files counted, while the block runs."""
    console = _terminal_console()
    if console is None:
        yield _Silent()
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]importing"), BarColumn(), DownloadColumn(),
        TextColumn("{task.fields[files]}/{task.fields[total_files]} files"),
        TextColumn("{task.fields[rows]:,} rows"), TimeElapsedColumn(),
        console=console, transient=False,
    ) as progress:
        task = progress.add_task("import", total=total_bytes or None, files=0, total_files=total_files, rows=0)
        counts = {"rows": 0, "files": 0}

        class _Bar:
            def advance(self, *, rows: int = 0, files: int = 0, nbytes: int = 0) -> None:
                counts["rows"] += rows
                counts["files"] += files
                progress.update(task, advance=nbytes, rows=counts["rows"], files=counts["files"])

        yield _Bar()


@contextmanager
def spinner(message: str) -> Iterator[None]:
    console = _terminal_console()
    if console is None:
        yield
        return
    with console.status(message):
        yield
