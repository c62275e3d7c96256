"""Argument parsing and the sub-commands of ``laketide``.

Exit codes: 0 success, 1 a laketide error (one line on stderr, no traceback), 2 a usage error (argparse),
3 ``doctor`` found a severe problem (or any problem with ``--fail-on warning``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

from laketide.cli.args import column_list, duration_ms, parse_partition
from laketide.cli.config import WAREHOUSE_ENV, catalog_from_args, parse_pairs, read_config
from laketide.cli.render import Output
from laketide.exceptions import InvalidOptionError, LaketideError

__all__ = ["build_parser", "main"]

DEBUG_ENV = "LAKETIDE_DEBUG"


def main(argv: Sequence[str] | None = None) -> None:
    """Run one command. Errors print one line (``laketide: error: ...``) and exit non-zero."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except KeyboardInterrupt:
        print("laketide: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as e:
        if os.environ.get(DEBUG_ENV):
            raise
        kind = "error" if isinstance(e, LaketideError) else f"unexpected error ({type(e).__name__})"
        print(f"laketide: {kind}: {e}{_hint(e)}", file=sys.stderr)
        raise SystemExit(1) from None
    if code:
        raise SystemExit(code)


def _hint(e: BaseException) -> str:
    """What to check when storage refuses or cannot be reached (the backend's own words are terse)."""
    cause = e.__cause__
    if isinstance(cause, PermissionError):
        return " (access denied: check the storage credentials, e.g. -o key=... -o secret=..., and their rights)"
    if cause is not None and "EndpointConnectionError" in type(cause).__name__ + str(e):
        return " (the storage endpoint cannot be reached: check -o endpoint_url=... and the network)"
    return ""


# -- parser ----------------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="laketide", description="Inspect and maintain laketide / Paimon tables.")
    cat = parser.add_argument_group("catalog")
    cat.add_argument("--warehouse", help="warehouse path or URI (s3://bucket/wh); default $LAKETIDE_WAREHOUSE")
    cat.add_argument("--metastore", help="catalog metastore (default: filesystem)")
    cat.add_argument("--uri", help="metastore service URI (not used by the filesystem metastore)")
    cat.add_argument("--config", help="a .toml or .yaml file with warehouse, metastore, uri, storage-options")
    cat.add_argument("-o", "--storage-option", action="append", metavar="KEY=VALUE",
                     help="a filesystem option (endpoint_url, key, secret, ...); repeatable")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Callable[[argparse.Namespace], int | None], help_text: str,
                *, table: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON document for scripts")
        if table:
            p.add_argument("table", help="database.table")
        p.set_defaults(handler=handler)
        return p

    command("databases", _databases, "list databases", table=False)
    p = command("tables", _tables, "list the tables of a database", table=False)
    p.add_argument("database")
    command("describe", _describe, "schema, keys, options, bucket mode, size, file and snapshot counts")
    for name, limit, help_text in (("read", None, "read rows"), ("head", 10, "the first rows")):
        p = command(name, _read, help_text)
        p.add_argument("--where", help="filter, e.g. \"dt = '2024-01-01' AND id > 5\"")
        p.add_argument("--columns", help="comma separated column names")
        p.add_argument("--snapshot", type=int, help="read this snapshot id (time travel)")
        p.add_argument("--tag", help="read the snapshot of this tag")
        p.add_argument("-n", "--limit", type=int, default=limit, help="at most this many rows")
    command("snapshots", _snapshots, "every snapshot with its commit metadata")
    p = command("history", _history, "the commits, newest first")
    p.add_argument("-n", "--limit", type=int, default=None)
    for name, handler, help_text in (("files", _files, "live data files"),
                                     ("partitions", _partitions, "partitions with files, rows, bytes"),
                                     ("buckets", _buckets, "buckets with files, rows, bytes, sorted runs")):
        p = command(name, handler, help_text)
        p.add_argument("--snapshot", type=int, help="as of this snapshot id")
    p = command("create-table", _create_table, "create a table from a column spec or a Parquet file's schema")
    p.add_argument("columns", nargs="?", help="\"id BIGINT NOT NULL, v STRING\"")
    p.add_argument("--like", help="take the columns from this Parquet file's schema")
    p.add_argument("--primary-key", help="comma separated")
    p.add_argument("--partition-by", help="comma separated")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="table option; repeatable")
    p.add_argument("--comment")
    p.add_argument("--if-not-exists", action="store_true")
    p = command("write", _write, "import Parquet / CSV / JSON-lines files as one commit")
    p.add_argument("files", nargs="+")
    p.add_argument("--format", choices=["parquet", "csv", "json"], help="default: from the file extension")
    p.add_argument("--mode", choices=["append", "overwrite"], default="append")
    p = command("compact", _compact, "compact the table (or partitions)")
    p.add_argument("--full", action="store_true", help="merge each bucket into one sorted run")
    p.add_argument("--partition", action="append", metavar="KEY=VALUE[,KEY=VALUE]", help="repeatable")
    p.add_argument("--where", help="partition predicate")
    p = command("expire", _expire, "expire old snapshots and delete the files only they used")
    p.add_argument("--retain-min", type=int)
    p.add_argument("--retain-max", type=int)
    p.add_argument("--older-than", help="duration, e.g. '1 h' (default: snapshot.time-retained)")
    p = command("clean-orphans", _clean_orphans, "delete files no snapshot references")
    p.add_argument("--older-than", default="1 d", help="only files older than this duration (default '1 d')")
    p.add_argument("--dry-run", action="store_true", help="list, delete nothing")
    p = command("rollback", _rollback, "make a snapshot (id) or a tag (name) the latest again")
    p.add_argument("target")
    p = command("xray", _xray, "levels, sorted runs and the snapshot timeline of a table's LSM trees")
    p.add_argument("--partition", metavar="KEY=VALUE[,KEY=VALUE]")
    p.add_argument("--bucket", type=int)
    p.add_argument("--out", help="write a picture: .png or .svg")
    p = command("doctor", _doctor, "metadata health check; exit 3 on a severe finding")
    p.add_argument("--orphan-age", default="1 d", help="unreferenced files older than this are orphan-looking")
    p.add_argument("--dv-threshold", type=float, default=0.5,
                   help="flag deletion vectors covering more than this share of a file (default 0.5)")
    p.add_argument("--fail-on", choices=["severe", "warning"], default="severe",
                   help="exit 3 on severe findings (default) or on any finding")
    from laketide.rest.serve import add_arguments as serve_arguments  # the server itself imports the `rest` extra

    help_text = "serve Paimon's REST catalog API over this warehouse (bearer token auth)"
    p = sub.add_parser("serve", help=help_text, description=help_text)
    serve_arguments(p)
    p.set_defaults(handler=_serve)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from laketide.rest.serve import serve_from_args

    config = read_config(args.config) if args.config else {}
    warehouse = args.warehouse or config.get("warehouse") or os.environ.get(WAREHOUSE_ENV)
    if not warehouse:
        raise InvalidOptionError(f"serve: no warehouse: pass --warehouse, --config FILE or set {WAREHOUSE_ENV}")
    serve_from_args(str(warehouse), args)
    return 0


