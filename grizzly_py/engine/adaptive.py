"""Adaptive execution: each pipeline's code variants and the controller that moves between them.

Grizzly section 6.1. A pipeline starts in the **generic** variant while the **instrumented** one
compiles on a background thread. The instrumented variant (``codegen/profile.py``) runs until it
has profiled ``profile_records`` records; the profile picks the **optimized** variant's options
(``codegen/specialize.py``), which compiles in the background while the generic variant runs
again. Once it is ready the optimized variant runs, its tasks measured with performance counters
(``grizzly_py.counters``); a sustained change of the per-record figures sends the pipeline back
to the instrumented variant (re-profiling; a speed-up against the baseline of the job's first
optimized tasks, taken while a new process warms up, re-takes the baseline once instead). A
failed guard (a key outside the dense range) **deoptimizes**: the kernel stops at that record,
the engine migrates the worker's state to the generic representation and runs the rest of the
batch with the generic variant; the pipeline re-profiles at once, or after a back-off when
deoptimizations come often.

Variants switch lazily, per task: a task asks for the variant when it starts and keeps it to its
end, so workers may run different variants for a while. Every variant of a pipeline shares the
state layout; a state block that the optimized variant placed densely is migrated (by the task
that next uses it, or before a checkpoint reads it) when its worker moves to another variant.
Windows fire between tasks and read either placement, so no window fires mid-migration.

The controller is shared by the pipeline's workers and guarded by a lock; the decisions it takes
(and why) form the variant history in ``JobResult.metrics``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from ..codegen import abi
from ..codegen.module import CodegenOptions, GeneratedPipeline, adaptable, generate_pipeline
from ..codegen.profile import Profile
from ..codegen.specialize import Specialization, specialize, still_fits, within_budget
from ..jit import compile_ir, is_compiled, on_disk
from .task_parts import parts_runner

KERNEL_UNITS = ("process_nonnull", "process")


@dataclass(frozen=True)
class AdaptiveSettings:
    """How long each stage runs, in records (Grizzly 7.4.4: short profiles suffice)."""

    profile_records: int = 200_000     # records the instrumented variant profiles
    early_build_share: float = 0.5     # the optimized variant starts compiling from the profile of
                                       # this share of profile_records (the full profile confirms
                                       # it, or compiles what it picks instead; 0: never) once
    early_build_records: int = 65_536  # that share holds at least this many records
    profile_sample: int = 4            # keys of one selected row in this many are sampled
    profile_workers: int = 1           # the instrumented variant runs on workers 0..n-1 only
    deopt_backoff: int = 1_000_000     # records in generic after a deoptimization that came soon
                                       # after the previous one (doubles each time, reset on success)
    counters: object = "auto"          # a grizzly_py.counters kind ("none": no monitoring) or a source
    detector_warmup: int = 8           # tasks measured for the baseline after each switch
    detector_sustain: int = 6          # consecutive tasks beyond the threshold that mean a change
    detector_threshold: float = 0.5    # relative change of a per-record figure
    detector_min_records: int = 16_384  # records pooled into one sample (small tasks are noisy)
    measure_every: int = 4             # optimized tasks measured with counters: one in this many
                                       # (a measurement costs ~5-8 us: docs/counters.md)
    generic_records: int = 65_536      # records in the generic variant before profiling starts
                                       # (shorter jobs never pay for compiling other variants)
    step_records: int = 65_536         # until the stages settle, a task runs a large source
                                       # batch in steps of at most this many records, so that a
                                       # stage ends after the records it is due (a 1M-row
                                       # Parquet row group would otherwise run whole in each)
    wait_for_compile: bool = False     # tests: switch as soon as a stage is due, waiting for its
                                       # compile (deterministic stage lengths)
    specializer: Callable | None = None  # tests: replaces codegen.specialize.specialize
    # grouping="auto", window_state="auto" (engine/regrouping.py): a tumbling window's state layout
    grouping_confirm_windows: int = 2  # fired windows in a row that must favour the other grouping
    sort_min_distinct_keys: int | None = None  # crossing points (distinct keys per window); None:
    sort_min_distinct_keys_holistic: int | None = None  # those bench/grouping.py measured
    cache_bytes: int | None = None     # None: the host's last-level cache
    regroup_in_background: bool = True  # tests: False builds the other kernel on the driver's thread
    skew_share: float = 0.1            # window_state="auto": a key with this share of the records
                                       # keeps thread-local state (Grizzly 7.4.3: contention from 10%)
    warm_start: bool = True            # a job starts in the optimized variant the process's last job
                                       # of its plan entered, else its record on disk
                                       # (learned_variants.py; False: every job profiles afresh)
    dense_table_budget: int | None = None  # bytes a worker's dense tables of one window may take
                                       # (None: codegen/specialize.py's own bounds); a job with a
                                       # state_memory_limit sets it (Job.__init__, engine/local.py)
    warm_check_records: int = 65_536   # a warm-started job compares its share of kept records with
    warm_check_tolerance: float = 0.5  # the remembered one after this many records; beyond this
                                       # share of min(kept, dropped) + 1% it re-profiles

    def __post_init__(self):
        if self.step_records < 1:
            raise ValueError(f"step_records must be >= 1, got {self.step_records}")


@dataclass
class Adaptivity:
    """A job's adaptive execution: the settings and the counter source its controllers share."""

    settings: AdaptiveSettings
    counters: object | None = None

    @classmethod
    def open(cls, adaptive) -> "Adaptivity | None":
        """From ``StreamEnvironment(adaptive=...)``: False (generic only), True (default
        settings) or an ``AdaptiveSettings``."""
        if adaptive is False or adaptive is None:
            return None
        settings = adaptive if isinstance(adaptive, AdaptiveSettings) else AdaptiveSettings()
        counters = settings.counters
        if counters == "none":
            counters = None
        elif isinstance(counters, str):
            from ..counters import open_counter_source
            counters = open_counter_source(counters)
        return cls(settings, counters)

    def within(self, dense_table_budget: int) -> "Adaptivity":
        """These settings with dense tables bounded by ``dense_table_budget`` bytes per worker and
        window (a job's state-memory limit: ``state_memory.dense_table_budget``)."""
        budget = dense_table_budget if self.settings.dense_table_budget is None \
            else min(dense_table_budget, self.settings.dense_table_budget)
        return Adaptivity(replace(self.settings, dense_table_budget=budget), self.counters)

    def describe(self) -> dict:
        return {"counters": self.counters.describe(notes=False) if self.counters is not None else "none",
                "counter_notes": self.counters.notes() if self.counters is not None else [],
                "profile_records": self.settings.profile_records}

    def close(self) -> None:
        if self.counters is not None:
            self.counters.close()


