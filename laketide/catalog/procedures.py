"""Paimon's procedures (``CALL sys.<name>(...)``) as a table: name -> parameters -> the call on a catalog.

Engine-neutral: laketide.spark.sql runs them for ``CALL`` statements; the CLI may use the same table. Arguments
come as Paimon spells them, named (``table => 'db.t'``) or positional in the declared order; values arrive as
Python values (str / int / float / bool) and are converted here.

Paimon: org.apache.paimon.spark.procedure.* (CompactProcedure, ExpireSnapshotsProcedure, CreateTagProcedure ...)
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from laketide.exceptions import InvalidOptionError, NoSuchProcedureError

if TYPE_CHECKING:
    from laketide.catalog.base import Catalog
    from laketide.table.table import Table

__all__ = ["PROCEDURES", "Procedure", "bind_arguments", "call_procedure", "parse_partitions"]


@dataclass(frozen=True, slots=True)
class Procedure:
    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    run: Callable[[Catalog, dict[str, Any]], list[Any]]  # returns the ``result`` rows

    @property
    def parameters(self) -> tuple[str, ...]:
        return self.required + self.optional


def _table(catalog: Catalog, args: Mapping[str, Any]) -> Table:
    from laketide.table.table import Table

    t = catalog.table(str(args["table"]))
    if not isinstance(t, Table):
        raise InvalidOptionError(f"procedure argument table => {args['table']!r}: not a data table")
    return t


def _int(args: Mapping[str, Any], name: str) -> int | None:
    v = args.get(name)
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"procedure argument {name} => {v!r} is not an integer") from None


def parse_partitions(text: Any) -> list[dict[str, str]] | None:
    """Paimon's ``partitions`` argument: ``'dt=1,hh=2;dt=3,hh=4'`` (``;`` between partitions)."""
    if text is None or str(text).strip() == "":
        return None
    out = []
    for spec in str(text).split(";"):
        part: dict[str, str] = {}
        for kv in spec.split(","):
            k, sep, v = kv.partition("=")
            if not sep or not k.strip():
                raise InvalidOptionError(f"procedure argument partitions => {text!r}: expected 'k=v,k2=v2;k=v3'")
            part[k.strip()] = v.strip()
        out.append(part)
    return out


def _duration(text: Any, name: str) -> _dt.timedelta:
    from laketide.options import parse_duration

    try:
        return _dt.timedelta(milliseconds=parse_duration(str(text)))
    except (InvalidOptionError, ValueError):
        raise InvalidOptionError(f"procedure argument {name} => {text!r} is not a duration like '1 d'") from None


def _instant(text: Any, name: str) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise InvalidOptionError(f"procedure argument {name} => {text!r} is not a timestamp "
                                 f"'yyyy-MM-dd HH:mm:ss'") from None


