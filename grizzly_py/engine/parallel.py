"""Task-based parallel execution for the embedded engine (Grizzly section 5).

Every source batch becomes tasks: the batch is cut into *morsels* (zero-copy slices) and each
morsel is one task for the worker pool. A compiled kernel releases the GIL while it runs, so
Python threads scale. Each worker owns one state block per pipeline (``Kernel.states``): workers
never write shared state; window pipelines merge the workers' blocks when a window fires (the
two-phase, thread-local variant).

- ``WorkerPool``: N threads (``concurrent.futures``), each with a fixed worker id, and per-worker
  metrics (tasks, records, busy time, reorder-buffer waits). On a host with several NUMA nodes
  worker ``w`` is pinned to the CPUs of node ``w mod nodes``; a worker's window tables are
  allocated by its own kernel calls, so first touch places them on its node.
- ``plan_morsels``: the cost model's cut of a batch into morsels: as many as there are workers,
  but none so small that per-task overhead stops paying for itself (``CostModel``).
- ``OrderedStage``: stateless pipelines never wait per batch: their morsel tasks run ahead (at
  most ``max_in_flight`` of them: back-pressure) and their outputs reach the sink through a
  non-blocking reorder buffer (``reorder.ReorderBuffer``) in input order.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from .reorder import ReorderBuffer


@dataclass
class WorkerStats:
    tasks: int = 0
    records: int = 0
    busy_seconds: float = 0.0
    reorder_waits: int = 0

    def as_dict(self, worker: int | str) -> dict:
        return {"worker": worker, "tasks": self.tasks, "records": self.records,
                "busy_seconds": round(self.busy_seconds, 6), "reorder_waits": self.reorder_waits}


def numa_nodes(root: str = "/sys/devices/system/node") -> list[list[int]]:
    """The CPUs of each NUMA node that has CPUs (one list per node), from sysfs; [] if unknown."""
    nodes = []
    try:
        names = sorted((n for n in os.listdir(root) if n.startswith("node") and n[4:].isdigit()),
                       key=lambda n: int(n[4:]))
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(root, name, "cpulist")) as f:
                cpus = parse_cpulist(f.read())
        except OSError:
            continue
        if cpus:
            nodes.append(cpus)
    return nodes


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


class WorkerPool:
    """``workers`` threads; a task is ``fn(worker_id)`` and runs on one of them."""

    def __init__(self, workers: int, nodes: list[list[int]] | None = None):
        self.workers = workers
        self.nodes = numa_nodes() if nodes is None else nodes
        self.pinned = len(self.nodes) > 1 and hasattr(os, "sched_setaffinity")
        self.stats = [WorkerStats() for _ in range(workers)]
        self.driver = WorkerStats()  # tasks the driver thread ran itself (run_here)
        self._ids = itertools.count()
        self._local = threading.local()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grizzly-worker",
                                            initializer=self._name_worker)

    def _name_worker(self) -> None:
        worker = self._local.worker = next(self._ids)
        if self.pinned:  # node-local: this thread runs on, and first touches memory of, one node
            try:
                os.sched_setaffinity(0, self.nodes[worker % len(self.nodes)])
            except OSError:
                pass

    def submit(self, fn: Callable[[int], Any], records: int = 0) -> Future:
        return self._executor.submit(self._run, fn, records)

    def run_here(self, fn: Callable[[int], Any], records: int = 0) -> Future:
        """Run a task on the calling thread (the driver takes a share of a round instead of
        leaving a core idle while a worker waits for it); a done future, as ``submit`` gives."""
        return run_now(lambda: self._run(fn, records, self.driver, self.workers))

    def _run(self, fn: Callable[[int], Any], records: int, stats: WorkerStats | None = None,
             worker: int | None = None):
        worker = self._local.worker if worker is None else worker
        stats = self.stats[worker] if stats is None else stats
        start = time.perf_counter()
        try:
            return fn(worker)
        finally:
            stats.tasks += 1
            stats.records += records
            stats.busy_seconds += time.perf_counter() - start

    def run_all(self, tasks: list[tuple[Callable[[int], Any], int]]) -> list:
        """Run ``(fn, records)`` tasks and wait for all of them (a batch boundary); the first
        error is raised once every task has stopped, so no task outlives the call."""
        return wait_all([self.submit(fn, records) for fn, records in tasks])

    def metrics(self) -> list[dict]:
        """Per worker thread; then the driver thread's own tasks, if it ran any (worker "driver")."""
        out = [s.as_dict(w) for w, s in enumerate(self.stats)]
        if self.driver.tasks:
            out.append(self.driver.as_dict("driver"))
        return out

    def placement(self) -> dict:
        return {"numa_nodes": len(self.nodes) or 1, "pinned": self.pinned}

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def run_now(call: Callable[[], Any]) -> Future:
    """``call()`` on this thread, as a done future (its error kept for whoever waits on it, where
    a worker's would be raised)."""
    done = Future()
    try:
        done.set_result(call())
    except BaseException as e:
        done.set_exception(e)
    return done


