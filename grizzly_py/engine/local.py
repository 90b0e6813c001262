"""The embedded engine's driver: feeds source batches through compiled pipelines, advances
watermarks at batch boundaries, fires windows and delivers results to sinks.

With ``parallelism`` > 1 the pipelines that read a source run as tasks on a worker pool
(``parallel.py``): each batch is cut into morsels, one task each, every worker on its own state
block. A window pipeline waits for its batch's tasks before the watermark moves (so what is late
does not depend on the cut), and its windows fire by merging the workers' states. A stateless
pipeline feeding the sink never waits: its tasks run ahead (bounded) and a reorder buffer keeps
the output in input order. Order-sensitive windows (count windows, sessions) and pipelines fed by
other pipelines run in the driver thread, in stream order.

A query's pipelines form a small DAG (a tree whose leaves read sources): a pipeline reads a
source, the results of one window pipeline, or the outputs of several pipelines (a union). Every
pipeline's output goes to exactly one consumer, the last pipeline's to the sink.

Sources are read round-robin, one batch at a time, in order of first appearance in the query
(``plan.distinct_sources``); a source that ends drops out. A batch passes through every pipeline
that reads its source, in the order of the plan's source reads (a union's inputs in order).

Watermarks follow semantics.md. A source's watermark after one of its batches is
``max(previous, max event time - out-of-orderness - 1)``; before its first row it is INT64_MIN
(undefined), and it is INT64_MAX once the source has ended. After every batch (and every end) the
watermarks move through the pipelines in order, producers first: a pipeline's input watermark is
its source's, its producer window's, or the minimum over a union's inputs; a window pipeline whose
input watermark grew fires its complete windows. Its results are a batch for the next pipeline,
processed under the watermark that was in force there before the firing. While a batch is
processed, a window pipeline's watermark is the one reached after the previous batch.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..codegen.module import GeneratedPipeline, generate_pipeline
from ..codegen.options import WINDOW_STATES, CodegenOptions
from ..codegen.shared_window import shared_state_unsupported
from ..codegen.sort_grouping import regrouping_unsupported
from ..expressions import Column, ProcessingTime
from ..physical.pipelines import (JoinInput, JoinTerminal, PhysicalPlan, Pipeline, ProjectTerminal, SourceInput,
                                  UnionInput, WindowInput, build_physical_plan, upstream_ids)
from ..plan import Query, distinct_sources
from ..results import JobResult
from ..sources import TIMESTAMP_UNIT_DIVISOR, rejected_metrics
from ..types import to_arrow_type
from . import commit
from .accounting import check_accounting
from .adaptive import Adaptivity, generic_only
from .checkpoint import CheckpointConfig, Checkpointer
from .kernel_protocol import PipelineKernel, WindowAggregateKernel
from .kernel_table import make_join_kernel, make_kernel
from .kernels import PlannedParts, ProjectKernel, SharedBatch, output_arrow_schema
from .regrouping import Layout, RegroupingKernel, state_choice_unsupported
from .parallel import (CostModel, OrderedStage, WorkerPool, align_morsels, auto_parallelism, plan_morsels, run_now,
                       wait_all)
from .sinks import open_sink
from .source_reads import SourceRead
from .state_memory import check_state_memory
from .task_parts import RoundBases, TaskStart, entering_native, signal_entering_native

@dataclass
class PipelineRun:
    """One pipeline in a running job: its kernel, watermark and statistics."""

    pipeline: Pipeline
    gen: GeneratedPipeline
    kernel: PipelineKernel | None  # None: an identity projection, nothing to run
    codegen_ms: float
    output_schema: pa.Schema
    watermark: int = abi.INT64_MIN  # windows: the last one fired at; projections: their input's
    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    window_state_note: str | None = None  # why a shared window state was asked for but not used
    generic_note: str | None = None  # why the pipeline has no other code variant

    def metrics(self) -> dict:
        k = self.kernel
        late = k.counter(abi.STATE_LATE) if k is not None else 0
        filtered = k.counter(abi.STATE_FILTERED) if k is not None else 0
        window_state = k.window_state if k is not None else None
        history = k.variant_history(self.generic_note) if k is not None else None  # (a switching
        # layout: every kernel's stages, each with its own layout)
        if history is None:
            history = [{"stage": "generic", "reason": self.generic_note or "initial", "at_s": 0.0,
                        "at_record": 0, "records": self.rows_in}]
        for h in history:
            h.setdefault("window_state", window_state)
        out = {"id": self.pipeline.id, "kind": self.pipeline.terminal.kind,
               "variant": history[-1]["stage"], "window_state": window_state,
               "grouping": k.grouping if k is not None else None,
               "rows_in": self.rows_in, "rows_out": self.rows_out,
               "filtered": filtered, "late": late, "codegen_ms": round(self.codegen_ms, 3),
               "compile_ms": round(k.compile_ms if k is not None else 0.0, 3),
               "seconds": round(self.seconds, 6),
               "variant_history": history,
               "deoptimizations": k.deopts if k is not None else 0}
        if self.window_state_note is not None:
            out["window_state_fallback"] = self.window_state_note
        if window_state == "shared":
            out["shared_state"] = k.metrics()
        layouts = k.layout_history() if k is not None else None
        if layouts is not None:
            out["layout_history"] = layouts
        return out


def _instantiate(pipeline: Pipeline, input_name: str, workers: int = 1,
                 window_state: str = "thread_local", adaptive: Adaptivity | None = None,
                 grouping: str = "hash") -> PipelineRun:
    """Generate and wrap ``pipeline``; ``workers`` > 1 for a pipeline that reads a source gives its
    kernel one state block per worker when its work can be cut into morsels. ``window_state``
    "shared": a window pipeline that supports it keeps one state that every worker updates
    atomically (``codegen/shared_window.py``); the others keep thread-local state, and say why."""
    if isinstance(pipeline.terminal, JoinTerminal):  # one compiled kernel per input (join_kernel.py)
        join = make_join_kernel(pipeline, input_name, grouping)
        return PipelineRun(pipeline, join.gen, join, join.codegen_ms, join.schema)
    start = time.perf_counter()
    note = None
    if window_state == "shared" and not isinstance(pipeline.terminal, ProjectTerminal):
        note = shared_state_unsupported(pipeline)
    shared = window_state == "shared" and note is None
    if not isinstance(pipeline.input, SourceInput):
        workers = 1
    choose_grouping = grouping == "auto"
    choose_state = window_state == "auto" and grouping != "sort" and state_choice_unsupported(pipeline, workers) is None
    if (choose_grouping or choose_state) and not shared and adaptive is not None \
            and regrouping_unsupported(pipeline) is None:  # the state layout is chosen as it runs
        def build(layout: Layout):
            shared_now = layout.window_state == "shared"
            return _kernel(pipeline, input_name, workers, shared_now, layout.grouping, adaptive)[1]
        kernel = RegroupingKernel(pipeline, build, adaptive.settings, workers, choose_grouping, choose_state)
        gen = kernel.gen
        ms = (time.perf_counter() - start) * 1000
        return PipelineRun(pipeline, gen, kernel, ms, output_arrow_schema(gen), window_state_note=note,
                           generic_note=generic_only(gen, True))
    gen, kernel, generic_note = _kernel(pipeline, input_name, workers, shared,
                                        "hash" if grouping == "auto" else grouping, adaptive)
    ms = (time.perf_counter() - start) * 1000
    return PipelineRun(pipeline, gen, kernel, ms, output_arrow_schema(gen), window_state_note=note,
                       generic_note=generic_note)


def _kernel(pipeline: Pipeline, input_name: str, workers: int, shared: bool, grouping: str,
            adaptive: Adaptivity | None):
    """(generated code, kernel or None, why it has one variant) of a pipeline that is not a join:
    a shared window state, hash or sort grouping; adaptive when it has variants."""
    options = None
    if shared:
        options = CodegenOptions(window_state="shared")
    elif grouping != "hash":  # sort grouping where supported (codegen/sort_grouping.py)
        options = CodegenOptions(grouping=grouping)
    gen = generate_pipeline(pipeline, options)
    t = pipeline.terminal
    if isinstance(t, ProjectTerminal):
        kernel = None if (not pipeline.filters and t.is_identity(pipeline.input_schema)) \
            else ProjectKernel(gen, input_name, workers)
    else:
        kernel = make_kernel(gen, input_name, workers)
    generic_note = generic_only(gen, adaptive is not None)
    if kernel is not None and generic_note is None:
        kernel.make_adaptive(adaptive.settings, adaptive.counters)
    return gen, kernel, generic_note


def _resume(kernel: WindowAggregateKernel, batch: pa.RecordBatch, watermark: int, rest: int | None, where: tuple[int, int]) -> None:
    """A kernel over a shared window state that stopped at row ``rest`` of ``batch`` (its state
    must grow first; nothing else runs in it now): grow, and run the rest of the batch again."""
    batch_no, first = where
    while rest is not None:
        kernel.grow()
        batch, first = batch.slice(rest), first + rest
        rest = kernel.process(batch, watermark, 0, (batch_no, first))
        kernel.batches_processed -= 1  # the same batch again: later batches keep their numbers


def _arrow_schema(pipeline: Pipeline) -> pa.Schema:
    """The Arrow schema of the batches ``pipeline`` reads."""
    return pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                      for f in pipeline.input_schema])


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` under ``schema`` (same column names): columns of another Arrow type are cast
    (dictionary to plain strings, narrower integers to int64, float32 to float64)."""
    if batch.schema == schema:
        return batch
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def batch_max_event_time(batch: pa.RecordBatch, column: str) -> int | None:
    """The largest event time of ``batch`` in epoch ms (timestamps floored), None if it is empty."""
    if not batch.num_rows:
        return None
    array = batch.column(column)
    unit = array.type.unit if pa.types.is_timestamp(array.type) else None
    if not array.null_count and (unit is not None or pa.types.is_int64(array.type)):
        # the values buffer read in place (twice as fast as pc.max, which the driver feels)
        raw = int(np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array), offset=8 * array.offset).max())
    else:
        raw = pc.max(array.cast(pa.int64()) if unit is not None else array).as_py()
    if raw is None:
        return None
    if unit is None:
        return int(raw)
    mul, div = TIMESTAMP_UNIT_DIVISOR[unit]
    return raw * mul // div


