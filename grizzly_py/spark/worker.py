"""The in-task runner: what a Spark Python worker does with a shipped plan.

Each Python worker keeps a module-global cache of the plans it has seen, keyed by plan hash
(``ShippedPlan.plan_id``): the unpickled query, its physical pipelines and their generated code.
Compiled machine code is cached by the JIT itself (by the SHA-256 of the IR), so a task that
finds its plan in the cache starts running at once; Spark reuses Python workers across tasks
(``spark.python.worker.reuse``, on by default). Nothing compiled ever crosses a process boundary.

The task kinds (``planner.py`` decides which a query uses):

- ``stateless_task``: a pipeline without a window, batch by batch.
- ``partial_task``: the first pipeline of a windowed query pre-aggregates the task's batches in
  compiled code and emits partial states (``partials.py``): once at the end of the task, or, where
  the task knows the watermark of the source batches before its own (file and Arrow sources),
  each window as soon as the watermark completes it, exactly as the embedded engine would.
- ``merge_task``: partial states of a set of (window, key) groups, merged and finished (a ranked
  window's merged groups ranked, as the engine ranks a fired window).
- ``raw_task`` / ``keyed_task``: keyed sessions and cumulative windows; the input rows numbered
  by (source batch, row), then a key partition's rows in that order through the window.
- ``finish_task`` / ``whole_task``: the embedded engine itself inside one task (window results
  in order through the rest of the query; or a query that cannot be split, whole).

Every task reports its metrics (records in, filtered, late, code generation and compile times,
whether its plan was cached, the pipelines' variant history) through an accumulator.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..codegen.module import GeneratedPipeline, generate_pipeline
from ..engine.adaptive import AdaptiveSettings, generic_only
from ..engine.incremental import IncrementalQuery
from ..engine.kernel_table import make_kernel
from ..engine.kernels import ProjectKernel, arrow_schema, output_arrow_schema
from ..engine.local import run_job
from ..engine.watermarks import batch_max_event_time
from ..engine.window_rows import ranked_output
from ..expressions import ProcessingTime
from ..physical.pipelines import PhysicalPlan, build_physical_plan
from ..plan import distinct_sources
from ..sources import BadInputError
from ..types import to_arrow_type
from .partials import (
    WINDOW_START,
    export_windows,
    merge_partials,
    merge_window,
    partial_geometry,
    partial_schema,
    read_panes,
    window_starts,
)
from .schema import conform, spark_arrow_schema, spark_arrow_type, to_spark_batches
from .shipping import ShippedPlan

_I64, _P = ctypes.c_int64, ctypes.c_void_p
CACHE_LIMIT = 32
M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def fit_to_the_address_space_limit() -> None:
    """Under ``spark.executor.pyspark.memory`` Spark caps a Python worker's address space
    (``RLIMIT_AS``). glibc gives each thread that allocates its own malloc arena, and reserves
    64 MiB of address space (128 MiB aligned) per arena, up to 8 per core: pyarrow's and the
    engine's threads exhausted a 1 GiB cap while most of it was free, a new thread could not get
    its thread-local storage and the loader aborted the process (Nexmark Q8, 800k rows, on
    Spark local[2]). Under a cap, the worker keeps two arenas."""
    import resource
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return
    try:
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 2)
    except (OSError, AttributeError):  # not glibc: nothing to set
        pass


fit_to_the_address_space_limit()  # Spark sets the cap before it unpickles a task, which imports this module


class WorkerPlan:
    """A shipped plan in this worker: the query, its pipelines and their generated code."""

    def __init__(self, shipped: ShippedPlan):
        self.plan_id = shipped.plan_id
        self.query = shipped.load()
        self.physical: PhysicalPlan = build_physical_plan(self.query)
        self._gens: dict[int, GeneratedPipeline] = {}
        self.codegen_ms = 0.0
        self.tasks = 0

    def gen(self, pid: int) -> GeneratedPipeline:
        g = self._gens.get(pid)
        if g is None:
            start = time.perf_counter()
            g = self._gens[pid] = generate_pipeline(self.physical.pipelines[pid])
            self.codegen_ms += (time.perf_counter() - start) * 1000
        return g


_PLANS: OrderedDict[str, WorkerPlan] = OrderedDict()


def worker_plan(shipped: ShippedPlan) -> tuple[WorkerPlan, bool]:
    """The cached plan of ``shipped`` in this process (and whether it was cached already)."""
    wp = _PLANS.get(shipped.plan_id)
    hit = wp is not None
    if hit:
        _PLANS.move_to_end(shipped.plan_id)
    else:
        wp = _PLANS[shipped.plan_id] = WorkerPlan(shipped)
        while len(_PLANS) > CACHE_LIMIT:
            _PLANS.popitem(last=False)
    wp.tasks += 1
    return wp, hit


def cached_plan_ids() -> list[str]:
    return list(_PLANS)


class TaskReport:
    """One task's metrics, sent to the driver through ``accumulator`` when the task ends."""

    def __init__(self, stage: str, wp: WorkerPlan | None, hit: bool, accumulator=None):
        self.accumulator = accumulator
        self.start = time.perf_counter()
        self.data = {"stage": stage, "pid": os.getpid(), "plan_cached": hit,
                     "plan_id": wp.plan_id[:12] if wp is not None else None,
                     "records_in": 0, "records_out": 0, "filtered": 0, "late": 0,
                     "codegen_ms": round(wp.codegen_ms, 3) if wp is not None else 0.0,
                     "compile_ms": 0.0, "pipelines": []}
        self.data.update(_task_ids())

    def kernel(self, kernel, pipeline_id: int, rows_in: int, variant: str = "generic") -> None:
        controller = getattr(kernel, "controller", None)
        if controller is not None:
            history, deopts = controller.variant_history(), controller.deopts
            self.data["counters"] = kernel.counters.describe(notes=False) if kernel.counters is not None else "none"
            self.data["counter_notes"] = kernel.counters.notes() if kernel.counters is not None else []
        else:
            history, deopts = [{"stage": variant, "reason": "initial", "records": rows_in}], 0
        late = kernel.counter(abi.STATE_LATE) if kernel is not None else 0
        filtered = kernel.counter(abi.STATE_FILTERED) if kernel is not None else 0
        compile_ms = kernel.compile_ms if kernel is not None else 0.0
        self.data["filtered"] += filtered
        self.data["late"] += late
        self.data["compile_ms"] = round(self.data["compile_ms"] + compile_ms, 3)
        self.data["pipelines"].append({"id": pipeline_id, "rows_in": rows_in, "filtered": filtered, "late": late,
                                       "compile_ms": round(compile_ms, 3),
                                       "variant_history": history, "deoptimizations": deopts})

    def send(self) -> None:
        self.data["seconds"] = round(time.perf_counter() - self.start, 6)
        if self.accumulator is not None:
            self.accumulator.add([self.data])


