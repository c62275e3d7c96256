"""Tags: named snapshots kept beyond snapshot expiration (``tag/tag-<name>``, a snapshot's JSON).

A tag created with a retention also carries ``tagCreateTime`` (Java's LocalDateTime as an array) and
``tagTimeRetained`` (Java's Duration in seconds), exactly the fields Java's ``Tag`` adds to a snapshot; without one
the file is the snapshot's JSON alone (older readers cannot parse the extra fields, Java writes none either).

Deleting the tag of an expired snapshot also deletes the files only it held (Java: TagManager#doClean): the data
files and manifests of the tag not used by its neighbours (the previous tag, and the earliest snapshot or the next
tag, whichever comes first) nor by any branch.

Paimon: utils.TagManager, tag.Tag, tag.TagAutoCreation, tag.TagBatchCreation, tag.TagTimeExpire,
tag.TagPeriodHandler
"""

from __future__ import annotations

import datetime as _dt
import logging
import builtins
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from laketide.exceptions import CorruptMetadataError, FileIOError, InvalidOptionError, NoSuchSnapshotError
from laketide.meta.snapshot import Snapshot
from laketide.table.names import check_name

if TYPE_CHECKING:
    from laketide.store import FileStore

__all__ = ["Tag", "TagManager", "auto_tag_after_commit"]

_LOG = logging.getLogger(__name__)

TAG_PREFIX = "tag-"
_CREATE_TIME = "tagCreateTime"
_TIME_RETAINED = "tagTimeRetained"
_READ_ERRORS = (FileIOError, CorruptMetadataError)


@dataclass(frozen=True, slots=True)
class Tag:
    """A tag: its name, the snapshot it holds, and (when created with a retention) when it was made and how long
    it is kept. ``create_time`` is a wall-clock time (Java's LocalDateTime), as Java writes it."""

    name: str
    snapshot: Snapshot
    create_time: _dt.datetime | None = None
    time_retained: _dt.timedelta | None = None

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    def expired(self, now: _dt.datetime) -> bool:
        return (self.create_time is not None and self.time_retained is not None
                and self.create_time + self.time_retained < now)

    def to_json(self) -> str:
        extra: dict[str, Any] = {}
        if self.time_retained is not None:
            created = self.create_time or _dt.datetime.now()
            extra[_CREATE_TIME] = _local_datetime_array(created)
            extra[_TIME_RETAINED] = self.time_retained.total_seconds()
        return replace(self.snapshot, extra={**self.snapshot.extra, **extra}).to_json()

    @classmethod
    def from_json(cls, name: str, data: bytes, *, path: str) -> Tag:
        raw = Snapshot.from_json(data, path=path)
        extra = dict(raw.extra)
        created, retained = extra.pop(_CREATE_TIME, None), extra.pop(_TIME_RETAINED, None)
        try:
            create_time = None if created is None else _parse_local_datetime(created)
            time_retained = None if retained is None else _dt.timedelta(seconds=float(retained))
        except (TypeError, ValueError) as e:
            raise CorruptMetadataError(f"Cannot parse tag file {path}: {e!r}", path=path) from e
        return cls(name=name, snapshot=replace(raw, extra=extra), create_time=create_time,
                   time_retained=time_retained)


def _local_datetime_array(value: _dt.datetime) -> list[int]:
    # Jackson's LocalDateTimeSerializer: [y, m, d, h, min] then second and nanos only when non-zero.
    out = [value.year, value.month, value.day, value.hour, value.minute]
    if value.second or value.microsecond:
        out.append(value.second)
        if value.microsecond:
            out.append(value.microsecond * 1000)
    return out


