"""The ``laketide`` command: inspect a warehouse from the shell."""

from __future__ import annotations

import argparse
import sys

import laketide
from laketide.exceptions import LaketideError


def main(argv: list[str] | None = None) -> None:
    """Run one command; a laketide error (missing warehouse, table, ...) prints one line and exits with 1."""
    try:
        _run(argv)
    except LaketideError as e:
        print(f"laketide: error: {e}", file=sys.stderr)
        raise SystemExit(1) from None


def _run(argv: list[str] | None) -> None:
    parser = argparse.ArgumentParser(prog="laketide")
    parser.add_argument("--warehouse", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("databases")
    p_tables = sub.add_parser("tables")
    p_tables.add_argument("database")
    p_read = sub.add_parser("read")
    p_read.add_argument("table")
    p_read.add_argument("--where")
    p_read.add_argument("--limit", type=int, default=20)
    p_snap = sub.add_parser("snapshots")
    p_snap.add_argument("table")
    from laketide.rest.serve import add_arguments, serve_from_args  # the server itself imports the `rest` extra

    add_arguments(sub.add_parser("serve", help="serve Paimon's REST catalog API over this warehouse"))
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve_from_args(args.warehouse, args)
        return
    cat = laketide.load_catalog(warehouse=args.warehouse)
    if args.command == "databases":
        print("\n".join(cat.list_databases()))
    elif args.command == "tables":
        print("\n".join(cat.list_tables(args.database)))
    elif args.command == "read":
        print(cat.table(args.table).read(where=args.where).slice(0, args.limit).to_pandas().to_string())
    elif args.command == "snapshots":
        print(cat.table(f"{args.table}$snapshots").read().to_pandas().to_string())


if __name__ == "__main__":
    main()