# --- adaptive execution inside tasks ------------------------------------------------------------
# Each task's kernels run their code variants under a controller (engine/adaptive.py), as on the
# embedded engine: what a task optimized to is remembered by the worker process per plan
# (engine/learned_variants.py), so the next task of the plan in this worker speculates on it
# from its first batch (guarded as always: a key outside its range deoptimizes); the histories
# reach the driver in the task reports.
_COUNTER_SOURCES: dict = {}             # counter kind -> the source this worker opened


def adapt(kernel, shipped: ShippedPlan) -> None:
    """Put ``kernel`` under a variant controller when the job is adaptive and it has variants."""
    if kernel is None or generic_only(kernel.gen, shipped.adaptive is not False) is not None:
        return
    settings = shipped.adaptive if isinstance(shipped.adaptive, AdaptiveSettings) else AdaptiveSettings()
    counters = settings.counters
    if isinstance(counters, str):
        if counters not in _COUNTER_SOURCES:
            from ..counters import open_counter_source
            _COUNTER_SOURCES[counters] = None if counters == "none" else open_counter_source(counters)
        counters = _COUNTER_SOURCES[counters]
    kernel.make_adaptive(settings, counters)


def _source_of(wp: WorkerPlan):
    return wp.physical.pipelines[0].input.source


