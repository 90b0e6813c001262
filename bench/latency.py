"""Window latency of grizzly-py: ingestion of a window's last record to the emission of its result.

The embedded engine fires windows at batch boundaries (``grizzly_py.engine.local``): after a
source batch is processed, the watermark moves and complete windows go to the sink. This module
runs a query's batch loop itself, the way ``run_job`` does, and timestamps it (wall clock):

- a batch is ingested when it is handed to the engine (just before ``QueryRun.feed``); a query
  with several sources (a join) reads them round-robin, one batch each per round, as
  ``run_job`` does;
- a window is the range ``[window_start, window_end)`` of a result row at the sink; its last
  record is the last input record whose event time falls in that range, so it was ingested with
  the last batch (of any source) whose event times overlap the range (input rows, before any
  filter). A result without ``window_start`` (a join projected to ``window_end``) names its
  window by its end: the last batch with an event time before it;
- its result is emitted when the ``feed`` (or the final ``finish``) that delivered it returns.

Latency = emission - ingestion, per distinct window (all keys of a window fire together). The
loop adds only bookkeeping per batch; it is a separate, untimed run of the benchmark.
Uses the engine's internal ``QueryRun`` (no public hook exists); if that changes, the latency is
reported as unavailable with the error, and the throughput numbers are unaffected.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _millis(column):
    return column.cast(pa.timestamp("ms")).cast(pa.int64()) if pa.types.is_timestamp(column.type) else column


def window_latencies(stream) -> dict:
    """Run ``stream`` (a DataStream whose output has window_start/window_end) once; return
    ``{"windows": n, "p50_ms": ..., "p99_ms": ..., "max_ms": ...}``."""
    from grizzly_py.engine.local import QueryRun

    stream.collect("latency")
    query = stream.env._sinks[-1]
    run = QueryRun(query)
    spans: list[tuple[int, int]] = []  # per batch: (min, max) event time
    ingested: list[float] = []
    emitted: dict[tuple[int, int], float] = {}
    sink = run.sink

    def collect_new(start: int, when: float) -> None:
        for batch in sink.batches[start:]:
            if batch.num_rows == 0 or "window_end" not in batch.schema.names:
                continue
            we = _millis(batch.column("window_end")).to_numpy()
            ws = _millis(batch.column("window_start")).to_numpy() if "window_start" in batch.schema.names \
                else np.full(we.size, np.iinfo(np.int64).min)
            for s, e in set(zip(ws.tolist(), we.tolist())):
                emitted.setdefault((s, e), when)

    try:
        live = [(s, iter(s.batches())) for s in run.sources]
        while live:
            still = []
            for source, batches in live:
                batch = next(batches, None)
                start = len(sink.batches)
                if batch is None:
                    run.end(source)  # its watermark jumps to +infinity: windows may fire
                    collect_new(start, time.perf_counter())
                    continue
                still.append((source, batches))
                if batch.num_rows:
                    mm = pc.min_max(_millis(batch.column(source.timestamp)))
                    spans.append((mm["min"].as_py(), mm["max"].as_py()))
                else:
                    spans.append((np.iinfo(np.int64).max, np.iinfo(np.int64).min))
                ingested.append(time.perf_counter())
                run.feed(batch, source)
                collect_new(start, time.perf_counter())
            live = still
        start = len(sink.batches)
        run.finish()  # end of input: every watermark is +infinity, the last windows fire
        collect_new(start, time.perf_counter())
    finally:
        run.close()
    if not emitted:
        return {"windows": 0}
    lo = np.array([s[0] for s in spans])
    hi = np.array([s[1] for s in spans])
    latencies = []
    for (s, e), when in emitted.items():
        overlapping = np.flatnonzero((lo < e) & (hi >= s))
        if overlapping.size:
            latencies.append((when - ingested[int(overlapping[-1])]) * 1000)
    if not latencies:
        return {"windows": 0}
    return {"windows": len(latencies), "p50_ms": _percentile(latencies, 50),
            "p99_ms": _percentile(latencies, 99), "max_ms": max(latencies),
            "batches": len(ingested)}
