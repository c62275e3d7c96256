"""A real S3-compatible server (moto) on 127.0.0.1, started once per session and stopped after it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen  # type: ignore[type-arg]

    def options(self, key: str = "test-key", secret: str = "test-secret") -> dict[str, str]:
        return {"endpoint_url": self.endpoint, "key": key, "secret": secret}


def start_server(env: dict[str, str] | None = None) -> S3Server:
    try:
        import moto.server  # noqa: F401
    except ImportError:
        pytest.fail("the S3 suite needs moto[server] and s3fs (the test extra: pip install -e '.[test]')",
                    pytrace=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.s3.s3_server"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the server listens (or dies)
    if not line.startswith("READY "):
        proc.kill()
        proc.wait()
        pytest.fail(f"the local S3 server did not start: {line!r}")
    return S3Server(f"http://127.0.0.1:{int(line.split()[1])}", proc)


def stop_server(server: S3Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    if server.process.stdout is not None:
        server.process.stdout.close()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = start_server()
    yield server
    stop_server(server)


@pytest.fixture
def s3_warehouse(s3_server: S3Server) -> str:
    """A fresh bucket per test: ``s3://<bucket>/wh``."""
    import s3fs

    bucket = f"lt-{uuid.uuid4().hex[:12]}"
    fs = s3fs.S3FileSystem(**s3_server.options(), skip_instance_cache=True)
    fs.mkdir(bucket)
    return f"s3://{bucket}/wh"
