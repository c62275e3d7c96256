"""``laketide doctor``: a table's health from its metadata (snapshots, manifests, a directory listing).

Each finding carries the number that triggered it, the threshold it crossed and the option or command that
fixes it. ``severe`` findings are the ones worth failing a CI / cron job for: reads or writes are degraded
now (sorted runs at the stop trigger, dynamic buckets exhausted). Interleaved writers without
``sequence.field`` (Paimon issue #5872) are a warning: laketide writers refuse out-of-order commits, a Java
writer of the same bucket does not.
"""

from __future__ import annotations

import datetime as _dt
import statistics
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from laketide.inspect.metadata import FileRow, live_files
from laketide.inspect.xray import dv_fill, sorted_runs
from laketide.meta.snapshot import CommitKind
from laketide.table.table import Table

__all__ = ["DoctorSettings", "Finding", "diagnose"]

SEVERE = "severe"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: str
    subject: str  # what it is about: the table, a partition/bucket, a file
    message: str
    value: float
    threshold: float
    fix: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorSettings:
    small_files_per_bucket: int = 10  # more small files than this in one bucket is a finding
    skew_ratio: float = 4.0  # largest bucket vs the median bucket of a partition, by records
    skew_min_records: int = 1000  # below this a partition is too small for skew to matter
    bucket_size_factor: float = 8.0  # a bucket this many target files large wants more buckets
    max_buckets_share: float = 0.8  # dynamic buckets: warn at this share of max-buckets
    orphan_age_ms: int = 86_400_000
    dv_fill: float = 0.5  # a deletion vector covering more of its file than this


def _bucket_label(partition: str, bucket: int) -> str:
    return f"{partition} bucket {bucket}" if partition else f"bucket {bucket}"


def diagnose(table: Table, settings: DoctorSettings | None = None) -> list[Finding]:
    s = settings or DoctorSettings()
    snapshot = table.latest_snapshot()
    files = live_files(table, snapshot)
    buckets: dict[tuple[str, int], list[FileRow]] = {}
    for f in files:
        buckets.setdefault((f.partition, f.entry.bucket), []).append(f)
    findings: list[Finding] = []
    findings += _small_files(table, buckets, s)
    if table.primary_keys:
        findings += _sorted_runs(table, buckets)
    findings += _skew(table, buckets, s)
    findings += _bucket_size(table, buckets, s)
    findings += _dynamic_buckets(table, buckets, s)
    findings += _unexpired_snapshots(table)
    findings += _orphans(table, s)
    findings += _deletion_vectors(table, files, s)
    findings += _cross_writer_ordering(table)
    return findings


def _target_file_size(table: Table) -> int:
    return table.options.target_file_size(has_primary_key=bool(table.primary_keys))


def _small_files(table: Table, buckets: dict[tuple[str, int], list[FileRow]], s: DoctorSettings) -> list[Finding]:
    ratio = float(table.options.raw("compaction.small-file-ratio") or 0.7)
    small_below = int(_target_file_size(table) * ratio)
    out = []
    for (partition, bucket), rows in sorted(buckets.items()):
        small = sum(1 for r in rows if r.entry.file.file_size < small_below)
        if small > s.small_files_per_bucket:
            out.append(Finding(
                "small-files", WARNING, _bucket_label(partition, bucket),
                f"{small} files below {small_below:,} bytes (compaction.small-file-ratio x target-file-size)",
                small, s.small_files_per_bucket,
                f"laketide compact {table.name} --full; for append tables lower compaction.min.file-num",
            ))
    return out


def _sorted_runs(table: Table, buckets: dict[tuple[str, int], list[FileRow]]) -> list[Finding]:
    stop = table.options.num_sorted_run_stop_trigger
    out = []
    for (partition, bucket), rows in sorted(buckets.items()):
        runs = len(sorted_runs(rows))
        if runs >= stop:
            out.append(Finding(
                "sorted-runs", SEVERE, _bucket_label(partition, bucket),
                f"{runs} sorted runs: every read merges them (num-sorted-run.stop-trigger is {stop}; Java "
                f"writers stall here)", runs, stop,
                f"laketide compact {table.name} --full; or lower num-sorted-run.compaction-trigger",
            ))
    return out


def _skew(table: Table, buckets: dict[tuple[str, int], list[FileRow]], s: DoctorSettings) -> list[Finding]:
    per_partition: dict[str, dict[int, int]] = {}
    for (partition, bucket), rows in buckets.items():
        per_partition.setdefault(partition, {})[bucket] = sum(r.entry.file.row_count for r in rows)
    expected = table.options.bucket if table.options.bucket > 0 else None
    out = []
    for partition, counts in sorted(per_partition.items()):
        values = list(counts.values()) + [0] * max(0, (expected or 0) - len(counts))
        if len(values) < 2 or max(values) < s.skew_min_records:
            continue
        median = statistics.median(values)
        ratio = max(values) / median if median else float("inf")
        if ratio >= s.skew_ratio:
            worst = max(counts, key=counts.__getitem__)
            out.append(Finding(
                "bucket-skew", WARNING, _bucket_label(partition, worst),
                f"holds {max(values):,} records, {ratio:.1f}x the median bucket of "
                f"{partition or 'the table'} ({median:,.0f})", round(ratio, 2), s.skew_ratio,
                "choose a bucket-key with more evenly spread values (a new table, or rescale)",
            ))
    return out