# -- the procedures ------------------------------------------------------------------------------------------------
def _compact(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    strategy = a.get("order_strategy")
    if strategy not in (None, "", "none"):
        raise InvalidOptionError(f"procedure compact: order_strategy => {strategy!r} is not supported yet "
                                 f"(laketide compacts without sort order)")
    where = a.get("where") or None
    partitions = parse_partitions(a.get("partitions"))
    if where is not None and partitions is not None:
        raise InvalidOptionError("procedure compact: give partitions => or where =>, not both")
    t = _table(cat, a)
    t.compact(full=True, partitions=partitions, where=where)
    return [True]


def _expire_snapshots(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    older = a.get("older_than")
    retained_ms = None
    if older is not None:
        retained_ms = max(0, int(time.time() * 1000) - int(_instant(older, "older_than").timestamp() * 1000))
    expired = t.expire_snapshots(retain_min=_int(a, "retain_min"), retain_max=_int(a, "retain_max"),
                                 time_retained_ms=retained_ms, max_deletes=_int(a, "max_deletes"))
    return [int(expired)]  # the count (an ExpireResult is an int subclass that Spark's LongType does not take)


def _remove_orphan_files(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    older = a.get("older_than")
    dry = str(a.get("dry_run", "false")).lower() == "true"
    result = t.remove_orphan_files(older_than=_instant(older, "older_than") if older is not None else None,
                                   dry_run=dry)
    return [result.count]


def _rollback(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    version = a.get("version")
    sid = _int(a, "snapshot_id")
    tag = a.get("tag")
    given = [x for x in (version, sid, tag) if x is not None]
    if len(given) != 1:
        raise InvalidOptionError("procedure rollback: give exactly one of version =>, snapshot_id =>, tag =>")
    target: int | str
    if sid is not None:
        target = sid
    elif tag is not None:
        target = str(tag)
    else:
        target = int(str(version)) if str(version).isdigit() else str(version)
    return [t.rollback_to(target).id]


def _create_tag(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    retained = a.get("time_retained")
    t.tags.create(str(a["tag"]), _int(a, "snapshot_id"),
                  time_retained=_duration(retained, "time_retained") if retained is not None else None)
    return [True]


def _delete_tag(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    for name in str(a["tag"]).split(","):
        t.tags.delete(name.strip())
    return [True]


def _rename_tag(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    _table(cat, a).tags.rename(str(a["tag"]), str(a["target_tag"]))
    return [True]


def _create_branch(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    tag = a.get("tag")
    _table(cat, a).branches.create(str(a["branch"]), tag=str(tag) if tag is not None else None)
    return [True]


def _delete_branch(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    for name in str(a["branch"]).split(","):
        t.branches.delete(name.strip())
    return [True]


def _fast_forward(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    _table(cat, a).branches.fast_forward(str(a["branch"]))
    return [True]


def _reset_consumer(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    t = _table(cat, a)
    sid = _int(a, "next_snapshot_id")
    if sid is None:
        t.consumers.delete(str(a["consumer_id"]))
    else:
        t.consumers.reset(str(a["consumer_id"]), sid)
    return [True]


def _rewrite_file_index(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    _table(cat, a).rewrite_file_index(partitions=parse_partitions(a.get("partitions")))
    return [True]


def _mark_partition_done(cat: Catalog, a: dict[str, Any]) -> list[Any]:
    """A ``_SUCCESS`` file (Paimon's SuccessFile JSON) in each partition directory; a second call keeps the
    creation time and updates the modification time, as Java does."""
    t = _table(cat, a)
    keys = list(t.partition_keys)
    partitions = parse_partitions(a.get("partitions"))
    if not keys:
        raise InvalidOptionError(f"procedure mark_partition_done: table {t.name} is not partitioned")
    if not partitions:
        raise InvalidOptionError("procedure mark_partition_done: partitions => 'k=v,...' is required")
    io = t.store.file_io
    paths = []
    for spec in partitions:
        if sorted(spec) != sorted(keys):
            raise InvalidOptionError(f"procedure mark_partition_done on table {t.name}: partition {spec} must name "
                                     f"exactly the partition keys {keys}")
        paths.append(t.store.path_factory.success_file_path([spec[k] for k in keys]))
    now = int(time.time() * 1000)
    for path in paths:
        created = now
        if io.exists(path):
            created = int(json.loads(io.read_bytes(path))["creationTime"])
        # Jackson's default pretty printer, as Paimon's JsonSerdeUtil.toJson writes it.
        body = f'{{\n  "creationTime" : {created},\n  "modificationTime" : {now}\n}}'
        io.write_bytes(path, body.encode(), overwrite=True)
    return [True]


PROCEDURES: dict[str, Procedure] = {p.name: p for p in (
    Procedure("compact", ("table",), ("partitions", "order_strategy", "order_by", "where", "options"), _compact),
    Procedure("expire_snapshots", ("table",), ("retain_max", "retain_min", "older_than", "max_deletes"),
              _expire_snapshots),
    Procedure("remove_orphan_files", ("table",), ("older_than", "dry_run"), _remove_orphan_files),
    Procedure("rollback", ("table",), ("version", "snapshot_id", "tag"), _rollback),
    Procedure("create_tag", ("table", "tag"), ("snapshot_id", "time_retained"), _create_tag),
    Procedure("delete_tag", ("table", "tag"), (), _delete_tag),
    Procedure("rename_tag", ("table", "tag", "target_tag"), (), _rename_tag),
    Procedure("create_branch", ("table", "branch"), ("tag",), _create_branch),
    Procedure("delete_branch", ("table", "branch"), (), _delete_branch),
    Procedure("fast_forward", ("table", "branch"), (), _fast_forward),
    Procedure("reset_consumer", ("table", "consumer_id"), ("next_snapshot_id",), _reset_consumer),
    Procedure("rewrite_file_index", ("table",), ("partitions",), _rewrite_file_index),
    Procedure("mark_partition_done", ("table", "partitions"), (), _mark_partition_done),
)}


def procedure(name: str) -> Procedure:
    short = name.lower().removeprefix("sys.")
    found = PROCEDURES.get(short)
    if found is None:
        raise NoSuchProcedureError(f"Unknown procedure sys.{short}; known procedures: {', '.join(sorted(PROCEDURES))}")
    return found


def bind_arguments(proc: Procedure, positional: Sequence[Any], named: Mapping[str, Any]) -> dict[str, Any]:
    """Positional arguments take the parameters in order; named ones must be known; required ones present."""
    if len(positional) > len(proc.parameters):
        raise InvalidOptionError(f"procedure sys.{proc.name} takes at most {len(proc.parameters)} arguments "
                                 f"{list(proc.parameters)}, got {len(positional)}")
    args = dict(zip(proc.parameters, positional, strict=False))
    for k, v in named.items():
        key = k.lower()
        if key not in proc.parameters:
            raise InvalidOptionError(f"procedure sys.{proc.name} has no parameter {k!r}; its parameters: "
                                     f"{list(proc.parameters)}")
        if key in args:
            raise InvalidOptionError(f"procedure sys.{proc.name}: parameter {key!r} given twice")
        args[key] = v
    missing = [p for p in proc.required if args.get(p) is None]
    if missing:
        raise InvalidOptionError(f"procedure sys.{proc.name}: missing required parameters {missing}")
    return args


def call_procedure(catalog: Catalog, name: str, positional: Sequence[Any] = (),
                   named: Mapping[str, Any] | None = None) -> list[Any]:
    """Run procedure ``name``; returns its ``result`` values (one per row)."""
    proc = procedure(name)
    return proc.run(catalog, bind_arguments(proc, positional, named or {}))
