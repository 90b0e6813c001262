"""The embedded engine's driver: a job's source batches through its queries' compiled pipelines to
their sinks.

A job (``run_job``, ``Job``) reads its sources round-robin (``source_loop.py``) and feeds each
round to its queries; what else happens at its boundaries belongs to its observers
(``job_observers.py``: checkpoints, the state-memory limit), registered when configured. A query
(``QueryRun``) is a small DAG of pipelines (a tree whose leaves read sources): a pipeline reads a
source, the results of one window pipeline, or the outputs of several pipelines (a union); every
pipeline's output goes to exactly one consumer, the last pipeline's to the sink. Each pipeline
runs a kernel (``pipeline_runs.py``, ``kernel_protocol.py``).

A batch passes through every pipeline that reads its source, in the order of the plan's source
reads (a union's inputs in order); then the watermarks move and complete windows fire
(``watermarks.py``). While a batch is processed, a window pipeline's watermark is the one reached
after the previous batch. A window with allowed lateness takes a batch as slices that each end
with a record reaching one of its fired, kept windows, which fire again after each slice at
that watermark (``late_refires.py``).

With ``parallelism`` > 1 the pipelines that read a source run as tasks on a worker pool
(``parallel.py``): each batch is cut into morsels, one task each, every worker on its own state
block. A window pipeline waits for its batch's tasks before the watermark moves (so what is late
does not depend on the cut), and its windows fire by merging the workers' states
(``rounds.WindowTasks``); a tumbling window that alone reads its query's only source takes rounds
of source batches instead (``rounds.RoundPlanner``). A stateless pipeline feeding the sink never
waits: its tasks run ahead (bounded) and a reorder buffer keeps the output in input order.
Order-sensitive windows (count windows, sessions) and pipelines fed by other pipelines run in the
driver thread, in stream order.
"""

from __future__ import annotations

import time

import pyarrow as pa

from ..codegen.options import WINDOW_STATES
from ..expressions import Column
from ..physical.pipelines import (JoinInput, PhysicalPlan, Pipeline, SourceInput, UnionInput, build_physical_plan,
                                  upstream_ids)
from ..plan import Query, distinct_sources
from ..results import JobResult
from ..rewrites import rewrite
from ..sources import rejected_metrics
from ..types import to_arrow_type
from . import commit
from .accounting import check_accounting
from .adaptive import Adaptivity
from .checkpoint import CheckpointConfig, Checkpointer
from .job_observers import JobObserver
from .join_kernel import JoinKernel
from .kernel_protocol import WindowAggregateKernel
from .kernels import RunningAggregateKernel, SharedBatch
from .late_refires import refire_cuts, slices
from .parallel import CostModel, OrderedStage, WorkerPool, auto_parallelism, plan_morsels
from .pipeline_runs import PipelineRun, instantiate
from .rounds import RoundPlanner, WindowTasks
from .sinks import open_sink
from .source_loop import END, SourceLoop
from .source_reads import SourceRead
from .mini_batch import mini_batch_pipelines
from .upsert import unique_key
from .state_memory import StateMemoryLimit, dense_table_budget
from .watermarks import Watermarks


def _resume(kernel: WindowAggregateKernel, batch: pa.RecordBatch, watermark: int, rest: int | None,
            where: tuple[int, int]) -> None:
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