def _check(source, batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
    """``batch`` (possibly only the columns the task needs) in the source's Arrow types, with no
    null event time (a bad batch fails the task naming the source, column and row)."""
    schema = pa.schema([source.arrow_schema.field(n) for n in batch.schema.names])
    batch = conform(batch, schema)
    ts = source.timestamp
    if ts is not None and ts in batch.schema.names and batch.num_rows and batch.column(ts).null_count:
        import pyarrow.compute as pc
        row = pc.index(pc.is_null(batch.column(ts)), True).as_py()
        raise BadInputError(f"{source.name}: column {ts!r}: null event timestamp in batch {index}, row {row}")
    return batch


# ----------------------------------------------------------------------------------------------
def stateless_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], accumulator=None,
                   fault=None, pipeline_id: int = 0) -> Iterator[pa.RecordBatch]:
    """A pipeline without a window, batch by batch, in order: the query's first pipeline over
    source batches, or (``pipeline_id`` > 0, streaming) a projection over window results."""
    wp, hit = worker_plan(shipped)
    report = TaskReport("stateless" if pipeline_id == 0 else "tail", wp, hit, accumulator)
    pipeline = wp.physical.pipelines[pipeline_id]
    gen = wp.gen(pipeline_id)
    if pipeline_id == 0:
        source = _source_of(wp)
        name = source.name
    else:
        source, name = None, f"pipeline {pipeline_id} input"
        in_schema = pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                               for f in pipeline.input_schema])
    identity = not pipeline.filters and pipeline.terminal.is_identity(pipeline.input_schema)
    kernel = None if identity else ProjectKernel(gen, name)
    adapt(kernel, shipped)
    out_schema = output_arrow_schema(gen)
    rows = 0
    for i, batch in enumerate(batches):
        batch = _check(source, batch, i) if source is not None else conform(batch, in_schema)
        rows += batch.num_rows
        out = batch.select(out_schema.names) if kernel is None else kernel.process(batch)
        report.data["records_out"] += out.num_rows
        _maybe_fail(fault, i)
        yield from to_spark_batches(out, out_schema)
    report.data["records_in"] = rows
    report.kernel(kernel, pipeline_id, rows)
    report.send()


def partial_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], watermark_before: int | None = None,
                 accumulator=None, with_event_time: bool = False, fault=None,
                 numbers: Iterable[int] | None = None, marks: Iterable[int] | None = None) -> Iterator[pa.RecordBatch]:
    """Pre-aggregate the task's batches in the first (window) pipeline and emit partial states.

    ``watermark_before``: the source's watermark before the task's first batch (the batches of
    earlier tasks decide it), or None when the task's input has no order with respect to other
    tasks (a batch DataFrame: nothing is late, every window is emitted at the end). With a
    watermark the task advances it after each batch as the embedded engine does, emits each
    window when the watermark completes it, and counts late records; windows complete before the
    task's first batch belong to earlier tasks and are never emitted here.

    ``with_event_time`` (streaming): each row also carries the task's largest event time (all
    records, filtered ones too) for Spark's watermark, and a task whose windows hold nothing
    sends one heartbeat row instead.

    ``numbers``: each batch's number in the source (a split's pieces), which places its rows in
    arrival order among every task's (``abi.PARAM_ROW_POSITION``: first/last break ties by it);
    None: the Spark partition's batches, numbered after the partition's index.

    ``marks``: the watermark in force for each batch, given by the driver (one input of a union,
    whose watermark the other inputs move too: ``union_partials.py``) instead of derived from the
    task's own batches; windows complete before the first batch's are not emitted here."""
    wp, hit = worker_plan(shipped)
    report = TaskReport("partial", wp, hit, accumulator)
    numbers = iter(numbers) if numbers is not None else itertools.count(partition_batch_base())
    pipeline = wp.physical.pipelines[0]
    gen = wp.gen(0)
    source = _source_of(wp)
    kernel = make_kernel(gen, source.name, 1)
    adapt(kernel, shipped)
    marks = iter(marks) if marks is not None else None
    track = marks is None and watermark_before is not None and source.timestamp is not None \
        and not isinstance(pipeline.event_time, ProcessingTime)
    watermark = watermark_before if track else abi.INT64_MIN
    fired = watermark_before if track else None
    drop_panes = None
    rows, emitted, task_max = 0, 0, None

    def advance(to: int):
        """The watermark moves to ``to``: the windows it completes leave, their panes go."""
        nonlocal watermark, fired, emitted, drop_panes
        watermark = to
        out = _emit(kernel, fired, watermark)
        if out is not None:
            emitted += out.num_rows
            yield _for_spark(_with_event_time(out, task_max) if with_event_time else out)
        drop_panes = drop_panes or kernel.function("state", "drop_panes", None, _P, _I64)
        for state in kernel.states:
            drop_panes(state.ctypes.data, watermark)
        fired = watermark
    try:
        for i, batch in enumerate(batches):
            batch = _check(source, batch, i)
            if marks is not None:
                mark = next(marks)
                if i == 0:
                    watermark = fired = mark
                elif mark > watermark:
                    yield from advance(mark)
            rows += batch.num_rows
            kernel.process(batch, watermark, where=(next(numbers), 0))
            _maybe_fail(fault, i)
            latest = batch_max_event_time(batch, source.timestamp) \
                if (track or with_event_time) and source.timestamp is not None and batch.num_rows else None
            if latest is not None:
                task_max = latest if task_max is None else max(task_max, latest)
            if track and latest is not None:
                candidate = max(abi.INT64_MIN, latest - source.watermark.out_of_orderness_ms - 1)
                if candidate > watermark:
                    yield from advance(candidate)
        out = _emit(kernel, fired, None)  # the end of the task's input
        if out is not None:
            emitted += out.num_rows
            yield _for_spark(_with_event_time(out, task_max) if with_event_time else out)
        elif with_event_time and task_max is not None and not emitted:
            yield _heartbeat(gen, task_max)
        report.data.update(records_in=rows, records_out=emitted, watermark=int(watermark))
        report.kernel(kernel, 0, rows)
    finally:
        kernel.close()
    report.send()