def run_shared(pool: WorkerPool | None, calls: list[Callable[[], Any]]) -> list:
    """``calls``' results, in order: the pool's workers run all but the last, which runs on this
    thread meanwhile (without a pool, or for one call, all run here). The first error is raised
    once every call has stopped. For the driver's native work split in parts (a join's firing),
    each call releasing the GIL."""
    if pool is None or len(calls) < 2:
        return [call() for call in calls]
    futures = [pool.submit(lambda _worker, call=call: call()) for call in calls[:-1]]
    here = run_now(calls[-1])
    return wait_all(futures + [here])


def wait_all(futures: list[Future]) -> list:
    """The futures' results, in order; the first error is raised once every task has stopped."""
    results, error = [], None
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as e:
            error = error or e
    if error is not None:
        raise error
    return results


@dataclass
class CostModel:
    """Chooses parallelism and morsel sizes from measured costs (after BriskStream's model: a
    task pays a fixed overhead, here the Python side of a kernel call and the hand-off to a
    worker, plus the per-record cost of the compiled loop).

    ``per_record_ns`` is a running estimate taken from the tasks that ran; ``task_overhead_ns``
    a fixed estimate (measured on the development machine: ~30 us per task). A morsel must be
    large enough that the overhead stays under ``max_overhead`` of its time.
    """

    per_record_ns: float = 2.0
    task_overhead_ns: float = 30_000.0
    max_overhead: float = 0.05
    min_rows: int = 4096
    round_ms: float = 2.0  # grouped rounds: the least work per worker in a round (it bounds the
    #                       latency a round adds together with ``round_overhead_ns``)
    round_overhead_ns: float = 300_000.0  # a round's fixed cost: the wait, the watermark and
    #                       firing, the planning and the hand-off (measured on the development
    #                       machine: ~0.2-0.6 ms); a round is made long enough that it stays
    #                       under ``max_overhead`` of the round (~6 ms of work per worker)
    driver_ns: float = 0.0  # grouped rounds: the driver's own Python per round (reading, checking
    #                         and preparing the next batches), a running estimate
    first_round_share: float = 0.25  # grouped rounds: the first round's rows, of a round's
    samples: int = field(default=0, init=False)
    driver_samples: int = field(default=0, init=False)
    code: object = field(default=None, init=False)  # what the estimate was measured on

    def observe(self, records: int, seconds: float, code: object = None) -> None:
        """A task ran ``records`` in ``seconds``. ``code``: which code ran it (the kernel and its
        variant); when it changes the estimate starts over from this task. An optimized variant
        runs ~2x faster than the generic one, and the old figure took ~8 rounds to fade: the
        driver's share of each round (``round_morsels``) was planned too large meanwhile, and
        the workers waited for it."""
        if records <= 0 or seconds <= 0:
            return
        if code is not None and code != self.code:
            self.code, self.samples = code, 0
        ns = seconds * 1e9 / records
        self.samples += 1
        weight = 1.0 / min(self.samples, 16)
        self.per_record_ns += weight * (ns - self.per_record_ns)

    @property
    def smallest_morsel(self) -> int:
        """Rows below which a task's overhead exceeds ``max_overhead`` of its run time."""
        rows = self.task_overhead_ns * (1 - self.max_overhead) / (self.max_overhead * max(self.per_record_ns, 0.1))
        return max(self.min_rows, int(rows))

    def morsel_count(self, rows: int, workers: int) -> int:
        """The number of morsels (at most ``workers``) that finishes ``rows`` soonest, taking the
        tasks' Python overhead as serial (it holds the GIL): minimizes rows*c/n + n*overhead,
        with no morsel under ``min_rows``."""
        work = rows * max(self.per_record_ns, 0.1)
        best = min(range(1, max(1, workers) + 1), key=lambda n: work / n + n * self.task_overhead_ns)
        return max(1, min(best, rows // self.min_rows))

    def observe_driver(self, seconds: float) -> None:
        """The driver's own time between two grouped rounds (``round_morsels``)."""
        self.driver_samples += 1
        self.driver_ns += (seconds * 1e9 - self.driver_ns) / min(self.driver_samples, 8)

    def round_morsels(self, rows: int, pieces: int) -> tuple[list[tuple[int, int]], bool]:
        """A grouped round's morsels, and whether the first one is the driver's own: with two
        or more, the driver runs one itself, made smaller than the others by its own Python per
        round, so that it reads and prepares the next batches while the workers finish theirs
        (no core idles, and none is shared by three threads). Each worker's morsel takes
        ``w = (work + driver) / pieces``, the driver's ``w - driver``; without room for a
        morsel of ``min_rows`` there, the workers take it all. (The driver's comes first: the
        rows before the workers' are then the only ones whose event times the driver reads,
        ``rounds.RoundPlanner.flush``.)"""
        per = max(self.per_record_ns, 0.1)
        share = (rows * per + self.driver_ns) / max(pieces, 1) - self.driver_ns
        driver_rows = min(rows, int(share / per))
        if pieces < 2 or driver_rows < self.min_rows:
            return plan_morsels(rows, pieces), False
        return [(0, driver_rows)] + [(driver_rows + o, n) for o, n in plan_morsels(rows - driver_rows, pieces - 1)], True

    def group_rows(self, workers: int, first: bool = False) -> int:
        """Rows of source batches worth one round of tasks when batches can be grouped: every
        worker gets a morsel whose task overhead, and the round's fixed cost, stay under
        ``max_overhead`` of its work, and at least ``round_ms`` of work. ``first``: the job's
        first round, a ``first_round_share`` of that: nothing runs while the driver reads it
        (a round at parallelism 2 was ~90 batches, ~4-5 ms of reading before any task started)."""
        round_ns = max(self.round_ms * 1e6, self.round_overhead_ns * (1 - self.max_overhead) / self.max_overhead)
        per_worker = max(self.smallest_morsel, int(round_ns / max(self.per_record_ns, 0.1)))
        if first:
            per_worker = max(self.smallest_morsel, int(per_worker * self.first_round_share))
        return workers * per_worker


def auto_parallelism() -> int:
    """Workers for ``parallelism="auto"``: the CPUs this process may run on (the cost model then
    decides per batch how many of them a batch is worth)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def align_morsels(morsels: list[tuple[int, int]], sizes: list[int]) -> list[tuple[int, int]] | None:
    """``morsels`` ((offset, length), contiguous from 0) of rows that are batches of ``sizes``
    rows, in order, with every boundary moved to the nearest batch boundary: each morsel then
    holds whole batches (some may hold none: length 0). None when that makes a morsel more than
    half as large again as the largest asked for (batches too large for the cut)."""
    starts = list(itertools.accumulate(sizes, initial=0))
    bounds = [0]
    for offset, _ in morsels[1:]:
        i = bisect.bisect_left(starts, offset)
        nearest = starts[i] if i < len(starts) and (i == 0 or starts[i] - offset <= offset - starts[i - 1]) \
            else starts[i - 1]
        bounds.append(max(nearest, bounds[-1]))
    bounds.append(starts[-1])
    aligned = [(a, b - a) for a, b in zip(bounds, bounds[1:])]
    largest = max(n for _, n in morsels)
    if max(n for _, n in aligned) > 1.5 * largest:
        return None
    return aligned


def plan_morsels(rows: int, pieces: int) -> list[tuple[int, int]]:
    """``pieces`` contiguous (offset, length) slices of ``rows`` rows, sizes differing by at most one."""
    pieces = max(1, min(pieces, rows)) if rows else 1
    base, extra = divmod(rows, pieces)
    out, offset = [], 0
    for i in range(pieces):
        n = base + (1 if i < extra else 0)
        out.append((offset, n))
        offset += n
    return out


class OrderedStage:
    """A stateless pipeline whose morsel tasks run ahead of the driver: outputs go downstream
    through a reorder buffer in serial (input) order; at most ``max_in_flight`` tasks are in the
    pool at once (the driver waits for the oldest when there are more)."""

    def __init__(self, pool: WorkerPool, downstream: Callable[[pa.RecordBatch], None], max_in_flight: int):
        self.pool = pool
        self.max_in_flight = max_in_flight
        self.buffer = ReorderBuffer(max_in_flight, downstream)
        self._serials = itertools.count()
        self._in_flight: deque[Future] = deque()

    def submit(self, fn: Callable[[int], pa.RecordBatch], records: int) -> None:
        """Queue a task whose result (an output batch) goes downstream in submission order."""
        while len(self._in_flight) >= self.max_in_flight:
            self._in_flight.popleft().result()  # back-pressure; re-raises a task's error
        serial = next(self._serials)
        stats = self.pool.stats

        def task(worker: int) -> None:
            out = fn(worker)
            if not self.buffer.send(serial, out):  # cannot happen with capacity == max_in_flight
                raise RuntimeError(f"reorder buffer: task {serial} outside the window at {self.buffer.next}")
            if self.buffer.last_send_waited():
                stats[worker].reorder_waits += 1

        self._in_flight.append(self.pool.submit(task, records))

    def drain(self) -> None:
        """Wait for every task; raise the first error."""
        error = None
        while self._in_flight:
            try:
                self._in_flight.popleft().result()
            except BaseException as e:
                error = error or e
        if error is not None:
            raise error
        if self.buffer.pending:
            raise RuntimeError(f"reorder buffer: {self.buffer.pending} outputs stranded")