class Variant:
    """One code variant of a pipeline: its generated code (``gen``), ready once its no-nulls
    kernel is compiled (the general kernel compiles after it; a batch with nulls that comes
    first waits for it)."""

    def __init__(self, stage: str, gen: GeneratedPipeline | None = None, reasons: tuple[str, ...] = ()):
        self.stage, self.gen, self.reasons = stage, gen, reasons
        self.future: Future | None = None
        self.spares_pending = False  # a speculative build's spares wait until it is picked

    @property
    def ready(self) -> bool:
        return self.future is None or self.future.done()

    def result(self) -> "Variant":
        """The variant once built; a failure to generate or compile it is a bug, raised here."""
        if self.future is not None:
            self.future.result()
        return self

    @property
    def dense_keys(self) -> tuple[int, int] | None:
        return self.gen.options.dense_keys


def build_in_background(stage: str, pipeline, options: CodegenOptions, reasons: tuple[str, ...] = (),
                        spares: bool = True) -> Variant:
    """Generate and compile a variant on a background thread, off the critical path: the
    current variant keeps running meanwhile. The variant is ready once its kernel for batches
    without nulls is compiled; the builder then renders and compiles an optimized variant's other kernel (for
    batches with nulls). The instrumented variant's other kernel compiles only when a batch
    first needs it: it runs for a profile's records only, and that compile (~60-80 ms of LLVM on
    a cold start) would hold the builder, and the LLVM lock, while the profile is taken and the
    optimized variant waits to be built. ``spares=False`` leaves an optimized variant's other
    kernel and the runner to ``compile_spares`` (a speculative build: another variant may be
    the one that runs)."""
    variant = Variant(stage, reasons=reasons)
    variant.future = future = Future()

    def work():
        try:
            with yielding_gil():
                gen = generate_pipeline(pipeline, options)
            _compile_first_kernel(gen)
            variant.gen = gen
        except BaseException as e:  # reaches the controller, which raises it in the job
            future.set_exception(e)
            return
        future.set_result(gen)
        if stage == "optimized" and spares:
            _compile_spares(gen)
    _builder().submit(work)
    return variant


