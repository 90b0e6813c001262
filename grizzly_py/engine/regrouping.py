"""The state layout of a tumbling window chosen while it runs: hash vs sort grouping
(``grouping="auto"``) and, under parallelism, thread-local vs shared window state
(``window_state="auto"``, Grizzly 6.2.3).

A ``RegroupingKernel`` stands where a tumbling event-time window's kernel stands in the driver
and answers the same protocol (``kernel_protocol.WindowAggregateKernel``): from the kernel in use,
or from every kernel holding state while a switch is under way. It starts with hash grouping
over thread-local state. After every firing it reads what the fired windows held: their
distinct keys (the groups each emitted: exact, not an estimate), the bytes a hash table of that
many entries takes against the host's last-level cache, the aggregate kinds, and the share of
the most frequent key among records sampled since the last firing (``KeySampler``):

- ``GroupingChooser`` asks ``codegen.sort_grouping.choose_grouping`` (crossing points measured by
  ``bench/grouping.py``): sorted key/pointer arrays once the keys are many;
- ``StateChooser`` (hash grouping, several workers, aggregates with atomic updates): one shared
  state updated with atomics when keys are many and uniform (the workers' tables together
  outgrow the cache and no key takes ``skew_share`` of the records), thread-local tables merged
  at firing when a heavy hitter would make the workers contend on one entry or the tables fit
  the cache anyway.

When a chooser favours another layout for ``confirm_windows`` fired windows in a row (and, back
to the layout it left, only with a margin: no flapping at a crossing point), the pipeline
switches **at a window boundary**:

- a kernel of the other layout is built (code generated and compiled on a background thread
  while the current one keeps running; the switch happens at the first firing after it is ready);
- the boundary ``B`` is the end of the window that holds the latest event time seen so far: the
  old kernel's open windows all end at or before ``B``, so no tumbling window is split;
- records with event time ``< B`` (out-of-order ones) still go to the old kernel, the others
  (and null event times, which the kernels reject as before) to the new one, each run of
  consecutive rows on one side as a slice of the batch (zero-copy, exact rows in error messages;
  a shared state that must grow stops at a row as it does without a switch);
  both judge lateness against the same watermark, so late records are the same as without a switch;
- firing asks the old kernel first (its windows end first), then the new one; once the watermark
  reaches ``B - 1`` the old kernel has fired everything and is closed.

No state is migrated, no window fires mid-switch, and results equal a run without switching.
Counters (rows in, filtered, late) add up over every kernel the pipeline had, so the record
accounting holds. Sliding windows are not switched (a window would span both kernels); nor are
jobs with checkpoints (a snapshot would hold two kernels).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..aggregates import as_spec
from ..arrow_numpy import as_numpy, from_numpy
from ..codegen.sort_grouping import SORT_MIN_DISTINCT_KEYS, SORT_MIN_DISTINCT_KEYS_HOLISTIC, choose_grouping
from ..codegen.shared_window import shared_state_unsupported
from ..expressions import Column
from ..physical.pipelines import Pipeline
from ..sources import TIMESTAMP_UNIT_DIVISOR
from .adaptive import generic_only, yielding_gil
from .kernel_protocol import WindowAggregateKernel
from .kernels import _SUMMED_COUNTERS, Morsel, process_parts

_P, _I64 = ctypes.c_void_p, ctypes.c_int64
WINDOW_END = "window_end"
DEFAULT_CACHE_BYTES = 32 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def host_cache_bytes() -> int:
    """The size of the host's largest CPU cache (sysfs, then sysconf; 32 MiB when neither says)."""
    sizes = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    text = f.read().strip().upper()
            except OSError:
                continue
            unit = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                sizes.append(int(digits) * unit)
    except OSError:
        pass
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            value = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if value and value > 0:
            sizes.append(value)
    return max(sizes) if sizes else DEFAULT_CACHE_BYTES


