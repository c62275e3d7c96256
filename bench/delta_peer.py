"""deltalake (delta-rs) as a benchmark peer, in laketide's own environment (``pip install '.[bench]'``).

deltalake 1.x needs ``pyarrow>=21`` only for its pyarrow helpers, so it shares laketide's pyarrow 26; its
allocations happen in this process, so the harness's per-workload peak RSS covers them.

Delta has no primary keys and no merge-on-read: an upsert is a MERGE that rewrites (copy-on-write) every data
file holding a matched key, so the "merge read" afterwards is a plain read, and compaction only bin-packs small
files. The numbers say what each format costs for the same logical result, not the same algorithm.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

ENGINE = "deltalake"
MERGE_NOTE = "MERGE (copy-on-write): matched files are rewritten at upsert time"


def available() -> str | None:
    """None when deltalake imports, else why not."""
    try:
        import deltalake  # noqa: F401
    except ImportError as e:
        return f"deltalake is not installed ({e}): pip install '.[bench]'"
    return None


def version() -> str:
    import deltalake

    return str(deltalake.__version__)


def write(path: Path, data: pa.Table) -> None:
    """A fresh table at ``path`` holding ``data``."""
    from deltalake import write_deltalake

    shutil.rmtree(path, ignore_errors=True)
    write_deltalake(str(path), data)


def append(path: Path, data: pa.Table) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(path), data, mode="append")


def merge(path: Path, source: pa.Table, *, key: str) -> dict[str, Any]:
    """Upsert ``source`` by ``key``: update every matched row, insert the rest."""
    from deltalake import DeltaTable

    return dict(
        DeltaTable(str(path))
        .merge(source=source, predicate=f"t.{key} = s.{key}", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def read(path: Path, *, filters: Sequence[tuple[str, str, Any]] | None = None) -> pa.Table:
    """Load the latest version and read it (file skipping by Delta's column stats when ``filters`` is set)."""
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    return table.to_pyarrow_table(filters=list(filters)) if filters else table.to_pyarrow_table()


def compact(path: Path) -> dict[str, Any]:
    from deltalake import DeltaTable

    return dict(DeltaTable(str(path)).optimize.compact())