# -- helpers -----------------------------------------------------------------------------------------------------

def _table(args: argparse.Namespace) -> Any:
    from laketide.table.table import Table

    t = catalog_from_args(args).table(args.table)
    if not isinstance(t, Table) and args.command not in ("read", "head"):
        raise InvalidOptionError(f"{args.command}: {args.table} is a system table; name the data table")
    return t


# -- commands ----------------------------------------------------------------------------------------------------

def _databases(args: argparse.Namespace) -> None:
    Output(as_json=args.json).lines(catalog_from_args(args).list_databases())


def _tables(args: argparse.Namespace) -> None:
    Output(as_json=args.json).lines(catalog_from_args(args).list_tables(args.database))


def _describe(args: argparse.Namespace) -> None:
    from laketide.inspect.metadata import describe

    info = describe(_table(args))
    out = Output(as_json=args.json)
    if args.json:
        out.json(info)
        return
    import pyarrow as pa

    summary = {k: v for k, v in info.items() if k not in ("columns", "options")}
    summary["primary_keys"] = ", ".join(info["primary_keys"])
    summary["partition_keys"] = ", ".join(info["partition_keys"])
    out.mapping(summary, title=info["name"])
    out.table(pa.Table.from_pylist(info["columns"]), title="columns")
    if info["options"]:
        out.mapping(info["options"], title="options")


def _read(args: argparse.Namespace) -> None:
    t = _table(args)
    columns = column_list(args.columns)
    if args.limit is not None and args.limit < 0:
        raise InvalidOptionError(f"--limit must be >= 0, not {args.limit}")
    from laketide.table.table import Table

    if isinstance(t, Table):
        scan = t.scan(columns=columns, where=args.where, snapshot_id=args.snapshot, tag=args.tag)
        data = scan.to_arrow() if args.limit is None else _first_rows(scan, args.limit)
    else:
        if args.snapshot is not None or args.tag is not None:
            raise InvalidOptionError(f"{args.table} is a system table: --snapshot / --tag do not apply")
        data = t.read(columns=columns, where=args.where)
    if args.limit is not None:
        data = data.slice(0, args.limit)
    Output(as_json=args.json).table(data)


def _first_rows(scan: Any, limit: int) -> pa.Table:
    """Stop reading once ``limit`` rows are in: ``head`` of a large table reads one split, not all."""
    import pyarrow as pa

    batches, have = [], 0
    if limit > 0:
        for batch in scan.to_batches():
            batches.append(batch)
            have += batch.num_rows
            if have >= limit:
                break
    if not batches:  # nothing matched (or -n 0): an empty table with the read's columns
        return scan.to_arrow().slice(0, 0)
    return pa.Table.from_batches(batches).slice(0, limit)


def _snapshots(args: argparse.Namespace) -> None:
    from laketide.table.system import system_table

    Output(as_json=args.json).table(system_table(_table(args), "snapshots").read())


