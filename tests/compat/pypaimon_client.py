"""laketide-side client for pypaimon, which runs in its own environment behind a subprocess.

pypaimon pins pyarrow<20 while laketide uses pyarrow 26, so the two never share a process: each call
writes a JSON request (plus Arrow IPC files for schemas and data) to a temporary directory and runs
``pypaimon_driver.py`` with the interop environment's python. See the driver's docstring for the protocol.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.ipc

DRIVER = Path(__file__).with_name("pypaimon_driver.py")
TIMEOUT_SECONDS = 300


class PyPaimonError(Exception):
    """A pypaimon call failed; the message carries pypaimon's own traceback."""

    def __init__(
        self, message: str, traceback: str = "", *, error_type: str = "", unsupported: bool = False
    ) -> None:
        super().__init__(f"{message}\n--- pypaimon traceback ---\n{traceback}" if traceback else message)
        self.error_type = error_type
        self.traceback = traceback
        self.unsupported = unsupported


def _ipc_options() -> pa.ipc.IpcWriteOptions:
    # V5 metadata and no compression: the newest layout pyarrow 19 reads without negotiation.
    return pa.ipc.IpcWriteOptions(metadata_version=pa.ipc.MetadataVersion.V5, compression=None)


def _write_ipc(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema, options=_ipc_options()) as writer:
            writer.write_table(table)


def _read_ipc(path: Path) -> pa.Table:
    # OSFile (not a memory map) so the table owns its buffers after the temp dir is gone.
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