@dataclass
class SourceClock:
    """A source's watermark in one query. ``tracker``: a window kernel that reads every batch of
    the source with the source's event time, whose fused loop already tracks the maximum (else the
    driver computes it per batch)."""

    source: object
    tracker: WindowAggregateKernel | None = None
    max_event_time: int | None = None
    watermark: int = abi.INT64_MIN
    ended: bool = False

    def observe(self, batch: pa.RecordBatch | None) -> None:
        """After ``batch`` (None: after the batches the tracker has read)."""
        src = self.source
        if src.timestamp is None:
            return
        if self.tracker is not None:
            seen = self.tracker.max_event_time
            latest = None if seen == abi.INT64_MIN and self.max_event_time is None else seen
        else:
            latest = batch_max_event_time(batch, src.timestamp)
        self.observe_max(latest)

    def batch_max(self, batch: pa.RecordBatch) -> int | None:
        """``batch``'s largest event time (ms), for ``observe_max`` later; None without event time."""
        return batch_max_event_time(batch, self.source.timestamp) if self.source.timestamp is not None else None

    def observe_max(self, latest: int | None) -> None:
        """After a batch whose largest event time is ``latest`` (None: it had none)."""
        if latest is not None and self.max_event_time is not None:
            latest = max(latest, self.max_event_time)
        if latest is None:
            return
        self.max_event_time = latest
        candidate = max(abi.INT64_MIN, latest - self.source.watermark.out_of_orderness_ms - 1)
        self.watermark = max(self.watermark, candidate)

    def end(self) -> None:
        self.ended, self.watermark = True, abi.INT64_MAX