class QueryRun:
    """Runs one query: its pipelines from its sources to its sink (see the module docstring)."""

    def __init__(self, query: Query, pool: WorkerPool | None = None, cost: CostModel | None = None,
                 window_state: str = "thread_local", adaptive: Adaptivity | None = None,
                 grouping: str = "hash", sink_factory=open_sink):
        # the plan the engine runs: the query's, with the logical rewrites applied (rewrites/)
        query = Query(rewrite(query.root)[0], query.sink)
        self.physical: PhysicalPlan = build_physical_plan(query)
        pipelines = self.physical.pipelines
        self.pool, self.cost = pool, cost or CostModel()
        self.workers = workers = pool.workers if pool is not None else 1
        self.runs = [instantiate(p, p.input.source.name if isinstance(p.input, SourceInput)
                                 else f"pipeline {p.id} input", workers, window_state, adaptive, grouping)
                     for p in pipelines]
        for run in self.runs:
            if isinstance(run.kernel, JoinKernel):  # its output columns gather on the workers too
                run.kernel.use_pool(pool)
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
        self.watermarks = Watermarks(self.runs, self.sources, self.readers, self._deliver, self.release_strings)
        self.sink_schema = self.runs[-1].output_schema
        # checkpointing: part files (checkpoint.py)
        self.sink = sink_factory(query.sink, self.sink_schema, unique_key(query.root))
        for pid in mini_batch_pipelines(pipelines, self.consumer, self.sink.final_table_only):
            if isinstance(self.runs[pid].kernel, RunningAggregateKernel):
                self.runs[pid].kernel.mini_batch = True
        self.records_in = 0
        self.batch_numbers = {id(s): 0 for s in self.sources}  # per source, for error messages
        # stateless pipelines whose morsels run ahead, their output ordered by a reorder buffer
        self.stages: dict[int, OrderedStage] = {}
        if pool is not None:
            for run in self.runs:
                if run.kernel is not None and not run.kernel.fires and run.kernel.workers > 1 \
                        and self.consumer[run.pipeline.id] is None:
                    self.stages[run.pipeline.id] = OrderedStage(pool, self._sink_writer(run), 4 * pool.workers)
        self.tasks = WindowTasks(pool, self.cost)
        # a parallel tumbling event-time window that alone reads the query's only source takes
        # several source batches per round of tasks (each batch under its own watermark) and
        # fires once per round (rounds.py)
        self.grouped = self._groupable_window()
        self.rounds: RoundPlanner | None = None
        if self.grouped is not None:
            self.rounds = RoundPlanner(self.runs[self.grouped], self.clocks[id(self.sources[0])], self.tasks,
                                       workers, self.watermarks.advance)

    @property
    def clocks(self) -> dict:
        """Each source's clock (``watermarks.SourceClock``), by the source's id."""
        return self.watermarks.clocks

    def _groupable_window(self) -> int | None:
        """The pipeline whose batches may be grouped in rounds, if any: a tumbling event-time
        window (``PipelineKernel.tumbling``: firing after the round gives the same windows, in
        the same order, with the same late records) that alone reads the query's only source."""
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
        if self.rounds is not None:
            self.rounds.add(batch, number, intake)
            return
        for pid in self.readers[id(source)]:
            if self.runs[pid].kernel is not None and self.runs[pid].kernel.workers > 1:
                self._push_morsels(pid, batch, number, intake)
            else:
                self._push(pid, batch)
        self.watermarks.after_batch(source, batch)

    def feed_part(self, batch: pa.RecordBatch | None, source, whole_max: int | None) -> None:
        """This query's part of one batch of ``source`` (a task's or key group's rows of it, maybe
        none: None or empty), the whole batch's largest event time being ``whole_max`` (None: it
        had none): the source's clock moves by the whole batch's, rows or not, so the watermarks,
        the windows they fire, the state they expire and the records that are late are those of
        the query fed every row of the batch, for the rows of this part."""
        clock = self.clocks[id(source)]
        if whole_max is not None:  # (feed's clock update takes the larger of this and its rows')
            clock.max_event_time = whole_max if clock.max_event_time is None else max(clock.max_event_time, whole_max)
        if batch is not None and batch.num_rows:
            self.feed(batch, source)
        elif whole_max is not None and self.watermarks.matter:
            clock.observe_max(whole_max)
            self.watermarks.advance()

    def end(self, source) -> None:
        """``source`` has no more batches: its watermark jumps to +infinity."""
        if self.rounds is not None:
            self.rounds.flush()
            self.rounds.finish_round()
        self.watermarks.end(source)

    def finish(self) -> pa.Table | None:
        """End of the bounded input: every source's watermark is +infinity, every window fired."""
        self.flush()
        for s in self.sources:
            self.end(s)
        return self.sink.finish()

    def flush(self) -> None:
        """Run the batches grouped for a round now and wait for every task: the state then holds
        every batch fed so far (checkpoints, the state-memory check)."""
        if self.rounds is not None:
            self.rounds.flush()
        self.drain()

    def finish_round(self) -> None:
        """Wait for the round of grouped window tasks in flight (if any), which then fires."""
        if self.rounds is not None:
            self.rounds.finish_round()

    def drain(self) -> None:
        """Wait for the tasks still running (a round of grouped window tasks, which then fires;
        stateless tasks); raise the first error."""
        error = None
        try:
            self.finish_round()
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
        """Process ``batch`` in pipeline ``index`` and pass output that leaves per batch downstream."""
        run = self.runs[index]
        run.rows_in += batch.num_rows
        start = time.perf_counter()
        if run.kernel is None:  # identity: the batch as it is, under the pipeline's (nullable) schema
            out = batch if batch.schema == run.output_schema else pa.RecordBatch.from_arrays(
                batch.columns, schema=run.output_schema)
        elif run.kernel.emits_per_batch:  # rows out per batch
            out = run.kernel.process(batch, watermark=run.watermark)
        else:
            cuts = refire_cuts(run.pipeline, batch, run.watermark)
            if cuts:
                self._push_in_slices(index, batch, cuts)
                return
            where = (run.kernel.batches_processed, 0)
            rest = run.kernel.process(batch, run.watermark)
            if rest is not None:  # a shared window state stopped to grow
                _resume(run.kernel, batch, run.watermark, rest, where)
            run.seconds += time.perf_counter() - start
            return
        run.seconds += time.perf_counter() - start
        run.rows_out += out.num_rows
        self._deliver(index, out)

    def _push_in_slices(self, index: int, batch: pa.RecordBatch, cuts: list[int]) -> None:
        """Process ``batch`` in window pipeline ``index`` (in this thread) as the slices that
        ``cuts`` make (``_run_slices``). The slices keep the batch's number and their rows'
        positions in it (arrival order for the aggregates)."""
        run = self.runs[index]
        kernel, number = run.kernel, run.kernel.batches_processed

        def run_slice(start: int, stop: int) -> None:
            piece, where = batch.slice(start, stop - start), (number, start)
            rest = kernel.process(piece, run.watermark, 0, where)
            if rest is not None:  # a shared window state stopped to grow
                _resume(kernel, piece, run.watermark, rest, where)
        self._run_slices(index, batch.num_rows, cuts, run_slice)
        kernel.batches_processed = number + 1

    def _run_slices(self, index: int, rows: int, cuts: list[int], run_slice) -> None:
        """``run_slice(start, stop)`` for each slice that ``cuts`` make of a batch of ``rows``
        rows in window pipeline ``index``; after each that ends at a cut, the kept windows its
        last record reached fire again, at the same watermark (allowed lateness:
        ``late_refires.py``). Also after the batch's last row: more batches may follow under
        this watermark (a producer's morsels, a union's other inputs)."""
        run = self.runs[index]
        for start, stop in slices(cuts, rows):
            t0 = time.perf_counter()
            run_slice(start, stop)
            run.seconds += time.perf_counter() - t0
            if stop == cuts[-1] or stop < rows:
                self.watermarks.refire(index)

    def _push_morsels(self, index: int, batch: pa.RecordBatch, number: int, intake=None) -> None:
        """Process a source batch in pipeline ``index`` as morsel tasks on the worker pool."""
        run = self.runs[index]
        kernel = run.kernel
        run.rows_in += batch.num_rows
        if not batch.num_rows:
            return
        start = time.perf_counter()
        if kernel.fires:  # a window: its tasks end before the watermark moves
            cuts = refire_cuts(run.pipeline, batch, run.watermark)
            if not cuts:
                self.tasks.run_morsels(kernel, batch, number, run.watermark, intake)
                run.seconds += time.perf_counter() - start
                return
            shared = SharedBatch(batch, intake)  # prepared once for every slice's morsels
            self._run_slices(index, batch.num_rows, cuts, lambda start, stop: self.tasks.run_morsels(
                kernel, batch, number, run.watermark, rows=(start, stop), shared=shared))
            return
        cost, watermark = self.cost, run.watermark  # (in force for the batch: it moves after it)

        def task(offset, length):
            def run_morsel(worker: int) -> pa.RecordBatch:
                t0 = time.perf_counter()
                out = kernel.process(batch.slice(offset, length), worker, (number, offset), watermark)
                cost.observe(length, time.perf_counter() - t0)
                return out
            return run_morsel
        pieces = plan_morsels(batch.num_rows, cost.morsel_count(batch.num_rows, kernel.workers))
        stage = self.stages.get(index)
        if stage is not None:  # outputs reach the sink in order, through the reorder buffer
            for offset, length in pieces:
                stage.submit(task(offset, length), length)
        else:  # a union's input: the outputs, in order, before the next batch
            for out in self.pool.run_all([(task(o, n), n) for o, n in pieces]):
                run.rows_out += out.num_rows
                self._deliver(index, out)
        run.seconds += time.perf_counter() - start

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

    def release_strings(self, index: int, force: bool = False) -> int:
        """Release the interned strings that neither pipeline ``index``'s window state nor the
        batches grouped for its next round (prepared ahead: ``rounds.RoundPlanner.add``) hold,
        when its interner is due or ``force`` (``string_release.py``). No task may be running on
        its kernel."""
        kernel = self.runs[index].kernel
        if kernel is None:
            return 0
        pending = self.rounds.pending if index == self.grouped else ()
        return kernel.release_strings(pending, force)

    def metrics(self) -> dict:
        pipelines = [r.metrics() for r in self.runs]
        return {"records_in": self.records_in, "records_out": self.sink.rows,  # filtered, late: in every pipeline
                "late_records": sum(p["late"] for p in pipelines),
                "filtered_records": sum(p["filtered"] for p in pipelines), "pipelines": pipelines}