class PyPaimon:
    """pypaimon 2.1.0 behind a subprocess; ``python`` is the interop environment's interpreter."""

    def __init__(self, python: str) -> None:
        self.python = python

    def call(self, command: str, request: Mapping[str, Any], *, workdir: Path) -> dict[str, Any]:
        """Run one driver command and return its JSON response; raise ``PyPaimonError`` on failure."""
        request_path = workdir / "request.json"
        request_path.write_text(json.dumps({"command": command, **request}), encoding="utf-8")
        try:
            completed = subprocess.run(
                [self.python, str(DRIVER), str(request_path)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise PyPaimonError(f"pypaimon {command} timed out after {TIMEOUT_SECONDS} s") from e
        try:
            response: dict[str, Any] = json.loads(completed.stdout)
        except json.JSONDecodeError as e:
            raise PyPaimonError(
                f"pypaimon {command} exited {completed.returncode} without a JSON response",
                f"stdout:\n{completed.stdout}\nstderr:\n{completed.stderr}",
            ) from e
        if completed.returncode != 0 or "error" in response:
            raise PyPaimonError(
                f"pypaimon {command} failed: {response.get('error')}: {response.get('message')}",
                str(response.get("traceback", "")),
                error_type=str(response.get("error", "")),
                unsupported=bool(response.get("unsupported", False)),
            )
        return response

    def create_table(
        self,
        warehouse: str | Path,
        identifier: str,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Create ``identifier`` ("db.table", database created if missing); return pypaimon's schema."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            schema_path = Path(tmp) / "schema.arrow"
            _write_ipc(schema_path, schema.empty_table())
            return self.call(
                "create_table",
                {
                    "warehouse": str(warehouse),
                    "identifier": identifier,
                    "schema_path": str(schema_path),
                    "partition_keys": list(partition_keys),
                    "primary_keys": list(primary_keys),
                    "options": dict(options or {}),
                },
                workdir=Path(tmp),
            )

    def write(
        self,
        warehouse: str | Path,
        identifier: str,
        data: pa.Table,
        *,
        mode: Literal["append", "overwrite"] = "append",
        partition: Mapping[str, Any] | None = None,
    ) -> int | None:
        """One batch write + commit; return the new snapshot id (None if pypaimon skipped an empty commit)."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            data_path = Path(tmp) / "data.arrow"
            _write_ipc(data_path, data)
            response = self.call(
                "write",
                {
                    "warehouse": str(warehouse),
                    "identifier": identifier,
                    "data_path": str(data_path),
                    "mode": mode,
                    "partition": None if partition is None else dict(partition),
                },
                workdir=Path(tmp),
            )
        snapshot_id = response["snapshot_id"]
        return None if snapshot_id is None else int(snapshot_id)

    def update_by_row_id(
        self, warehouse: str | Path, identifier: str, data: pa.Table, *, columns: Sequence[str]
    ) -> int | None:
        """pypaimon's data-evolution update: ``data`` holds ``_ROW_ID`` and new values of ``columns``."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            data_path = Path(tmp) / "data.arrow"
            _write_ipc(data_path, data)
            response = self.call(
                "update_by_row_id",
                {"warehouse": str(warehouse), "identifier": identifier, "data_path": str(data_path),
                 "columns": list(columns)},
                workdir=Path(tmp),
            )
        snapshot_id = response["snapshot_id"]
        return None if snapshot_id is None else int(snapshot_id)

    def read(
        self,
        warehouse: str | Path,
        identifier: str,
        *,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
    ) -> pa.Table:
        """Read every split (optionally projected, optionally at ``snapshot_id``) into one table."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            output_path = Path(tmp) / "result.arrow"
            self.call(
                "read",
                {
                    "warehouse": str(warehouse),
                    "identifier": identifier,
                    "output_path": str(output_path),
                    "columns": None if columns is None else list(columns),
                    "snapshot_id": snapshot_id,
                    "tag": tag,
                },
                workdir=Path(tmp),
            )
            return _read_ipc(output_path)

    def create_tag(
        self, warehouse: str | Path, identifier: str, tag: str, *, snapshot_id: int | None = None,
        time_retained: str | None = None,
    ) -> None:
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            self.call("create_tag", {"warehouse": str(warehouse), "identifier": identifier, "tag": tag,
                                     "snapshot_id": snapshot_id, "time_retained": time_retained}, workdir=Path(tmp))

    def list_tags(self, warehouse: str | Path, identifier: str) -> dict[str, dict[str, Any]]:
        """Tag name -> {"snapshot_id", "tag_time_retained_s"} as pypaimon reads the tag files."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            response = self.call("list_tags", {"warehouse": str(warehouse), "identifier": identifier},
                                 workdir=Path(tmp))
        return dict(response["tags"])

    def alter(
        self,
        warehouse: str | Path,
        identifier: str,
        *,
        set_options: Mapping[str, str] | None = None,
        remove_options: Sequence[str] = (),
        add_columns: pa.Schema | None = None,
        rename_columns: Mapping[str, str] | None = None,
        drop_columns: Sequence[str] = (),
        column_types: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Apply schema changes in one ``alter_table`` call, in the order of the keyword parameters.

        Raises ``PyPaimonError`` with ``unsupported=True`` when pypaimon cannot alter the table.
        """
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            changes: list[dict[str, Any]] = [
                {"action": "set_option", "key": key, "value": value}
                for key, value in (set_options or {}).items()
            ]
            changes += [{"action": "remove_option", "key": key} for key in remove_options]
            if add_columns is not None:
                schema_path = Path(tmp) / "add_columns.arrow"
                _write_ipc(schema_path, add_columns.empty_table())
                changes += [
                    {"action": "add_column", "name": name, "schema_path": str(schema_path)}
                    for name in add_columns.names
                ]
            changes += [
                {"action": "rename_column", "name": old, "new_name": new}
                for old, new in (rename_columns or {}).items()
            ]
            changes += [{"action": "drop_column", "name": name} for name in drop_columns]
            changes += [
                {"action": "update_column_type", "name": name, "type": type_string}
                for name, type_string in (column_types or {}).items()
            ]
            return self.call(
                "alter",
                {"warehouse": str(warehouse), "identifier": identifier, "changes": changes},
                workdir=Path(tmp),
            )

    def latest_snapshot(self, warehouse: str | Path, identifier: str) -> dict[str, Any] | None:
        """The latest snapshot's JSON as pypaimon serialises it, or None for a table without one."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            response = self.call(
                "snapshot",
                {"warehouse": str(warehouse), "identifier": identifier},
                workdir=Path(tmp),
            )
        snapshot: dict[str, Any] | None = response["snapshot"]
        return snapshot
