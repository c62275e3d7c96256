"""A local S3-compatible server for the tests: moto's S3 served by one thread on 127.0.0.1.

One thread handles one request at a time, so a conditional PutObject (``If-None-Match: *``) is atomic, as on
S3 itself (moto's own threaded server checks and stores in two steps). Prints ``READY <port>`` once listening.

    python -m tests.s3.s3_server [port]
"""

from __future__ import annotations

import socket
import sys


def main() -> None:
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", port, app, threaded=False)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    print(f"READY {server.server_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
