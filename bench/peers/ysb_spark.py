"""Spark peer of YSB: native DataFrame API in local mode, reading the data from Parquet.

``filter(event_type == view).groupBy(window(event_time, "10 seconds"), campaign_id).count()``.
The Parquet file is written once and the session is started once, both in ``setup()`` and
untimed (their costs are reported as notes); each timed run reads the file and collects the
result to Arrow.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa

from .base import Peer, PeerUnavailable, window_result


def start_spark(threads: int, driver_memory: str = "4g"):
    """A local-mode SparkSession with ``threads`` cores and as many shuffle partitions."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local mode: no hostname lookups
    spark = (
        SparkSession.builder.master(f"local[{threads}]")
        .appName("grizzly-bench")
        .config("spark.sql.shuffle.partitions", str(threads))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def cluster_session(threads: int, master: str, conf: dict[str, str]):
    """A session on the cluster at ``master`` (``grizzly bench --engine spark-cluster``) with the
    Spark settings ``conf``, set up as grizzly-py sets up its own
    (``grizzly_py.spark.local_session``), so that Spark's own plans and grizzly-py's run on the
    same executors with the same settings."""
    from grizzly_py.spark import local_session

    return local_session(threads, app="grizzly-bench", master=master, **conf)


class SparkPeer(Peer):
    name = "spark"
    description = "Spark native DataFrame, local mode, from Parquet: window() groupBy count"
    needs_parquet = True

    def __init__(self, threads: int = 2, master: str | None = None, conf: dict[str, str] | None = None) -> None:
        super().__init__()
        self.threads, self.master, self.conf = threads, master, dict(conf or {})
        self.spark = None

    def setup(self, data) -> None:
        self.data = data
        try:
            import pyspark
            from pyspark.sql import functions as F
        except Exception as exc:  # noqa: BLE001 - any import failure makes the peer missing
            raise PeerUnavailable(f"import pyspark: {exc!r}") from exc
        self.F = F
        self.path = str(data.parquet_path())
        start = time.perf_counter()
        try:
            self.spark = start_spark(self.threads) if self.master is None else cluster_session(self.threads, self.master, self.conf)
        except Exception as exc:  # noqa: BLE001 - a JVM that does not start makes it missing
            raise PeerUnavailable(f"SparkSession start: {exc!r}") from exc
        self.info.update(
            version=pyspark.__version__,
            threads=self.threads,
            session_start_s=time.perf_counter() - start,
            parquet_write_s=data.parquet_write_s,
            notes="session start and Parquet write excluded from timing; each run reads Parquet",
        )

    def run(self) -> pa.Table:
        F = self.F
        events = self.spark.read.parquet(self.path)
        out = (
            events.filter(F.col("event_type") == F.lit(self.data.view_value))
            .groupBy(
                F.window(F.timestamp_millis(F.col("event_time")), f"{self.data.window_ms} milliseconds"),
                F.col("campaign_id"),
            )
            .count()
            .select(
                F.unix_millis(F.col("window.start")).alias("window_start"),
                F.col("campaign_id"),
                F.col("count"),
            )
            .toArrow()
        )
        return window_result(out["window_start"], out["campaign_id"], out["count"])

    def close(self) -> None:
        if self.spark is not None:
            self.spark.stop()
            self.spark = None
