"""The core Spark cases on a standalone cluster: a master and two workers from the pyspark package on 127.0.0.1.

Each worker offers one core, so the application gets one executor (a JVM with its own Python workers) on each.
The driver runs in a subprocess (this test process already holds the local SparkContext of the other tests) and
runs every case of tests/spark/standalone_cases.py once; each case is one test here. The cluster uses ephemeral
ports, read from the daemons' own start-up lines, and is stopped at teardown whatever happened.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.standalone_cases import CASE_NAMES

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180  # a JVM start-up on a loaded 2-core machine
DRIVER_TIMEOUT_S = 1500
WORKERS = 2


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


@dataclass(frozen=True)
class Cluster:
    master: str
    worker_dirs: list[str]


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A running master with two 1-core workers (each its own work directory)."""
    if shutil.which("java") is None:
        pytest.skip("a Spark standalone cluster needs Java 17+ on PATH")
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    spark_class = str(spark_home / "bin" / "spark-class")
    logs = tmp_path_factory.mktemp("standalone")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # executors get theirs from the app's conf
    env.update({"SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "SPARK_NO_DAEMONIZE": "1"})
    daemons: list[Daemon] = []
    try:
        master = Daemon([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0"], env, logs / "master.log")
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        worker_dirs = []
        for i in range(WORKERS):
            work = logs / f"worker{i}"
            work.mkdir()
            worker = Daemon([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                             "--port", "0", "--webui-port", "0", "--cores", "1", "--memory", "768m",
                             "--work-dir", str(work), url], env, logs / f"worker{i}.log")
            daemons.append(worker)
            worker_dirs.append(str(work))
        for d in daemons[1:]:
            d.wait_for(r"Successfully registered with master")
        yield Cluster(url, worker_dirs)
    finally:
        for d in reversed(daemons):
            d.stop()


@pytest.fixture(scope="module")
def case_outcomes(standalone_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Run the driver once: {case: (passed | failed | skipped, detail)}."""
    work = tmp_path_factory.mktemp("standalone-driver")
    env = {k: v for k, v in os.environ.items()}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Its own session: on a timeout the driver and its gateway JVM are killed together.
    proc = subprocess.Popen(
        [sys.executable, "-W", "ignore::FutureWarning", "-m", "tests.spark.standalone_cases",
         standalone_cluster.master, str(work / "warehouse"), *standalone_cluster.worker_dirs],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    outcomes = {}
    for line in out.splitlines():
        m = re.fullmatch(r"CASE (\w+) (passed|failed|skipped) (.*)", line)
        if m:
            outcomes[m.group(1)] = (m.group(2), json.loads(m.group(3)))
    if "standalone driver done" not in out:
        for name in CASE_NAMES:
            outcomes.setdefault(name, ("failed", f"the driver exited with {proc.returncode}:\n{err[-8000:]}"))
    return outcomes


@pytest.mark.parametrize("case", CASE_NAMES)
def test_case_on_the_standalone_cluster(case_outcomes: dict[str, tuple[str, str]], case: str) -> None:
    status, detail = case_outcomes.get(case, ("failed", "the driver never reported this case"))
    if status == "skipped":
        pytest.skip(detail)
    assert status == "passed", detail
