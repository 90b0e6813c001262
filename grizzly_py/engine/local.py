"""The embedded engine's driver (single-threaded): feeds source batches through compiled pipelines,
advances watermarks at batch boundaries, fires windows and delivers results to sinks.

Watermarks follow semantics.md: the watermark in force while a batch is processed is the one
reached after the previous batch; after a batch of the source it becomes
``max(previous, max event time - out-of-orderness - 1)``, and complete windows fire. A window
pipeline's results are a batch for the next pipeline, processed under the watermark that was in
force before the firing; the next pipeline's watermark then follows its producer's. At the end of
the input the watermark jumps to +infinity and every open window fires.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from ..codegen import abi
from ..expressions import ProcessingTime
from ..codegen.module import GeneratedPipeline, generate_pipeline
from ..environment import JobResult
from ..physical.pipelines import PhysicalPlan, Pipeline, ProjectTerminal, SourceInput, build_physical_plan
from ..plan import Query
from .kernels import CountWindowKernel, ProjectKernel, SlidingWindowKernel, WindowKernel, output_arrow_schema
from .sinks import open_sink


@dataclass
class PipelineRun:
    """One pipeline in a running job: its kernel, watermark and statistics."""

    pipeline: Pipeline
    gen: GeneratedPipeline
    kernel: ProjectKernel | WindowKernel | None  # None: an identity projection, nothing to run
    codegen_ms: float
    watermark: int = abi.INT64_MIN
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0

    def metrics(self) -> dict:
        k = self.kernel
        late = k.counter(abi.STATE_LATE) if k is not None else 0
        filtered = k.counter(abi.STATE_FILTERED) if k is not None else 0
        return {"id": self.pipeline.id, "kind": self.pipeline.terminal.kind,
                "variant": self.gen.options.variant, "rows_in": self.rows_in, "rows_out": self.rows_out,
                "filtered": filtered, "late": late, "codegen_ms": round(self.codegen_ms, 3),
                "compile_ms": round(k.compile_ms if k is not None else 0.0, 3),
                "seconds": round(self.seconds, 6),
                "variant_history": [{"stage": self.gen.options.variant, "reason": "initial",
                                     "records": self.rows_in}]}


def _instantiate(pipeline: Pipeline, input_name: str) -> PipelineRun:
    start = time.perf_counter()
    gen = generate_pipeline(pipeline)
    ms = (time.perf_counter() - start) * 1000
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        kernel = None if (not pipeline.filters and t.is_identity(pipeline.input_schema)) \
            else ProjectKernel(gen, input_name)
    else:
        kernel = {"panes": SlidingWindowKernel, "count": CountWindowKernel}.get(gen.trigger, WindowKernel)(gen, input_name)
    return PipelineRun(pipeline, gen, kernel, ms)


class QueryRun:
    """Runs one query (a chain of pipelines from one source to one sink)."""

    def __init__(self, query: Query):
        self.physical: PhysicalPlan = build_physical_plan(query)
        first = self.physical.pipelines[0]
        if not isinstance(first.input, SourceInput):
            raise NotImplementedError("a query must start at a source")
        self.source = first.input.source
        self.runs = [_instantiate(p, self.source.name if i == 0 else f"pipeline {p.id} input")
                     for i, p in enumerate(self.physical.pipelines)]
        self.sink_schema = output_arrow_schema(self.runs[-1].gen)
        self.sink = open_sink(query.sink, self.sink_schema)
        self.records_in = 0

    def feed(self, batch: pa.RecordBatch) -> None:
        """One source batch: through the pipelines, then the watermark moves and windows fire."""
        self.records_in += batch.num_rows
        self._push(0, batch)
        self._advance(0, None)

    def finish(self) -> pa.Table | None:
        """End of the bounded input: the watermark jumps to +infinity; every open window fires."""
        self._advance(0, abi.INT64_MAX)
        return self.sink.finish()

    def close(self) -> None:
        """Free the window state; a file sink that did not finish is removed."""
        for r in self.runs:
            if isinstance(r.kernel, WindowKernel):
                try:
                    r.kernel.close()
                except Exception:  # keep freeing the others; the job's own error matters more
                    pass
        self.sink.abort()

    def _push(self, index: int, batch: pa.RecordBatch) -> None:
        """Process ``batch`` in pipeline ``index`` and pass stateless output downstream."""
        run = self.runs[index]
        run.rows_in += batch.num_rows
        start = time.perf_counter()
        if run.kernel is None:  # identity: the batch as it is, under the sink's (nullable) schema
            out = batch if batch.schema == self.sink_schema else pa.RecordBatch.from_arrays(
                batch.columns, schema=self.sink_schema)
        elif isinstance(run.kernel, (ProjectKernel, CountWindowKernel)):  # rows out per batch
            out = run.kernel.process(batch)
        else:
            run.kernel.process(batch, run.watermark)
            run.seconds += time.perf_counter() - start
            return
        run.seconds += time.perf_counter() - start
        run.rows_out += out.num_rows
        self._deliver(index, out)

    def _deliver(self, index: int, batch: pa.RecordBatch) -> None:
        if index + 1 < len(self.runs):
            self._push(index + 1, batch)
        elif batch.num_rows:
            self.sink.write(batch)

    def _advance(self, index: int, upstream_watermark: int | None) -> None:
        """Move the watermark of window pipelines from ``index`` on, firing complete windows.

        ``upstream_watermark`` is None for the source pipeline after a batch (the watermark comes
        from the event times seen), the producer's watermark otherwise, INT64_MAX at the end.
        """
        for i in range(index, len(self.runs)):
            run = self.runs[i]
            if not isinstance(run.kernel, WindowKernel):
                continue
            own_clock = isinstance(run.pipeline.event_time, ProcessingTime)
            if upstream_watermark is None or (own_clock and upstream_watermark != abi.INT64_MAX):
                # the source's event time, or a processing-time window's own clock
                max_ts = run.kernel.max_event_time
                if max_ts == abi.INT64_MIN:
                    if own_clock:
                        continue
                    return
                candidate = max(abi.INT64_MIN, max_ts - run.pipeline.out_of_orderness_ms - 1)
            else:
                candidate = upstream_watermark
            if candidate <= run.watermark:
                return
            start = time.perf_counter()
            fired = run.kernel.fire(candidate)
            run.seconds += time.perf_counter() - start
            if fired is not None:
                run.rows_out += fired.num_rows
                self._deliver(i, fired)  # processed downstream under the old downstream watermark
            run.watermark = candidate
            upstream_watermark = candidate

    def metrics(self) -> dict:
        pipelines = [r.metrics() for r in self.runs]
        return {"records_in": self.records_in, "records_out": self.sink.rows,
                "late_records": sum(p["late"] for p in pipelines), "filtered_records": pipelines[0]["filtered"],
                "pipelines": pipelines}


def run_job(queries: list[Query], parallelism=1, adaptive=True) -> JobResult:
    """Run queries to the end of their bounded inputs. Each source is read once, and each of its
    batches is fed to every query that reads it (so one-shot iterators serve several sinks)."""
    tables, per_query = {}, []
    start = time.perf_counter()
    runs: list[QueryRun] = []
    try:
        for q in queries:
            runs.append(QueryRun(q))
        by_source: dict[int, list[QueryRun]] = {}
        for qr in runs:
            by_source.setdefault(id(qr.source), []).append(qr)
        source_rows = 0
        for readers in by_source.values():
            for batch in readers[0].source.batches():
                source_rows += batch.num_rows
                for qr in readers:
                    qr.feed(batch)
        for q, qr in zip(queries, runs):
            table = qr.finish()
            if q.sink.kind == "collect":
                tables[q.sink.name] = table
            per_query.append({"sink": q.sink.name, **qr.metrics()})
    finally:
        for qr in runs:
            qr.close()
    metrics = {
        "records_in": source_rows,
        "records_out": sum(m["records_out"] for m in per_query),
        "late_records": sum(m["late_records"] for m in per_query),
        "filtered_records": sum(m["filtered_records"] for m in per_query),
        "seconds": time.perf_counter() - start,
        "parallelism": 1, "engine": "local",
        "queries": per_query,
    }
    return JobResult(tables, metrics)
