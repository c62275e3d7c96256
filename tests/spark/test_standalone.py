"""The core Spark cases on a standalone cluster: a master and a worker from the pyspark package on 127.0.0.1.

The driver runs in a subprocess (this test process already holds the local SparkContext of the other tests).
The cluster uses ephemeral ports, read from the daemons' own start-up lines, and is stopped at teardown.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180  # a JVM start-up on a loaded 2-core machine


class Daemon:
    """A Spark daemon we started (its own process group), and the lines it logs."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.lines: queue.Queue[str] = queue.Queue()
        self.proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout, self.log.open("w") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                self.lines.put(line)
        self.lines.put("")  # the daemon exited

    def wait_for(self, pattern: str) -> re.Match[str]:
        """Block until the daemon logs a line matching ``pattern`` (its readiness signal)."""
        rx = re.compile(pattern)
        while True:
            try:
                line = self.lines.get(timeout=START_TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(f"no {pattern!r} within {START_TIMEOUT_S}s; see {self.log}") from None
            if line == "":
                raise AssertionError(f"the daemon exited (code {self.proc.wait()}); see {self.log}")
            m = rx.search(line)
            if m:
                return m

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the worker's executors are in its process group
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.pump.join(timeout=60)


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a running master with one 2-core worker."""
    if shutil.which("java") is None:
        pytest.skip("a Spark standalone cluster needs Java 17+ on PATH")
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    spark_class = str(spark_home / "bin" / "spark-class")
    logs = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(logs / "work"),
        "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1",
    })
    daemons: list[Daemon] = []
    try:
        master = Daemon([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0"], env, logs / "master.log")
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        worker = Daemon([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0", "--cores", "2", "--memory", "1g", url],
                        env, logs / "worker.log")
        daemons.append(worker)
        worker.wait_for(r"Successfully registered with master")
        yield url
    finally:
        for d in reversed(daemons):
            d.stop()


def test_core_cases_on_a_standalone_cluster(standalone_master: str, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    proc = subprocess.run(
        [sys.executable, "-W", "ignore::FutureWarning", "-m", "tests.spark.standalone_cases", standalone_master,
         str(tmp_path / "warehouse")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0 and "standalone cases passed" in proc.stdout, \
        proc.stdout[-4000:] + proc.stderr[-8000:]
