"""Window tasks on the worker pool: a source batch's morsels (``WindowTasks``), and grouped rounds
of source batches (``RoundPlanner``).

A window aggregate with several workers runs as tasks over *parts*: row ranges of source batches,
each ``(SharedBatch, source batch number, watermark in force, first row, rows)``, each task on
the state block of its index in its round (no two tasks of a round share one). Where the kernel
runs a task's parts in one native call, the driver plans the task first (``PlannedParts``: the
variant, each batch prepared, the parts table), so a worker only makes the native call; a shared
window state that stopped for its tables to grow has its parts not done run again once every task
has returned and the state has grown.

Grouped rounds (``RoundPlanner``): a tumbling event-time window that alone reads its query's only
source takes a round of source batches at a time (``CostModel.group_rows``) and fires once per
round: exact, because a record of a later batch never enters a window that an earlier batch's
watermark completed (it is late). The round runs while the driver reads and checks the next
batches; ``finish_round`` waits for it, grows a shared state that stopped, moves the watermark
and fires (``Watermarks.advance``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Callable

import pyarrow as pa

from ..sources import TIMESTAMP_UNIT_DIVISOR
from .kernel_protocol import WindowAggregateKernel
from .kernels import PlannedParts, SharedBatch
from .parallel import CostModel, WorkerPool, align_morsels, plan_morsels, run_now, wait_all
from .task_parts import RoundBases, TaskStart, entering_native, signal_entering_native
from .watermarks import SourceClock

_UNREAD = object()  # a grouped batch's largest event time, not read yet (RoundPlanner.add)


class WindowTasks:
    """Tasks of parts of one query's window kernels, on the worker pool (without one, on this
    thread: parallelism 1)."""

    def __init__(self, pool: WorkerPool | None, cost: CostModel):
        self.pool, self.cost = pool, cost
        # with a worker pool: a round's tasks reached their native calls (TaskStart)
        self.started = threading.Semaphore(0) if pool is not None else None

    def run_morsels(self, kernel: WindowAggregateKernel, batch: pa.RecordBatch, number: int, watermark: int,
                    intake=None, rows: tuple[int, int] | None = None, shared: SharedBatch | None = None) -> None:
        """Source batch number ``number`` under ``watermark``, cut into morsels, one task each
        (``CostModel.morsel_count``); returns once every task has. ``rows``: only the rows
        ``[start, stop)`` of it, from ``shared`` (the batch prepared once for several calls)."""
        start, stop = rows if rows is not None else (0, batch.num_rows)
        pieces = [(start + o, n) for o, n in plan_morsels(stop - start, self.cost.morsel_count(stop - start,
                                                                                             kernel.workers))]
        shared = shared if shared is not None else SharedBatch(batch, intake)  # prepared once for all its morsels
        tasks = []
        for block, (o, n) in enumerate(pieces):
            parts = [(shared, number, watermark, o, n)]
            tasks.append((self.task(kernel, parts, block, plan=self.plan(kernel, parts, block)), n))
        if len(tasks) == 1:  # not worth a hand-off: this thread (no task is running)
            results = [tasks[0][0](0)]
        else:
            results = self.pool.run_all(tasks)
        self.await_starts(len(tasks))  # (the tasks ended: their start signals are in)
        self.rerun_stopped(kernel, self.finish_plans(results))

    def await_starts(self, tasks: int) -> None:
        """With a worker pool: wait until ``tasks`` tasks just handed out reached their native
        calls (or ended), before the driver's own Python work goes on (``TaskStart``)."""
        if self.started is not None:
            for _ in range(tasks):
                self.started.acquire()

    def submit(self, fn, records: int) -> Future:
        """A task on the worker pool; without one (parallelism 1), run now, on this thread."""
        if self.pool is not None:
            return self.pool.submit(fn, records)
        return run_now(lambda: fn(0))  # (an error is raised where the round finishes)

    def plan(self, kernel, parts, block: int, chain_delay: int | None = None):
        """The driver's plan of a task (``Kernel.plan_parts``) when the kernel runs its parts in
        one call and a worker pool runs the tasks; else None."""
        return kernel.plan_task(parts, block, chain_delay) if self.pool is not None else None

    def task(self, kernel, parts, block: int, chain_delay: int | None = None, plan=None,
             bases: RoundBases | None = None):
        """A task over ``parts`` on state block ``block``. With a ``plan`` (``plan``) the task
        only makes the native call and returns the plan (``finish_plans`` finishes it); else it
        runs the parts (``process_parts``) and returns None, or (a shared window state that must
        grow) the parts not done. ``bases``: the task first raises its block to the largest event
        time of the round's rows before it."""
        cost = self.cost
        rows = sum(p[4] for p in parts)
        started = self.started

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

    @staticmethod
    def finish_plans(results: list) -> list:
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

    def rerun_stopped(self, kernel, stopped: list) -> None:
        """Tasks over a shared window state that must grow returned the parts they did not do
        (``task``): every task has returned, so the state grows single-threaded, then what
        stopped runs again, until nothing stops."""
        left = [parts for parts in stopped if parts is not None]
        while left:
            kernel.grow()
            futures = [self.submit(self.task(kernel, parts, block, plan=self.plan(kernel, parts, block)),
                                   sum(p[4] for p in parts))
                       for block, parts in enumerate(left)]
            self.await_starts(len(futures))
            left = [parts for parts in self.finish_plans(wait_all(futures)) if parts is not None]


