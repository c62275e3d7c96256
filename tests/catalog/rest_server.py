"""A laketide REST catalog server for tests: on 127.0.0.1, a free port, stopped by the fixture that started it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from laketide.rest.server import create_app


@contextmanager
def serving(catalog: Any, *, token: str | None) -> Iterator[str]:
    """Serve ``catalog`` from a thread; yields the base URI. The socket listens before the URI is handed out."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(catalog, token=token), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