def partition_batch_base() -> int:
    """The number of the first batch of this Spark task's partition: partitions in their order,
    2^24 batches apart (0 outside Spark)."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    context = TaskContext.get()
    return context.partitionId() << 24 if context is not None else 0


def _for_spark(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Partial rows in Spark's Arrow types (dictionary keys as strings, timestamps in us)."""
    return conform(batch, spark_arrow_schema(batch.schema))


def _emit(kernel, after: int | None, upto: int | None) -> pa.RecordBatch | None:
    panes = read_panes(kernel)
    if not panes:
        return None
    starts = window_starts(partial_geometry(kernel.gen), [p for p, _ in panes], after, upto)
    return export_windows(kernel, starts, panes)


EVENT_TIME = "__gz_et"       # streaming: the task's largest event time (+ EVENT_TIME_SHIFT), for Spark's watermark
HEARTBEAT = "__gz_hb"        # streaming: a row that only carries the event time
EVENT_TIME_SHIFT = 1 << 40   # ms (~35 years); see streaming.py


def streaming_partial_schema(gen: GeneratedPipeline) -> pa.Schema:
    return partial_schema(gen).append(pa.field(EVENT_TIME, pa.timestamp("us", "UTC"), nullable=False)) \
        .append(pa.field(HEARTBEAT, pa.bool_(), nullable=False))


def _with_event_time(batch: pa.RecordBatch, task_max: int | None) -> pa.RecordBatch:
    n = batch.num_rows
    et = pa.array(np.full(n, (task_max or 0) + EVENT_TIME_SHIFT, dtype=np.int64) * 1000, pa.int64()) \
        .cast(pa.timestamp("us", "UTC"))
    return pa.RecordBatch.from_arrays(list(batch.columns) + [et, pa.array(np.zeros(n, dtype=bool))],
                                      names=batch.schema.names + [EVENT_TIME, HEARTBEAT])


def _heartbeat(gen: GeneratedPipeline, task_max: int) -> pa.RecordBatch:
    schema = streaming_partial_schema(gen)
    columns = []
    for f in schema:
        if f.name == EVENT_TIME:
            columns.append(pa.array([(task_max + EVENT_TIME_SHIFT) * 1000], pa.int64()).cast(f.type))
        elif f.name == HEARTBEAT:
            columns.append(pa.array([True]))
        elif pa.types.is_list(f.type):
            columns.append(pa.array([[]], f.type))
        elif f.nullable:
            columns.append(pa.nulls(1, f.type))
        else:
            columns.append(pa.array([abi.INT64_MIN], f.type))  # never a window start that fires
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def merge_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], accumulator=None) -> Iterator[pa.RecordBatch]:
    """Merge the partial states of this task's (window, key) groups and finish them."""
    wp, hit = worker_plan(shipped)
    report = TaskReport("merge", wp, hit, accumulator)
    gen = wp.gen(0)
    kernel = make_kernel(gen, "partial states", 1)
    schema = partial_schema(gen)
    try:
        parts = [conform(b, schema) for b in batches if b.num_rows]
        table = pa.Table.from_batches(parts, schema=schema)
        result = merge_partials(kernel, table)
        report.kernel(kernel, 0, table.num_rows)
    finally:
        kernel.close()
    schema = arrow_schema(gen.pipeline.output_schema)
    if result.num_rows:  # a ranked window's merged groups: its kept rows (window_rows.py)
        ranked = ranked_output(gen.pipeline, result.combine_chunks().to_batches()[0], schema)
        result = pa.Table.from_batches([ranked] if ranked is not None else [], schema=schema)
    report.data.update(records_in=table.num_rows, records_out=result.num_rows)
    yield from to_spark_batches(result, schema)
    report.send()


