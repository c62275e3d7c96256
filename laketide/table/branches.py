"""Branches: ``branch/branch-<name>/`` holding the branch's own ``schema/``, ``snapshot/`` and ``tag/`` folders; data
files, manifests and indexes are shared with the main branch.

``fast_forward`` makes main what the branch is, keeping main's history readable: the branch's snapshots, schemas
and tags replace main's from the branch's first snapshot on. The branch's schemas are copied first (a snapshot
never names a schema main lacks), main's newer snapshots and tags go newest first, then the branch's snapshots are
copied oldest first and the hints are rewritten from what is there (Java copies the branch's EARLIEST hint too,
which would hide main's older snapshots from expiration).

Paimon: utils.BranchManager, utils.FileSystemBranchManager
"""

from __future__ import annotations

import builtins
import datetime as _dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError, NoSuchTableError
from laketide.meta.paths import MAIN_BRANCH, FileStorePathFactory
from laketide.meta.snapshot_manager import SnapshotManager
from laketide.schema.schema_manager import SchemaManager
from laketide.table.file_holders import BRANCH_PREFIX, branch_names
from laketide.table.names import check_name
from laketide.table.tags import TAG_PREFIX, TagManager

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["Branch", "BranchManager"]

_SNAPSHOT_RE = re.compile(r"^snapshot-(\d+)$")
_SCHEMA_RE = re.compile(r"^schema-(\d+)$")


@dataclass(frozen=True, slots=True)
class Branch:
    name: str
    create_time: _dt.datetime  # the branch directory's modification time (as Java's $branches shows it)