class Job:
    """One run of ``run_job``: its queries, worker pool and cost model, its observers, and the
    loop that reads its sources (see ``run_job``)."""

    def __init__(self, queries: list[Query], workers: int, adaptive, window_state: str, grouping: str,
                 observers: list[JobObserver]):
        self.queries, self.workers, self.observers = queries, workers, observers
        self.pool = WorkerPool(workers) if workers > 1 else None
        self.cost = CostModel()
        self.adaptivity = Adaptivity.open(adaptive)
        limit = min((o.limit for o in observers if isinstance(o, StateMemoryLimit)), default=None)
        if self.adaptivity is not None and limit is not None:
            self.adaptivity = self.adaptivity.within(dense_table_budget(limit, workers))
        if any(o.keeps_layout for o in observers):  # no layout chosen as the job runs (regrouping.py)
            grouping = "hash" if grouping == "auto" else grouping
            window_state = "thread_local" if window_state == "auto" else window_state
        self.window_state, self.grouping = window_state, grouping
        self.runs: list[QueryRun] = []
        self.sources: list = []
        self.reads: dict[int, SourceRead] = {}
        self.loop: SourceLoop | None = None
        self.tables: dict[str, pa.Table] = {}
        self.per_query: list[dict] = []

    def run(self) -> None:
        """Read every source to its end through every query, finish them and publish their output."""
        finals = [q.sink.path for q in self.queries if q.sink.kind != "collect"]
        commit_dir = commit.recover(finals, next((o.commit_dir for o in self.observers if o.commit_dir), None))
        for i, q in enumerate(self.queries):
            self.runs.append(QueryRun(q, self.pool, self.cost, self.window_state, self.adaptivity, self.grouping,
                                      self._sink_factory(i)))
        for qr in self.runs:
            self.sources.extend(s for s in qr.sources if not any(s is o for o in self.sources))
        self.reads = {id(s): SourceRead(s, kernels_check_dictionaries=all(  # (source_reads.py)
            isinstance(qr.runs[pid].kernel, WindowAggregateKernel) for qr in self.runs
            for pid in qr.readers.get(id(s), ()))) for s in self.sources}
        self.loop = SourceLoop.fresh(self.sources, self.reads)
        for o in self.observers:  # (from a snapshot: the loop resumes where it says)
            o.on_start(self)
        for batches in self.loop.rounds():
            # each query gets the round in its own order of sources: the interleaving it has alone
            for qr in self.runs:
                for s in qr.sources:
                    batch = batches.get(id(s))
                    if batch is END:
                        for o in self.observers:
                            o.before_source_end(self)
                        qr.end(s)
                    elif batch is not None:
                        qr.feed(batch, s, self.reads[id(s)].intake)
            for o in self.observers:
                o.on_round_end(self)
        for q, qr in zip(self.queries, self.runs):
            table = qr.finish()
            if q.sink.kind == "collect":
                self.tables[q.sink.name] = table
            self.per_query.append({"sink": q.sink.name, **qr.metrics()})
        commit.publish([f for qr in self.runs for f in qr.sink.files()], commit_dir, fence=self._before_publish)
        for o in self.observers:
            o.on_finish(self)

    def _sink_factory(self, query: int):
        """How query number ``query`` opens its sink: as an observer asks (checkpoints: part
        files), else the real sink."""
        return next((f for f in (o.sink_factory(query) for o in self.observers) if f is not None), open_sink)

    def _before_publish(self) -> None:
        for o in self.observers:
            o.before_publish(self)

    def close(self) -> None:
        """Free what the job holds, whether it finished or failed."""
        for qr in self.runs:
            qr.close()
        if self.pool is not None:
            self.pool.shutdown()
        if self.adaptivity is not None:
            self.adaptivity.close()
        for o in self.observers:
            o.close()

    def metrics(self, seconds: float) -> dict:
        per_query, pool, cost = self.per_query, self.pool, self.cost
        metrics = {
            "records_in": self.loop.rows,
            "records_out": sum(m["records_out"] for m in per_query),
            "late_records": sum(m["late_records"] for m in per_query),
            "filtered_records": sum(m["filtered_records"] for m in per_query),
            "seconds": seconds,
            "parallelism": self.workers, "engine": "local",
            "workers": pool.metrics() if pool is not None else [],
            "placement": pool.placement() if pool is not None else {"numa_nodes": 1, "pinned": False},
            "cost_model": {"per_record_ns": round(cost.per_record_ns, 3), "smallest_morsel": cost.smallest_morsel},
            "adaptive": self.adaptivity.describe() if self.adaptivity is not None else False,
            "queries": per_query,
        }
        rejected_metrics(self.queries, metrics)  # rows dropped by on_bad_rows="drop", per source
        for o in self.observers:
            o.add_metrics(metrics)
        metrics["accounting"] = check_accounting(self.runs, metrics)  # raises AccountingError on a mismatch
        return metrics