def _history(args: argparse.Namespace) -> None:
    from laketide.table.system import system_table

    snaps = system_table(_table(args), "snapshots").read(
        columns=["snapshot_id", "commit_time", "commit_kind", "commit_user", "delta_record_count",
                 "total_record_count"])
    snaps = snaps.sort_by([("snapshot_id", "descending")])
    if args.limit is not None:
        snaps = snaps.slice(0, args.limit)
    Output(as_json=args.json).table(snaps)


def _files_of(args: argparse.Namespace) -> pa.Table:
    from laketide.inspect.metadata import files_table, live_files, resolve_snapshot

    t = _table(args)
    return files_table(live_files(t, resolve_snapshot(t, args.snapshot)))


def _files(args: argparse.Namespace) -> None:
    Output(as_json=args.json).table(_files_of(args), text_columns=[
        "partition", "bucket", "level", "file_name", "file_size", "row_count", "min_key", "max_key",
        "min_sequence_number", "max_sequence_number", "deleted_rows_dv"])


def _partitions(args: argparse.Namespace) -> None:
    from laketide.inspect.metadata import partitions_table

    Output(as_json=args.json).table(partitions_table(_files_of(args)))


def _buckets(args: argparse.Namespace) -> None:
    from laketide.inspect.metadata import buckets_table

    Output(as_json=args.json).table(buckets_table(_files_of(args)))


def _create_table(args: argparse.Namespace) -> None:
    from laketide.cli.ddl import schema_from_ddl, schema_from_file

    if (args.columns is None) == (args.like is None):
        raise InvalidOptionError("create-table: give a column spec or --like FILE.parquet (one of them)")
    schema: Any = schema_from_file(args.like) if args.like else schema_from_ddl(args.columns)
    catalog = catalog_from_args(args)
    t = catalog.create_table(
        args.table, schema, primary_key=column_list(args.primary_key), partition_keys=column_list(args.partition_by),
        options=parse_pairs(args.option, "--option"), comment=args.comment, exist_ok=args.if_not_exists,
    )
    Output(as_json=args.json).result({"table": t.name, "path": t.path, "schema_id": t.schema.id},
                                     f"created {t.name} at {t.path}")


def _write(args: argparse.Namespace) -> None:
    from laketide.cli.importer import import_files

    r = import_files(_table(args), args.files, fmt=args.format, overwrite=args.mode == "overwrite")
    Output(as_json=args.json).result(
        {"snapshot_id": r.snapshot_id, "files": r.files, "rows": r.rows, "bytes": r.bytes},
        f"wrote {r.rows:,} rows from {r.files} files ({r.bytes:,} bytes); snapshot {r.snapshot_id}")


def _compact(args: argparse.Namespace) -> None:
    from laketide.cli.progress import spinner

    t = _table(args)
    partitions = [parse_partition(t, p) for p in args.partition] if args.partition else None
    with spinner(f"compacting {t.name}"):
        sid = t.compact(full=args.full, partitions=partitions, where=args.where)
    if sid is None:
        Output(as_json=args.json).result({"snapshot_id": None}, "nothing to compact")
        return
    from laketide.inspect.xray import snapshot_point

    p = snapshot_point(t, t.snapshot(sid))
    Output(as_json=args.json).result(
        {"snapshot_id": sid, "files_rewritten": p.files_deleted, "files_written": p.files_added,
         "records_rewritten": p.records_deleted},
        f"compacted into snapshot {sid}: {p.files_deleted} files ({p.records_deleted:,} records) rewritten as "
        f"{p.files_added}")


def _expire(args: argparse.Namespace) -> None:
    from laketide.cli.progress import spinner

    t = _table(args)
    older = duration_ms(args.older_than, "--older-than") if args.older_than else None
    with spinner(f"expiring snapshots of {t.name}"):
        n = t.expire_snapshots(retain_min=args.retain_min, retain_max=args.retain_max, time_retained_ms=older)
    Output(as_json=args.json).result({"expired": n}, f"expired {n} snapshots")


def _clean_orphans(args: argparse.Namespace) -> None:
    from laketide.cli.progress import spinner

    t = _table(args)
    age = _dt.timedelta(milliseconds=duration_ms(args.older_than, "--older-than"))
    with spinner(f"looking for orphan files of {t.name}"):
        result = t.remove_orphan_files(older_than=age, dry_run=args.dry_run)
    paths = list(result.paths)
    verb = "would delete" if args.dry_run else "deleted"
    Output(as_json=args.json).result({"dry_run": args.dry_run, "count": result.count, "paths": paths},
                                     f"{verb} {result.count} orphan files" + "".join(f"\n  {p}" for p in paths))


def _rollback(args: argparse.Namespace) -> None:
    t = _table(args)
    target: int | str = int(args.target) if args.target.isdigit() else args.target
    s = t.rollback_to(target)
    Output(as_json=args.json).result({"snapshot_id": s.id}, f"rolled back {t.name} to snapshot {s.id}")


def _xray(args: argparse.Namespace) -> None:
    from laketide.cli.xray_view import run_xray

    run_xray(args, _table(args))


def _doctor(args: argparse.Namespace) -> int:
    from laketide.cli.doctor_view import run_doctor

    return run_doctor(args, _table(args))
