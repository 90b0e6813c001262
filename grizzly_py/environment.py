"""``StreamEnvironment``: defines sources and sinks, and runs jobs on the embedded engine.

The environment is the user's entry point (api.md). It collects the queries that end in sinks and
hands them to the engine; it owns no execution logic itself. It imports the engine and Spark only
when a job needs them, so that ``import grizzly_py`` loads neither (nor LLVM).
"""

from __future__ import annotations

import os

import pyarrow as pa

from .plan import PlanNode, Query, SinkSpec, SourceNode, distinct_sources, late_records_all_captured
from .results import JobResult, print_rows, warn_if_late, with_metrics
from .sources import (ArrowSource, CsvSource, ParquetSource, arrow_batches, collection_table, csv_schema,
                      next_source_name, parquet_dataset)
from .stream import DataStream
from .time import Time
from .watermark import WatermarkStrategy


class SinkHandle:
    """Returned by ``collect``/``sink_to_*``; names the sink whose table ``JobResult`` holds."""

    def __init__(self, spec: SinkSpec):
        self.spec = spec
        self.name = spec.name

    def __repr__(self):
        return f"SinkHandle({self.spec.kind}:{self.name})"


class StreamEnvironment:
    """Where queries are defined and run: sources (``from_arrow``, ``from_parquet``, ...), sinks
    registered by the streams, and ``execute``. Jobs run on the embedded engine, or on Spark for an
    environment made by ``for_spark``.

    ``parallelism``: worker threads (an int >= 1, or ``"auto"``: the cost model chooses);
    ``adaptive``: False pins the generic code variant (docs/adaptive.md); ``window_state``,
    ``grouping`` and ``state_memory_limit``: see ``configure``. ``ValueError`` for a value outside
    these choices.
    """

    def __init__(self, parallelism: int | str = 1, adaptive: bool = True, window_state: str = "thread_local",
                 grouping: str = "auto", state_memory_limit: int | str | None = None):
        self.adaptive = adaptive
        self.state_memory_limit = None
        self.checkpoint = None  # a CheckpointConfig once enable_checkpointing is called
        self.configure(parallelism=parallelism, window_state=window_state, grouping=grouping,
                       state_memory_limit=state_memory_limit)
        self._sinks: list[Query] = []
        self._printed: list[str] = []  # the sinks of print(), in order: their rows go to stdout after the job
        self._jobs_run = 0

    def configure(self, parallelism: int | str | None = None, window_state: str | None = None,
                  grouping: str | None = None, state_memory_limit: int | str | None = None) -> "StreamEnvironment":
        """Change how jobs run (the queries stay as they are). ``window_state``: "thread_local"
        (per-worker states merged when windows fire), "shared" (one state updated atomically,
        for the window pipelines that support it: docs/architecture.md) or "auto" (tumbling
        windows switch between the two at window boundaries by key count and skew; docs/adaptive.md). ``grouping``: "auto"
        (default: tumbling event-time windows start with hash tables and the adaptive controller
        switches between hash and sort grouping at window boundaries from the distinct keys the
        fired windows held; other windows use hash; docs/adaptive.md), "hash", or "sort" (tumbling
        and sliding windows group by sorting key/pointer arrays; docs/architecture.md, "Sort-based
        grouping"). ``state_memory_limit``: bytes (or a size such
        as ``"512m"``) of window/join state a job may hold before it fails with
        ``StateMemoryLimitError`` (docs/fault_tolerance.md)."""
        if parallelism is not None:
            if parallelism != "auto" and (not isinstance(parallelism, int) or parallelism < 1):
                raise ValueError(f"parallelism must be a positive int or 'auto', got {parallelism!r}")
            self.parallelism = parallelism
        if window_state is not None:
            if window_state not in ("thread_local", "shared", "auto"):
                raise ValueError(f"window_state must be 'thread_local', 'shared' or 'auto', got {window_state!r}")
            self.window_state = window_state
        if grouping is not None:
            if grouping not in ("auto", "hash", "sort"):
                raise ValueError(f"grouping must be 'auto', 'hash' or 'sort', got {grouping!r}")
            self.grouping = grouping
        if state_memory_limit is not None:
            from .engine.state_memory import parse_memory_size
            self.state_memory_limit = parse_memory_size(state_memory_limit)
        return self

    def enable_checkpointing(self, path, interval=None, interval_batches: int | None = None) -> "StreamEnvironment":
        """Take consistent snapshots of the job's state, source positions and committed output
        under directory ``path`` every ``interval`` of wall time (default ``Time.seconds(1)``), or
        every ``interval_batches`` rounds of source batches; ``execute()`` resumes from the latest
        intact snapshot, and file sinks are written exactly once (docs/fault_tolerance.md)."""
        from .engine.checkpoint import CheckpointConfig
        self.checkpoint = CheckpointConfig.of(path, Time.seconds(1) if interval is None else interval, interval_batches)
        return self

    # --- sources -----------------------------------------------------------------------------
    def from_arrow(self, data, timestamp: str | None = None,
                   watermark: WatermarkStrategy | None = None) -> DataStream:
        """Records from Arrow data: a ``pyarrow.Table`` (one batch of the stream per record batch),
        a ``RecordBatch``, a list, iterator or reader of RecordBatches, a pandas or polars
        DataFrame, or any object that exports an Arrow stream (``__arrow_c_stream__``)."""
        name = next_source_name("arrow")
        schema, batches = arrow_batches(data, name=name)
        src = ArrowSource(name, schema, timestamp, watermark or WatermarkStrategy.for_monotonous_timestamps(),
                          data=batches)
        return DataStream(self, SourceNode(src))

    def from_collection(self, rows, schema=None, timestamp: str | None = None,
                        watermark: WatermarkStrategy | None = None) -> DataStream:
        """Records from Python values (PyFlink's ``from_collection``), as one batch: ``rows`` of
        dicts (``schema`` optional), or of tuples with ``schema`` naming their columns: a
        ``pyarrow.Schema``, a dict of column types (``{"ts": "int64", "k": "string"}``) or a list
        of names (types inferred from the values)."""
        return self.from_arrow(collection_table(rows, schema), timestamp, watermark)

    def from_parquet(self, path, timestamp: str | None = None,
                     watermark: WatermarkStrategy | None = None, on_bad_rows: str = "error") -> DataStream:
        """Records from the Parquet file, directory, glob or hive-partitioned dataset ``path`` (on
        any filesystem pyarrow reaches: ``datasets.py``), one batch per row group, files in path
        order. ``timestamp`` names the event-time column (int64 epoch milliseconds or an Arrow
        timestamp), ``watermark`` its ``WatermarkStrategy`` (default: monotonous timestamps);
        ``on_bad_rows="drop"`` skips rows with a null event time and counts them.
        ``FileNotFoundError`` for a path where nothing exists, ``BadInputError`` for one that
        holds no readable Parquet data, ``SchemaError`` for an unknown or unsuitable event-time
        column."""
        path = os.fspath(path)
        dataset = parquet_dataset(path)
        src = ParquetSource(f"parquet:{path}", dataset.schema, timestamp,
                            watermark or WatermarkStrategy.for_monotonous_timestamps(), on_bad_rows, path=path,
                            dataset=dataset)
        return DataStream(self, SourceNode(src))

    def from_csv(self, path, schema=None, timestamp: str | None = None,
                 watermark: WatermarkStrategy | None = None, on_bad_rows: str = "error",
                 block_size: int = 1 << 22) -> DataStream:
        """Records from the CSV file ``path`` (a header line first), one batch per block of
        ``block_size`` bytes. ``schema`` names the columns to read and their types (a
        ``pyarrow.Schema`` or a dict such as ``{"ts": "int64", "kind": "string"}``); without it
        every column is read, with types inferred from the first block; ``timestamp``
        and ``watermark`` as for ``from_parquet``; ``on_bad_rows="drop"`` skips malformed rows and
        counts them (docs/semantics.md, "Bad and hostile input"). ``SchemaError`` for declared
        columns missing from the header, ``BadInputError`` for an empty file."""
        path = os.fspath(path)
        arrow_schema, column_types = csv_schema(path, schema, block_size)
        src = CsvSource(f"csv:{path}", arrow_schema, timestamp,
                        watermark or WatermarkStrategy.for_monotonous_timestamps(), on_bad_rows, path=path,
                        column_types=column_types, block_size=block_size)
        return DataStream(self, SourceNode(src))

    spark = None  # a SparkSession: this environment's jobs run on Spark (for_spark)

    @classmethod
    def for_spark(cls, spark, **options) -> "StreamEnvironment":
        """An environment whose jobs run on ``spark`` (a ``pyspark.sql.SparkSession``); it also
        sets the session's Arrow transfer settings, and checks with one small job (once per
        session) that Spark's Python workers run grizzly-py at this version: a local session
        whose workers run another interpreter is switched to this one, with a warning; otherwise
        ``SparkWorkersError`` says how to fix it (docs/spark.md, "Setup")."""
        from .spark.probe import check_workers
        from .spark.session import configure
        env = cls(**options)
        env.spark = spark
        configure(spark)
        check_workers(spark)
        return env

    def from_spark(self, df, timestamp: str | None = None,
                   watermark: WatermarkStrategy | None = None) -> DataStream:
        """A Spark DataFrame, batch or streaming, as a source: queries over it run on Spark."""
        from .spark.sources import spark_source
        return DataStream(self, SourceNode(spark_source(df, timestamp, watermark)))

    def from_kafka(self, bootstrap_servers: str, topic: str, schema, timestamp: str | None = None,
                   watermark: WatermarkStrategy | None = None, value_format: str = "json",
                   starting_offsets: str = "earliest", options: dict | None = None) -> DataStream:
        """A Kafka topic through Spark's Kafka source (a Spark environment: ``for_spark``): each
        record's value parsed into the columns of ``schema`` (JSON or CSV), plus
        ``kafka_timestamp``, ``kafka_partition`` and ``kafka_offset`` (``spark/kafka.py``);
        ``timestamp`` may name a parsed column or ``"kafka_timestamp"``."""
        if self.spark is None:
            raise ValueError("from_kafka reads through Spark: use StreamEnvironment.for_spark(spark)")
        from .spark.kafka import read_kafka
        df = read_kafka(self.spark, bootstrap_servers, topic, schema, value_format, starting_offsets, options)
        return self.from_spark(df, timestamp, watermark)

    # --- sinks and execution -----------------------------------------------------------------
    def _register_sink(self, node: PlanNode, spec: SinkSpec, printed: bool = False) -> SinkHandle:
        if any(q.sink.kind == "collect" and q.sink.name == spec.name for q in self._sinks) and spec.kind == "collect":
            raise ValueError(f"a collecting sink named {spec.name!r} already exists")
        self._sinks.append(Query(node, spec))
        if printed:
            self._printed.append(spec.name)
        return SinkHandle(spec)

    def execute(self, job_name: str | None = None) -> JobResult:
        """Run every registered sink's query to the end of its bounded input. The sinks belong to
        that one job: a later ``execute()`` runs the sinks registered after it. ``job_name``
        (PyFlink's ``execute("name")``) is kept in ``metrics["job_name"]``."""
        if not self._sinks:
            if self._jobs_run:
                raise ValueError("nothing to execute: the sinks registered so far were run (and used up) by the "
                                 "previous execute(); register sinks again (collect(), sink_to_parquet(), "
                                 "sink_to_csv(), print()) to run another job")
            raise ValueError("nothing to execute: register a sink with collect(), sink_to_parquet(), "
                             "sink_to_csv() or print()")
        result = self._run(self._sinks, self.checkpoint)
        # the sinks go only once the job succeeded: a failed job can be run again
        self._sinks, printed, self._printed = [], self._printed, []
        self._jobs_run += 1
        if job_name is not None:
            result.metrics["job_name"] = job_name
        for name in printed:
            print_rows(result.tables.pop(name))
        return result

    def _run(self, queries: list[Query], checkpoint=None, stacklevel: int = 3) -> JobResult:
        """Run ``queries`` on Spark or the embedded engine; a job that dropped late records warns
        (``stacklevel``: the user's frame that started the job, counted from here)."""
        if self._on_spark(queries):
            from .spark.planner import run_on_spark
            result = run_on_spark(queries, self.spark, self.adaptive)
        else:
            from .engine.local import run_job
            result = run_job(queries, parallelism=self.parallelism, adaptive=self.adaptive,
                             window_state=self.window_state, grouping=self.grouping, checkpoint=checkpoint,
                             state_memory_limit=self.state_memory_limit)
        if not late_records_all_captured([q.root for q in queries]):
            warn_if_late(result.metrics, [s for q in queries for s in distinct_sources(q.root)], stacklevel)
        return result

    def _run_single(self, node: PlanNode) -> pa.Table:
        """``execute_and_collect``: the query's table, with the job's metrics in its metadata (no
        checkpoints: they belong to the jobs of ``execute()``)."""
        result = self._run([Query(node, SinkSpec("collect", "result"))], stacklevel=4)
        return with_metrics(result["result"], result.metrics)

    def _to_spark(self, node: PlanNode):
        """``DataStream.to_spark``: the query ending in ``node`` as a Spark DataFrame."""
        from .spark.planner import to_spark
        return to_spark(node, self.spark, adaptive=self.adaptive)

    def _on_spark(self, queries) -> bool:
        """Whether these queries run on Spark: a Spark environment, or a Spark DataFrame source."""
        return self.spark is not None or any(s.spark_only for q in queries for s in distinct_sources(q.root))