class RoundPlanner:
    """Grouped rounds of one pipeline (``run``, a tumbling event-time window that alone reads its
    query's only source, whose clock is ``clock``): its source batches gather (``add``) until they
    make a round (``flush``), each batch's rows under the watermark reached after the batch before
    it, and its windows fire once per round (``finish_round``, then ``advance``).

    The watermark in force for each grouped batch, when the kernel tracks the source's event time
    in thread-local blocks (*chained*, ``chain_delay``): each task moves it itself between its
    parts, from the event times its block has read (``gz_run_parts``), starting from the largest
    event time of the rows before the task, which the tasks read themselves (``RoundBases``) or
    the driver does. A shared window state has no block per task: the driver reads every batch's
    event times before the tasks start."""

    def __init__(self, run, clock: SourceClock, tasks: WindowTasks, workers: int, advance: Callable[[], None]):
        self.run, self.clock, self.tasks, self.workers = run, clock, tasks, workers
        self.pool, self.cost = tasks.pool, tasks.cost
        self._advance = advance
        self.group: list[tuple[SharedBatch, int, int | None]] = []  # (batch, number, largest event time)
        self.group_rows = 0
        self._round = None  # ([(future, records)], start): the round of tasks in flight
        # rows that make a round: worked out when a round starts, not for every batch fed
        self._group_limit = self.cost.group_rows(workers, first=True)
        self._driver_free_since: float | None = None  # when the driver ended its share of a round
        kernel = run.kernel
        self.chain_delay: int | None = None
        if clock.tracker is kernel and kernel.window_state != "shared":
            self.chain_delay = clock.source.watermark.out_of_orderness_ms + 1
        else:
            clock.tracker = None

    @property
    def pending(self) -> list[SharedBatch]:
        """The batches gathered for the next round (prepared ahead: they hold interned ids)."""
        return [shared for shared, _, _ in self.group]

    def add(self, batch: pa.RecordBatch, number: int, intake=None) -> None:
        """Source batch number ``number``; a round starts once the batches make one."""
        shared, latest = SharedBatch(batch, intake), _UNREAD
        # read now, while the workers run the round before: the event times flush will want
        # (every batch's; chained rounds' tasks read what they need: RoundBases)
        if self.chain_delay is None:
            latest = self.clock.batch_max(batch)
        if self.pool is not None:
            self.run.kernel.prepare_ahead(shared)
        self.group.append((shared, number, latest))
        self.group_rows += batch.num_rows
        if self.group_rows >= self._group_limit:
            self.flush()

    def flush(self) -> None:
        """Start the gathered source batches as one round of morsel tasks, each batch's rows under
        the watermark reached after the batch before it, once the previous round has finished and
        its windows fired. The round runs while the driver reads and checks the next batches
        (``finish_round`` waits for it): the driver's per-batch work no longer adds to the
        workers'.

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
        self.finish_round()
        if not self.group:
            return
        batches, self.group, self.group_rows = self.group, [], 0
        run, tasks, cost, clock = self.run, self.tasks, self.cost, self.clock
        kernel = run.kernel
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
                clock.observe_max(self._batch_max(shared, latest))
        delay = self.chain_delay if chained else None
        morsel_parts = []
        for start, length in morsels:
            parts = []
            for batch, number, watermark, at in segments:
                lo, hi = max(start, at), min(start + length, at + batch.batch.num_rows)
                if lo < hi:
                    parts.append((batch, number, watermark, lo - at, hi - lo))
            morsel_parts.append(parts)
        plans = [tasks.plan(kernel, parts, block, delay) for block, parts in enumerate(morsel_parts)]
        bases = self._round_bases(plans) if chained and len(morsels) > 1 else None
        if chained and bases is None:  # (the driver reads them: tasks not planned, or no int64 column)
            for block, base in enumerate(self._task_bases(batches, sizes, morsels)):
                if base is not None:  # (the block is idle: the round before has finished)
                    kernel.raise_max_event_time(block, base)
        round_tasks = [(tasks.task(kernel, parts, block, delay, plan, bases), length)
                       for block, (parts, plan, (_, length)) in enumerate(zip(morsel_parts, plans, morsels))]
        own = round_tasks.pop(0) if driver else None  # the driver's share (CostModel.round_morsels)
        started = time.perf_counter()
        futures = [(tasks.submit(fn, n), n) for fn, n in round_tasks]
        tasks.await_starts(len(round_tasks))
        if own is not None:
            futures.insert(0, (self.pool.run_here(*own), own[1]))
            tasks.await_starts(1)  # (its start signal, given as it ran)
            self._driver_free_since = time.perf_counter()
        self._round = (futures, started)
        self._group_limit = cost.group_rows(self.workers)

    def finish_round(self) -> None:
        """Wait for the round in flight (if any), then move the watermark and fire. The first
        error of a task is raised once every task of the round has stopped."""
        if self._round is None:
            return
        futures, t0 = self._round
        self._round = None
        tasks = self.tasks
        stopped = tasks.finish_plans(wait_all([future for future, _ in futures]))
        tasks.rerun_stopped(self.run.kernel, stopped)
        if self.chain_delay is not None:  # the watermark the tasks reached (chained)
            self.clock.observe(None)
        self.run.seconds += time.perf_counter() - t0
        self._advance()

    def _batch_max(self, shared: SharedBatch, latest) -> int | None:
        """A grouped batch's largest event time: read when it was added, or now."""
        return self.clock.batch_max(shared.batch) if latest is _UNREAD else latest

    def _round_bases(self, plans: list) -> RoundBases | None:
        """The tasks of a chained round read the event times before them themselves
        (``RoundBases``) when every task is planned and the event time is an int64 or
        timestamp column; else None."""
        if any(plan is None or plan.table is None for plan in plans):
            return None
        name = self.clock.source.timestamp
        layout = next((c for c in plans[0].kernel.gen.columns if c.name == name), None)
        if layout is None or not (pa.types.is_int64(layout.arrow_type) or pa.types.is_timestamp(layout.arrow_type)):
            return None
        if pa.types.is_timestamp(layout.arrow_type):
            mul, div = TIMESTAMP_UNIT_DIVISOR[layout.arrow_type.unit]
            return RoundBases(plans, layout.slot_base, lambda raw: raw * mul // div)
        return RoundBases(plans, layout.slot_base, int)

    def _task_bases(self, batches: list, sizes: list[int], morsels: list) -> list:
        """For each morsel of a chained round (whole batches), the largest event time of the
        round's rows before it (None: none, or no rows before it)."""
        bases, running, index, at = [], None, 0, 0
        for offset, _ in morsels:
            while at < offset:
                shared, _, latest = batches[index]
                m = self._batch_max(shared, latest)
                if m is not None:
                    running = m if running is None else max(running, m)
                at += sizes[index]
                index += 1
            bases.append(running)
        return bases


__all__ = ["RoundPlanner", "WindowTasks"]
