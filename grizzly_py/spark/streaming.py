"""Structured Streaming: a query over a streaming DataFrame as a streaming DataFrame.

Each micro-batch's tasks pre-aggregate their rows in compiled code (``worker.partial_task``) and
emit partial states of the windows they touched; Spark groups them by (keys, window start) into
``applyInPandasWithState``, whose state (kept, checkpointed and restored by Spark) is the list
of a window's partial states so far; when Spark's watermark passes the window's end, its partial
states are merged and finished by the compiled ``merge_emit`` (``partials.merge_window``) and
the window's row is emitted (append mode).

Watermarks follow the embedded engine's semantics with a micro-batch as its batch:

- Spark's watermark is ``max event time - bound`` over the micro-batches so far (the tasks send
  their largest event time, filtered records included, in ``worker.EVENT_TIME``); a window fires
  once the watermark reaches its end (the embedded engine's ``end - 1 <= max - bound - 1``).
- A partial state of a window whose end the watermark in force had already reached is late and
  dropped, so a record still counts in its later windows (the embedded engine's rule). Spark
  itself drops input rows of stateful operators only against the watermark of the micro-batch
  before, a batch later than the embedded engine; to keep that filter out of the way the event
  time column is shifted by ``EVENT_TIME_SHIFT`` (and the watermark delay with it, so the
  watermark is unchanged), and the state function applies the rule itself with
  ``getCurrentWatermarkMs``.
- Spark's watermark starts at 0 (the epoch): windows ending before 1970 are dropped as late.
- A stream has no end: windows after the last watermark stay open (the embedded engine fires
  them at the end of a bounded input).
"""

from __future__ import annotations

import pyarrow as pa

from ..codegen.module import generate_pipeline
from ..physical.pipelines import ProjectTerminal
from . import worker
from .inputs import needed_columns
from .job import SparkJob
from .partials import WINDOW_START, EntryLayout
from .schema import spark_struct
from .worker import EVENT_TIME, EVENT_TIME_SHIFT, HEARTBEAT, streaming_partial_schema

STATE_COLUMN = "parts"


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _unipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def streaming_dataframe(spark, shipped, physical, source, acc, fault=None):
    from .planner import _col, pipeline_arrow_schema
    pipelines = physical.pipelines
    first = pipelines[0]
    df = source.df.select(*[_col(c) for c in needed_columns(first, source)])
    if isinstance(first.terminal, ProjectTerminal):
        out = df.mapInArrow(lambda it: worker.stateless_task(shipped, it, acc, fault),
                            spark_struct(pipeline_arrow_schema(first)))
        out.grizzly = SparkJob(shipped.plan_id, "stateless+stream", "dataframe", True, acc)
        return out
    kind = first.terminal.assigner.kind
    if kind not in ("tumbling", "sliding"):
        raise NotImplementedError(f"{first.terminal.assigner!r} on a streaming DataFrame is not supported yet "
                                  "(streaming runs tumbling and sliding event-time windows)")
    if source.timestamp is None:
        raise NotImplementedError("an event-time window on a streaming DataFrame needs from_spark(..., timestamp=...)")
    tail = pipelines[1:]
    if any(not isinstance(p.terminal, ProjectTerminal) for p in tail) or len(tail) > 1:
        raise NotImplementedError("on a streaming DataFrame, a window may be followed by filters and "
                                  "projections only (no second window yet)")
    gen = generate_pipeline(first)
    size = first.terminal.assigner.size_ms
    keys = [f.name for f, _ in first.terminal.keys]
    results_schema = pipeline_arrow_schema(first)
    state_columns = [name for name, _ in EntryLayout.of(gen).columns()]
    words_schema = pa.schema([streaming_partial_schema(gen).field(n) for n in state_columns])
    bound = source.watermark.out_of_orderness_ms

    partials = df.mapInArrow(lambda it: worker.partial_task(shipped, it, None, acc, with_event_time=True,
                                                            fault=fault),
                             spark_struct(streaming_partial_schema(gen)))
    watermarked = partials.withWatermark(EVENT_TIME, f"{bound + EVENT_TIME_SHIFT} milliseconds")

    def merge_group(key, frames, state):
        import pandas as pd
        worker.quiet_pandas()
        if state.hasTimedOut:
            table = _unipc(state.get[0])
            state.remove()
            result = worker.stream_merge(shipped, tuple(key[:-1]), int(key[-1]), table, acc)
            if result is not None and result.num_rows:
                yield result.to_pandas(integer_object_nulls=True)
            return
        parts = [f[~f[HEARTBEAT]] for f in frames]
        parts = [f for f in parts if len(f)]
        if not parts:
            return
        start = int(key[-1])
        if start + size <= state.getCurrentWatermarkMs():  # the window has fired: late
            worker.report_late(acc, sum(len(f) for f in parts))
            return
        new = pa.Table.from_pandas(pd.concat(parts)[state_columns], schema=words_schema, preserve_index=False)
        if state.exists:
            new = pa.concat_tables([_unipc(state.get[0]), new])
        state.update((_ipc(new),))
        state.setTimeoutTimestamp(start + size - 1)

    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType
    out_schema = spark_struct(results_schema)
    merged = watermarked.groupBy(*[_col(k) for k in keys], _col(WINDOW_START)).applyInPandasWithState(
        merge_group, out_schema, StructType([StructField(STATE_COLUMN, BinaryType())]), "append",
        GroupStateTimeout.EventTimeTimeout)
    out = merged
    if tail:
        out = merged.mapInArrow(lambda it: worker.stateless_task(shipped, it, acc, pipeline_id=1),
                                spark_struct(pipeline_arrow_schema(tail[0])))
    out.grizzly = SparkJob(shipped.plan_id, "partial+stream", "dataframe", True, acc)
    return out
