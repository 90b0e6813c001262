"""A Spark standalone cluster on this machine, started from the pip ``pyspark`` package: one master
and N worker daemons bound to 127.0.0.1, for tests, ``grizzly bench`` and users who want real
executors (separate JVMs, Python workers per executor, shuffles over the network stack) without
installing Spark.

The pip package has no ``sbin/`` scripts, so the daemons are started with its own
``bin/spark-class org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``, each in
its own process group, and stopped by PID (``StandaloneCluster.stop``). The cluster is ready when
the master's JSON status page lists every worker as ALIVE. Ports are chosen free on 127.0.0.1, so
several clusters (and CI jobs) can run side by side. Daemon logs go to ``log_dir``; a daemon that
does not come up raises ``SparkClusterError`` with the tail of its log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .session import require_pyspark

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class SparkClusterError(RuntimeError):
    """The standalone cluster could not start (Java missing, a daemon died, workers never registered)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    """The pip pyspark package's directory, which is a SPARK_HOME (``bin/spark-class``, ``jars/``)."""
    pyspark = require_pyspark()
    return Path(pyspark.__file__).resolve().parent


@dataclass
class StandaloneCluster:
    """``with StandaloneCluster(workers=2, cores=1) as cluster: local_session(master=cluster.url)``.

    ``workers`` daemons with ``cores`` cores and ``memory`` each (one executor JVM each for an
    application that asks for ``cores`` per executor). ``start`` blocks until every worker is
    registered (at most ``timeout_s``); ``stop`` (also on leaving the ``with``) kills the daemons
    and their executors by process group."""

    workers: int = 2
    cores: int = 1
    memory: str = "2g"
    timeout_s: float = 90.0
    log_dir: Path | None = None
    url: str = ""
    web_url: str = ""
    _processes: list[subprocess.Popen] = field(default_factory=list)
    _tmp: str | None = None

    def __enter__(self) -> "StandaloneCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise SparkClusterError("a Spark standalone cluster needs Java 17 (java on PATH or JAVA_HOME)")
        env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST,
                   SPARK_LOG_DIR=str(self.log_dir), SPARK_WORKER_DIR=str(self.log_dir / "work"))
        log = open(self.log_dir / f"{name}.log", "wb")
        try:
            return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env,
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            log.close()

    def _log_tail(self, name: str, lines: int = 15) -> str:
        try:
            return "\n".join((self.log_dir / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def status(self) -> dict:
        """The master's JSON status (``workers``, ``aliveworkers``, ``activeapps``, ...)."""
        with urllib.request.urlopen(self.web_url + "/json/", timeout=5) as response:
            return json.loads(response.read())

    def alive_workers(self) -> int:
        try:
            return sum(w.get("state") == "ALIVE" for w in self.status().get("workers", []))
        except OSError:
            return 0

    def start(self) -> "StandaloneCluster":
        if self._processes:
            return self
        if self.log_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="grizzly-spark-cluster-")
            self.log_dir = Path(self._tmp)
        self.log_dir = Path(self.log_dir)
        (self.log_dir / "work").mkdir(parents=True, exist_ok=True)
        port, web_port = _free_port(), _free_port()
        self.url, self.web_url = f"spark://{HOST}:{port}", f"http://{HOST}:{web_port}"
        try:
            self._processes.append(self._spawn("master", [MASTER_CLASS, "--host", HOST, "--port", str(port),
                                                          "--webui-port", str(web_port)]))
            for i in range(self.workers):
                self._processes.append(self._spawn(f"worker{i}", [
                    WORKER_CLASS, "--host", HOST, "--cores", str(self.cores), "--memory", self.memory,
                    "--webui-port", str(_free_port()), "--work-dir", str(self.log_dir / "work" / str(i)),
                    self.url]))
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        names = ["master"] + [f"worker{i}" for i in range(self.workers)]
        while time.monotonic() < deadline:
            for name, process in zip(names, self._processes):
                if process.poll() is not None:
                    raise SparkClusterError(f"the Spark {name} exited with code {process.returncode}; "
                                            f"its log ends:\n{self._log_tail(name)}")
            if self.alive_workers() == self.workers:
                return
            time.sleep(0.5)
        raise SparkClusterError(f"{self.alive_workers()} of {self.workers} Spark workers registered with "
                                f"{self.url} within {self.timeout_s:.0f} s; the master's log ends:\n"
                                f"{self._log_tail('master')}")

    def stop(self) -> None:
        """Kill the daemons and everything they started (executors), by process group."""
        for process in reversed(self._processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in self._processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


__all__ = ["StandaloneCluster", "SparkClusterError", "spark_home"]
