"""Names of tags, branches and consumers: they become file and directory names, so they are checked first.

Paimon: TagManager / BranchManager#validateBranch, ConsumerManager (names are checked for blankness there; laketide
also refuses what would leave the table's directory or break a path).
"""

from __future__ import annotations

from laketide.exceptions import InvalidOptionError

__all__ = ["check_name"]


def check_name(kind: str, name: object, *, table_name: str) -> str:
    """``name`` if it is a usable ``kind`` name (tag, branch, consumer id), else InvalidOptionError naming the
    table: empty or blank, with '/', '\\', '..', control characters or surrounding spaces."""
    problem = None
    if not isinstance(name, str):
        problem = f"must be a string, not {type(name).__name__}"
    elif not name.strip():
        problem = "must not be blank"
    elif name != name.strip():
        problem = "must not start or end with spaces"
    elif any(c in name for c in "/\\") or ".." in name:
        problem = "must not contain '/', '\\' or '..' (it becomes a file name)"
    elif any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        problem = "must not contain control characters"
    if problem is not None:
        raise InvalidOptionError(f"Table {table_name}: {kind} name {name!r} {problem}")
    assert isinstance(name, str)
    return name
