"""Structured Streaming: a query over a streaming DataFrame as a streaming DataFrame.

Tumbling and sliding event-time windows take the partial strategy (``streaming_dataframe``,
below); queries that need the stream in order keep the query's own state in Spark's state store,
per key group or in one group (``stateful_dataframe``); stateless queries run batch by batch.

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
from ..engine.checkpoint_errors import CheckpointError
from ..engine.watermarks import batch_max_event_time
from ..physical.pipelines import ProjectTerminal, WindowTerminal
from ..plan import ChangelogNode
from . import worker
from .inputs import needed_columns
from .job import SparkJob
from .key_groups import GROUP, by_group, key_group, key_group_columns, key_groups
from .partials import WINDOW_START, EntryLayout
from .schema import pipeline_arrow_schema, spark_column, spark_struct, to_spark_batches
from .tagged import tagged_dataframe, tagged_name, untagged
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
    pipelines = physical.pipelines
    first = pipelines[0]
    df = source.df.select(*[spark_column(c) for c in needed_columns(first, source)])
    if isinstance(first.terminal, ProjectTerminal):
        out = df.mapInArrow(lambda it: worker.stateless_task(shipped, it, acc, fault),
                            spark_struct(pipeline_arrow_schema(first)))
        out.grizzly = SparkJob(shipped.plan_id, "stateless+stream", "dataframe", True, acc)
        return out
    kind = first.terminal.assigner.kind
    tail = pipelines[1:]
    if not (kind.spark == "partials" and kind.clock == "event") or len(tail) > 1 \
            or any(not isinstance(p.terminal, ProjectTerminal) for p in tail):
        return stateful_dataframe(spark, shipped, physical, [source], acc)
    if source.timestamp is None:
        raise NotImplementedError("an event-time window on a streaming DataFrame needs from_spark(..., timestamp=...)")
    gen = generate_pipeline(first)
    size = first.terminal.assigner.geometry.size  # (one size: the kinds with partial states)
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
            n = len(keys)  # the key values, then whether each is null (pandas makes a null int NaN)
            values = tuple(None if null else v for v, null in zip(key[:n], key[n:2 * n]))
            result = worker.stream_merge(shipped, values, int(key[-1]), table, acc)
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
    from pyspark.sql import functions as F
    flags = {f"__gz_null_{i}": F.isnull(spark_column(k)) for i, k in enumerate(keys)}
    if flags:
        watermarked = watermarked.withColumns(flags)
    by = [spark_column(k) for k in keys] + [spark_column(f) for f in flags] + [spark_column(WINDOW_START)]
    merged = watermarked.groupBy(*by) \
        .applyInPandasWithState(
        merge_group, out_schema, StructType([StructField(STATE_COLUMN, BinaryType())]), "append",
        GroupStateTimeout.EventTimeTimeout)
    out = merged
    if tail:
        out = merged.mapInArrow(lambda it: worker.stateless_task(shipped, it, acc, pipeline_id=1),
                                spark_struct(pipeline_arrow_schema(tail[0])))
    out.grizzly = SparkJob(shipped.plan_id, "partial+stream", "dataframe", True, acc)
    return out


# --- the stateful strategies: the query's own state per micro-batch --------------------------
SEQUENCE_SCHEMA = "g int, part int, seq long, stream int, latest long, payload binary"
OUTPUT_SCHEMA = "seq long, payload binary"
GROUPS = "groups"  # keyed strategy: how many key groups the state was kept in


def stateful_dataframe(spark, shipped, physical, sources, acc, stream_keys: dict[str, list[str]] | None = None):
    """A query over streaming DataFrames (``sources``) whose operators keep their own state (running
    aggregates, deduplication, unbounded Top-N, sessions, count windows, processing-time windows,
    a window after a window), micro-batch after micro-batch: each micro-batch's rows travel as
    Arrow IPC (exact types: no pandas conversion), in partition order, to
    ``applyInPandasWithState``, whose function restores the query's state from Spark's state store
    (``engine/incremental.py``), feeds the micro-batch as one batch of the stream, emits the rows
    the sink received and stores the state again; the rows are decoded into the query's output
    schema. Watermarks, lateness and firing are the embedded engine's, with a micro-batch as its
    batch; Spark checkpoints the state, so a restart from the checkpoint replays the micro-batches
    after it and gives the uninterrupted run's results.

    A query over several streams (a union or join of them) reads them as one tagged DataFrame
    (``tagged.py``): each micro-batch is one round of the embedded engine's job, one batch of each
    stream (its rows in this micro-batch; a stream without rows in it keeps its watermark), so the
    union's or join's watermark is the least of the streams' as in the engine.

    Where the state is per key of input columns (``key_groups.py``), the rows are grouped by
    key group (a hash of the key columns modulo ``key_groups``: ``keyed+stream``), each group's
    state the query's state over its keys, so the groups run in parallel tasks. Over several
    streams (``stream_keys``: each stream's key columns, where the query runs by key,
    ``key_groups.stream_key_columns``) a row's group is that of its own stream's key columns.
    A watermark belongs to the whole stream: where it fires windows (a session window on one
    stream; every stream of a join or union), each partition sends every group each stream's
    largest event time in its rows (a heartbeat), and each group's step moves each stream's
    clock, right after the group's part of that stream's batch, to the stream's largest event
    time in the whole micro-batch (``IncrementalQuery.feed_round``), so every group runs under
    the job's watermarks, stream by stream. Otherwise one group takes every row
    (``sequential+stream``). An updating stream (its changelog, ``op`` first) is emitted in
    Spark's update output mode: each micro-batch's changes."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    source = sources[0]
    several = len(sources) > 1
    if several:
        keys = stream_keys
    else:
        columns = key_group_columns(physical)
        keys = {source.name: columns} if columns else None
    final_schema = pipeline_arrow_schema(physical.pipelines[-1])
    input_schema = source.arrow_schema
    schemas = {s.name: s.arrow_schema for s in sources}
    names = list(schemas)
    source_name = source.name  # (the tasks' closures must not hold the sources: they hold the session)
    groups = key_groups(spark) if keys else 1
    first = physical.pipelines[0]
    # each key group moves a stream's watermark by the whole stream's rows: a session window on
    # one stream (it fires by the watermark), every stream of a join or union
    heartbeats = keys is not None and (several or source.timestamp is not None and isinstance(
        first.terminal, WindowTerminal) and first.terminal.assigner.kind.clock == "event")
    # the column of each stream's event time in the rows a task gets (by the stream's index)
    timestamps = {i: tagged_name(i, s.timestamp) if several else s.timestamp
                  for i, s in enumerate(sources) if s.timestamp is not None} if heartbeats else {}
    mode = "update" if isinstance(physical.query.root, ChangelogNode) else "append"
    if several:
        df = tagged_dataframe(sources, [(key_group(keys[s.name], s.schema, groups) if keys else F.lit(0)).alias(GROUP)
                                        for s in sources])
    else:
        group = key_group(keys[source.name], source.schema, groups) if keys else F.lit(0)
        df = source.df.select(*[spark_column(n) for n in input_schema.names], group.alias(GROUP))

    def encode(batches):
        from pyspark import TaskContext
        part = TaskContext.get().partitionId()
        latest = {}  # each stream's largest event time in this partition's rows
        for seq, b in enumerate(batches):
            if not b.num_rows:
                continue
            for i, column in timestamps.items():
                m = batch_max_event_time(b, column)  # (null in the other streams' rows)
                if m is not None:
                    latest[i] = max(latest.get(i, m), m)
            for g, rows in by_group(b) if keys else [(0, b.drop_columns([GROUP]))]:
                yield _sequence_row(g, part, seq, None, None, _ipc(pa.Table.from_batches([rows])))
        for i, m in latest.items():  # every group learns each stream's largest event time here
            for g in range(groups):
                yield _sequence_row(g, part, -1, i, m, None)

    def step(key, frames, state):
        import pandas as pd
        worker.quiet_pandas()
        rows = pd.concat(list(frames)).sort_values(["part", "seq"], kind="stable")
        latest = None
        if heartbeats:  # each stream's largest event time in the whole micro-batch
            beats = rows[rows["payload"].isna()]
            latest = {names[int(i)]: int(m) for i, m in beats.groupby("stream")["latest"].max().items()}
        payloads = [p for p in rows["payload"] if p is not None]
        if several:  # one batch of each stream (tagged.py)
            feeds = untagged([b for p in payloads for b in _unipc(bytes(p)).to_batches()], schemas)
            batches = {name: (feeds[name] or [None])[0] for name in schemas}
        else:
            tables = [_unipc(bytes(p)).cast(input_schema) for p in payloads]
            batches = {source_name: pa.concat_tables(tables).combine_chunks().to_batches()[0] if tables else
                       pa.RecordBatch.from_pylist([], schema=input_schema)}
        saved = None
        if state.exists:
            saved = state.get[0]
            if keys and state.get[1] != groups:
                raise CheckpointError(f"this streaming query's checkpoint keeps its state in {state.get[1]} key "
                                      f"groups, the session makes {groups} (spark.sql.shuffle.partitions): set it "
                                      f"back to {state.get[1]}, or start from a fresh checkpoint location")
        out = worker.sequential_step(shipped, saved, batches, acc, latest=latest, group=int(key[0]) if keys else None)
        state.update((out.state, groups) if keys else (out.state,))
        if out.rows.num_rows:
            yield pd.DataFrame({"seq": [0], "payload": [_ipc(out.rows)]})

    def decode(batches):
        for b in batches:
            for payload in b.column("payload").to_pylist():
                yield from to_spark_batches(_unipc(payload), final_schema)

    state_schema = f"{STATE_COLUMN} binary, {GROUPS} int" if keys else f"{STATE_COLUMN} binary"
    encoded = df.mapInArrow(encode, SEQUENCE_SCHEMA)
    stepped = encoded.groupBy("g").applyInPandasWithState(step, OUTPUT_SCHEMA, state_schema, mode,
                                                           GroupStateTimeout.NoTimeout)
    out = stepped.mapInArrow(decode, spark_struct(final_schema))
    notes = [f"key groups: {groups}, by " + "; ".join(f"{name} ({', '.join(columns)})"
                                                     for name, columns in keys.items())] if keys else []
    out.grizzly = SparkJob(shipped.plan_id, "keyed+stream" if keys else "sequential+stream", "dataframe", True,
                           acc, notes, output_stage="sequential", output_mode=mode)
    return out


def _sequence_row(g: int, part: int, seq: int, stream: int | None, latest: int | None,
                  payload: bytes | None) -> pa.RecordBatch:
    """A payload of rows (``payload``) or a heartbeat (stream ``stream``'s largest event time
    ``latest`` in partition ``part``) for key group ``g``."""
    return pa.record_batch({"g": pa.array([g], pa.int32()), "part": pa.array([part], pa.int32()),
                            "seq": pa.array([seq], pa.int64()), "stream": pa.array([stream], pa.int32()),
                            "latest": pa.array([latest], pa.int64()), "payload": pa.array([payload], pa.binary())})