class QueryRun:
    """Runs one query: its pipelines from its sources to its sink."""

    def __init__(self, query: Query, pool: WorkerPool | None = None, cost: CostModel | None = None,
                 window_state: str = "thread_local", adaptive: Adaptivity | None = None,
                 grouping: str = "hash", sink_factory=open_sink):
        self.physical: PhysicalPlan = build_physical_plan(query)
        pipelines = self.physical.pipelines
        self.pool, self.cost = pool, cost or CostModel()
        self.workers = workers = pool.workers if pool is not None else 1
        self.runs = [_instantiate(p, p.input.source.name if isinstance(p.input, SourceInput)
                                  else f"pipeline {p.id} input", workers, window_state, adaptive, grouping)
                     for p in pipelines]
        self.sources = distinct_sources(query.root)
        # the consumer of each pipeline's output (None: the sink), and how it wants the batches
        self.consumer: dict[int, int | None] = {p.id: None for p in pipelines}
        for p in pipelines:
            for producer in upstream_ids(p.input):
                self.consumer[producer] = p.id
        if [pid for pid, c in self.consumer.items() if c is None] != [pipelines[-1].id]:
            raise RuntimeError("physical plan: every pipeline but the last must feed exactly one other")
        self.union_schema = {p.id: _arrow_schema(p) for p in pipelines if isinstance(p.input, UnionInput)}
        # the pipelines that read each source, in the plan's order of source reads
        reads = sorted((p.input.leaf, p.id) for p in pipelines if isinstance(p.input, SourceInput))
        self.readers: dict[int, list[int]] = {id(s): [] for s in self.sources}
        for _, pid in reads:
            self.readers[id(pipelines[pid].input.source)].append(pid)
        self.clocks = {id(s): SourceClock(s, self._tracker(s)) for s in self.sources}
        # watermarks matter only to windows; a query without any skips them
        self.has_windows = any(r.kernel is not None and r.kernel.fires for r in self.runs)
        self.sink_schema = self.runs[-1].output_schema
        self.sink = sink_factory(query.sink, self.sink_schema)  # checkpointing: part files (checkpoint.py)
        self.records_in = 0
        self.batch_numbers = {id(s): 0 for s in self.sources}  # per source, for error messages
        # stateless pipelines whose morsels run ahead, their output ordered by a reorder buffer
        self.stages: dict[int, OrderedStage] = {}
        if pool is not None:
            for run in self.runs:
                if run.kernel is not None and not run.kernel.fires and run.kernel.workers > 1 \
                        and self.consumer[run.pipeline.id] is None:
                    self.stages[run.pipeline.id] = OrderedStage(pool, self._sink_writer(run), 4 * pool.workers)
        # a parallel tumbling event-time window that alone reads the query's only source takes
        # several source batches per round of tasks (each batch under its own watermark) and
        # fires once per round: see _flush_group
        self.grouped = self._groupable_window()
        self.group: list[tuple[SharedBatch, int, int | None]] = []  # (batch, number, largest event time)
        self.group_rows = 0
        self._round = None  # (run, [(future, records)], start): the round of grouped tasks in flight
        self._rounds = 0  # rounds started (the first is shorter: CostModel.group_rows)
        # rows that make a round: worked out when a round starts, not for every batch fed
        self._group_limit = self.cost.group_rows(self.workers, first=True)
        self._driver_free_since: float | None = None  # when the driver ended its share of a round
        # with a worker pool: a round's tasks reached their native calls (TaskStart)
        self._task_started = threading.Semaphore(0) if pool is not None else None
        # the watermark in force for each grouped batch: each task moves it itself between its
        # parts, from the event times its kernel tracks (gz_run_parts), starting from the
        # largest event time of the rows before the task, which the driver reads (see
        # _flush_group); a shared window state has no block per task: the driver reads every
        # batch's event times before the tasks start
        self.chain_delay: int | None = None
        if self.grouped is not None:
            clock, kernel = self.clocks[id(self.sources[0])], self.runs[self.grouped].kernel
            if clock.tracker is kernel and kernel.window_state != "shared":
                self.chain_delay = self.sources[0].watermark.out_of_orderness_ms + 1
            else:
                clock.tracker = None

    def _tracker(self, source) -> WindowAggregateKernel | None:
        for pid in self.readers[id(source)]:
            run = self.runs[pid]
            event_time = run.pipeline.event_time
            if isinstance(run.kernel, WindowAggregateKernel) and isinstance(event_time, Column) \
                    and event_time.name == source.timestamp:
                return run.kernel
        return None

    def _groupable_window(self) -> int | None:
        """The pipeline whose batches may be grouped, if any. Grouping is exact for tumbling
        windows: a record of a later batch never enters a window that an earlier batch's
        watermark completes (it would be late), so firing after the group gives the same
        windows, in the same order, with the same late records. (Not for sliding windows: a
        later record may enter a pane that a completed window shares.)"""
        if len(self.sources) != 1:
            return None
        readers = self.readers[id(self.sources[0])]
        if len(readers) != 1:
            return None
        run = self.runs[readers[0]]
        k = run.kernel
        if not (isinstance(k, WindowAggregateKernel) and isinstance(run.pipeline.event_time, Column)):
            return None
        if not k.tumbling:
            return None
        return readers[0]

    @property
    def source(self):
        """The query's source, when it has only one."""
        if len(self.sources) != 1:
            raise ValueError(f"this query reads {len(self.sources)} sources")
        return self.sources[0]

    def feed(self, batch: pa.RecordBatch, source=None, intake=None) -> None:
        """One batch of ``source`` (default: the only one): through every pipeline that reads it,
        then the watermarks move and complete windows fire. ``intake``: the job's bulk intake of
        the source's batches, if it has one (``source_reads.py``)."""
        source = self.source if source is None else source
        self.records_in += batch.num_rows
        number = self.batch_numbers[id(source)]
        self.batch_numbers[id(source)] = number + 1
        if self.grouped is not None:
            shared, latest = SharedBatch(batch, intake), _UNREAD
            # read now, while the workers run the round before: the event times _flush_group
            # will want (every batch's; chained rounds' tasks read what they need: RoundBases)
            if self.chain_delay is None:
                latest = self.clocks[id(source)].batch_max(batch)
            if self.pool is not None:
                self.runs[self.grouped].kernel.prepare_ahead(shared)
            self.group.append((shared, number, latest))
            self.group_rows += batch.num_rows
            if self.group_rows >= self._group_limit:
                self._flush_group()
            return
        for pid in self.readers[id(source)]:
            if self.runs[pid].kernel is not None and self.runs[pid].kernel.workers > 1:
                self._push_morsels(pid, batch, number, intake)
            else:
                self._push(pid, batch)
        if self.has_windows:
            self.clocks[id(source)].observe(batch)
            self._advance()

    def end(self, source) -> None:
        """``source`` has no more batches: its watermark jumps to +infinity."""
        self._flush_group()
        self._finish_round()
        clock = self.clocks[id(source)]
        if not clock.ended:
            clock.end()
            self._advance()

    def finish(self) -> pa.Table | None:
        """End of the bounded input: every source's watermark is +infinity, every window fired."""
        self.flush()
        for s in self.sources:
            self.end(s)
        return self.sink.finish()

    def flush(self) -> None:
        """Run the batches grouped for a round now and wait for every task: the state then holds
        every batch fed so far (checkpoints, the state-memory check)."""
        self._flush_group()
        self.drain()

    def drain(self) -> None:
        """Wait for the tasks still running (a round of grouped window tasks, which then fires;
        stateless tasks); raise the first error."""
        error = None
        try:
            self._finish_round()
        except BaseException as e:
            error = e
        for stage in self.stages.values():
            try:
                stage.drain()
            except BaseException as e:
                error = error or e
        if error is not None:
            raise error

    def close(self) -> None:
        """Free the window state; a file sink that did not finish is removed. (Tasks still in
        flight after an error are waited for first: they use the state blocks.)"""
        try:
            self.drain()
        except BaseException:
            pass  # the job's own error matters more
        for r in self.runs:
            if r.kernel is not None and r.kernel.fires:
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
        if run.kernel is None:  # identity: the batch as it is, under the pipeline's (nullable) schema
            out = batch if batch.schema == run.output_schema else pa.RecordBatch.from_arrays(
                batch.columns, schema=run.output_schema)
        elif run.kernel.emits_per_batch:  # rows out per batch
            out = run.kernel.process(batch)
        else:
            where = (run.kernel.batches_processed, 0)
            rest = run.kernel.process(batch, run.watermark)
            if rest is not None:  # a shared window state stopped to grow
                _resume(run.kernel, batch, run.watermark, rest, where)
            run.seconds += time.perf_counter() - start
            return
        run.seconds += time.perf_counter() - start
        run.rows_out += out.num_rows
        self._deliver(index, out)

    def _push_morsels(self, index: int, batch: pa.RecordBatch, number: int, intake=None) -> None:
        """Process a source batch in pipeline ``index`` as morsel tasks on the worker pool."""
        run = self.runs[index]
        kernel = run.kernel
        run.rows_in += batch.num_rows
        if not batch.num_rows:
            return
        pieces = plan_morsels(batch.num_rows, self.cost.morsel_count(batch.num_rows, kernel.workers))
        cost = self.cost
        start = time.perf_counter()
        if not kernel.fires:  # a projection: outputs in order
            def task(offset, length):
                def run_morsel(worker: int) -> pa.RecordBatch:
                    t0 = time.perf_counter()
                    out = kernel.process(batch.slice(offset, length), worker, (number, offset))
                    cost.observe(length, time.perf_counter() - t0)
                    return out
                return run_morsel
            stage = self.stages.get(index)
            if stage is not None:  # outputs reach the sink in order, through the reorder buffer
                for offset, length in pieces:
                    stage.submit(task(offset, length), length)
            else:  # a union's input: the outputs, in order, before the next batch
                for out in self.pool.run_all([(task(o, n), n) for o, n in pieces]):
                    run.rows_out += out.num_rows
                    self._deliver(index, out)
            run.seconds += time.perf_counter() - start
            return
        shared = SharedBatch(batch, intake)  # prepared once for all its morsels
        tasks = []
        for block, (o, n) in enumerate(pieces):
            parts = [(shared, number, run.watermark, o, n)]
            tasks.append((self._round_task(kernel, parts, block, plan=self._plan(kernel, parts, block)), n))
        if len(tasks) == 1:  # not worth a hand-off: this thread (no task is running)
            results = [tasks[0][0](0)]
        else:
            results = self.pool.run_all(tasks)
        self._await_task_starts(len(tasks))  # (the tasks ended: their start signals are in)
        self._rerun_stopped(kernel, self._finish_plans(results))
        run.seconds += time.perf_counter() - start

    def _flush_group(self) -> None:
        """Start the grouped source batches as one round of morsel tasks, each batch's rows under
        the watermark reached after the batch before it, once the previous round has finished and
        its windows fired. The round runs while the driver reads and checks the next batches
        (``_finish_round`` waits for it, grows a shared state that stopped, moves the watermark
        and fires): the driver's per-batch work no longer adds to the workers'.

        Chained (``chain_delay``): the tasks hold whole batches, and each moves the watermark
        itself between its parts (``gz_run_parts``) from the round's first and the event times
        its block has read, its block first raised to the largest event time of the rows before
        the task (``Kernel.raise_max_event_time``). The driver reads the event times of those
        rows only: with the driver's own morsel first, at parallelism 2 that is its morsel's.
        Else (a shared state, or batches too large to cut whole) it reads every batch's and
        gives each part its watermark."""
        if self._driver_free_since is not None:  # the driver's own work since its last task
            self.cost.observe_driver(time.perf_counter() - self._driver_free_since)
            self._driver_free_since = None
        self._finish_round()
        if not self.group:
            return
        batches, self.group, self.group_rows = self.group, [], 0
        run = self.runs[self.grouped]
        kernel, cost = run.kernel, self.cost
        clock = self.clocks[id(self.sources[0])]
        sizes = [shared.batch.num_rows for shared, _, _ in batches]
        total = sum(sizes)
        run.rows_in += total
        pieces = cost.morsel_count(total, kernel.workers)
        morsels, driver = cost.round_morsels(total, pieces) if self.pool is not None \
            else (plan_morsels(total, pieces), False)
        chained = self.chain_delay is not None
        if chained and len(morsels) > 1:
            aligned = align_morsels(morsels, sizes)
            chained = aligned is not None
            if chained:
                driver = driver and aligned[0][1] > 0
                morsels = [m for m in aligned if m[1]]
        segments = []  # (batch, number, watermark in force, first row in the group)
        first = 0
        for (shared, number, latest), rows in zip(batches, sizes):
            segments.append((shared, number, clock.watermark, first))  # prepared once
            first += rows
            if not chained:
                clock.observe_max(self._batch_max(clock, shared, latest))
        delay = self.chain_delay if chained else None
        morsel_parts = []
        for start, length in morsels:
            parts = []
            for batch, number, watermark, at in segments:
                lo, hi = max(start, at), min(start + length, at + batch.batch.num_rows)
                if lo < hi:
                    parts.append((batch, number, watermark, lo - at, hi - lo))
            morsel_parts.append(parts)
        plans = [self._plan(kernel, parts, block, delay) for block, parts in enumerate(morsel_parts)]
        bases = self._round_bases(clock, plans) if chained and len(morsels) > 1 else None
        if chained and bases is None:  # (the driver reads them: tasks not planned, or no int64 column)
            for block, base in enumerate(self._task_bases(clock, batches, sizes, morsels)):
                if base is not None:  # (the block is idle: the round before has finished)
                    kernel.raise_max_event_time(block, base)
        tasks = [(self._round_task(kernel, parts, block, delay, plan, bases), length)
                 for block, (parts, plan, (_, length)) in enumerate(zip(morsel_parts, plans, morsels))]
        self._rounds += 1
        own = tasks.pop(0) if driver else None  # the driver's share (CostModel.round_morsels)
        started = time.perf_counter()
        futures = [(self._submit(fn, n), n) for fn, n in tasks]
        self._await_task_starts(len(tasks))
        if own is not None:
            futures.insert(0, (self.pool.run_here(*own), own[1]))
            self._await_task_starts(1)  # (its start signal, given as it ran)
            self._driver_free_since = time.perf_counter()
        self._round = (run, futures, started)
        self._group_limit = cost.group_rows(self.workers)

    @staticmethod
    def _batch_max(clock: SourceClock, shared: SharedBatch, latest) -> int | None:
        """A grouped batch's largest event time: read when it was fed, or now."""
        return clock.batch_max(shared.batch) if latest is _UNREAD else latest

    @staticmethod
    def _round_bases(clock: SourceClock, plans: list) -> RoundBases | None:
        """The tasks of a chained round read the event times before them themselves
        (``RoundBases``) when every task is planned and the event time is an int64 or
        timestamp column; else None."""
        if any(plan is None or plan.table is None for plan in plans):
            return None
        name = clock.source.timestamp
        layout = next((c for c in plans[0].kernel.gen.columns if c.name == name), None)
        if layout is None or not (pa.types.is_int64(layout.arrow_type) or pa.types.is_timestamp(layout.arrow_type)):
            return None
        if pa.types.is_timestamp(layout.arrow_type):
            mul, div = TIMESTAMP_UNIT_DIVISOR[layout.arrow_type.unit]
            return RoundBases(plans, layout.slot_base, lambda raw: raw * mul // div)
        return RoundBases(plans, layout.slot_base, int)

    @staticmethod
    def _task_bases(clock: SourceClock, batches: list, sizes: list[int], morsels: list) -> list:
        """For each morsel of a chained round (whole batches), the largest event time of the
        round's rows before it (None: none, or no rows before it)."""
        bases, running, index, at = [], None, 0, 0
        for offset, _ in morsels:
            while at < offset:
                shared, _, latest = batches[index]
                m = QueryRun._batch_max(clock, shared, latest)
                if m is not None:
                    running = m if running is None else max(running, m)
                at += sizes[index]
                index += 1
            bases.append(running)
        return bases

    def _await_task_starts(self, tasks: int) -> None:
        """With a worker pool: wait until ``tasks`` tasks just handed out reached their native
        calls (or ended), before the driver's own Python work goes on (``TaskStart``)."""
        if self._task_started is not None:
            for _ in range(tasks):
                self._task_started.acquire()

    def _submit(self, fn, records: int) -> Future:
        """A task on the worker pool; without one (parallelism 1), run now, on this thread."""
        if self.pool is not None:
            return self.pool.submit(fn, records)
        return run_now(lambda: fn(0))  # (an error is raised where the round finishes)

    def _plan(self, kernel, parts, block: int, chain_delay: int | None = None):
        """The driver's plan of a task (``Kernel.plan_parts``) when the kernel runs its parts in
        one call and a worker pool runs the tasks; else None."""
        return kernel.plan_task(parts, block, chain_delay) if self.pool is not None else None

    def _round_task(self, kernel, parts, block: int, chain_delay: int | None = None, plan=None,
                    bases: RoundBases | None = None):
        """A task over ``parts`` (SharedBatch, number, watermark, first row, rows) on state block
        ``block`` (the task's index in its round: no two tasks of a round share one). With a
        ``plan`` (``_plan``) the task only makes the native call and returns the plan
        (``_finish_round`` finishes it); else it runs the parts (``process_parts``) and returns
        None, or (a shared window state that must grow) the parts not done. ``bases``: the task
        first raises its block to the largest event time of the round's rows before it."""
        cost = self.cost
        rows = sum(p[4] for p in parts)
        started = self._task_started

        def run_parts(worker: int):  # (the pool's worker id is not the block)
            signal = TaskStart(started) if started is not None else None
            hook = entering_native.set(signal)
            try:
                if bases is not None and block > 0:
                    signal_entering_native()  # (reading the event times runs without the GIL)
                    base = bases.base(block)
                    if base is not None:
                        kernel.raise_max_event_time(block, base)
                t0 = time.perf_counter()
                if plan is not None:
                    plan.kernel.run_planned(plan)
                    cost.observe(plan.done_rows, time.perf_counter() - t0, (id(plan.kernel), id(plan.variant)))
                    return plan
                left = kernel.process_parts(parts, block, chain_delay)
                cost.observe(rows - sum(p[4] for p in left or ()), time.perf_counter() - t0)
                return left
            finally:
                entering_native.reset(hook)
                if signal is not None:
                    signal()
        return run_parts

    def _finish_round(self) -> None:
        """Wait for the round of grouped tasks in flight (if any), then move the watermark and
        fire. The first error of a task is raised once every task of the round has stopped."""
        if self._round is None:
            return
        run, futures, t0 = self._round
        self._round = None
        stopped = self._finish_plans(wait_all([future for future, _ in futures]))
        self._rerun_stopped(run.kernel, stopped)
        if self.chain_delay is not None:  # the watermark the tasks reached (chained)
            self.clocks[id(self.sources[0])].observe(None)
        run.seconds += time.perf_counter() - t0
        self._advance()

    @staticmethod
    def _finish_plans(results: list) -> list:
        """The tasks' results with each planned task finished (``Kernel.finish_planned``, in
        task order; the first error is raised once every plan is finished) and replaced by None."""
        error = None
        for i, result in enumerate(results):
            if isinstance(result, PlannedParts):
                results[i] = None
                try:
                    result.kernel.finish_planned(result)
                except BaseException as e:
                    error = error or e
        if error is not None:
            raise error
        return results

    def _rerun_stopped(self, kernel, stopped: list) -> None:
        """Tasks over a shared window state that must grow returned the parts they did not do
        (``_round_task``): every task has returned, so the state grows single-threaded, then what
        stopped runs again, until nothing stops."""
        left = [parts for parts in stopped if parts is not None]
        while left:
            kernel.grow()
            futures = [self._submit(self._round_task(kernel, parts, block, plan=self._plan(kernel, parts, block)),
                                    sum(p[4] for p in parts))
                       for block, parts in enumerate(left)]
            self._await_task_starts(len(futures))
            left = [parts for parts in self._finish_plans(wait_all(futures)) if parts is not None]

    def _sink_writer(self, run: PipelineRun):
        def write(batch: pa.RecordBatch) -> None:  # called in order, by one worker at a time
            run.rows_out += batch.num_rows
            if batch.num_rows:
                self.sink.write(batch)
        return write

    def _deliver(self, index: int, batch: pa.RecordBatch) -> None:
        consumer = self.consumer[index]
        if consumer is None:
            if batch.num_rows:
                self.sink.write(batch)
            return
        if consumer in self.union_schema:
            if not batch.num_rows:
                return
            batch = conform(batch, self.union_schema[consumer])
        join = self.runs[consumer].pipeline.input
        if isinstance(join, JoinInput):
            self._push_join(consumer, join.pipeline_ids.index(index), batch)
            return
        self._push(consumer, batch)

    def _push_join(self, index: int, side: int, batch: pa.RecordBatch) -> None:
        """Insert ``batch`` into input ``side`` of join pipeline ``index`` (in the driver thread,
        under the join's watermark in force); an interval join's pairs go downstream at once."""
        run = self.runs[index]
        run.rows_in += batch.num_rows
        start = time.perf_counter()
        out = run.kernel.process(side, batch, run.watermark)
        run.seconds += time.perf_counter() - start
        if out is not None:
            run.rows_out += out.num_rows
            self._deliver(index, out)

    def _input_watermark(self, p: Pipeline) -> int:
        if isinstance(p.input, SourceInput):
            return self.clocks[id(p.input.source)].watermark
        if isinstance(p.input, WindowInput):
            return self.runs[p.input.pipeline_id].watermark
        return min(self.runs[i].watermark for i in p.input.pipeline_ids)

    def _advance(self) -> None:
        """Move the watermarks through the pipelines, producers first, firing complete windows."""
        for i, run in enumerate(self.runs):
            upstream = self._input_watermark(run.pipeline)
            if run.kernel is None or not run.kernel.fires:
                run.watermark = max(run.watermark, upstream)  # stateless: its input's watermark
                continue
            if isinstance(run.pipeline.event_time, ProcessingTime) and upstream != abi.INT64_MAX:
                # a processing-time window's own clock (until the end of the input)
                max_ts = run.kernel.max_event_time
                if max_ts == abi.INT64_MIN:
                    continue
                candidate = max(abi.INT64_MIN, max_ts - run.pipeline.out_of_orderness_ms - 1)
            else:
                candidate = upstream
            if candidate <= run.watermark:
                continue
            start = time.perf_counter()
            fired = run.kernel.fire(candidate)
            self.release_strings(i)  # (when due) the fired windows' strings: their results are strings now
            run.seconds += time.perf_counter() - start
            if fired is not None:
                run.rows_out += fired.num_rows
                self._deliver(i, fired)  # processed downstream under the old downstream watermark
            run.watermark = candidate

    def release_strings(self, index: int, force: bool = False) -> int:
        """Release the interned strings that neither pipeline ``index``'s window state nor the
        batches grouped for its next round (prepared ahead: ``feed``) hold, when its interner is
        due or ``force`` (``string_release.py``). No task may be running on its kernel."""
        pending = [shared for shared, _, _ in self.group] if index == self.grouped else ()
        kernel = self.runs[index].kernel
        return kernel.release_strings(pending, force) if kernel is not None else 0

    def metrics(self) -> dict:
        pipelines = [r.metrics() for r in self.runs]
        return {"records_in": self.records_in, "records_out": self.sink.rows,  # filtered, late: in every pipeline
                "late_records": sum(p["late"] for p in pipelines),
                "filtered_records": sum(p["filtered"] for p in pipelines), "pipelines": pipelines}


def _check_state_memory(runs: list[QueryRun], limit: int, flush: bool = False) -> None:
    """``check_state_memory`` between tasks (the tables are read: no round may run now);
    ``flush``: the batches grouped for a round go through first (a source ended)."""
    for qr in runs:
        if flush:
            qr.flush()
        else:
            qr._finish_round()
    check_state_memory(runs, limit)


_END = object()
_UNREAD = object()  # a grouped batch's largest event time, not read yet (QueryRun.feed)


def run_job(queries: list[Query], parallelism=1, adaptive=True, window_state: str = "thread_local",
            grouping: str = "auto", checkpoint: CheckpointConfig | None = None,
            state_memory_limit: int | None = None) -> JobResult:
    """Run queries to the end of their bounded inputs. Each source is read once, and each of its
    batches is fed to every query that reads it (so one-shot iterators serve several sinks).

    The sources are read round-robin, one batch each per round. Each query gets the batches of a
    round in its own order of sources, so it sees the same interleaving as when it runs alone.
    ``checkpoint``: snapshots between rounds and a resume from the latest (``checkpoint.py``), by
    the one job that owns the checkpoint directory (``ownership.py``);
    ``state_memory_limit``: bytes of window state the job may hold (``state_memory.py``). The file
    sinks' files appear under their final names together when every query has finished
    (``commit.py``). At the end every record is accounted for (``accounting.py``)."""
    tables, per_query = {}, []
    start = time.perf_counter()
    runs: list[QueryRun] = []
    workers = auto_parallelism() if parallelism == "auto" else int(parallelism)
    if workers < 1:
        raise ValueError(f"parallelism must be a positive integer or 'auto', got {parallelism!r}")
    if window_state not in WINDOW_STATES + ("auto",):
        raise ValueError(f"window_state must be one of {WINDOW_STATES + ('auto',)}, got {window_state!r}")
    # first: a job refused its checkpoint directory (ownership.py) has started nothing yet
    checkpoints = Checkpointer(checkpoint, workers) if checkpoint is not None else None
    pool = WorkerPool(workers) if workers > 1 else None
    cost = CostModel()
    adaptivity = Adaptivity.open(adaptive)
    if checkpoints is not None:  # a snapshot holds one kernel per pipeline: no switch under way (regrouping.py)
        grouping = "hash" if grouping == "auto" else grouping
        window_state = "thread_local" if window_state == "auto" else window_state
    try:
        finals = [q.sink.path for q in queries if q.sink.kind != "collect"]
        commit_dir = commit.recover(finals, checkpoint.path if checkpoint is not None else None)
        for i, q in enumerate(queries):
            runs.append(QueryRun(q, pool, cost, window_state, adaptivity, grouping,
                                 checkpoints.sink_factory(i) if checkpoints is not None else open_sink))
        sources = []
        for qr in runs:
            sources.extend(s for s in qr.sources if not any(s is o for o in sources))
        reads = {id(s): SourceRead(s, kernels_check_dictionaries=all(  # (source_reads.py)
            isinstance(qr.runs[pid].kernel, WindowAggregateKernel) for qr in runs for pid in qr.readers.get(id(s), ())))
            for s in sources}
        if checkpoints is not None:  # from the latest snapshot, if there is one
            iterators, source_rows, live = checkpoints.resume(runs, [reads[id(s)] for s in sources])
        else:
            iterators = {id(s): iter(reads[id(s)].batches(bulk=True)) for s in sources}
            source_rows = 0
            live = sources
        while live:
            this_round = {}
            for s in live:
                batch = next(iterators[id(s)], _END)
                this_round[id(s)] = batch
                if batch is not _END:
                    source_rows += batch.num_rows
            for qr in runs:
                for s in qr.sources:
                    batch = this_round.get(id(s))
                    if batch is _END:
                        if state_memory_limit is not None:  # grouped batches, before their windows fire
                            _check_state_memory(runs, state_memory_limit, flush=True)
                        qr.end(s)
                    elif batch is not None:
                        qr.feed(batch, s, reads[id(s)].intake)
            live = [s for s in live if this_round[id(s)] is not _END]
            if state_memory_limit is not None:
                _check_state_memory(runs, state_memory_limit)
            if checkpoints is not None:
                checkpoints.after_round(runs, source_rows)
        for q, qr in zip(queries, runs):
            table = qr.finish()
            if q.sink.kind == "collect":
                tables[q.sink.name] = table
            per_query.append({"sink": q.sink.name, **qr.metrics()})
        commit.publish([f for qr in runs for f in qr.sink.files()], commit_dir,
                       fence=checkpoints.owner.check if checkpoints is not None else None)
        if checkpoints is not None:
            checkpoints.complete()
    finally:
        for qr in runs:
            qr.close()
        if pool is not None:
            pool.shutdown()
        if adaptivity is not None:
            adaptivity.close()
        if checkpoints is not None:
            checkpoints.close()
    metrics = {
        "records_in": source_rows,
        "records_out": sum(m["records_out"] for m in per_query),
        "late_records": sum(m["late_records"] for m in per_query),
        "filtered_records": sum(m["filtered_records"] for m in per_query),
        "seconds": time.perf_counter() - start,
        "parallelism": workers, "engine": "local",
        "workers": pool.metrics() if pool is not None else [],
        "placement": pool.placement() if pool is not None else {"numa_nodes": 1, "pinned": False},
        "cost_model": {"per_record_ns": round(cost.per_record_ns, 3), "smallest_morsel": cost.smallest_morsel},
        "adaptive": adaptivity.describe() if adaptivity is not None else False,
        "queries": per_query,
    }
    rejected_metrics(queries, metrics)  # rows dropped by on_bad_rows="drop", per source
    if checkpoints is not None:
        metrics["checkpoints"] = checkpoints.metrics()
    if state_memory_limit is not None:
        metrics["state_memory_limit"] = state_memory_limit
    metrics["accounting"] = check_accounting(runs, metrics)  # raises AccountingError on a mismatch
    return JobResult(tables, metrics)
