"""What a ``grizzly bench`` run is made of: the peers it can run (``PEERS``, each class imported
when first used) and its ``Options``. ``suite.py`` runs them; ``counters.py`` makes the same
peers in its worker processes.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .output import default_results_dir
from .workloads import WORKLOADS


@dataclass(frozen=True)
class PeerSpec:
    name: str
    cls: Callable[[], type]  # the peer class (imported lazily)
    make: Callable[[Any], Any]  # options -> peer instance
    fast: bool  # in --quick's default set


def _cls(module: str, name: str) -> Callable[[], type]:
    """The class ``name`` of ``module`` (relative to this package: ``bench`` in a checkout,
    ``grizzly_py.bench`` installed), imported when first asked for."""
    def load():
        return getattr(importlib.import_module(module, __package__), name)
    return load


_S = ".peers.suite"
PEERS: dict[str, PeerSpec] = {p.name: p for p in (
    PeerSpec("c", _cls(_S, "CSuite"), lambda o: _cls(_S, "CSuite")()("hash"), True),
    PeerSpec("c_dense", _cls(_S, "CDenseSuite"), lambda o: _cls(_S, "CDenseSuite")()(), True),
    PeerSpec("numpy", _cls(_S, "NumpySuite"), lambda o: _cls(_S, "NumpySuite")()(), True),
    PeerSpec("polars", _cls(_S, "PolarsSuite"), lambda o: _cls(_S, "PolarsSuite")()(o.threads), True),
    PeerSpec("duckdb", _cls(_S, "DuckDBSuite"), lambda o: _cls(_S, "DuckDBSuite")()(o.threads), True),
    PeerSpec("spark", _cls(_S, "SparkSuite"), lambda o: _cls(_S, "SparkSuite")()(o.threads, o.spark_master, o.spark_conf), False),
    PeerSpec("flink", _cls(".peers.flink", "FlinkSuite"),
             lambda o: _cls(".peers.flink", "FlinkSuite")()(o.threads, o.install), False),
    PeerSpec("grizzly", _cls(_S, "GrizzlySuite"), lambda o: _cls(_S, "GrizzlySuite")()(o.parallelism), True),
    PeerSpec("grizzly_spark", _cls(_S, "GrizzlySparkSuite"),
             lambda o: _cls(_S, "GrizzlySparkSuite")()(o.threads, o.spark_master, o.spark_conf), False),
    PeerSpec("grizzly_spark_files", _cls(_S, "GrizzlySparkFilesSuite"),
             lambda o: _cls(_S, "GrizzlySparkFilesSuite")()(o.threads, o.spark_master, o.spark_conf), False),
)}
BASELINE = "grizzly"


@dataclass
class Options:
    workloads: list[str] = field(default_factory=lambda: list(WORKLOADS))
    peers: list[str] | None = None  # None: all (quick: the fast ones)
    rows: int | None = None  # None: each workload's default
    quick: bool = False
    repeat: int | None = None  # None: 5 (quick: 1)
    seed: int = 42
    threads: int = os.cpu_count() or 1
    parallelism: int = 1
    out: Path = field(default_factory=default_results_dir)
    save: bool = True
    plots: bool = True
    latency: bool = True
    counters: bool | None = None  # None: on unless quick
    counter_rows: tuple[int, int] = (100_000, 500_000)
    budget_s: float | None = 30.0  # a peer whose runs of a case took longer stops after 3 runs
    install: bool = True  # may create Flink's virtual environment
    spark_master: str | None = None  # the Spark peers' master (None: local[threads])
    spark_conf: dict[str, str] = field(default_factory=dict)  # their settings on that master
    in_process: bool = False
    progress: bool = True
    log: Callable[[str], None] = print

    def resolve(self) -> "Options":
        if self.peers is None:
            self.peers = [n for n, p in PEERS.items() if p.fast or not self.quick]
        if BASELINE not in self.peers:
            self.peers.append(BASELINE)
        if self.repeat is None:
            self.repeat = 3 if self.quick else 5
        if self.counters is None:
            self.counters = not self.quick
        return self