def stream_merge(shipped: ShippedPlan, key: tuple, start: int, parts: pa.Table, accumulator=None) -> pa.Table | None:
    """Streaming: one window's partial states (``parts``: the state columns of every row), of the
    key ``key``, merged and finished; the row in Spark's Arrow types."""
    wp, _hit = worker_plan(shipped)
    gen = wp.gen(0)
    kernel = make_kernel(gen, "partial states", 1)
    try:
        n = parts.num_rows
        out = output_arrow_schema(gen)
        columns = [pa.array([v] * n, spark_arrow_type_of(out.field(f.name).type)) for (f, _), v in
                   zip(gen.pipeline.terminal.keys, key)]
        names = [f.name for f, _ in gen.pipeline.terminal.keys]
        table = pa.Table.from_arrays(columns + [pa.array([start] * n, pa.int64())] + list(parts.columns),
                                     names=names + [WINDOW_START] + parts.schema.names)
        result = merge_window(kernel, start, table)
    finally:
        kernel.close()
    if result is None:
        return None
    return result.cast(spark_arrow_schema(result.schema))


def spark_arrow_type_of(t):
    return spark_arrow_type(t)


_QUIET = []


def quiet_pandas() -> None:
    """Once per worker: silence pandas' FutureWarning about concatenating all-null columns, which
    PySpark's state-function output path triggers for windows of null keys."""
    if not _QUIET:
        import warnings
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*concatenation with empty or all-NA.*")
        _QUIET.append(True)


def _task_ids() -> dict:
    """The running Spark task's partition, attempt, stage id and task id (unique in the Spark
    application and increasing with launch order; none outside Spark): the driver counts each
    (stage, partition) once, from its latest launched attempt (``job.py``)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - outside Spark (direct calls in tests)
        return {}
    ctx = TaskContext.get()
    if ctx is None:
        return {}
    return {"partition": ctx.partitionId(), "attempt": ctx.attemptNumber(), "stage_id": ctx.stageId(),
            "task_id": ctx.taskAttemptId()}


def report_rejected(accumulator, rejected: dict) -> None:
    """Rows a task's split dropped with ``on_bad_rows="drop"``, by source."""
    if accumulator is not None and rejected and any(rejected.values()):
        accumulator.add([{"stage": "read", "pid": os.getpid(), "plan_cached": False, "plan_id": None,
                          "records_in": 0, "records_out": 0, "filtered": 0, "late": 0,
                          "rejected": sum(rejected.values()), "rejected_by_source": dict(rejected),
                          "codegen_ms": 0.0, "compile_ms": 0.0, "pipelines": [], **_task_ids()}])


def report_late(accumulator, rows: int) -> None:
    """Streaming: ``rows`` partial states arrived for windows that had fired."""
    if accumulator is not None:
        accumulator.add([{"stage": "stream-merge", "pid": os.getpid(), "plan_cached": False, "plan_id": None,
                          "records_in": 0, "records_out": 0, "filtered": 0, "late": 0, "late_partials": rows,
                          "codegen_ms": 0.0, "compile_ms": 0.0, "pipelines": []}])


BATCH = "__gz_batch"  # keyed strategy: the number of the source batch a row came from
ROW = "__gz_row"      # keyed strategy: the row's position in its batch (a DataFrame's: in its order)