class BranchManager:
    """The branches of a table (``t.branches``): create (empty or from a tag), delete, list, fast_forward."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.store = table.store
        self.io = table.file_io

    def _check(self, name: str) -> str:
        check_name("branch", name, table_name=self.table.name)
        if name == MAIN_BRANCH:
            raise InvalidOptionError(f"Table {self.table.name}: branch name 'main' is the default branch")
        if name.isdigit():
            raise InvalidOptionError(f"Table {self.table.name}: branch name {name!r} must not be purely numeric")
        return name

    def _paths(self, name: str) -> FileStorePathFactory:
        return FileStorePathFactory(self.table.path, branch=name)

    def exists(self, name: str) -> bool:
        return self.io.exists(self._paths(self._check(name)).branch_path)

    def names(self) -> builtins.list[str]:
        return branch_names(self.store)

    def list(self) -> builtins.list[Branch]:
        out = []
        for st in self.io.list_status(f"{self.table.path}/branch"):
            base = st.path.rstrip("/").rsplit("/", 1)[-1]
            if st.is_dir and base.startswith(BRANCH_PREFIX):
                created = _dt.datetime.fromtimestamp(st.modification_time_ms / 1000, _dt.timezone.utc)
                out.append(Branch(base[len(BRANCH_PREFIX):], created.replace(tzinfo=None)))
        return sorted(out, key=lambda b: b.name)

    def create(self, name: str, tag: str | None = None) -> Table:
        """Create branch ``name``: empty with main's schemas, or from ``tag`` (its snapshot, schema and tag are
        copied). An existing name, a missing tag or a bad name is refused and nothing is written."""
        self._check(name)
        paths = self._paths(name)
        if self.io.exists(paths.branch_path):
            raise InvalidOptionError(f"Table {self.table.name}: branch {name!r} already exists")
        if self.table.branch != MAIN_BRANCH:
            raise InvalidOptionError(
                f"Table {self.table.name}: create branches from the main branch, not from branch {self.table.branch}"
            )
        tags = TagManager(self.store)
        source = None
        if tag is not None:
            if not tags.exists(tag):
                raise NoSuchSnapshotError(
                    f"Cannot create branch {name!r} of table {self.table.name}: tag {tag!r} does not exist"
                )
            source = tags.get(tag)
        latest_schema = self.table.schema_manager.latest()
        schema_id = source.snapshot.schema_id if source is not None else (latest_schema.id if latest_schema else 0)
        # Schemas first: a branch directory with a schema is a loadable (empty) branch at every step. The first
        # one is written only if absent: of two processes creating the same branch, one is refused.
        ids = [sid for sid in self.table.schema_manager.list_ids() if sid <= schema_id]
        for i, sid in enumerate(ids):
            data = self.io.read_bytes(self.table.schema_manager.schema_path(sid))
            target = f"{paths.schema_dir}/schema-{sid}"
            if i == 0:
                if not self.io.try_write_atomic(target, data):
                    raise InvalidOptionError(f"Table {self.table.name}: branch {name!r} already exists")
            else:
                self.io.write_bytes(target, data, overwrite=True)
        if source is not None:
            assert tag is not None
            snap = source.snapshot
            self.io.write_bytes(f"{paths.snapshot_dir}/snapshot-{snap.id}", snap.to_json().encode(), overwrite=True)
            self.io.write_bytes(f"{paths.tag_dir}/{TAG_PREFIX}{tag}", self.io.read_bytes(tags.path(tag)),
                                overwrite=True)
            sm = SnapshotManager(self.io, self.table.path, snapshot_dir=paths.snapshot_dir)
            sm.commit_earliest_hint(snap.id)
            sm.commit_latest_hint(snap.id)
        return self.table.branch_table(name)

    def delete(self, name: str) -> None:
        """Delete branch ``name`` (its directory); files only it used are left to ``remove_orphan_files``.
        The branch ``scan.fallback-branch`` names cannot be deleted."""
        self._check(name)
        paths = self._paths(name)
        if not self.io.exists(paths.branch_path):
            raise NoSuchTableError(f"Table {self.table.name}: branch {name!r} does not exist")
        if self.store.options.scan_fallback_branch == name:
            raise InvalidOptionError(
                f"Table {self.table.name}: cannot delete branch {name!r}, it is 'scan.fallback-branch'; unset it first"
            )
        self.io.delete(paths.branch_path, recursive=True)

    def fast_forward(self, name: str) -> None:
        """Make main's latest snapshot the branch's: main's snapshots, schemas and tags from the branch's first
        snapshot on are replaced by the branch's. Stop main's writers first."""
        self._check(name)
        if self.table.branch != MAIN_BRANCH:
            raise InvalidOptionError(f"Table {self.table.name}: fast-forward into the main branch only")
        paths = self._paths(name)
        if not self.io.exists(paths.branch_path):
            raise NoSuchTableError(f"Table {self.table.name}: branch {name!r} does not exist")
        branch_sm = SnapshotManager(self.io, self.table.path, snapshot_dir=paths.snapshot_dir)
        branch_ids = branch_sm.snapshot_ids()
        if not branch_ids:
            raise NoSuchSnapshotError(
                f"Cannot fast-forward table {self.table.name} to branch {name!r}: the branch has no snapshot"
            )
        earliest = branch_sm.snapshot(branch_ids[0])
        main_sm = self.table.snapshot_manager
        main_schemas = self.table.schema_manager
        branch_schemas = SchemaManager(self.io, self.table.path, schema_dir=paths.schema_dir)
        # 1. The branch's schemas (the same content as main's for ids it inherited).
        branch_schema_ids = branch_schemas.list_ids()
        for sid in branch_schema_ids:
            self.io.write_bytes(main_schemas.schema_path(sid), self.io.read_bytes(branch_schemas.schema_path(sid)),
                                overwrite=True)
        # 2. main's snapshots and tags from the branch's start on, newest first (main stays contiguous).
        if main_sm.snapshot_ids() and earliest.id > 1:
            main_sm.commit_latest_hint(max([i for i in main_sm.snapshot_ids() if i < earliest.id], default=1))
        for sid in sorted((i for i in main_sm.snapshot_ids() if i >= earliest.id), reverse=True):
            main_sm.delete_snapshot(sid)
        main_tags = TagManager(self.store)
        for t in main_tags.list():
            if t.snapshot.id >= earliest.id:
                self.io.delete(main_tags.path(t.name))
        for sid in main_schemas.list_ids():
            if sid >= earliest.schema_id and sid not in branch_schema_ids:
                self.io.delete(main_schemas.schema_path(sid))
        # 3. The branch's snapshots oldest first, then its tags; then the hints from what is there.
        for sid in branch_ids:
            self.io.write_bytes(main_sm.snapshot_path(sid), self.io.read_bytes(branch_sm.snapshot_path(sid)),
                                overwrite=True)
        for st in self.io.list_status(paths.tag_dir):
            base = st.path.rstrip("/").rsplit("/", 1)[-1]
            if not st.is_dir and base.startswith(TAG_PREFIX):
                self.io.write_bytes(f"{self.store.path_factory.tag_dir}/{base}", self.io.read_bytes(st.path),
                                    overwrite=True)
        ids = main_sm.snapshot_ids()
        main_sm.commit_latest_hint(ids[-1])
        main_sm.commit_earliest_hint(ids[0])
        main_sm.forget_users()
        main_schemas.forget()
        self.table.refresh()

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.exists(name)