def first_kernel(gen: GeneratedPipeline):
    """The code unit of ``gen``'s first kernel (for batches without nulls where it has one;
    the others are rendered when asked for: ``CodeUnits``)."""
    return gen.units[next(u for u in KERNEL_UNITS if u in gen.units)]


def _compile_first_kernel(gen: GeneratedPipeline) -> None:
    first = first_kernel(gen)
    # the kernel's address too: looking it up later would wait for the next compile
    compile_ir(first.ir, first.opt_level).address(f"{gen.prefix}_{first.name}")


def build_now_if_cached(stage: str, pipeline, options: CodegenOptions, reasons: tuple[str, ...] = ()) -> Variant | None:
    """The variant built on this thread when its first kernel's machine code is compiled in this
    process or on disk (generating and loading it takes a few ms), its spares queued on the
    builder; None when it would need LLVM (``build_in_background`` then)."""
    gen = generate_pipeline(pipeline, options)
    first = first_kernel(gen)
    if not (is_compiled(first.ir, first.opt_level) or on_disk(first.ir, first.opt_level)):
        return None
    _compile_first_kernel(gen)
    variant = Variant(stage, gen, reasons)
    compile_spares(variant)
    return variant


def compile_spares(variant: Variant) -> None:
    """Compile an optimized variant's spares (``build_in_background(spares=False)``) on the
    builder, after its build (the builder runs its work in order)."""
    _builder().submit(lambda: _compile_spares(variant.gen) if variant.gen is not None else None)


def _compile_spares(gen: GeneratedPipeline) -> None:
    """The runner of whole tasks and the kernels other than the first (for batches with nulls),
    which the settled pipeline calls next."""
    try:  # a settled pipeline runs a task's batches in one native call (task_parts.py)
        parts_runner()
    except BaseException:
        pass  # compiled again, and raised, by the first task that needs it
    for name in [u for u in KERNEL_UNITS if u in gen.units][1:]:
        try:
            with yielding_gil():
                unit = gen.units[name]
            compile_ir(unit.ir, unit.opt_level).address(f"{gen.prefix}_{unit.name}")
        except BaseException:
            pass  # compiled again, and raised, by the first batch that needs it


GENERATING_SWITCH_INTERVAL = 0.0002  # s; CPython's default is 0.005
_GIL_USERS = [0, 0.005]  # threads inside yielding_gil(), the switch interval to restore
_GIL_LOCK = threading.Lock()


@contextmanager
def yielding_gil():
    """While a background thread generates code (pure Python: ~0.7-0.8 ms of CPU a variant,
    1.2-2.6 ms of wall time beside the workers), the workers' Python between native calls would
    wait for the GIL up to CPython's switch interval (5 ms) each time a kernel returns: the
    early stages measured 1.2-2.4 ms per 64K-row batch instead of 0.25 ms. A short interval
    meanwhile bounds that wait; it is restored after the last generation ends."""
    with _GIL_LOCK:
        if _GIL_USERS[0] == 0:
            _GIL_USERS[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_GIL_USERS[1], GENERATING_SWITCH_INTERVAL))
        _GIL_USERS[0] += 1
    try:
        yield
    finally:
        with _GIL_LOCK:
            _GIL_USERS[0] -= 1
            if _GIL_USERS[0] == 0:
                sys.setswitchinterval(_GIL_USERS[1])


_BUILDER: list[ThreadPoolExecutor] = []
_BUILDER_LOCK = threading.Lock()


def _builder() -> ThreadPoolExecutor:
    """The process's variant builder: one thread, started once, that generates and compiles
    variants in order (llvmlite compiles one module at a time anyway). A new thread per variant
    cost the job ~1.5-2 ms: ``Thread.start`` waits until the thread runs, and the thread then
    holds the GIL for the code generation. Its thread is joined at exit (an unfinished compile
    would leave its waiters)."""
    with _BUILDER_LOCK:
        if not _BUILDER:
            _BUILDER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="grizzly-variant-builder"))
        return _BUILDER[0]