def raw_task(split, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Keyed strategy, input stage: the rows of a split (only the columns the query reads), each
    with the number of its source batch and its position in it, for Spark to partition by key."""
    for piece, batch in zip(split.pieces, batches):
        if batch.num_rows:
            number = pa.array(np.full(batch.num_rows, piece, dtype=np.int64))
            row = pa.array(np.arange(batch.num_rows, dtype=np.int64))
            out = pa.RecordBatch.from_arrays(list(batch.columns) + [number, row],
                                             names=batch.schema.names + [BATCH, ROW])
            yield conform(out, spark_arrow_schema(out.schema))


def keyed_task(shipped: ShippedPlan, batches: Iterable[pa.RecordBatch], marks: dict | None,
               accumulator=None) -> Iterator[pa.RecordBatch]:
    """Keyed strategy: all the records of some keys, in stream order (sorted by ``BATCH``, then
    ``ROW``: Spark's sort is not stable), through
    the first pipeline (a keyed session window) under the watermark each source batch had in the
    embedded engine (``marks``: batch number -> watermark before it; None: the input is one
    batch), firing as the watermark moves and at the end."""
    wp, hit = worker_plan(shipped)
    report = TaskReport("keyed", wp, hit, accumulator)
    gen = wp.gen(0)
    source = _source_of(wp)
    kernel = make_kernel(gen, source.name, 1)
    out_schema = output_arrow_schema(gen)
    rows, fired, watermark = 0, [], abi.INT64_MIN

    def fire(w):
        out = kernel.fire(w)
        if out is not None and out.num_rows:
            fired.append(out)
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            numbers = batch.column(BATCH).to_numpy()
            data = batch.drop_columns([BATCH, ROW])
            cuts = np.flatnonzero(np.diff(numbers)) + 1
            for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(numbers)]])):
                part = _check(source, data.slice(int(lo), int(hi - lo)), int(numbers[lo]))
                if marks is not None:
                    w = marks[int(numbers[lo])]
                    if w > watermark:
                        fire(w)
                        watermark = w
                kernel.process(part, watermark)
                rows += part.num_rows
        fire(abi.INT64_MAX)
        report.data.update(records_in=rows, records_out=sum(b.num_rows for b in fired))
        report.kernel(kernel, 0, rows)
    finally:
        kernel.close()
    for out in fired:
        yield from to_spark_batches(out, out_schema)
    report.send()


def run_embedded(shipped: ShippedPlan, feeds: dict[str, Iterable[pa.RecordBatch]], stage: str,
                 accumulator=None) -> pa.Table:
    """Run the shipped query on the embedded engine in this task; ``feeds`` gives each detached
    source (by name) its batches, in order."""
    query = shipped.load()  # a fresh copy: its sources get this task's data
    report = TaskReport(stage, None, False, accumulator)
    for src in distinct_sources(query.root):
        src.data = feeds[src.name]
    result = run_job([query], adaptive=shipped.adaptive)
    m = result.metrics
    report.data.update(records_in=m["records_in"], records_out=m["records_out"], filtered=m["filtered_records"],
                       late=m["late_records"])
    for q in m["queries"]:
        for p in q["pipelines"]:
            report.data["codegen_ms"] = round(report.data["codegen_ms"] + p["codegen_ms"], 3)
            report.data["compile_ms"] = round(report.data["compile_ms"] + p["compile_ms"], 3)
            report.data["pipelines"].append({k: p[k] for k in ("id", "kind", "rows_in", "rows_out", "filtered",
                                                                 "late", "compile_ms", "variant_history")})
    report.send()
    return result[query.sink.name]


@dataclass
class SequentialStep:
    """What one micro-batch of the sequential strategy leaves: the query's state and its output."""

    state: bytes
    rows: pa.Table


def sequential_step(shipped: ShippedPlan, state: bytes | None, batches: dict[str, pa.RecordBatch | None],
                    accumulator=None, latest: dict[str, int | None] | None = None,
                    group: int | None = None) -> SequentialStep:
    """One micro-batch of a streaming query (``streaming.stateful_dataframe``): the query's state
    restored from ``state``, ``batches`` (by source name; a source missing there had no rows) fed
    as one round of batches of the streams, the new state and the rows the sink received.
    ``latest``: where the batches are one key group's part of the micro-batch, each stream's
    largest event time in the whole micro-batch, by source name (each stream's watermark moves
    by every row of it: ``IncrementalQuery.feed_round``); ``group``: that key group, for the
    report. The task report counts this step's records only."""
    report = TaskReport("sequential", None, False, accumulator)
    job = IncrementalQuery(shipped.load(), shipped.adaptive)
    try:
        job.restore(state)
        before = job.metrics()
        rows = job.feed_round([batches.get(s.name) for s in job.sources],
                              None if latest is None else [latest.get(s.name) for s in job.sources])
        after = job.metrics()
        saved = job.snapshot()
    finally:
        job.close()
    report.data.update(records_in=after["records_in"] - before["records_in"], records_out=rows.num_rows,
                       filtered=after["filtered_records"] - before["filtered_records"],
                       late=after["late_records"] - before["late_records"])
    if group is not None:
        report.data["key_group"] = group
    report.send()
    return SequentialStep(saved, rows)


def _maybe_fail(fault, batch_index: int) -> None:
    """Test hook: ``fault`` = (marker path, batch index): the first task to get there (no marker
    file yet) creates the marker and kills its Python worker, as a crash would."""
    if fault is None or batch_index != fault[1]:
        return
    marker = fault[0]
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(17)
