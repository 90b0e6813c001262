"""grizzly-py on Apache Spark: compiled plans inside Spark tasks (docs/spark.md).

- ``session.py``: the Arrow transfer settings; a local session for tests and benchmarks.
- ``shipping.py``: detached, pickled plans and their hash (what executors receive).
- ``worker.py``: the in-task runner and the worker-global compile cache.
- ``partials.py``: partial window states out of kernels and back into compiled merges.
- ``inputs.py``: DataFrame input (``mapInArrow``) and source pushdown (splits read by tasks).
- ``planner.py``: ``to_spark`` and ``run_on_spark`` (strategies, stages).
- ``streaming.py``: Structured Streaming (partials per micro-batch, Spark's stateful merge; the
  query's own state per key group, or in one group, for queries that need the stream in order).
- ``key_groups.py``: which streaming queries keep their state per key group, and each row's group.
- ``kafka.py``: Kafka topics through Spark's Kafka source, values parsed into columns.
- ``job.py``: the driver's view of a job: strategy and the tasks' metrics.
- ``dataframe.py``: the DataFrame of ``to_spark``, whose actions raise grizzly-py's errors.
- ``errors.py``: grizzly-py's exceptions out of failed tasks.
- ``probe.py``: the check, before a session's first job, that its Python workers run grizzly-py.

PySpark is an optional dependency (``pip install 'grizzly-py[spark]'``); importing this package
does not import it.
"""

from .session import local_session, require_pyspark  # noqa: F401


def to_spark(stream):
    """``stream.to_spark()``."""
    return stream.to_spark()
