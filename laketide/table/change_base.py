"""A change computed from one snapshot (a Spark-evaluated UPDATE / MERGE): refuse to commit it once another
writer has changed the buckets it writes since that snapshot.

The rows such a change writes were computed from the buckets' contents at ``base``: a later APPEND / OVERWRITE in
one of those buckets may have changed the very rows (a lost update), so the commit fails with
CommitConflictError and nothing changes. Compactions keep the rows as they are and never conflict. Commits after
the writer tasks restored their buckets are caught by the committer itself (SequenceConflictError); this check
covers the window between the read at ``base`` and the tasks' restore.

Paimon: operation.commit.ConflictDetection (a row-level change's base snapshot)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from laketide.exceptions import CommitConflictError
from laketide.meta.commit_message import CommitMessage
from laketide.meta.snapshot import CommitKind

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["refuse_changes_since"]


def refuse_changes_since(table: Table, base: int | None, messages: Iterable[CommitMessage], *, verb: str) -> None:
    """CommitConflictError when a non-compaction snapshot after ``base`` (None: the empty table) changed a
    (partition, bucket) that ``messages`` write."""
    latest = table.latest_snapshot()
    if latest is None or latest.id == (base or 0):
        return
    touched = {(m.partition, m.bucket) for m in messages if not m.is_empty()}
    if not touched:
        return
    scan = table.store.new_scan()
    for sid in range(latest.id, base or 0, -1):
        s = latest if sid == latest.id else table.snapshot(sid)
        if s.commit_kind in (CommitKind.COMPACT, CommitKind.ANALYZE):  # the rows stay as they are
            continue
        metas = scan.manifest_list(s.delta_manifest_list, s.delta_manifest_list_size)
        changed = {(e.partition, e.bucket) for m in metas for e in scan.manifest(m.file_name, m.file_size)}
        if changed & touched:
            raise CommitConflictError(
                f"{verb} on table {table.name} read the table at snapshot {base or 0}, and snapshot {s.id} "
                f"({s.commit_kind.value}, commit user {s.commit_user}) has changed {len(changed & touched)} of the "
                f"buckets it writes since. Nothing was committed; run the statement again."
            )
