"""Spark sessions for grizzly-py: the Arrow settings that keep the JVM-to-Python transfer fast,
and a local session for tests, benchmarks and ``grizzly run --engine spark``.

``spark.sql.execution.arrow.maxBytesPerBatch`` at its 64 MB default makes Spark check the size
of every row it puts in an Arrow batch, which caps the transfer to Python at ~4 M records/s; at
exactly 2147483647 the check is off (~20 M records/s on 2 cores). Batches of 64K rows are where
compiled kernels reach their throughput (docs/spark.md).
"""

from __future__ import annotations

import os
import sys

ARROW_CONF = {
    "spark.sql.execution.arrow.maxBytesPerBatch": "2147483647",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
}


def require_pyspark():
    """The ``pyspark`` module, or an ImportError that says how to install it."""
    try:
        import pyspark
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("grizzly-py on Spark needs PySpark: pip install 'grizzly-py[spark]' "
                          "(PySpark 4 with pandas >= 2.2, < 3; Java 17)") from e
    return pyspark


_SPARK_DEFAULTS = {"spark.sql.execution.arrow.maxBytesPerBatch": ("67108864", "64MB", "64m"),
                   "spark.sql.execution.arrow.maxRecordsPerBatch": ("10000",)}


def configure(spark) -> None:
    """Apply the Arrow settings of ``ARROW_CONF`` to a running session (runtime SQL settings),
    where the session still has Spark's defaults (a value set on purpose is kept)."""
    for key, value in ARROW_CONF.items():
        current = spark.conf.get(key, None)
        if current is None or current in _SPARK_DEFAULTS[key]:
            spark.conf.set(key, value)


def _loopback_master(master: str) -> bool:
    """A ``spark://`` master on this machine's loopback (e.g. ``cluster.StandaloneCluster``)."""
    host = master.split("://", 1)[-1].split(",")[0].rsplit(":", 1)[0]
    return master.startswith("spark://") and host in ("127.0.0.1", "localhost")


def executors_here(master: str) -> bool:
    """Whether the executors run on this machine, so they read the driver's temporary files: local
    mode, or a standalone master on the loopback address (its workers bind there too)."""
    return master.startswith("local") or _loopback_master(master)


def local_session(threads: int = 2, app: str = "grizzly-py", master: str | None = None, **conf):
    """A SparkSession set up for grizzly-py, in local mode (``local[threads]``) or on ``master``
    (``spark://host:port``, e.g. a ``cluster.StandaloneCluster``): Python workers run this
    interpreter, timestamps are UTC, no UI, ``threads`` shuffle partitions, the Arrow settings of
    ``ARROW_CONF``; on a loopback master the driver binds to 127.0.0.1 too, so executors reach it.
    Extra Spark settings go in ``conf`` (dots as underscores are not translated: pass
    ``**{"spark.x.y": "v"}``); they override these."""
    require_pyspark()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master(master or f"local[{threads}]").appName(app)
               .config("spark.sql.shuffle.partitions", str(threads))
               .config("spark.default.parallelism", str(threads))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.pyspark.python", sys.executable))
    loopback = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"} \
        if master and _loopback_master(master) else {}
    for key, value in {**ARROW_CONF, **loopback, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    configure(spark)
    return spark
