"""laketide errors through Spark: one clear message on top, the typed error back in the helpers.

Spark wraps an error of a Python data source in its own (``[PYTHON_DATA_SOURCE_ERROR] Failed to ...: <what the
Python worker reported>``), and Py4J wraps that again. Two things keep the laketide message readable:

- ``surfaced``: when a LaketideError leaves a data source entry point inside a Spark Python worker (which then
  reports it and exits), the worker reports it message first: ``laketide.exceptions.NoSuchTableError: Table
  db.t does not exist in ...``, with laketide's traceback after it (a note) instead of before it.
- ``typed_errors``: the DataFrame helpers (laketide.spark.read / write / ...) find that line in Spark's
  exception and raise the laketide error again, typed, with Spark's exception as its cause.
"""

from __future__ import annotations

import functools
import os
import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import laketide.exceptions as _exceptions
from laketide.exceptions import LaketideError
from laketide.spark.worker_gc import freeze_long_lived

__all__ = ["surfaced", "surfaced_iter", "typed_errors", "laketide_error_in"]

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "_laketide_surfaced"
_LINE = re.compile(r"laketide\.exceptions\.([A-Za-z]+Error): ([^\n]*)")


def _in_spark_worker() -> bool:
    return os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER"


def _message_first(e: LaketideError) -> None:
    """Have the Spark worker report ``e`` as its one-line message (the traceback moves to a note).

    PySpark's workers report an error with its traceback first unless SPARK_HIDE_TRACEBACK is set, which they
    read when they report; a worker exits after reporting, so setting it here affects no other error.
    """
    if getattr(e, _MARK, False) or not _in_spark_worker():
        return
    setattr(e, _MARK, True)
    e.add_note("".join(traceback.format_exception(e)).rstrip())
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"


def surfaced(fn: F) -> F:
    """Decorate a data source entry point: its LaketideErrors show their message first in Spark's error (and a
    reused worker's long-lived objects leave Spark's per-task collections: laketide.spark.worker_gc)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        freeze_long_lived()
        try:
            return fn(*args, **kwargs)
        except LaketideError as e:
            _message_first(e)
            raise

    return wrapper  # type: ignore[return-value]


def surfaced_iter(fn: F) -> F:
    """``surfaced`` for generator entry points (``read``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Iterator[Any]:
        freeze_long_lived()
        try:
            yield from fn(*args, **kwargs)
        except LaketideError as e:
            _message_first(e)
            raise

    return wrapper  # type: ignore[return-value]


def laketide_error_in(e: BaseException) -> LaketideError | None:
    """The laketide error Spark's exception ``e`` carries (its first ``laketide.exceptions.X: message``)."""
    if isinstance(e, LaketideError):
        return e
    m = _LINE.search(str(e))
    if m is None:
        return None
    cls = getattr(_exceptions, m.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, LaketideError)):
        return None
    try:
        return cls(m.group(2).strip())
    except TypeError:  # an error class whose constructor takes more than a message
        return LaketideError(m.group(2).strip())


@contextmanager
def typed_errors() -> Iterator[None]:
    """Re-raise a laketide error Spark wrapped (AnalysisException, PythonException, Py4J) as itself."""
    try:
        yield
    except LaketideError:
        raise
    except Exception as e:  # any error Spark raised may carry ours; the rest re-raise unchanged
        found = laketide_error_in(e)
        if found is None:
            raise
        raise found from e