def _bucket_size(table: Table, buckets: dict[tuple[str, int], list[FileRow]], s: DoctorSettings) -> list[Finding]:
    if table.options.bucket <= 0:
        return []  # dynamic and bucket-unaware tables grow buckets themselves
    target = _target_file_size(table)
    limit = int(target * s.bucket_size_factor)
    out = []
    for (partition, bucket), rows in sorted(buckets.items()):
        size = sum(r.entry.file.file_size for r in rows)
        if size > limit:
            out.append(Finding(
                "bucket-size", WARNING, _bucket_label(partition, bucket),
                f"{size:,} bytes, {size / target:.1f}x target-file-size ({target:,}): one writer and one reader "
                f"task per bucket", round(size / target, 2), s.bucket_size_factor,
                f"raise the option bucket (now {table.options.bucket}) and rescale the table",
            ))
    return out


def _dynamic_buckets(table: Table, buckets: dict[tuple[str, int], list[FileRow]], s: DoctorSettings) -> list[Finding]:
    raw = table.options.raw("dynamic-bucket.max-buckets")
    max_buckets = int(raw) if raw else -1
    if table.options.bucket != -1 or not table.primary_keys or max_buckets <= 0:
        return []
    per_partition = Counter(partition for partition, _ in buckets)
    out = []
    for partition, n in sorted(per_partition.items()):
        if n >= max_buckets * s.max_buckets_share:
            full = n >= max_buckets
            out.append(Finding(
                "dynamic-buckets", SEVERE if full else WARNING, partition or table.name,
                f"{n} of dynamic-bucket.max-buckets {max_buckets} buckets in use"
                + (": new keys now go to full buckets" if full else ""), n, max_buckets,
                "raise dynamic-bucket.max-buckets (or dynamic-bucket.target-row-num)",
            ))
    return out


def _unexpired_snapshots(table: Table) -> list[Finding]:
    o = table.options
    ids = table.snapshot_manager.snapshot_ids()
    if not ids:
        return []
    over_max = len(ids) - o.snapshot_num_retained_max
    # Beyond num-retained.min, snapshots older than time-retained are due for expiration.
    now = int(time.time() * 1000)
    candidates = ids[: max(0, len(ids) - o.snapshot_num_retained_min)]
    overdue = 0
    for sid in candidates:
        snap = table.snapshot_manager.try_snapshot(sid)
        if snap is not None and snap.time_millis < now - o.snapshot_time_retained:
            overdue += 1
    due = max(over_max, overdue)
    if due <= 0:
        return []
    return [Finding(
        "unexpired-snapshots", WARNING, table.name,
        f"{due} of {len(ids)} snapshots are past snapshot.num-retained.max ({o.snapshot_num_retained_max}) or "
        f"snapshot.time-retained with more than num-retained.min ({o.snapshot_num_retained_min}) kept; their "
        f"files stay on storage", due, 0,
        f"laketide expire {table.name} (writers expire after each commit unless write-only is set)",
    )]


def _orphans(table: Table, s: DoctorSettings) -> list[Finding]:
    result = table.remove_orphan_files(older_than=_dt.timedelta(milliseconds=s.orphan_age_ms), dry_run=True)
    if not result.count:
        return []
    return [Finding(
        "orphan-files", WARNING, table.name,
        f"{result.count} files ({result.total_bytes:,} bytes) older than {s.orphan_age_ms // 1000:,} s that no "
        f"snapshot references, e.g. {result.paths[0]}", result.count, 0,
        f"laketide clean-orphans {table.name} --dry-run, then without --dry-run",
    )]


def _deletion_vectors(table: Table, files: list[FileRow], s: DoctorSettings) -> list[Finding]:
    out = []
    for f in files:
        fill = dv_fill(f)
        if fill is not None and fill > s.dv_fill:
            out.append(Finding(
                "deletion-vectors", WARNING, f"{_bucket_label(f.partition, f.entry.bucket)} {f.entry.file.file_name}",
                f"a deletion vector marks {f.dv_deleted:,} of {f.entry.file.row_count:,} rows ({fill:.0%}) deleted: "
                f"reads scan and drop them", round(fill, 3), s.dv_fill,
                f"laketide compact {table.name} --full",
            ))
    return out


def _cross_writer_ordering(table: Table) -> list[Finding]:
    """Writers whose commits interleave on a primary-key table without sequence.field (Paimon #5872)."""
    if not table.primary_keys or table.options.sequence_field:
        return []
    users = [s.commit_user for s in table.snapshot_manager.snapshots()
             if s.commit_kind in (CommitKind.APPEND, CommitKind.OVERWRITE)]
    # A user that comes back after another user committed: two writers were live at the same time.
    # One-shot jobs (a new commit user each, one after the other) never interleave.
    seen: set[str] = set()
    interleaved: set[str] = set()
    previous = None
    for u in users:
        if u != previous and u in seen:
            interleaved.add(u)
        seen.add(u)
        previous = u
    if not interleaved:
        return []
    return [Finding(
        "cross-writer-ordering", WARNING, table.name,
        f"{len(interleaved) + 1} or more writers committed interleaved (e.g. {sorted(interleaved)[0]}) without "
        f"sequence.field: which writer's row wins a key depends on commit order, not on event time; a Java "
        f"writer can make the earlier commit win (Paimon issue #5872)", len(interleaved) + 1, 1,
        "set sequence.field to an event-time column, or route each key to one writer",
    )]