def _parse_local_datetime(value: object) -> _dt.datetime:
    if isinstance(value, str):  # ISO text (a mapper configured without timestamps)
        return _dt.datetime.fromisoformat(value)
    if not isinstance(value, list) or len(value) < 5:
        raise ValueError(f"not a LocalDateTime: {value!r}")
    y, mo, d, h, mi, s, ns = (list(value) + [0, 0])[:7]
    return _dt.datetime(y, mo, d, h, mi, s, ns // 1000)


def _ms_to_timedelta(ms: int | None) -> _dt.timedelta | None:
    return None if ms is None else _dt.timedelta(milliseconds=ms)


class TagManager:
    """The tags of one branch of a table (``t.tags``): create, replace, rename, delete, list, expire."""

    def __init__(self, store: FileStore) -> None:
        self.store = store

    @property
    def _dir(self) -> str:
        return self.store.path_factory.tag_dir

    def path(self, name: str) -> str:
        return f"{self._dir}/{TAG_PREFIX}{check_name('tag', name, table_name=self.store.table_name)}"

    # -- reading -----------------------------------------------------------------------------------------------
    def exists(self, name: str) -> bool:
        return self.store.file_io.exists(self.path(name))

    def get(self, name: str) -> Tag:
        """Tag ``name``; NoSuchSnapshotError naming the table when there is none."""
        return self._read(name, self.path(name))

    def _read(self, name: str, path: str) -> Tag:
        try:
            data = self.store.file_io.read_bytes(path)
        except FileIOError as e:
            if not self.store.file_io.exists(path):
                raise NoSuchSnapshotError(f"Tag {name!r} of table {self.store.table_name} does not exist") from e
            raise
        return Tag.from_json(name, data, path=path)

    def names(self) -> list[str]:
        out = []
        for st in self.store.file_io.list_status(self._dir):
            base = st.path.rstrip("/").rsplit("/", 1)[-1]
            if not st.is_dir and base.startswith(TAG_PREFIX):
                out.append(base[len(TAG_PREFIX):])
        return sorted(out)

    def list(self) -> list[Tag]:
        """Every tag, by snapshot id then name (unreadable or vanished ones are skipped)."""
        out = []
        for name in self.names():
            try:
                # By its listed path: a name Java allows but laketide would not create (e.g. 'a..b') still reads.
                out.append(self._read(name, f"{self._dir}/{TAG_PREFIX}{name}"))
            except (NoSuchSnapshotError, *_READ_ERRORS):
                continue
        return sorted(out, key=lambda t: (t.snapshot.id, t.name))

    def __iter__(self) -> Iterator[Tag]:
        return iter(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.exists(name)

    # -- changing ----------------------------------------------------------------------------------------------
    def create(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        time_retained: _dt.timedelta | None = None,
        ignore_if_exists: bool = False,
    ) -> Tag:
        """Tag snapshot ``snapshot_id`` (default: the latest) as ``name``; ``time_retained`` (default
        ``tag.default-time-retained``) lets tag expiry remove it. An existing name is refused (InvalidOptionError)
        unless ``ignore_if_exists``; nothing is written then."""
        path = self.path(name)
        snapshot = self._source_snapshot(snapshot_id)
        if self.store.file_io.exists(path):
            if ignore_if_exists:
                return self.get(name)
            raise InvalidOptionError(f"Table {self.store.table_name}: tag {name!r} already exists")
        tag = self._new_tag(name, snapshot, time_retained)
        # Write-if-absent: two processes creating the same tag cannot overwrite each other.
        if not self.store.file_io.try_write_atomic(path, tag.to_json().encode()):
            if ignore_if_exists:
                return self.get(name)
            raise InvalidOptionError(f"Table {self.store.table_name}: tag {name!r} already exists")
        return tag

    def replace(self, name: str, snapshot_id: int | None = None, *, time_retained: _dt.timedelta | None = None) -> Tag:
        """Point the existing tag ``name`` at ``snapshot_id`` (default: the latest)."""
        path = self.path(name)
        if not self.store.file_io.exists(path):
            raise NoSuchSnapshotError(f"Tag {name!r} of table {self.store.table_name} does not exist")
        snapshot = self._source_snapshot(snapshot_id)
        tag = self._new_tag(name, snapshot, time_retained)
        self.store.file_io.write_bytes(path, tag.to_json().encode(), overwrite=True)
        return tag

    def rename(self, name: str, new_name: str) -> Tag:
        """Rename tag ``name``; the new name must be free. The new file is written before the old one goes."""
        old = self.get(name)
        new_path = self.path(new_name)
        if self.store.file_io.exists(new_path):
            raise InvalidOptionError(f"Table {self.store.table_name}: tag {new_name!r} already exists")
        data = self.store.file_io.read_bytes(self.path(name))
        if not self.store.file_io.try_write_atomic(new_path, data):
            raise InvalidOptionError(f"Table {self.store.table_name}: tag {new_name!r} already exists")
        self.store.file_io.delete(self.path(name))
        return replace(old, name=new_name)

    def delete(self, name: str) -> None:
        """Delete tag ``name`` (NoSuchSnapshotError if absent). When its snapshot has expired, the files only it
        still held go too."""
        tag = self.get(name)
        sm = self.store.snapshot_manager
        if sm.snapshot_exists(tag.snapshot.id):
            self.store.file_io.delete(self.path(name))
            return
        others = [t for t in self.list() if t.name != name]
        self.store.file_io.delete(self.path(name))
        if any(t.snapshot.id == tag.snapshot.id for t in others):
            return  # another tag still holds the same snapshot
        from laketide.table.file_holders import clean_unused_files

        left = [t.snapshot for t in others if t.snapshot.id < tag.snapshot.id]
        right = [t.snapshot for t in others if t.snapshot.id > tag.snapshot.id]
        neighbours = ([left[-1]] if left else []) + ([right[0]] if right else [])
        earliest = sm.earliest_snapshot_id()
        if earliest is not None:
            neighbours.append(sm.snapshot(earliest))
        clean_unused_files(self.store, tag.snapshot, neighbours)

    # -- expiry ------------------------------------------------------------------------------------------------
    def expire(self, now: _dt.datetime | None = None) -> builtins.list[str]:
        """Delete the tags whose ``tagCreateTime + tagTimeRetained`` has passed; returns their names
        (Paimon: TagTimeExpire)."""
        now = now or _dt.datetime.now()
        gone = []
        for tag in self.list():
            if tag.expired(now):
                self.delete(tag.name)
                gone.append(tag.name)
        return gone

    def _source_snapshot(self, snapshot_id: int | None) -> Snapshot:
        sm = self.store.snapshot_manager
        if snapshot_id is None:
            latest = sm.latest_snapshot()
            if latest is None:
                raise NoSuchSnapshotError(f"Table {self.store.table_name} has no snapshot to tag")
            return latest
        if not isinstance(snapshot_id, int) or isinstance(snapshot_id, bool):
            raise InvalidOptionError(
                f"Table {self.store.table_name}: snapshot_id must be an int, not {type(snapshot_id).__name__}"
            )
        s = sm.try_snapshot(snapshot_id)
        if s is not None:
            return s
        held = next((t.snapshot for t in self.list() if t.snapshot.id == snapshot_id), None)
        if held is None:
            raise NoSuchSnapshotError(
                f"Cannot tag snapshot {snapshot_id} of table {self.store.table_name}: it does not exist (expired or "
                f"never committed) and no tag holds it"
            )
        return held

    def _new_tag(self, name: str, snapshot: Snapshot, time_retained: _dt.timedelta | None) -> Tag:
        if time_retained is None:
            time_retained = _ms_to_timedelta(self.store.options.tag_default_time_retained)
        if time_retained is not None and (not isinstance(time_retained, _dt.timedelta) or time_retained
                                          <= _dt.timedelta(0)):
            raise InvalidOptionError(
                f"Table {self.store.table_name}: time_retained of tag {name!r} must be a positive timedelta, got "
                f"{time_retained!r}"
            )
        plain = replace(snapshot, extra={})
        return Tag(name=name, snapshot=plain, create_time=_dt.datetime.now() if time_retained else None,
                   time_retained=time_retained)


# -- automatic creation ------------------------------------------------------------------------------------------
_PERIODS = {"daily": _dt.timedelta(days=1), "hourly": _dt.timedelta(hours=1), "two-hours": _dt.timedelta(hours=2)}


class _Period:
    """Paimon: TagPeriodHandler (daily, hourly, two-hours with Java's formatters)."""

    def __init__(self, period: str, formatter: str) -> None:
        self.step = _PERIODS[period]
        daily = period == "daily"
        dashes = formatter == "with_dashes" or period == "two-hours"
        self.fmt = ("%Y-%m-%d" if dashes else "%Y%m%d") + ("" if daily else (" %H" if dashes else "%H"))

    def to_name(self, t: _dt.datetime) -> str:
        return t.strftime(self.fmt)

    def to_time(self, name: str) -> _dt.datetime | None:
        try:
            t = _dt.datetime.strptime(name, self.fmt)
        except ValueError:
            return None
        return t if self.to_name(t) == name else None  # strict: exactly Java's digits

    def previous_tag(self, t: _dt.datetime) -> _dt.datetime:
        step_ms = self.step // _dt.timedelta(milliseconds=1)
        ms = (t - _dt.datetime(1970, 1, 1)) // _dt.timedelta(milliseconds=1)
        return _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=(ms // step_ms) * step_ms) - self.step


def _wall_clock(store: FileStore, epoch_ms: int) -> _dt.datetime:
    from laketide.schema.cast_temporal import to_local

    local = int(to_local(np.array([epoch_ms], dtype=np.int64), store.options.local_time_zone)[0])
    return _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=local)


def auto_tag_after_commit(store: FileStore, tags: TagManager | None = None) -> None:
    """What a commit runs after expiring snapshots: ``tag.automatic-creation`` (process-time: one tag per
    ``tag.creation-period`` once it ended plus ``tag.creation-delay``; batch: ``batch-write-<date>`` of the latest
    snapshot), ``tag.num-retained-max`` and tag time expiry (Paimon: TagAutoManager)."""
    mode = store.options.tag_automatic_creation
    tags = tags or TagManager(store)
    if mode == "process-time":
        _process_time_tags(store, tags)
    elif mode == "batch":
        _batch_tag(store, tags)
    tags.expire()


def _process_time_tags(store: FileStore, tags: TagManager) -> None:
    opts = store.options
    period = _Period(opts.tag_creation_period, opts.tag_period_formatter)
    delay = _dt.timedelta(milliseconds=opts.tag_creation_delay)
    auto = sorted((t, n) for n in tags.names() if (t := period.to_time(n)) is not None)
    sm = store.snapshot_manager
    next_tag: _dt.datetime | None = None
    first = sm.earliest_snapshot_id() or 1
    if auto:
        last_time, last_name = auto[-1]
        try:
            first = max(first, tags.get(last_name).snapshot.id + 1)
        except NoSuchSnapshotError:
            pass
        next_tag = last_time + period.step
    latest = sm.latest_snapshot_id() or 0
    if next_tag is not None:
        # Snapshot times only grow: when the latest one is not due, none is (no scan of the day's snapshots).
        newest = sm.try_snapshot(latest)
        if newest is None or _wall_clock(store, newest.time_millis) - delay < next_tag + period.step:
            first = latest + 1
    for sid in range(first, latest + 1):
        s = sm.try_snapshot(sid)
        if s is None:
            continue
        t = _wall_clock(store, s.time_millis)
        if next_tag is None or t - delay >= next_tag + period.step:
            this = period.previous_tag(t)
            tags.create(period.to_name(this), s.id, ignore_if_exists=True)
            next_tag = this + period.step
    limit = opts.tag_num_retained_max
    if limit is not None:
        auto_tags = [t for t in tags.list() if period.to_time(t.name) is not None]
        for tag in auto_tags[: max(0, len(auto_tags) - limit)]:
            tags.delete(tag.name)


def _batch_tag(store: FileStore, tags: TagManager) -> None:
    latest = store.snapshot_manager.latest_snapshot()
    if latest is None:
        return
    name = "batch-write-" + _wall_clock(store, latest.time_millis).strftime("%Y-%m-%d")
    if tags.exists(name):
        if tags.get(name).snapshot.id == latest.id:
            return
        tags.delete(name)
    tags.create(name, latest.id)
    limit = store.options.tag_num_retained_max
    if limit is not None:
        every = tags.list()
        for tag in every[: max(0, len(every) - limit)]:
            tags.delete(tag.name)
