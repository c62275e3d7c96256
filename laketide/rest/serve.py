"""Run the REST catalog server: ``python -m laketide.rest`` or ``laketide --warehouse W serve``."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

TOKEN_ENV = "LAKETIDE_REST_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181, help="0 picks a free port (printed on start)")
    parser.add_argument("--metastore", default="filesystem", help="the catalog served: filesystem or jdbc")
    parser.add_argument("--uri", help="the JDBC metastore URI (metastore jdbc)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a catalog option (catalog-key, jdbc.user, lock.enabled, ...); repeatable")
    parser.add_argument("--token", help=f"the bearer token clients must send (default: ${TOKEN_ENV})")
    parser.add_argument("--no-auth", action="store_true", help="serve without a token (trusted networks only)")


def serve_from_args(warehouse: str, args: argparse.Namespace) -> None:
    import laketide
    from laketide.exceptions import InvalidOptionError

    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidOptionError(f"--option {item!r}: expected KEY=VALUE")
        options[key] = value
    if args.uri:
        options["uri"] = args.uri
    token = args.token or os.environ.get(TOKEN_ENV)
    if token is None and not args.no_auth:
        raise InvalidOptionError(f"No token: pass --token, set ${TOKEN_ENV}, or --no-auth to serve without one")
    catalog = laketide.load_catalog(warehouse, metastore=args.metastore, **options)
    serve(catalog, host=args.host, port=args.port, token=token, warehouse=warehouse)


def serve(catalog: Any, *, host: str, port: int, token: str | None, warehouse: str = "") -> None:
    """Bind first, print the address (port 0 becomes the real one), then serve until interrupted."""
    import uvicorn

    from laketide.rest.server import create_app

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections queue from now on: a client may connect as soon as the line below is out
    bound = sock.getsockname()[1]
    print(f"laketide REST catalog listening on http://{host}:{bound}", flush=True)
    config = uvicorn.Config(create_app(catalog, token=token, warehouse=warehouse), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> None:
    from laketide.exceptions import LaketideError

    parser = argparse.ArgumentParser(prog="python -m laketide.rest")
    parser.add_argument("--warehouse", required=True)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        serve_from_args(args.warehouse, args)
    except LaketideError as e:
        print(f"laketide: error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