class _Confirming:
    """A decision taken only after ``confirm_windows`` fired windows in a row ask for it."""

    confirm_windows: int
    _streak: int

    def _confirmed(self, current: str, want: str, reason: str) -> tuple[str, str] | None:
        if want == current:
            self._streak = 0
            return None
        self._streak += 1
        if self._streak < self.confirm_windows:
            return None
        self._streak = 0
        return want, f"{reason} ({self.confirm_windows} fired window(s) in a row)"


@dataclass
class GroupingChooser(_Confirming):
    """Decides, window after fired window, which grouping a pipeline should use."""

    aggregate_kinds: tuple[str, ...]
    hash_entry_bytes: int
    cache_bytes: int
    confirm_windows: int = 2
    min_keys: int = SORT_MIN_DISTINCT_KEYS
    min_keys_holistic: int = SORT_MIN_DISTINCT_KEYS_HOLISTIC
    _streak: int = 0

    @property
    def threshold(self) -> int:
        return self.min_keys_holistic if want_holistic(self.aggregate_kinds) else self.min_keys

    @property
    def fewest_keys_for_sort(self) -> int:
        """The fewest distinct keys at which ``choose_grouping`` answers "sort": the crossing
        point, and (decomposable aggregates) a hash state larger than the cache."""
        if want_holistic(self.aggregate_kinds):
            return self.threshold
        return max(self.threshold, self.cache_bytes // max(1, self.hash_entry_bytes) + 1)

    def decide(self, current: str, distinct_keys: int) -> tuple[str, str] | None:
        """(grouping, reason) when the pipeline should switch after a window with
        ``distinct_keys`` groups, else None."""
        state = distinct_keys * self.hash_entry_bytes
        want, reason = self._choose(distinct_keys)
        fits_cache = not want_holistic(self.aggregate_kinds) and state <= self.cache_bytes
        if current == "sort" and want == "hash" and not fits_cache and distinct_keys * 2 >= self.threshold:
            want = "sort"  # hysteresis: back to hash only well below the crossing point
        return self._confirmed(current, want, reason)


    def _choose(self, distinct_keys: int) -> tuple[str, str]:
        thresholds = (self.min_keys, self.min_keys_holistic)
        measured = thresholds == (SORT_MIN_DISTINCT_KEYS, SORT_MIN_DISTINCT_KEYS_HOLISTIC)
        return choose_grouping(distinct_keys, distinct_keys * self.hash_entry_bytes, self.cache_bytes,
                               self.aggregate_kinds, thresholds=None if measured else thresholds)

    def decide_open(self, keys_so_far: int) -> tuple[str, str] | None:
        """("sort", reason) when a window still open under hash grouping already holds
        ``keys_so_far`` keys (a lower bound of its distinct keys) and that is past the crossing
        point: certain evidence, no confirmation needed."""
        want, reason = self._choose(keys_so_far)
        if want != "sort":
            return None
        self._streak = 0
        return want, f"{reason} (a window still open already holds them)"


def want_holistic(kinds) -> bool:
    return any(as_spec(k).holistic for k in kinds)


class Layout(NamedTuple):
    """How a window pipeline keeps its state: ``grouping`` "hash" | "sort", ``window_state``
    "thread_local" | "shared" (shared state groups by hash)."""

    grouping: str = "hash"
    window_state: str = "thread_local"


INITIAL = Layout()


@dataclass
class StateChooser(_Confirming):
    """Decides, window after fired window, between thread-local and shared window state (Grizzly
    6.2.3): shared when the keys are many and uniform, thread-local with a heavy hitter or when
    the workers' tables fit the cache anyway."""

    hash_entry_bytes: int
    cache_bytes: int
    workers: int
    confirm_windows: int = 2
    skew_share: float = 0.1
    _streak: int = 0

    def decide(self, current: str, distinct_keys: int, top_share: float | None) -> tuple[str, str] | None:
        """(window state, reason) when the pipeline should switch after a window with
        ``distinct_keys`` groups while the most frequent sampled key had ``top_share`` of the
        sampled records (None: nothing sampled, no decision), else None."""
        if top_share is None:
            return None
        tables = distinct_keys * self.hash_entry_bytes * self.workers
        skew = self.skew_share / 2 if current == "thread_local" else self.skew_share  # hysteresis
        if top_share >= skew:
            want, reason = "thread_local", (f"the most frequent key has {top_share:.0%} of the records "
                                            f"(>= {skew:.0%}): one table per worker, no contention")
        elif tables <= self.cache_bytes * (1 if current == "thread_local" else 0.5):
            want, reason = "thread_local", (f"{self.workers} tables of {distinct_keys:,} keys ({tables:,} bytes) "
                                            f"fit the {self.cache_bytes:,}-byte cache")
        else:
            want, reason = "shared", (f"{distinct_keys:,} uniform keys (the most frequent has {top_share:.1%}): "
                                      f"one shared table instead of {self.workers} ({tables:,} bytes)")
        return self._confirmed(current, want, reason)


class KeySampler:
    """The share of the most frequent key among records sampled from the batches (one batch in
    ``every``, up to ``rows`` rows of it), pooled until ``top_share`` reads and resets it. Called
    from the worker threads; ``columns`` None: keys are computed, nothing is sampled; an empty
    list: a global window (one key: share 1)."""

    def __init__(self, columns: list[str] | None, every: int = 8, rows: int = 512):
        self.columns, self.every, self.rows = columns, max(1, every), rows
        self._lock = threading.Lock()
        self._seen = 0
        self._samples: list[pa.Table] = []

    def offer(self, batch) -> None:
        if not self.columns:
            return
        with self._lock:
            self._seen += 1
            if self._seen % self.every:
                return
        whole = batch.to_batch() if isinstance(batch, Morsel) else batch
        if not whole.num_rows:
            return
        step = max(1, whole.num_rows // self.rows)
        sample = pa.Table.from_batches([whole]).select(self.columns).take(
            np.arange(0, whole.num_rows, step)[:self.rows])
        with self._lock:
            self._samples.append(sample)

    def top_share(self) -> float | None:
        if self.columns is None:
            return None
        if not self.columns:
            return 1.0
        with self._lock:
            samples, self._samples = self._samples, []
        if not samples:
            return None
        table = pa.concat_tables(samples)
        counts = table.group_by(self.columns).aggregate([([], "count_all")]).column("count_all")
        return pc.max(counts).as_py() / table.num_rows


@dataclass
class _Pending:
    """A kernel of another layout being built on a background thread."""

    layout: Layout
    reason: str
    distinct: int
    top_share: float | None
    thread: threading.Thread | None = None  # None: built on the driver's thread
    result: list = field(default_factory=list)  # [kernel] or [exception]


class RegroupingKernel(WindowAggregateKernel):
    """A tumbling window pipeline's kernel whose layout is chosen while it runs (see the module
    docstring). ``build(layout)`` makes a window kernel of that ``Layout`` over the same pipeline;
    ``choose_grouping``/``choose_state``: the controller chooses that part of the layout (else it
    stays as the initial layout has it: hash grouping, thread-local state); ``settings``
    (``AdaptiveSettings``) give the crossing points, cache size, skew share and confirmation."""

    def __init__(self, pipeline: Pipeline, build: Callable[[Layout], object], settings, workers: int,
                 choose_grouping: bool = True, choose_state: bool = False):
        self.pipeline, self.build = pipeline, build
        self.background = settings.regroup_in_background
        self.layout = INITIAL
        self.current = build(INITIAL)
        entry = self.current.gen.grouping.entry_size
        cache = settings.cache_bytes or host_cache_bytes()
        confirm = max(1, settings.grouping_confirm_windows)
        self.chooser = GroupingChooser(
            aggregate_kinds=tuple(a.spec for a in pipeline.terminal.aggregates), hash_entry_bytes=entry,
            cache_bytes=cache, confirm_windows=confirm,
            min_keys=settings.sort_min_distinct_keys or SORT_MIN_DISTINCT_KEYS,
            min_keys_holistic=settings.sort_min_distinct_keys_holistic or SORT_MIN_DISTINCT_KEYS_HOLISTIC) \
            if choose_grouping else None
        self.state_chooser = StateChooser(entry, cache, workers, confirm, settings.skew_share) \
            if choose_state and state_choice_unsupported(pipeline, workers) is None else None
        self.sampler = KeySampler(_key_columns(pipeline)) if self.state_chooser is not None else None
        self.retiring = None            # the previous kernel while its windows are still open
        self.boundary: int | None = None  # event times below it go to ``retiring``
        self.pending: _Pending | None = None
        self.geometry = pipeline.terminal.assigner.geometry  # (a tumbling window: regrouping's kinds)
        self.column = pipeline.event_time.name
        self.batches_processed = 0
        self._retired = {i: 0 for i in _SUMMED_COUNTERS}
        self._retired_max_time = abi.INT64_MIN
        self._retired_compile_ms = 0.0
        self._retired_stages: list[dict] = []  # the code stages of the kernels retired so far
        self._retired_records = 0
        self._retired_deopts = 0
        self._started = time.perf_counter()
        self._began = {id(self.current): (INITIAL, self._started)}  # live kernels: layout, since when
        chosen = " and ".join(what for what, on in (("grouping", self.chooser), ("window state", self.state_chooser))
                              if on is not None)
        self._history = [{**INITIAL._asdict(), "reason": f"initial (the controller chooses the {chosen})",
                          "at_s": 0.0, "boundary": None, "distinct_keys": None, "top_key_share": None}]
        self._closed = False
        self._open_seen = None  # (kernel, its rows in, the largest open table) at the last look

    # --- the protocol: the kernel in use answers, or every kernel holding state ---------------------
    tumbling = True
    snapshot_unsupported = "a state layout chosen while it runs (grouping or window_state \"auto\")"

    @property
    def grouping(self) -> str:
        return self.layout.grouping

    @property
    def window_state(self) -> str:
        return self.layout.window_state

    @property
    def gen(self):
        return self.current.gen

    @property
    def workers(self) -> int:
        return self.current.workers

    @property
    def compile_ms(self) -> float:
        return self._retired_compile_ms + sum(k.compile_ms for k in self.live_kernels())

    def block_max_event_time(self, block: int) -> int:
        return max(k.block_max_event_time(block) for k in self.live_kernels())

    def raise_max_event_time(self, block: int, at_least: int) -> None:
        self.current.raise_max_event_time(block, at_least)

    def live_kernels(self) -> list:
        """The kernels holding state now (the old one first while a switch is under way)."""
        return [k for k in (self.retiring, self.current) if k is not None]

    def counter(self, index: int) -> int:
        if index in _SUMMED_COUNTERS:
            return self._retired[index] + sum(k.counter(index) for k in self.live_kernels())
        if index == abi.STATE_MAX_EVENT_TIME:
            return max([self._retired_max_time] + [k.counter(index) for k in self.live_kernels()])
        if index == abi.STATE_MIN_OPEN_END:
            return min(k.counter(index) for k in self.live_kernels())
        return self.current.counter(index)

    def export_state(self) -> dict:
        raise NotImplementedError(self.snapshot_unsupported)

    def restore_state(self, saved: dict) -> None:
        raise NotImplementedError(self.snapshot_unsupported)

    def structure_bytes(self) -> int:
        return sum(k.structure_bytes() for k in self.live_kernels())

    def interned_bytes(self) -> int:
        return sum(k.interned_bytes() for k in self.live_kernels())

    def release_strings(self, pending=(), force: bool = False) -> int:
        # each kernel has its own interner, and reads its own state's ids
        return sum(k.release_strings(pending, force) for k in self.live_kernels())

    def layout_history(self) -> list[dict]:
        return [dict(h) for h in self._history]

    def variant_history(self, note: str | None = None) -> list[dict]:
        """The code stages of every kernel the pipeline has had, oldest first, each with the
        layout (grouping, window state) of its kernel. A kernel without code variants (sort
        grouping, a shared state) is one generic stage. ``at_record`` counts the records of the
        kernels before a stage's kernel first (during a switch both kernels take records, so
        the counts of the old one keep growing after the new one began); ``at_s`` is from the
        pipeline's start. ``note``: why a kernel without a controller has one variant, where its
        layout does not say (``adaptive=False``)."""
        out, before = [dict(h) for h in self._retired_stages], self._retired_records
        for kernel in self.live_kernels():
            stages, records = self._stages_of(kernel, before, note)
            out += stages
            before += records
        return out

    @property
    def deopts(self) -> int:
        """Deoptimizations over every kernel the pipeline has had."""
        return self._retired_deopts + sum(k.deopts for k in self.live_kernels())

    def _stages_of(self, kernel, records_before: int, note: str | None = None) -> tuple[list[dict], int]:
        """``kernel``'s stages (shifted to count from the pipeline's start) and its records."""
        layout, began = self._began[id(kernel)]
        controller = kernel.controller
        if controller is None:
            records = kernel.counter(abi.STATE_ROWS_IN)
            note = generic_only(kernel.gen, True) or note or "initial"
            stages, started = [{"stage": "generic", "reason": note, "at_s": 0.0, "at_record": 0,
                                "records": records}], began
        else:  # (its controller started when it was built: on a background thread, before the switch)
            stages, records, started = controller.variant_history(), controller.records, controller.started
        for h in stages:
            at_s = max(began, started + h["at_s"]) - self._started
            h.update(layout._asdict(), at_record=h["at_record"] + records_before, at_s=round(at_s, 6))
        return stages, records

    def metrics(self) -> dict:
        """The shared state's own metrics while the pipeline runs over one (``SharedWindowKernel``)."""
        return self.current.metrics() if self.layout.window_state == "shared" else {}

    def grow(self) -> None:
        """Grow a shared state that stopped (no task runs now; growing one that did not stop is harmless)."""
        for k in self.live_kernels():
            k.grow()

    # --- records ---------------------------------------------------------------------------------
    def process(self, batch, watermark: int, worker: int = 0, where: tuple[int, int] | None = None) -> int | None:
        """Process ``batch`` (a RecordBatch or a Morsel); during a switch, each run of consecutive
        rows on one side of the boundary goes to its kernel, in order, as a slice (so error
        messages name exact rows). Returns what the kernels return: None, or (a kernel that
        stopped to grow its state) the first row not done."""
        if where is None:
            where = (self.batches_processed, 0)
        self.batches_processed += 1
        if self.sampler is not None:
            self.sampler.offer(batch)
        if self.retiring is None:
            return self.current.process(batch, watermark, worker, where)
        for start, length, old in self._runs(batch):
            kernel = self.retiring if old else self.current
            rest = kernel.process(batch.slice(start, length), watermark, worker, (where[0], where[1] + start))
            if rest is not None:
                return start + rest
        return None

    def plan_task(self, parts: list, worker: int, chain_delay: int | None = None):
        """``kernels.WindowKernel.plan_task`` of the kernel in use; None during a switch."""
        if self.retiring is not None:
            return None
        plan = self.current.plan_task(parts, worker, chain_delay)
        if plan is not None:
            self._count_parts(parts)
        return plan

    def _count_parts(self, parts: list) -> None:
        """What ``process`` does per batch, for a task's parts run by the kernel in use."""
        self.batches_processed += len(parts)
        if self.sampler is not None:
            for shared, _, _, offset, length in parts:
                self.sampler.offer(shared.morsel(offset, length))

    def prepare_ahead(self, shared) -> None:
        self.current.prepare_ahead(shared)

    def process_parts(self, parts: list, worker: int = 0, chain_delay: int | None = None) -> list | None:
        """A task's parts (``kernels.process_parts``): in one call of the kernel in use, except
        during a switch (each part's rows are split at the boundary, as ``process`` does)."""
        if self.retiring is not None:
            return process_parts(self, parts, worker, chain_delay)
        self._count_parts(parts)
        return self.current.process_parts(parts, worker, chain_delay)

    def _runs(self, batch) -> list[tuple[int, int, bool]]:
        """(first row, rows, for the old kernel?) of the runs of rows on one side of the boundary.
        Null event times go to the new kernel (which rejects them as before)."""
        whole = batch.to_batch() if isinstance(batch, Morsel) else batch
        times = whole.column(self.column)
        bound = self.boundary
        if pa.types.is_timestamp(times.type):
            mul, div = TIMESTAMP_UNIT_DIVISOR[times.type.unit]
            times = times.cast(pa.int64())
            bound = -((-bound * div) // mul)  # the smallest raw value whose floor in ms is >= B
        old = as_numpy(pc.fill_null(pc.less(times, from_numpy(np.array([bound]), times.type)[0]), False))
        if not len(old):
            return []
        starts = np.concatenate(([0], np.flatnonzero(old[1:] != old[:-1]) + 1))
        ends = np.append(starts[1:], len(old))
        return [(int(a), int(b - a), bool(old[a])) for a, b in zip(starts, ends)]

    # --- windows ---------------------------------------------------------------------------------
    def fire(self, watermark: int) -> pa.RecordBatch | None:
        parts = []
        if self.retiring is not None:
            out = self.retiring.fire(watermark)
            if out is not None:
                parts.append(out)
            if watermark >= self.boundary - 1:  # every window of the old kernel has fired
                self._retire()
        out = self.current.fire(watermark)
        if out is not None:
            parts.append(out)
        result = parts[0] if len(parts) == 1 else (
            pa.Table.from_batches(parts).combine_chunks().to_batches()[0] if parts else None)
        if watermark != abi.INT64_MAX:  # (not at the end of the input)
            if result is not None:
                self._observe(result)
            self._observe_open()
        self._maybe_switch()
        return result

    def _observe_open(self) -> None:
        """Under hash grouping over thread-local tables, the open windows' tables (the largest
        worker table of each: a lower bound of its distinct keys) can show the crossing point
        passed before the window fires: the switch to sort then starts at once."""
        if self.chooser is None or self.pending is not None or self.retiring is not None \
                or self.layout != INITIAL:
            return
        fewest = self.chooser.fewest_keys_for_sort
        placed = getattr(self.current, "placement", None)
        if placed and all(p is not None and p[1] < fewest for p in placed):
            return  # every block's tables are dense: none holds more keys than its capacity
        # a table grows by at most one entry per record: skip the look while the largest table
        # seen last time plus the records read since cannot reach the fewest keys for sort
        rows = self.current.counter(abi.STATE_ROWS_IN)
        seen = self._open_seen
        if seen is not None and seen[0] is self.current \
                and seen[2] + (rows - seen[1]) < fewest:
            return
        windows = self.current.all_windows()
        largest = int(windows[:, 3].max()) if len(windows) else 0
        self._open_seen = (self.current, rows, largest)
        if not largest:
            return
        decision = self.chooser.decide_open(largest)
        if decision is not None:
            self._start_build(Layout("sort", "thread_local"), decision[1], distinct=largest, top_share=None)

    def _observe(self, fired: pa.RecordBatch) -> None:
        """Feed the choosers the distinct keys of each fired window (in window order) and the
        sampled key skew."""
        share = self.sampler.top_share() if self.sampler is not None else None
        if self.pending is not None or self.retiring is not None:
            return
        ends = fired.column(WINDOW_END)
        if pa.types.is_timestamp(ends.type):
            ends = ends.cast(pa.int64())
        _, counts = np.unique(as_numpy(ends), return_counts=True)
        for distinct in counts:
            decision = self._decide(int(distinct), share)
            if decision is not None:
                self._start_build(*decision, distinct=int(distinct), top_share=share)
                return

    def _decide(self, distinct: int, share: float | None) -> tuple[Layout, str] | None:
        now = self.layout
        if self.chooser is not None:
            grouping = self.chooser.decide(now.grouping, distinct)
            if grouping is not None:  # sort grouping keeps thread-local state
                return Layout(grouping[0], "thread_local" if grouping[0] == "sort" else now.window_state), grouping[1]
        if self.state_chooser is not None and now.grouping == "hash":
            state = self.state_chooser.decide(now.window_state, distinct, share)
            if state is not None:
                return Layout("hash", state[0]), state[1]
        return None

    def _start_build(self, layout: Layout, reason: str, distinct: int, top_share: float | None) -> None:
        pending = self.pending = _Pending(layout, reason, distinct, top_share)

        def work():
            try:
                with yielding_gil():  # (code generation holds the GIL; the workers run meanwhile)
                    kernel = self.build(layout)
                    for unit in kernel.gen.units:  # (CodeUnits renders the general kernel on access)
                        kernel.gen.units[unit]
                _warm(kernel)
                pending.result.append(kernel)
            except BaseException as e:  # reaches the driver at the next firing
                pending.result.append(e)
        if self.background:
            pending.thread = threading.Thread(name="grizzly-regroup", daemon=True, target=work)
            pending.thread.start()
        else:
            work()

    def _maybe_switch(self) -> None:
        """Switch to the built kernel at the next window boundary (once it is ready)."""
        p = self.pending
        if p is None or (p.thread is not None and p.thread.is_alive()) or not p.result:
            return
        self.pending = None
        built = p.result[0]
        if isinstance(built, BaseException):
            raise built
        latest = self.max_event_time
        if latest == abi.INT64_MIN:
            boundary = abi.INT64_MIN  # nothing seen yet: every record goes to the new kernel
        else:
            boundary = self.geometry.last_end(latest)  # the end of the window holding ``latest``
        self.retiring, self.current, self.boundary, self.layout = self.current, built, boundary, p.layout
        self._began[id(built)] = (p.layout, time.perf_counter())
        self._history.append({**p.layout._asdict(), "reason": p.reason,
                              "at_s": round(time.perf_counter() - self._started, 6), "boundary": boundary,
                              "distinct_keys": p.distinct,
                              "top_key_share": None if p.top_share is None else round(p.top_share, 4)})

    def _retire(self) -> None:
        old, self.retiring = self.retiring, None
        stages, records = self._stages_of(old, self._retired_records)
        self._retired_stages += stages
        self._retired_records += records
        self._retired_deopts += old.deopts
        del self._began[id(old)]
        for i in _SUMMED_COUNTERS:
            self._retired[i] += old.counter(i)
        self._retired_max_time = max(self._retired_max_time, old.counter(abi.STATE_MAX_EVENT_TIME))
        self._retired_compile_ms += old.compile_ms
        old.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        p = self.pending
        if p is not None and p.thread is not None:
            p.thread.join()
        if p is not None and p.result and not isinstance(p.result[0], BaseException):
            p.result[0].close()
        for k in self.live_kernels():
            k.close()


def state_choice_unsupported(pipeline: Pipeline, workers: int) -> str | None:
    """Why ``window_state="auto"`` keeps ``pipeline``'s state thread-local, or None when the
    controller may choose (tumbling windows, ``regrouping_unsupported``, come first)."""
    if workers < 2:
        return "one worker: nothing to share"
    return shared_state_unsupported(pipeline)


def _key_columns(pipeline: Pipeline) -> list[str] | None:
    """The source columns a window's keys are (None when a key is computed)."""
    names = []
    for _, expr in pipeline.terminal.keys:
        if not isinstance(expr, Column):
            return None
        names.append(expr.name)
    return names


def _warm(kernel) -> None:
    """Compile the kernel's per-batch functions and its trigger now (on the builder's thread),
    so that the switch does not wait for a compile."""
    for unit in ("process", "process_nonnull"):
        if unit in kernel.gen.units:
            kernel.function(unit, unit, _I64, _P, _P, _I64, _P, _P)
    if "state" in kernel.gen.units:
        kernel._prepare_trigger()
