"""Which snapshot a read sees, from its arguments or the table's (dynamic) options: ``scan.snapshot-id``,
``scan.tag-name``, ``scan.timestamp-millis``, ``scan.timestamp`` (a local date-time string), ``scan.version`` (a tag
name, a snapshot id or a timestamp string), ``scan.watermark`` (the first snapshot whose watermark reaches it); and
which range an incremental read covers: ``incremental-between`` (snapshot ids or tag names),
``incremental-between-timestamp`` and ``incremental-between-scan-mode``.

Strings in ``scan.timestamp`` are wall-clock times in the table's ``local-time-zone`` (Java uses the JVM's zone).

Paimon: utils.TimeTravelUtil, table.source.snapshot.IncrementalStartingScanner, CoreOptions#SCAN_VERSION
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING

import numpy as np

from laketide.exceptions import InvalidOptionError, NoSuchSnapshotError
from laketide.meta.snapshot import Snapshot

if TYPE_CHECKING:
    from laketide.table.table import Table

__all__ = ["incremental_range", "options_snapshot", "parse_timestamp_string"]

_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse_timestamp_string(table: Table, text: str, *, key: str) -> int:
    """Epoch millis of a local date-time string (``2024-05-01 10:30:00[.123]``, ``2024-05-01``)."""
    from laketide.schema.cast_temporal import to_instant

    for fmt in _FORMATS:
        try:
            local = _dt.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        wall = (local - _dt.datetime(1970, 1, 1)) // _dt.timedelta(milliseconds=1)
        return int(to_instant(np.array([wall], dtype=np.int64), table.options.local_time_zone)[0])
    raise InvalidOptionError(
        f"Table {table.name}: {key} {text!r} is not a timestamp like '2024-05-01 10:30:00' or '2024-05-01'"
    )


def _at_or_before(table: Table, millis: int, *, what: str) -> Snapshot:
    s = table.snapshot_manager.earlier_or_equal_time_millis(millis)
    if s is None:
        raise NoSuchSnapshotError(f"Table {table.name} has no snapshot at or before {what}")
    return s


def options_snapshot(table: Table) -> Snapshot | None:
    """The snapshot the table's time-travel options select; None when none is set. More than one is refused."""
    opts = table.options
    given = {k: v for k, v in (("scan.snapshot-id", opts.scan_snapshot_id), ("scan.tag-name", opts.scan_tag_name),
                               ("scan.timestamp-millis", opts.scan_timestamp_millis),
                               ("scan.timestamp", opts.scan_timestamp), ("scan.version", opts.scan_version),
                               ("scan.watermark", opts.scan_watermark))
             if v is not None}
    if not given:
        return None
    if len(given) > 1:
        raise InvalidOptionError(f"Table {table.name}: give at most one of {sorted(given)}")
    ((key, value),) = given.items()
    if key == "scan.snapshot-id":
        return table.snapshot_manager.snapshot(int(value))
    if key == "scan.tag-name":
        return table.tag_snapshot(str(value))
    if key == "scan.timestamp-millis":
        return _at_or_before(table, int(value), what=f"scan.timestamp-millis {value}")
    if key == "scan.watermark":
        found = next((s for s in table.snapshot_manager.snapshots()
                      if s.watermark is not None and s.watermark >= int(value)), None)
        if found is None:
            raise NoSuchSnapshotError(f"Table {table.name} has no snapshot with a watermark at or after {value}")
        return found
    if key == "scan.timestamp":
        return _at_or_before(table, parse_timestamp_string(table, str(value), key=key), what=f"{key} {value!r}")
    return version_snapshot(table, str(value))


def version_snapshot(table: Table, version: str) -> Snapshot:
    """``scan.version``: a tag of that name first, then a snapshot id, then a timestamp string."""
    text = version.strip()
    if text and table.tags.exists(text):
        return table.tags.get(text).snapshot
    if text.isdigit():
        return table.snapshot_manager.snapshot(int(text))
    return _at_or_before(table, parse_timestamp_string(table, text, key="scan.version"),
                         what=f"scan.version {version!r}")


def _pair(table: Table, key: str, value: str) -> tuple[str, str]:
    parts = [p.strip() for p in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(f"Table {table.name}: {key} must be 'start,end', got {value!r}")
    return parts[0], parts[1]


def _snapshot_or_tag(table: Table, ref: str, *, key: str) -> Snapshot:
    if table.tags.exists(ref):
        return table.tags.get(ref).snapshot
    if ref.isdigit():
        sid = int(ref)
        s = table.snapshot_manager.try_snapshot(sid)
        if s is not None:
            return s
        held = next((t.snapshot for t in table.tags.list() if t.snapshot.id == sid), None)
        if held is not None:
            return held
        raise NoSuchSnapshotError(f"Table {table.name}: {key} names snapshot {sid}, which does not exist")
    raise NoSuchSnapshotError(f"Table {table.name}: {key} names {ref!r}, neither a tag nor a snapshot id")


def incremental_range(table: Table) -> tuple[Snapshot | None, Snapshot] | None:
    """(start, end) of ``incremental-between`` / ``incremental-between-timestamp``: the changes after ``start``
    (None: from the beginning) up to ``end``. None when neither option is set."""
    opts = table.options
    between, between_ts = opts.incremental_between, opts.incremental_between_timestamp
    if between is not None and between_ts is not None:
        raise InvalidOptionError(
            f"Table {table.name}: give incremental-between or incremental-between-timestamp, not both"
        )
    if between is not None:
        a, b = _pair(table, "incremental-between", between)
        start = _snapshot_or_tag(table, a, key="incremental-between")
        end = _snapshot_or_tag(table, b, key="incremental-between")
    elif between_ts is not None:
        a, b = _pair(table, "incremental-between-timestamp", between_ts)
        try:
            t0, t1 = int(a), int(b)
        except ValueError:
            t0 = parse_timestamp_string(table, a, key="incremental-between-timestamp")
            t1 = parse_timestamp_string(table, b, key="incremental-between-timestamp")
        start_or_none = table.snapshot_manager.earlier_or_equal_time_millis(t0)
        end = _at_or_before(table, t1, what=f"incremental-between-timestamp end {b}")
        if start_or_none is None:
            return None, end
        start = start_or_none
    else:
        return None
    if end.id < start.id:
        raise InvalidOptionError(
            f"Table {table.name}: incremental range ends (snapshot {end.id}) before it starts (snapshot {start.id})"
        )
    return start, end
