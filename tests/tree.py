"""Snapshots of a directory tree: a call that must change nothing leaves the same snapshot behind."""

from __future__ import annotations

import hashlib
from pathlib import Path


def tree(root: str | Path) -> dict[str, str]:
    """Every file and directory under ``root`` (relative path -> content hash, "dir" for directories)."""
    base = Path(root)
    if not base.exists():
        return {}
    out: dict[str, str] = {}
    for p in sorted(base.rglob("*")):
        rel = p.relative_to(base).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out
