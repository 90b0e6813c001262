"""``StreamEnvironment``: defines sources and sinks, and runs jobs on the embedded engine.

The environment is the user's entry point (api.md). It collects the queries that end in sinks and
hands them to the engine; it owns no execution logic itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pyarrow as pa

from .plan import PlanNode, Query, SinkSpec, SourceNode
from .sources import ArrowSource, CsvSource, ParquetSource, arrow_batches, csv_schema, next_source_name
from .stream import DataStream
from .watermark import WatermarkStrategy


@dataclass
class JobResult:
    """What ``execute`` returns: collected tables by sink name, and the job's metrics."""

    tables: dict[str, pa.Table]
    metrics: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> pa.Table:
        try:
            return self.tables[name]
        except KeyError:
            raise KeyError(f"no collecting sink named {name!r}; sinks: {', '.join(self.tables) or '(none)'}") from None

    def __contains__(self, name):
        return name in self.tables


class SinkHandle:
    """Returned by ``collect``/``sink_to_*``; names the sink whose table ``JobResult`` holds."""

    def __init__(self, spec: SinkSpec):
        self.spec = spec
        self.name = spec.name

    def __repr__(self):
        return f"SinkHandle({self.spec.kind}:{self.name})"


class StreamEnvironment:
    """The embedded engine's environment."""

    def __init__(self, parallelism: int | str = 1, adaptive: bool = True):
        if parallelism != "auto" and (not isinstance(parallelism, int) or parallelism < 1):
            raise ValueError(f"parallelism must be a positive int or 'auto', got {parallelism!r}")
        self.parallelism = parallelism
        self.adaptive = adaptive
        self._sinks: list[Query] = []

    # --- sources -----------------------------------------------------------------------------
    def from_arrow(self, data, timestamp: str | None = None,
                   watermark: WatermarkStrategy | None = None) -> DataStream:
        name = next_source_name("arrow")
        schema, batches = arrow_batches(data, name=name)
        src = ArrowSource(name, schema, timestamp, watermark or WatermarkStrategy.for_monotonous_timestamps(),
                          data=batches)
        return DataStream(self, SourceNode(src))

    def from_parquet(self, path, timestamp: str | None = None,
                     watermark: WatermarkStrategy | None = None) -> DataStream:
        import pyarrow.parquet as pq
        path = os.fspath(path)
        schema = pq.read_schema(path)
        src = ParquetSource(f"parquet:{path}", schema, timestamp,
                            watermark or WatermarkStrategy.for_monotonous_timestamps(), path=path)
        return DataStream(self, SourceNode(src))

    def from_csv(self, path, schema=None, timestamp: str | None = None,
                 watermark: WatermarkStrategy | None = None) -> DataStream:
        path = os.fspath(path)
        arrow_schema, column_types = csv_schema(path, schema)
        src = CsvSource(f"csv:{path}", arrow_schema, timestamp,
                        watermark or WatermarkStrategy.for_monotonous_timestamps(), path=path,
                        column_types=column_types)
        return DataStream(self, SourceNode(src))

    # --- sinks and execution -----------------------------------------------------------------
    def _register_sink(self, node: PlanNode, spec: SinkSpec) -> SinkHandle:
        if any(q.sink.kind == "collect" and q.sink.name == spec.name for q in self._sinks) and spec.kind == "collect":
            raise ValueError(f"a collecting sink named {spec.name!r} already exists")
        self._sinks.append(Query(node, spec))
        return SinkHandle(spec)

    def execute(self) -> JobResult:
        """Run every registered sink's query to the end of its bounded input."""
        if not self._sinks:
            raise ValueError("nothing to execute: register a sink with collect(), sink_to_parquet() or sink_to_csv()")
        from .engine.local import run_job
        result = run_job(self._sinks, parallelism=self.parallelism, adaptive=self.adaptive)
        self._sinks = []  # only once the job succeeded: a failed job can be run again
        return result

    def _run_single(self, node: PlanNode) -> pa.Table:
        from .engine.local import run_job
        result = run_job([Query(node, SinkSpec("collect", "result"))], parallelism=self.parallelism,
                         adaptive=self.adaptive)
        return result["result"]