def _before_fork() -> None:
    """A fork waits until no thread is inside this module's critical sections (the builder's
    creation, the switch interval's change and its count), so the child sees them consistent."""
    _BUILDER_LOCK.acquire()
    _GIL_LOCK.acquire()


def _after_fork_in_parent() -> None:
    _GIL_LOCK.release()
    _BUILDER_LOCK.release()


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: the builder's thread is gone (its
    executor would queue every variant and never build one, so a job in the child would run
    the generic variant to the end), and a switch interval shortened for a generation under
    way on another thread would stay short. The child starts a builder of its own."""
    _after_fork_in_parent()
    _BUILDER.clear()
    if _GIL_USERS[0]:
        _GIL_USERS[0] = 0
        sys.setswitchinterval(_GIL_USERS[1])


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


class ProfileStore(Protocol):
    """Where the instrumented variant's counters live (the kernel's state blocks)."""

    def reset_profiles(self) -> None: ...
    def read_profile(self) -> Profile: ...
    def counter(self, index: int) -> int: ...   # a state word summed over the blocks (abi.STATE_*)


class VariantController:
    """The stage machine of one pipeline (see the module docstring). ``counters``: a
    ``grizzly_py.counters`` source whose samples of optimized tasks feed the change detector."""

    def __init__(self, generic: GeneratedPipeline, profiles: ProfileStore, settings: AdaptiveSettings | None = None,
                 counters=None, reason: str = "initial", learned=None):
        """``learned``: the plan's ``learned_variants.LearnedVariant``, told of every optimized
        variant entered, left and deoptimized; unless ``settings.warm_start`` is off, the
        variant it recalls is speculated on from the start (the warm start): run from the
        first task when its code is compiled or on disk, else once built in the background."""
        self.settings = settings or AdaptiveSettings()
        self.profiles = profiles
        self.generic = Variant("generic", generic)
        self.pipeline = generic.pipeline
        self._lock = threading.Lock()
        self.counters = counters
        self.detector = None
        if counters is not None:
            from ..counters import ChangeDetector
            self.detector = ChangeDetector(warmup=self.settings.detector_warmup, sustain=self.settings.detector_sustain,
                                           threshold=self.settings.detector_threshold,
                                           min_records=self.settings.detector_min_records)
        self.current = self.generic
        self.history: list[dict] = []
        self._t0 = time.perf_counter()
        self.records = 0                 # every record any variant processed
        self._profiled = 0               # records the instrumented variant profiled in this phase
        self._built_early = False        # this phase's optimized variant started from a partial profile
        self._pending: Variant | None = None   # being built, to run once ready
        self.instrumented: Variant | None = None
        self._optimized: dict[CodegenOptions, Variant] = {}
        self._last_optimized: Variant | None = None
        self._entered_optimized = False  # this job ran an optimized variant already
        self._provisional_baseline = False  # see _retake_baseline
        self.last_profile: Profile | None = None
        self.deopts = 0
        self._tasks = 0                  # optimized tasks started (for measure_every)
        self._backoff = 0
        self._last_deopt_at: int | None = None
        self._wait_until: int | None = self.settings.generic_records  # generic until this many records
        self.learned = learned
        self._kept_share: float | None = None  # of the job's records when its variant was chosen
        self._warm_check: float | None = None  # a warm start's kept share, to compare once
        warm = learned.recall() if learned is not None and self.settings.warm_start else None
        if warm is not None and not within_budget(self.pipeline, warm.options, self._entry_bytes(),
                                                  self.settings.dense_table_budget):
            warm = None  # an earlier job's dense tables: beyond this job's state-memory limit
        if warm is None:
            self._record("generic", reason)
            return
        # what an earlier job of this plan optimized to: speculate at once
        self._wait_until = None
        self._kept_share = self._warm_check = warm.kept_share
        warm_reason = WARM_REASONS[warm.source]
        variant = build_now_if_cached("optimized", self.pipeline, warm.options, (warm_reason,))
        if variant is not None:
            self._optimized[warm.options] = variant
            self._enter(variant, warm_reason)
        else:
            self._record("generic", reason)
            self._pending = self._optimized[warm.options] = build_in_background(
                "optimized", self.pipeline, warm.options, (warm_reason,))

    # --- what a task runs --------------------------------------------------------------------
    @property
    def settled(self) -> bool:
        """The optimized variant runs and no stage change is due before the counters ask for
        one (nor a warm start's check): a task may then run many source batches in one call (``Kernel.run_parts``); until
        then each batch is a step, so that stages change after the records they are due."""
        return self.current.stage == "optimized" and self._pending is None and self._wait_until is None \
            and self._warm_check is None

    def variant_for(self, worker: int) -> Variant:
        """The variant a task on ``worker`` runs (switching stage first when one is due)."""
        with self._lock:
            self._maybe_switch()
            v = self.current
            if v.stage == "instrumented" and worker >= self.settings.profile_workers:
                return self.generic  # profiling runs on a subset of the workers (sampling)
            return v

    def _maybe_switch(self) -> None:
        if self._wait_until is not None:
            if self.records < self._wait_until:
                return
            self._wait_until = None
            self._start_profiling("back-off over" if self.history[-1]["reason"] != "initial"
                                  else f"{self.records:,} records in the generic variant")
        pending = self._pending
        if pending is not None and self.settings.wait_for_compile:
            pending.result()
        if pending is not None and pending.ready:
            self._pending = None
            pending.result()
            if pending.stage == "instrumented":
                self._enter(pending, "instrumented variant compiled: profiling")
            else:
                self._enter(pending, "optimized variant compiled: " + "; ".join(pending.reasons))

    def _enter(self, variant: Variant, reason: str) -> None:
        if variant.stage != "optimized":
            self._provisional_baseline = False
            self._warm_check = None  # left the warm start (a profile or a deoptimization follows)
            if self.current.stage == "optimized" and self.learned is not None:
                self.learned.forget(on_disk=False)  # the next job profiles unless this one settles again
        if variant.stage == "instrumented":
            self._profiled = 0
            self._built_early = False
            self.profiles.reset_profiles()
        elif variant.stage == "optimized":
            self._last_optimized = variant
            self._provisional_baseline = not self._entered_optimized
            self._entered_optimized = True
            if self.learned is not None:  # the next job of this plan starts here
                self.learned.remember(variant.gen.options, self._kept_share)
        self.current = variant
        if self.detector is not None:
            self.detector.reset()
        self._record(variant.stage, reason, variant)

    def _start_profiling(self, reason: str) -> None:
        """Profile now if the instrumented variant is built, else once it is (the generic
        variant runs meanwhile)."""
        if self.instrumented is None:
            self.instrumented = build_in_background("instrumented", self.pipeline, replace(
                self.generic.gen.options, variant="instrumented", profile_sample=self.settings.profile_sample))
        if self.settings.wait_for_compile:
            self.instrumented.result()
        if self.instrumented.ready:
            self._enter(self.instrumented.result(), reason)
        else:
            if self.current is not self.generic:
                self._enter(self.generic, reason + "; instrumented variant compiling")
            self._pending = self.instrumented

    def take_measurement(self, records: int = 0) -> bool:
        """Whether this optimized task of ``records`` records is measured: one in
        ``measure_every``, and every task of at least ``measure_every * detector_min_records``
        records (a round's batches in one call: a measurement is then a tiny share of the task,
        and the change detector keeps seeing a sample every few million records however large
        the rounds grow). No lock: a miscount under a race only shifts which task is measured."""
        self._tasks += 1
        s = self.settings
        return self._tasks % s.measure_every == 0 or records >= s.measure_every * s.detector_min_records

    # --- what a task reports -----------------------------------------------------------------
    def after_task(self, variant: Variant, records: int, sample=None) -> None:
        """A task of ``records`` records ran ``variant``; ``sample``: its counter sample."""
        with self._lock:
            self.records += records
            if self._warm_check is not None and self.records >= self.settings.warm_check_records:
                self._check_warm_start()
            if variant is not self.current:
                return
            if variant.stage == "instrumented":
                self._profiled += records
                if self._profiled >= self.settings.profile_records:
                    self._finish_profile()
                elif not self._built_early and self._early_build_due():
                    self._build_early()
            elif variant.stage == "optimized" and sample is not None and self.detector is not None:
                if self.detector.observe(sample):
                    if self._provisional_baseline and self.detector.change.ratio < 1:
                        self._retake_baseline()
                        return
                    self._backoff = 0
                    self._start_profiling(f"counters ({self.counters.name}): {self.detector.change}")

    def _check_warm_start(self) -> None:
        """Once a warm-started job has run ``warm_check_records`` records: re-profile when the
        share of records its filters kept is far from the share where the variant was chosen
        (the data changed between the jobs). The counters cannot tell: their baseline comes
        from this job's own first tasks, on the changed data already; a key outside a dense
        range is the guard's."""
        expected, self._warm_check = self._warm_check, None
        kept = self._observed_kept_share()
        if kept is None or not kept_share_changed(expected, kept, self.settings.warm_check_tolerance):
            return
        self._backoff = 0
        self._pending = None
        self._start_profiling(f"the data changed since the variant was chosen: {kept:.2%} of the records "
                              f"kept, {expected:.2%} then")

    def _observed_kept_share(self) -> float | None:
        """The share of the job's records so far that its filters kept (the kernel's record
        counters; None: no filter, or no record yet)."""
        rows = self.profiles.counter(abi.STATE_ROWS_IN)
        if not self.pipeline.filters or not rows:
            return None
        return 1 - self.profiles.counter(abi.STATE_FILTERED) / rows

    def _retake_baseline(self) -> None:
        """The tasks of the job's first optimized stage run faster, for good, than the baseline
        taken from its first tasks: those ran while the process warmed up (a new process's first tasks, the
        spares compiling beside them; ``docs/benchmarks.md``, "First run in a new process"),
        and re-profiling would only run the slower variants again. The detector takes a new
        baseline instead, once per job; a later change, a slow-down or a change after any
        other stage re-profiles as before."""
        self._provisional_baseline = False
        self.history[-1].setdefault("baseline_retaken", []).append(str(self.detector.change))
        self.detector.reset()

    def _read_profile(self) -> Profile:
        profile = self.profiles.read_profile()
        profile.sample_every = self.instrumented.gen.options.profile_sample
        return profile

    def _early_build_due(self) -> bool:
        s = self.settings
        return bool(s.early_build_share) and self._profiled >= max(s.profile_records * s.early_build_share,
                                                                   s.early_build_records or 0)

    def _entry_bytes(self) -> int:
        """The bytes of one window-table entry (0: no window table)."""
        return getattr(self.generic.gen.grouping, "entry_size", 0) or 0

    def _specialization(self, profile: Profile) -> tuple[Specialization, CodegenOptions | None]:
        """What ``profile`` leads to, and the options of the optimized variant to run for it
        (the running one's when its assumptions still hold; None: stay generic)."""
        entry = self._entry_bytes()
        if self.settings.specializer is None:
            spec = specialize(self.pipeline, profile, self.generic.gen.options, entry,
                              budget=self.settings.dense_table_budget)
        else:
            spec = self.settings.specializer(self.pipeline, profile, self.generic.gen.options, entry)
        options, last = spec.options, self._last_optimized
        if options is not None and last is not None and still_fits(last.gen.options, options, profile):
            options = last.gen.options  # the running variant's assumptions still hold
        return spec, options

    def _optimized_variant(self, options: CodegenOptions, speculative: bool = False) -> Variant:
        """The optimized variant of ``options``: built (or building) already, or started now.
        A speculative build (``_build_early``) leaves its spares until a full profile picks it
        (``compile_spares``): the builder is one thread, and a variant the profile does not pick
        must not hold it while the picked one waits."""
        variant = self._optimized.get(options)
        if variant is None:
            variant = self._optimized[options] = build_in_background("optimized", self.pipeline, options,
                                                                     spares=not speculative)
            variant.spares_pending = speculative
        elif variant.spares_pending and not speculative:
            variant.spares_pending = False
            compile_spares(variant)
        return variant

    def _build_early(self) -> None:
        """Part-way through the profile: start compiling the optimized variant that the records
        profiled so far lead to, while the profile goes on. Most profiles settle early (a
        stable key range and selectivities), and the full profile then finds that variant
        compiled or nearly so: at parallelism 1 on YSB the generic variant ran ~2.7 ms between
        the profile and the optimized variant, while its code was generated (~1.3-1.8 ms beside
        the job). When the full profile picks other options, they compile then, as before; the
        early variant stays built for a later profile that picks it."""
        self._built_early = True
        _, options = self._specialization(self._read_profile())
        if options is not None:
            self._optimized_variant(options, speculative=True)

    def _finish_profile(self) -> None:
        profile = self.last_profile = self._read_profile()
        self._kept_share = self._observed_kept_share()
        spec, options = self._specialization(profile)
        if options is None:
            self._enter(self.generic, "profile: " + "; ".join(spec.reasons))
            self.history[-1]["profile"] = profile.summary()
            return
        variant = self._optimized_variant(options)
        variant.reasons = spec.reasons
        if self.settings.wait_for_compile:
            variant.result()
        if variant.ready:
            self._enter(variant.result(), "profile: " + "; ".join(spec.reasons))
        else:
            self._enter(self.generic, "profile taken; optimized variant compiling")
            self._pending = variant
        self.history[-1]["profile"] = profile.summary()

    def guard_failed(self, variant: Variant, detail: str) -> None:
        """A guard of ``variant`` failed in a task (which goes on with the generic variant)."""
        with self._lock:
            self.deopts += 1
            if variant is not self.current:
                return  # another task already deoptimized this variant
            soon = self._last_deopt_at is not None and \
                self.records - self._last_deopt_at < 4 * self.settings.profile_records
            self._last_deopt_at = self.records
            if self.learned is not None:  # its assumptions did not hold: the next process profiles
                self.learned.forget()
            self._enter(self.generic, f"deoptimized: {detail}")
            if soon:
                self._backoff = max(self.settings.deopt_backoff, 2 * self._backoff)
                self._wait_until = self.records + self._backoff
                self.history[-1]["reason"] += f"; deoptimizations come often: generic for {self._backoff:,} records"
            else:
                self._pending = None
                self._start_profiling("re-profiling after a deoptimization")

    # --- observability -----------------------------------------------------------------------
    def _record(self, stage: str, reason: str, variant: Variant | None = None) -> None:
        entry = {"stage": stage, "reason": reason, "at_s": round(time.perf_counter() - self._t0, 6),
                 "at_record": self.records}
        if variant is not None and variant.stage == "optimized":
            o = variant.gen.options
            entry["options"] = {"filter_order": list(o.filter_order) if o.filter_order else None,
                                "filter_mode": o.filter_mode, "dense_keys": list(o.dense_keys) if o.dense_keys else None,
                                "dense_select": o.dense_select, "simd_select": o.simd_select}
        self.history.append(entry)

    @property
    def started(self) -> float:
        """``time.perf_counter()`` when the controller started (``at_s`` counts from it)."""
        return self._t0

    def variant_history(self) -> list[dict]:
        """The stages so far, each with the records processed while it was current."""
        with self._lock:
            out = [dict(h) for h in self.history]
            ends = [h["at_record"] for h in self.history[1:]] + [self.records]
            for h, end in zip(out, ends):
                h["records"] = end - h["at_record"]
            return out


WARM_REASONS = {"memory": "the optimized variant an earlier job of this plan entered in this process",
                "disk": "the optimized variant an earlier job of this plan ended with (recorded on disk)"}


def kept_share_changed(expected: float, kept: float, tolerance: float) -> bool:
    """Whether ``kept`` (a share of records) is far from ``expected``: by more than
    ``tolerance`` of the smaller of the kept and dropped shares, plus 1% (a profile's share
    comes from a sample)."""
    return abs(kept - expected) > tolerance * min(expected, 1 - expected) + 0.01


def generic_only(gen: GeneratedPipeline, adaptive: bool) -> str | None:
    """Why ``gen``'s pipeline keeps its generic variant, or None when it adapts."""
    if not adaptive:
        return "adaptive=False pins the generic variant"
    if adaptable(gen.pipeline, gen.options):
        return None
    t = gen.pipeline.terminal
    if t.kind == "project":
        return "a projection with at most one filter has nothing to specialize"
    if getattr(gen.options, "grouping", "hash") == "sort":
        return "sort grouping: one variant (key/pointer arrays have no specialized variants)"
    if getattr(gen.options, "window_state", "") == "shared":
        return "shared window state: one variant (its state cannot move between placements while tasks run)"
    kind = getattr(getattr(t, "assigner", None), "kind", t.kind)
    return f"{kind} pipelines have one variant (no speculation for them yet)"