def run_job(queries: list[Query], parallelism=1, adaptive=True, window_state: str = "thread_local",
            grouping: str = "auto", checkpoint: CheckpointConfig | None = None,
            state_memory_limit: int | None = None) -> JobResult:
    """Run queries to the end of their bounded inputs. Each source is read once, and each of its
    batches is fed to every query that reads it (so one-shot iterators serve several sinks).

    The sources are read round-robin, one batch each per round (``source_loop.py``). Each query
    gets the batches of a round in its own order of sources, so it sees the same interleaving as
    when it runs alone. Observers, registered when configured (``job_observers.py``):
    ``state_memory_limit``, bytes of window state the job may hold, checked after every round
    (``state_memory.StateMemoryLimit``); ``checkpoint``, snapshots between rounds and a resume
    from the latest (``checkpoint.Checkpointer``), by the one job that owns the checkpoint
    directory (``ownership.py``). The file sinks' files appear under their final names together
    when every query has finished (``commit.py``). At the end every record is accounted for
    (``accounting.py``)."""
    start = time.perf_counter()
    workers = auto_parallelism() if parallelism == "auto" else int(parallelism)
    if workers < 1:
        raise ValueError(f"parallelism must be a positive integer or 'auto', got {parallelism!r}")
    if window_state not in WINDOW_STATES + ("auto",):
        raise ValueError(f"window_state must be one of {WINDOW_STATES + ('auto',)}, got {window_state!r}")
    job = Job(queries, workers, adaptive, window_state, grouping, _observers(checkpoint, workers, state_memory_limit))
    try:
        job.run()
    finally:
        job.close()
    return JobResult(job.tables, job.metrics(time.perf_counter() - start))


def _observers(checkpoint: CheckpointConfig | None, workers: int, state_memory_limit: int | None) -> list[JobObserver]:
    """The job's observers, as configured. The checkpointer is made first: a job refused its
    checkpoint directory (``ownership.py``) has started nothing yet. The limit is told of a
    round's end first: a job over its limit fails before a snapshot copies its state."""
    checkpointer = [Checkpointer(checkpoint, workers)] if checkpoint is not None else []
    limit = [StateMemoryLimit(state_memory_limit)] if state_memory_limit is not None else []
    return limit + checkpointer


__all__ = ["Job", "QueryRun", "conform", "run_job"]
