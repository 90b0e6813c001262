"""Callable wrappers around compiled pipelines: one object per pipeline instance, owning its
state blocks (counters, window directories, hash tables) and turning kernel outputs into Arrow data.

``Kernel`` holds what every compiled pipeline has: its functions (compiled on first use), one
state block per worker, batch preparation, code variants and error reporting. On it:

- ``ProjectKernel`` runs a stateless pipeline over a batch and returns the output batch;
- ``WindowKernel`` (tumbling windows) folds batches into its window state and, when asked for a
  watermark, fires the complete windows as a table sorted by (window_end, keys) with nulls last;
  ``SlidingWindowKernel`` fires by merging panes (and several workers' blocks),
  ``SessionWindowKernel`` and ``CountWindowKernel`` keep one key table.

Each is a ``kernel_protocol.PipelineKernel``: it exports, restores and measures its own state
(its ``table_shape``: ``window_tables.py``) and names the interned ids it holds. Which class runs
a pipeline is ``kernel_table.py``'s choice; the shared state and sort grouping have their own
modules (``shared_kernel.py``, ``sort_kernel.py``).
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..aggregates import AggregateOverflowError
from ..arrow_numpy import as_numpy, from_numpy
from ..changelog import OP_COLUMN, UPDATE_AFTER, UPDATE_BEFORE
from ..codegen import abi, profile
from ..codegen.dense_pass import CLAIM_FUNCTION
from ..codegen.module import GeneratedPipeline, window_geometry
from ..expressions import ProcessingTime, walk
from ..jit import CompiledModule, compile_ir, compile_ir_async, llvm_ready
from ..late_records import LateRecord
from ..plan import WINDOW_END, WINDOW_START
from ..sources import BadInputError
from ..types import Schema, to_arrow_type
from . import native_words
from .adaptive import AdaptiveSettings, Variant, VariantController, first_kernel
from .batch_adapter import DictionaryCodes, PreparedBatch, prepare, shifted
from .interning import StringInterner
from .kernel_protocol import PipelineKernel, WindowAggregateKernel
from .learned_variants import LearnedVariant
from .mini_batch import changed_rows
from .packed_sort import packed_sort_indices
from .pane_accumulator import PaneAccumulator
from .project_output import NP_STORE, OutputBuffers, OutputMemory, ProjectOutput, masked
from .state_memory import table_bytes
from .state_snapshot import (export_counters, export_interner, export_window_block, restore_counters,
                             restore_interner, restore_window_block)
from .string_release import aggregate_ids, concat_ids, string_key_positions, table_keys
from .task_parts import PartsTable, chained_watermark, row_positions, signal_entering_native
from .window_tables import TableShape

_P, _I64 = ctypes.c_void_p, ctypes.c_int64


def wall_clock_ms() -> int:
    """The processing-time clock (tests replace it to make processing time deterministic)."""
    return time.time_ns() // 1_000_000


class ProcessingClock:
    """Processing time for one pipeline: the wall clock, read once per batch, never backwards."""

    def __init__(self):
        self.last = abi.INT64_MIN

    def now(self) -> int:
        self.last = max(self.last, wall_clock_ms())  # looked up at each call: tests replace it
        return self.last


def output_arrow_schema(gen: GeneratedPipeline) -> pa.Schema:
    """The Arrow schema of what the pipeline's kernel writes (``Pipeline.kernel_schema``)."""
    return arrow_schema(gen.pipeline.kernel_schema)


def arrow_schema(schema: Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                      for f in schema])


def _per_key_null_placement() -> bool:
    try:
        pc.SortOptions(sort_keys=[("x", "ascending", "at_end")])
        return True
    except (TypeError, ValueError):
        return False


_PER_KEY_NULLS = _per_key_null_placement()


def sort_indices_nulls_last(table: pa.Table, names: list[str], descending: list[bool] | None = None) -> pa.Array:
    """Sort on ``names`` (dictionary columns by their values; ascending, or descending where
    ``descending`` says), nulls last; stable. Integer columns without nulls sort as one word per
    row (``packed_sort.py``), a descending one as its bitwise complement (which reverses its
    order without overflow); a descending column of another type sorts in Arrow."""
    directions = ["descending" if d else "ascending" for d in (descending or [False] * len(names))]
    columns = [table.column(n) for n in names]
    packed = None
    if all(d == "ascending" or pa.types.is_integer(c.type) for c, d in zip(columns, directions)):
        packed = packed_sort_indices([pc.bit_wise_not(c) if d == "descending" else c
                                      for c, d in zip(columns, directions)])
    if packed is not None:
        return packed
    keys = pa.table([c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in columns],
                    names=[f"k{i}" for i in range(len(names))])
    if _PER_KEY_NULLS:
        return pc.sort_indices(keys, sort_keys=[(f"k{i}", d, "at_end") for i, d in enumerate(directions)])
    return pc.sort_indices(keys, sort_keys=[(f"k{i}", d) for i, d in enumerate(directions)], null_placement="at_end")


def _already_sorted(table: pa.Table, names: list[str]) -> bool:
    """Whether rows are already in ascending (window end, key) order, checked in one pass for
    the common shape: one integer or timestamp key, no nulls. (No two rows share both.)"""
    if len(names) != 2 or table.num_rows < 2:
        return table.num_rows < 2
    ends, keys = table.column(names[0]), table.column(names[1])
    if ends.null_count or keys.null_count or not (pa.types.is_integer(keys.type) or pa.types.is_timestamp(keys.type)):
        return False
    e, k = as_numpy(ends), as_numpy(keys)
    return bool(np.all((e[1:] > e[:-1]) | ((e[1:] == e[:-1]) & (k[1:] > k[:-1]))))


def new_state_block(words: int) -> np.ndarray:
    """A zeroed state block with no event time seen and no window open."""
    state = np.zeros(words, dtype=np.int64)
    state[abi.STATE_MAX_EVENT_TIME] = abi.INT64_MIN
    state[abi.STATE_MIN_OPEN_END] = abi.INT64_MAX
    state[abi.STATE_UNCLAIMED] = abi.INT64_MAX
    return state


_SUMMED_COUNTERS = (abi.STATE_ROWS_IN, abi.STATE_FILTERED, abi.STATE_LATE)


class Kernel:
    """Common part: the compiled functions, the state blocks and error reporting.

    ``workers`` state blocks: worker ``w`` runs the kernel on ``states[w]`` only, so workers
    never share mutable state (the two-phase, thread-local variant; window kernels merge the
    blocks when a window fires). Preparing a batch (Python: dictionary codes, string interning,
    the processing-time clock) is serialized by a lock; the compiled call runs without the GIL.
    Code units are compiled when first needed (a no-nulls batch needs only the no-nulls kernel);
    ``compile_ms`` adds up the time spent compiling them.
    """

    def __init__(self, gen: GeneratedPipeline, input_name: str, workers: int = 1):
        self.gen, self.input_name = gen, input_name
        self.states = [new_state_block(gen.state_words) for _ in range(max(1, workers))]
        self.state = self.states[0]
        self._state_ptrs = np.array([s.ctypes.data for s in self.states], dtype=np.uint64)
        self._prepare_lock = threading.Lock()
        self._compile_lock = threading.RLock()
        self.schema = output_arrow_schema(gen)
        self.batches_processed = 0
        self.compile_ms = 0.0
        self._functions: dict[str, object] = {}
        self._modules: list[CompiledModule] = []  # the machine code the function pointers point into
        self._codes = DictionaryCodes()
        self.interner = StringInterner() if gen.interned_columns or gen.carried_columns else None
        self.clock = ProcessingClock() if isinstance(gen.pipeline.event_time, ProcessingTime) else None
        self.controller: VariantController | None = None   # adaptive: picks each task's variant
        self.counters = None                               # adaptive: measures optimized tasks
        self.placement: list[tuple[int, int] | None] = [None] * len(self.states)  # dense range per block
        self.idle_blocks = 0  # state blocks at the end of ``states`` that no worker writes (add_idle_blocks)

    def make_adaptive(self, settings: AdaptiveSettings | None = None, counters=None) -> None:
        """Run this pipeline's code variants under a controller (``adaptive.py``), starting in
        the optimized variant an earlier job of its plan entered (``learned_variants.py``)."""
        self.reset_profiles()
        self.counters = counters
        learned = LearnedVariant.of(first_kernel(self.gen).ir)
        self.controller = VariantController(self.gen, self, settings, counters, learned=learned)

    # the controller's ProfileStore: the profile region of every worker's state block
    def reset_profiles(self) -> None:
        for s in self.states:
            profile.reset(s, self.gen.profile_base)

    def read_profile(self) -> profile.Profile:
        return profile.Profile.read(self.states, self.gen.profile_base, len(self.gen.pipeline.filters))

    def function(self, unit: str, name: str, restype, *argtypes, gen: GeneratedPipeline | None = None):
        """The compiled function ``name`` of ``unit`` of ``gen`` (default: the generic variant)."""
        gen = self.gen if gen is None else gen
        key = (id(gen), unit, name)  # the controller keeps every variant alive, so ids stay unique
        fn = self._functions.get(key)
        if fn is not None:
            return fn
        with self._compile_lock:  # workers asking for the same unit wait for one compile
            fn = self._functions.get(key)
            if fn is not None:
                return fn
            start = time.perf_counter()
            code = gen.units[unit]
            compiled: CompiledModule = compile_ir(code.ir, code.opt_level)  # waits if compiling
            self._modules.append(compiled)
            self.compile_ms += (time.perf_counter() - start) * 1000
            fn = self._functions[key] = compiled.function(f"{gen.prefix}_{name}", restype, *argtypes)
        return fn

    @property
    def state_ptr(self) -> int:
        return self.state.ctypes.data

    @property
    def workers(self) -> int:
        """The workers, each writing its own state block (``states`` may hold idle blocks after them)."""
        return len(self.states) - self.idle_blocks

    def add_idle_blocks(self, count: int) -> None:
        """``count`` more state blocks that no worker writes: a checkpoint taken at a higher
        parallelism restores the other workers' state into them (``state_snapshot.py``); their
        counters count and, in a merging window kernel, their windows fire with the others'."""
        self.states += [new_state_block(self.gen.state_words) for _ in range(count)]
        self.idle_blocks += count
        self._state_ptrs = np.array([s.ctypes.data for s in self.states], dtype=np.uint64)
        self.placement += [None] * count

    def counter(self, index: int) -> int:
        """A state word: summed over the workers' blocks for the record counters, the maximum
        for the maximum event time, the minimum for the earliest open window end, else the first
        block's."""
        if index in _SUMMED_COUNTERS:
            return int(sum(int(s[index]) for s in self.states))
        if index == abi.STATE_MAX_EVENT_TIME:
            return int(max(int(s[index]) for s in self.states))
        if index == abi.STATE_MIN_OPEN_END:
            return int(min(int(s[index]) for s in self.states))
        return int(self.state[index])

    def block_max_event_time(self, block: int) -> int:
        """The largest event time state block ``block`` has read (or was raised to): the clock of
        a task whose watermark moves between its parts (``task_parts.chained_watermark``)."""
        return int(self.states[block][abi.STATE_MAX_EVENT_TIME])

    def raise_max_event_time(self, block: int, at_least: int) -> None:
        """Block ``block`` takes ``at_least`` (the largest event time of the rows before its next
        task, read by other blocks) as read, so that the task's chained watermarks count those
        rows too (``rounds.RoundPlanner.flush``). No task may be running on the block."""
        state = self.states[block]
        state[abi.STATE_MAX_EVENT_TIME] = max(int(state[abi.STATE_MAX_EVENT_TIME]), at_least)

    def run(self, batch: pa.RecordBatch, watermark: int, out_ptr: int, worker: int = 0,
            where: tuple[int, int] | None = None) -> int:
        """Run the kernel over ``batch`` on worker ``worker``'s state block. ``where`` (source
        batch number, first row) places the batch in its source for error messages: a morsel of
        a source batch reports rows of the source batch. An adaptive kernel runs the variant its
        controller picks for this task; a failed guard hands the rest of the batch to the generic
        variant (deoptimization), so the result is the same whichever variant ran."""
        variant = None
        if self.controller is not None:
            variant = self._placed(worker, self.controller.variant_for(worker))
        return self._run_variant(variant, batch, watermark, out_ptr, worker, where)

    def _prepared(self, batch, gen: GeneratedPipeline, watermark: int) -> PreparedBatch:
        """Descriptors and parameters of ``batch`` (a RecordBatch, or a ``Morsel`` of a source
        batch that is prepared once for all its morsels) for the kernels of ``gen``."""
        now = self.clock.now() if self.clock is not None else 0
        if isinstance(batch, Morsel):
            whole = batch.shared.prepared(self, gen)
            part = shifted(whole, batch.offset, batch.length)
            part.params[abi.PARAM_WATERMARK], part.params[abi.PARAM_PROCESSING_TIME] = watermark, now
            return part
        return prepare(batch, gen, watermark, self.input_name, self._codes, self.interner, now)

    def _run_variant(self, variant: Variant | None, batch, watermark: int, out_ptr: int,
                     worker: int, where: tuple[int, int] | None) -> int:
        gen = self.gen if variant is None else variant.gen
        with self._prepare_lock:
            prepared = self._prepared(batch, gen, watermark)
            if where is None:
                where = (self.batches_processed, 0)
            self.batches_processed += 1
            prepared.params[abi.PARAM_ROW_POSITION] = row_positions(*where)
        unit = _unit(prepared.has_nulls)
        kernel, state = self._entry(gen, unit), self.states[worker]
        measuring = self._start_measuring(variant, prepared.rows)
        rc = kernel(state.ctypes.data, prepared.columns.ctypes.data, prepared.rows, prepared.params.ctypes.data, out_ptr)
        sample = self.counters.stop(measuring[0], prepared.rows) if measuring else None
        self._claim_entries(gen, unit, state)
        if rc == abi.KERNEL_STOPPED and variant is not None and variant.dense_keys is not None:
            return self._deoptimize(variant, batch, watermark, out_ptr, worker, where)
        rc = self._checked(rc, batch, state, where)
        if variant is not None:
            self.controller.after_task(variant, prepared.rows, sample)
        return rc

    def _entry(self, gen: GeneratedPipeline, unit: str):
        """The fused kernel ``unit`` of ``gen`` (``_unit``: for batches with or without nulls)."""
        return self.function(unit, unit, _I64, _P, _P, _I64, _P, _P, gen=gen)

    def _claim_entries(self, gen: GeneratedPipeline, unit: str, state: np.ndarray) -> None:
        """After a native call of kernel ``unit`` of ``gen`` on ``state``: the entries its dense
        pass reached first get their tags and keys (``codegen/dense_pass.py``), before anything
        reads the state. (Only that kernel has the pass: after the other one, no entry waits for
        its tag.)"""
        if gen.claim_unit == unit and state[abi.STATE_UNCLAIMED] != abi.INT64_MAX:
            self.function(unit, CLAIM_FUNCTION, None, _P, gen=gen)(state.ctypes.data)

    def _start_measuring(self, variant: Variant | None, records: int) -> tuple | None:
        """Just before a native call: (counter token,) when the controller measures this task of
        the optimized variant, else None; and the task's start signal (``task_parts.TaskStart``)."""
        measured = variant is not None and variant.stage == "optimized" and self.counters is not None \
            and self.controller.take_measurement(records)
        token = (self.counters.start(),) if measured else None
        signal_entering_native()
        return token

    def run_parts(self, parts: list, worker: int, chain_delay: int | None = None) -> None:
        """Run a task's ``parts`` ((SharedBatch, source batch number, watermark, first row, rows)
        each, in stream order) on worker ``worker``'s block: one variant choice, one native call
        (``task_parts``); ``chain_delay``: the watermark moves between the parts (whole
        batches: ``task_parts.chained_watermark``, from the block's own maximum). A part that
        stops (a failed dense-key guard) is finished by the generic variant, and the parts after
        it run one by one; an error names the part's source row. (``plan_parts``, ``run_planned`` and
        ``finish_planned``, on one thread.)"""
        plan = self.plan_parts(parts, worker, chain_delay)
        self.run_planned(plan)
        self.finish_planned(plan)

    def plan_parts(self, parts: list, worker: int, chain_delay: int | None = None) -> "PlannedParts":
        """The Python side of a task of parts before its native call: the variant (and the key
        placement of block ``worker``, which no task may be using), each batch prepared, the
        parts table. The driver plans a round's tasks before it hands them out, so the workers
        go straight to native code."""
        variant = None
        if self.controller is not None:
            variant = self._placed(worker, self.controller.variant_for(worker))
        gen = self.gen if variant is None else variant.gen
        now = self.clock.now() if self.clock is not None else 0
        intake = parts[0][0].intake if parts else None
        bulk, prepared, failure = None, [], None
        with self._prepare_lock:
            if intake is not None:  # every part's batch from the source's bulk intake: no batch by batch
                try:
                    bulk = intake.parts_table(gen, self._codes, parts, now)
                except Exception:  # (the batch by batch path below raises it, after the parts before it)
                    bulk = None
            if bulk is None:
                for shared, *_ in parts:
                    try:
                        prepared.append(shared.prepared(self, gen))
                    except Exception as e:  # raised after the parts before it ran: errors in stream order
                        failure = e
                        break
            self.batches_processed += len(parts)
        plan = PlannedParts(self, parts if bulk is not None else parts[:len(prepared)], worker, variant, chain_delay,
                            failure)
        if bulk is not None:
            plan.table, has_nulls = bulk
        elif prepared:
            plan.table = PartsTable(prepared, [p[1] for p in plan.parts], [p[3] for p in plan.parts],
                                    [p[4] for p in plan.parts], [p[2] for p in plan.parts], now)
            has_nulls = any(p.has_nulls for p in prepared)
        if plan.table is not None:
            plan.unit = _unit(has_nulls)
            plan.address = ctypes.cast(self._entry(gen, plan.unit), ctypes.c_void_p).value
        return plan

    def run_planned(self, plan: "PlannedParts") -> None:
        """The native call of a planned task (any thread; no Python per part)."""
        if plan.table is None:
            return
        rows = plan.table.rows
        total = int(rows.sum())
        measuring = self._start_measuring(plan.variant, total)
        plan.rc, plan.stopped = plan.table.run(plan.address, self.states[plan.worker], plan.chain_delay)
        self._claim_entries(self.gen if plan.variant is None else plan.variant.gen, plan.unit, self.states[plan.worker])
        plan.done_rows = total if plan.stopped == len(rows) else int(rows[:plan.stopped].sum())
        plan.sample = self.counters.stop(measuring[0], plan.done_rows) if measuring else None

    def finish_planned(self, plan: "PlannedParts") -> None:
        """After the native call: the controller hears of the rows, a stopped part is finished
        (deoptimization) or its error raised, then a batch that failed to prepare raises."""
        variant, worker, parts, chain_delay = plan.variant, plan.worker, plan.parts, plan.chain_delay
        if variant is not None and plan.table is not None:
            self.controller.after_task(variant, plan.done_rows, plan.sample)
        if plan.rc != 0:
            stopped, rc = plan.stopped, plan.rc
            shared, number, _, offset, length = parts[stopped]
            watermark = plan.table.watermark(stopped)  # (chained: the one it ran under)
            morsel, where = shared.morsel(offset, length), (number, offset)
            if rc == abi.KERNEL_STOPPED and variant is not None and variant.dense_keys is not None:
                self.batches_processed -= len(parts) - stopped - 1  # the later parts count again below
                self._deoptimize(variant, morsel, watermark, 0, worker, where)
                for shared, number, given, offset, length in parts[stopped + 1:]:
                    watermark = given if chain_delay is None else \
                        chained_watermark(max(given, watermark), self.block_max_event_time(worker), chain_delay)
                    self.run(shared.morsel(offset, length), watermark, 0, worker, (number, offset))
            else:
                self._checked(rc, morsel, self.states[worker], where)
                raise RuntimeError(f"pipeline {self.gen.pipeline.id}: kernel stopped (code {rc}) at {where} "
                                   f"in a task that cannot finish a stop")
        if plan.failure is not None:
            raise plan.failure

    def _deoptimize(self, variant: Variant, batch: pa.RecordBatch, watermark: int, out_ptr: int, worker: int,
                    where: tuple[int, int]) -> int:
        """The optimized kernel stopped at a record its guard rejects (a key outside the dense
        range): the rows before it are done; move the worker's state to the hashed placement and
        run the rest with the generic variant."""
        stop = int(self.states[worker][abi.STATE_ERROR_ROW])
        lo, cap = variant.dense_keys
        self.controller.after_task(variant, stop)
        self.controller.guard_failed(variant, f"a key outside the dense range [{lo}, {lo + cap}) or null, "
                                              f"batch {where[0]}, row {where[1] + stop}")
        self._place_hashed(worker)
        self.batches_processed -= 1  # the same batch goes on: later batches keep their numbers
        return self._run_variant(self.controller.generic, batch.slice(stop), watermark, out_ptr, worker,
                                 (where[0], where[1] + stop))  # (a Morsel slices like a batch)

    def _placed(self, worker: int, variant: Variant) -> Variant:
        """``variant``, once worker ``worker``'s state block has its key placement (the task owns
        the block: no other task uses it now); the generic variant when the block cannot take it."""
        want = variant.dense_keys
        if self.placement[worker] == want:
            return variant
        if want is None:
            self._place_hashed(worker)
            return variant
        place = self.function("state", "place_dense", ctypes.c_int32, _P, _I64, _I64)
        rc = place(self.states[worker].ctypes.data, want[0], want[1])
        if rc == 0:
            self.placement[worker] = want
            return variant
        self._place_hashed(worker)  # repairs a partial move (out of memory) too
        self.controller.guard_failed(variant, "the window state holds keys outside the dense range"
                                     if rc == 2 else "no memory for a dense table")
        return self.controller.generic

    def _place_hashed(self, worker: int) -> None:
        if self.placement[worker] is None:
            return
        place = self.function("state", "place_hashed", ctypes.c_int32, _P)
        if place(self.states[worker].ctypes.data) != 0:
            raise MemoryError(f"pipeline {self.gen.pipeline.id}: out of memory moving the window state "
                              f"to the generic variant's hash tables")
        self.placement[worker] = None

    def _checked(self, rc: int, batch: pa.RecordBatch | None = None, state: np.ndarray | None = None,
                 where: tuple[int, int] | None = None) -> int:
        """``rc``, or the error a negative return code stands for."""
        if rc < 0:
            self._raise(rc, batch, self.state if state is None else state, where)
        return rc

    def _bad_dictionary_index(self, batch, row: int) -> str:
        return _dictionary_problem(batch, self.gen, row) if batch is not None else "a dictionary index outside its dictionary"

    def _raise(self, rc: int, batch: pa.RecordBatch | None, state: np.ndarray, where: tuple[int, int] | None):
        row = int(state[abi.STATE_ERROR_ROW])
        if rc == abi.ERROR_OUT_OF_MEMORY:
            raise MemoryError(f"pipeline {self.gen.pipeline.id}: out of memory growing the window state")
        batch_no, first_row = where if where is not None else (self.batches_processed - 1, 0)
        where = f"batch {batch_no}, row {first_row + row}"
        if rc == abi.ERROR_SUM_OVERFLOW:
            which = self.gen.aggregate_types[int(state[abi.STATE_ERROR_DETAIL])][0]
            raise AggregateOverflowError(f"aggregate {which!r}: int64 sum overflow in a window of pipeline "
                                         f"{self.gen.pipeline.id}; cast the input to float64 to sum beyond int64")
        if rc == abi.ERROR_CORRUPT_STRING:
            cols = [c.name for c in self.gen.columns
                    if pa.types.is_string(c.arrow_type) or pa.types.is_large_string(c.arrow_type)]
            raise BadInputError(f"{self.input_name}: corrupt string offsets in column(s) {cols} at {where}")
        if rc == abi.ERROR_DICTIONARY_INDEX:
            raise BadInputError(f"{self.input_name}: {self._bad_dictionary_index(batch, row)} in {where}")
        if rc == abi.ERROR_TIME_RANGE:
            raise BadInputError(f"{self.input_name}: event time ({self.gen.pipeline.event_time!r}) at {where} is "
                                f"too close to the int64 limits for its window")
        raise RuntimeError(f"pipeline {self.gen.pipeline.id}: kernel failed with code {rc}")


def _unit(has_nulls: bool) -> str:
    """The kernel (code unit) that runs a batch with or without nulls."""
    return "process" if has_nulls else "process_nonnull"


def _dictionary_problem(batch, gen: GeneratedPipeline, row: int) -> str:
    """Which dictionary column of ``batch`` holds an index outside its dictionary at ``row``."""
    whole = batch.to_batch() if isinstance(batch, Morsel) else batch
    for c in gen.columns:
        if c.name in whole.schema.names and pa.types.is_dictionary(whole.schema.field(c.name).type):
            column = whole.column(c.name)
            index = column.indices[row].as_py()
            if index is not None and not 0 <= index < len(column.dictionary):
                return f"column {c.name!r}: dictionary index {index} is outside the dictionary of " \
                       f"{len(column.dictionary)} values"
    return "a dictionary index outside its dictionary"


def process_parts(kernel, parts: list, worker: int = 0, chain_delay: int | None = None,
                  in_one_call=None, step_rows: int | None = None) -> list | None:
    """Run a task's parts ((SharedBatch, source batch number, watermark, first row, rows) each)
    one by one through ``kernel.process``; ``chain_delay``: the watermark moves between them
    (``Kernel.run_parts``). Returns None, or (a shared window state that stopped to grow) the
    parts not done, the stopped one cut to its rows not done. ``in_one_call``: asked between
    parts; once it returns a runner (the adaptive controller settled), the rest of the parts go
    to it, in one native call. ``step_rows``: a part runs in steps of at most that many rows
    (all under the part's watermark), so that a variant can change within a large batch."""
    watermark = abi.INT64_MIN
    for i, (batch, number, given, offset, length) in enumerate(parts):
        if i and in_one_call is not None:
            runner = in_one_call()
            if runner is not None:  # (the block's maximum carries the chain on)
                return runner(parts[i:], worker, chain_delay)
        watermark = given if chain_delay is None else \
            chained_watermark(max(given, watermark), kernel.block_max_event_time(worker), chain_delay)
        step = step_rows or max(length, 1)
        for done in range(0, max(length, 1), step):
            rows = min(step, length - done)
            rest = kernel.process(batch.morsel(offset + done, rows), watermark, worker, (number, offset + done))
            if rest is not None:
                if chain_delay is not None:  # (a chained task runs no shared state: rounds.RoundPlanner)
                    raise RuntimeError("a kernel stopped in a task whose watermark moves between its parts")
                return [(batch, number, watermark, offset + done + rest, length - done - rest)] + parts[i + 1:]
    return None


class PlannedParts:
    """A task of parts planned by ``Kernel.plan_parts``: what runs natively, and its outcome."""

    __slots__ = ("kernel", "parts", "worker", "variant", "chain_delay", "failure", "table", "address", "unit",
                 "rc", "stopped", "done_rows", "sample")

    def __init__(self, kernel: "Kernel", parts: list, worker: int, variant, chain_delay: int | None,
                 failure: Exception | None):
        self.kernel, self.parts, self.worker, self.variant = kernel, parts, worker, variant
        self.chain_delay, self.failure = chain_delay, failure
        self.table, self.address, self.unit = None, 0, ""
        self.rc, self.stopped, self.done_rows, self.sample = 0, len(parts), 0, None


class SharedBatch:
    """A source batch whose morsels run as several tasks: prepared once per kernel variant (the
    Python work of a batch: validation, dictionary codes, string interning, buffer addresses)
    instead of once per morsel. Callers hold the kernel's prepare lock."""

    def __init__(self, batch: pa.RecordBatch, intake=None):
        self.batch = batch
        self.intake = intake  # the source's bulk intake (engine/arrow_intake.py), if it has one
        self._prepared: dict[int, tuple[GeneratedPipeline, PreparedBatch]] = {}

    def prepared(self, kernel: "Kernel", gen: GeneratedPipeline) -> PreparedBatch:
        found = self._prepared.get(id(gen))
        if found is None or found[0] is not gen:
            ready = None
            if self.intake is not None:
                row = self.intake.row(self.batch)
                if row >= 0:
                    try:
                        ready = self.intake.prepared(row, gen, kernel._codes)
                    except Exception:  # (prepare raises it for this very batch)
                        ready = None
            if ready is None:
                ready = prepare(self.batch, gen, abi.INT64_MIN, kernel.input_name, kernel._codes, kernel.interner)
            found = self._prepared[id(gen)] = (gen, ready)
        return found[1]

    def morsel(self, offset: int, length: int) -> "Morsel":
        return Morsel(self, offset, length)

    def interned_ids(self, interner) -> list[pa.Array]:
        """The ids ``interner`` gave this batch's string keys when it was prepared."""
        return [ids for _, prepared in self._prepared.values() for owner, ids in prepared.interned
                if owner is interner]


class Morsel:
    """Rows ``[offset, offset + length)`` of a ``SharedBatch``: what a task hands a kernel."""

    __slots__ = ("shared", "offset", "length")

    def __init__(self, shared: SharedBatch, offset: int, length: int):
        self.shared, self.offset, self.length = shared, offset, length

    @property
    def num_rows(self) -> int:
        return self.length

    def slice(self, start: int, length: int | None = None) -> "Morsel":
        length = self.length - start if length is None else min(length, self.length - start)
        return Morsel(self.shared, self.offset + start, length)

    def to_batch(self) -> pa.RecordBatch:
        return self.shared.batch.slice(self.offset, self.length)


class ProjectKernel(Kernel, PipelineKernel):
    """A stateless pipeline: filters, then a selection vector plus computed columns. A filter
    may read the watermark in force (``late_records.LateRecord``: a window's late records)."""

    fires = False
    emits_per_batch = True

    @functools.cached_property
    def reads_watermark(self) -> bool:
        return any(isinstance(e, LateRecord) for f in self.gen.pipeline.filters for e in walk(f))

    def export_state(self) -> dict:
        return export_counters(self)

    def restore_state(self, saved: dict) -> None:
        restore_counters(self, saved)

    def structure_bytes(self) -> int:
        return 0

    def process(self, batch: pa.RecordBatch, worker: int = 0, where: tuple[int, int] | None = None,
                watermark: int = abi.INT64_MIN) -> pa.RecordBatch:
        n = batch.num_rows
        buffers = OutputBuffers(self.gen.outputs, n, self._memory, worker)
        try:
            count = self.run(batch, watermark, buffers.descriptor.ctypes.data, worker, where) if n else 0
            return self._output.batch(batch, buffers, count, self._memory, worker)
        finally:
            buffers.free(_libc_free)

    @functools.cached_property
    def _memory(self) -> OutputMemory:
        return OutputMemory()

    @functools.cached_property
    def _output(self) -> ProjectOutput:
        return ProjectOutput(self.gen.pipeline.terminal.outputs, self.gen.outputs, self.schema)


class WindowKernel(Kernel, WindowAggregateKernel):
    """A pipeline ending in a window aggregation: tumbling windows, each emitted from one state
    block (several workers' blocks merge as panes do: ``SlidingWindowKernel``). Its trigger (the
    ``state`` unit) compiles on a background thread while the first batches run; the first
    firing waits for it."""

    window_state = "thread_local"
    grouping = "hash"
    tumbling = True
    #: the emit writes each window's end (sessions); else a window ends ``window_size`` after its start
    writes_window_ends = False

    def __init__(self, gen, input_name, workers: int = 1):
        super().__init__(gen, input_name, workers)
        self._closed = False
        self._trigger_started = False
        terminal = gen.pipeline.terminal
        geometry = getattr(terminal.assigner, "geometry", None)  # (aligned windows: window_geometry.py)
        self.window_size = geometry.size if geometry is not None else 0
        self.lateness = getattr(terminal, "allowed_lateness_ms", 0)  # windows are kept this long (ms)
        self.keys = [f for f, _ in terminal.keys]
        self.time_type = self.schema.field(WINDOW_START).type if WINDOW_START in self.schema.names else None

    # whether a task's parts may run in one native call (``run_parts``): not where a part's
    # kernel call needs more than its return code (a shared state's stop, the sort epilogue's state)
    parts_in_one_call = True

    #: an open window (pane) extrapolates its keys once the event time has covered this share of it
    WINDOW_KEYS_MIN_COVERED = 1 / 64

    def read_profile(self) -> profile.Profile:
        """The profile, with the keys a window's table will hold (``window_keys``): the most
        entries a worker's open window (or pane) holds, over the share of it the event time has
        covered (as if its keys kept arriving at the rate so far; new keys slow down as a window
        fills, so this rather overstates them). The specializer weighs a large dense table
        against the hashed table of those keys, not of every key the data holds over all windows."""
        read = super().read_profile()
        length = getattr(self, "pane", self.window_size)
        if length <= 0:
            return read
        estimates = []
        for state in self.states:
            latest = int(state[abi.STATE_MAX_EVENT_TIME])
            for start, _entries, _capacity, size in self.windows(state):
                covered = min((latest - int(start) + 1) / length, 1.0)
                if size and covered >= self.WINDOW_KEYS_MIN_COVERED:
                    estimates.append(int(size) / covered)
        read.window_keys = max(estimates) if estimates else None
        return read

    def process(self, batch: pa.RecordBatch, watermark: int, worker: int = 0,
                where: tuple[int, int] | None = None) -> None:
        if batch.num_rows:
            self.run(batch, watermark, 0, worker, where)
            self._prepare_trigger()

    def prepare_ahead(self, shared: "SharedBatch") -> None:
        """Prepare a grouped source batch for the variant its task will most likely run, on the
        driver while the workers run the round before: the tasks of its round then start at
        once instead of preparing their parts one after the other under the prepare lock. A
        batch that fails to prepare is left to its task (which raises in stream order)."""
        gen = self.controller.current.gen if self.controller is not None else self.gen
        with self._prepare_lock:
            try:
                shared.prepared(self, gen)
            except Exception:
                pass

    def _one_call_now(self) -> bool:
        """Whether a task's parts run in one native call now (not before the controller settled)."""
        return self.parts_in_one_call and (self.controller is None or self.controller.settled)

    def plan_task(self, parts: list, worker: int, chain_delay: int | None = None) -> "PlannedParts | None":
        """``plan_parts`` when the parts run in one call (as ``process_parts`` decides), else None."""
        if not self._one_call_now():
            return None
        parts = [p for p in parts if p[4]]
        if not parts:
            return None
        self._prepare_trigger()
        return self.plan_parts(parts, worker, chain_delay)

    def process_parts(self, parts: list, worker: int = 0, chain_delay: int | None = None) -> list | None:
        """A task's parts (``Kernel.run_parts``); None: every part is done (see ``process_parts``)."""
        if not self._one_call_now():
            # once the controller settles and a part has moved the block to the optimized
            # variant's placement (a block that cannot take it deoptimizes in that part), the
            # rest go in one call
            def in_one_call():
                settled = self._one_call_now() and self.placement[worker] == self.controller.current.dense_keys
                return self._run_parts_now if settled else None
            step = self.controller.settings.step_records if self.controller is not None else None
            return process_parts(self, parts, worker, chain_delay, in_one_call, step)
        return self._run_parts_now(parts, worker, chain_delay)

    def _run_parts_now(self, parts: list, worker: int, chain_delay: int | None) -> None:
        parts = [p for p in parts if p[4]]
        if parts:
            self.run_parts(parts, worker, chain_delay)
            self._prepare_trigger()
        return None

    def _prepare_trigger(self) -> None:
        """Compile the trigger on a background thread while the next batches run (after the
        first kernel: llvmlite compiles one module at a time, and the kernel is needed first)."""
        if not self._trigger_started:
            self._trigger_started = True
            unit = self.gen.units["state"]
            compile_ir_async(unit.ir, unit.opt_level, background=True)

    @property
    def max_event_time(self) -> int:
        return self.counter(abi.STATE_MAX_EVENT_TIME)

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """Emit every window with end - 1 <= watermark, sorted by (window_end, keys)."""
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1:
            return None
        count_ready = self.function("state", "count_ready", _I64, _P, _I64)
        ready = count_ready(self.state_ptr, watermark)
        if ready == 0:
            return None
        out = _ResultBuffers(self, ready)
        emit = self.function("state", "emit", _I64, _P, _I64, _P)
        n = self._checked(emit(self.state_ptr, watermark, out.descriptor))
        if n != ready:  # the buffers were sized for `ready` rows
            raise RuntimeError(f"pipeline {self.gen.pipeline.id}: emitted {n} window results, expected {ready}")
        return self._sorted(out.table(n))

    def _sorted(self, table: pa.Table) -> pa.RecordBatch:
        rows = self.gen.pipeline.terminal.rows
        if rows is not None and rows.order.keeps_rows:  # a Top-N's groups are ordered as their
            return table.combine_chunks().to_batches()[0]  # rows are ranked (engine/window_rows.py)
        names = [WINDOW_END] + [f.name for f in self.keys]
        if not _already_sorted(table, names):  # (a dense table emits its keys in order)
            table = table.take(sort_indices_nulls_last(table, names))
        return table.combine_chunks().to_batches()[0]

    def all_windows(self) -> np.ndarray:
        """``windows()`` of every state block, concatenated."""
        if len(self.states) == 1:
            return self.windows()
        return np.concatenate([self.windows(s) for s in self.states])

    def windows(self, state: np.ndarray | None = None) -> np.ndarray:
        """The directory's slots as rows of (window or pane start, entries, capacity, size)."""
        state = self.state if state is None else state
        slots, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
        return native_words.copy(slots, 4 * length).reshape(length, 4)

    def key_array(self, f, words: np.ndarray, valid: np.ndarray) -> pa.Array:
        t = self.schema.field(f.name).type
        if f.dtype.is_string:
            return self.interner.values(words, valid, t)
        if f.dtype.is_float:
            values = words.view(np.float64)
        elif f.dtype.is_bool:
            values = words.astype(bool)
        else:  # int64, or a narrower integer / timestamp the words were widened from
            return masked(words, valid, pa.int64()).cast(t)
        return masked(values, valid, t)

    def time_array(self, ms: np.ndarray) -> pa.Array:
        t = self.time_type
        if pa.types.is_timestamp(t):
            factor = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
            scaled = ms // 1000 if factor is None else ms * factor
            return from_numpy(scaled, pa.int64()).cast(t)
        return from_numpy(ms, pa.int64())

    # --- its state (checkpoints, the state-memory limit, the string release) --------------------
    @functools.cached_property
    def table_shape(self) -> TableShape:
        """How the kernel's hash tables hold its state (``window_tables.py``)."""
        return TableShape.of_windows(self.gen)

    def _window_blocks(self) -> list[np.ndarray]:
        """The state blocks whose window directories hold the windows: every worker's (idle
        blocks included)."""
        return self.states

    def export_state(self) -> dict:
        out = export_counters(self)
        out["blocks"] = [self._export_block(state) for state in self.states]
        out["interner"] = export_interner(self.interner)
        out["previous_watermark"] = getattr(self, "previous_watermark", None)
        out["clock_last"] = self.clock.last if self.clock is not None else None
        return out

    def _export_block(self, state: np.ndarray) -> dict:
        return export_window_block(self.windows(state), self.table_shape)

    def restore_state(self, saved: dict) -> None:
        """``export_state``'s ``saved``, at any parallelism: per-worker blocks beyond the
        kernel's workers become idle blocks (``_make_room``); counters are folded or spread
        (``state_snapshot.restore_counters``)."""
        if len(saved["blocks"]) > len(self.states):
            self._make_room(len(saved["blocks"]))
        restore_counters(self, saved)
        for state, block in zip(self.states, saved["blocks"]):
            self._restore_block(state, block)
        restore_interner(self.interner, saved["interner"])
        if saved["previous_watermark"] is not None:
            self.previous_watermark = saved["previous_watermark"]
        if saved["clock_last"] is not None:
            self.clock.last = saved["clock_last"]

    def _restore_block(self, state: np.ndarray, block: dict) -> None:
        restore_window_block(state, block, self.table_shape)

    def _make_room(self, blocks: int) -> None:
        """A snapshot taken at a higher parallelism holds ``blocks`` per-worker blocks of windows,
        more than the kernel has: the rest become idle blocks (no worker writes them; their
        windows fire merged with the workers' ones, as under the parallelism that wrote them).
        Tumbling windows of one block fire without merging: the kernel takes the merging trigger
        of several workers' tumbling windows first (``SlidingWindowKernel``; the same compiled
        units: the tumbling trigger has ``merge_emit``)."""
        self.__class__ = SlidingWindowKernel
        self._set_geometry()
        self.previous_watermark = None
        self.add_idle_blocks(blocks - len(self.states))

    def structure_bytes(self) -> int:
        """The window directories, their tables (capacity x entry), the holistic aggregates'
        value vectors in the entries, and what only native code walks (``_heap_bytes``)."""
        shape = self.table_shape
        heap = self._heap_bytes()
        total = 0
        for state in self._window_blocks():
            total += table_bytes(self.windows(state), 8 * shape.entry_words, shape.entry_vector_words)
            if heap is not None:
                total += int(heap(state.ctypes.data))
        return total

    def _heap_bytes(self):
        """The state unit's ``heap_bytes`` where the state reaches past its tables through
        pointers that only native code walks cheaply (session nodes, a sliding count window's
        pane rings); None for the others."""
        return None

    def held_string_ids(self) -> np.ndarray | None:
        keys = string_key_positions(self.gen.pipeline.terminal.keys)
        shape = self.table_shape
        held = [table_keys(int(entries), int(capacity), shape.entry_words, keys, shape.head_word)
                for state in self._window_blocks() for _, entries, capacity, _ in self.windows(state)]
        if shape.interns_values:
            held += [aggregate_ids(export_window_block(self.windows(state), shape), shape)
                     for state in self._window_blocks()]
        return concat_ids(held)

    def close(self):
        if not self._closed:
            close = self.function("state", "close", None, _P)
            for state in self.states:
                close(state.ctypes.data)
            free_late_notes(self)
            self._closed = True

    def __del__(self):
        if sys.is_finalizing():  # the process is exiting: its memory goes with it, and the trigger
            return               # unit's compile thread may no longer run to finish a close
        if not llvm_ready():  # no generated code ran: nothing to free (and no compile from a finalizer)
            return
        try:
            self.close()
        except Exception:
            pass


class SlidingWindowKernel(WindowKernel):
    """Sliding and cumulative windows: records sit in panes (``window_geometry.py``); a window
    fires by merging its panes, across the workers' state blocks when there are several (so it
    also serves tumbling windows under the thread-local variant: a window is its own pane).
    Windows fire in order of their end, once each; a record whose earlier windows already
    fired still counts in its later ones."""

    def __init__(self, gen, input_name, workers: int = 1):
        super().__init__(gen, input_name, workers)
        self._set_geometry()
        self.previous_watermark = None  # windows complete at it have fired (empty ones too)

    def _set_geometry(self) -> None:
        self.geometry = window_geometry(self.gen.pipeline.terminal.assigner)
        self.slide, self.pane = self.geometry.slide, self.geometry.pane
        # the last window's merged state, kept for the next (pane_accumulator.py); None where
        # every window merges its panes afresh (gen.pane_reuse: the aggregates, sort grouping)
        reuse = self.gen.pane_reuse
        self.accumulator = PaneAccumulator(self, reuse) if reuse else None
        self.held_keys = None  # (min, max) key of the last window fired, while its panes overlap the next

    def read_profile(self) -> profile.Profile:
        """The profile (``WindowKernel.read_profile``), with the keys the open panes are known to
        hold (``_note_held_keys``): the specializer declines a dense range that would not hold them."""
        read = super().read_profile()
        read.held_keys = self.held_keys
        return read

    def _note_held_keys(self, fired: pa.Table | None, panes_left: bool) -> None:
        """After a firing: the key range of the last window fired, which bounds the keys of the
        panes it shares with the windows still open (one signed integer key; none for windows
        that share no pane, or when no pane is left). A firing that emits nothing keeps the
        range: panes only left since, so it still bounds the keys they hold."""
        if fired is None and panes_left:
            return
        self.held_keys = None
        if fired is None or not panes_left or self.tumbling or len(self.keys) != 1:
            return
        column = fired.column(self.keys[0].name)
        if not pa.types.is_signed_integer(column.type):
            return
        if not column.null_count:  # (a view of the words: cheaper than a compute call per firing)
            words = as_numpy(column)
            self.held_keys = (int(words.min()), int(words.max()))
            return
        low, high = pc.min_max(column).values()
        if low.is_valid:
            self.held_keys = (low.as_py(), high.as_py())

    @property
    def tumbling(self) -> bool:
        """One window per pane, fired once (not with allowed lateness: kept windows fire again)."""
        return self.pane == self.window_size and not self.lateness

    @property
    def state_kind(self) -> str:
        # several workers' tumbling windows keep the state of one worker's, in more blocks
        return "WindowKernel" if type(self) is SlidingWindowKernel and self.tumbling else type(self).__name__

    def _make_room(self, blocks: int) -> None:
        self.add_idle_blocks(blocks - len(self.states))

    def restore_state(self, saved: dict) -> None:
        if self.accumulator is not None:
            self.accumulator.reset()  # (derived state: the next window merges the restored panes)
        self.held_keys = None
        super().restore_state(saved)

    def structure_bytes(self) -> int:
        total = super().structure_bytes()
        return total + (self.accumulator.table_bytes() if self.accumulator is not None else 0)

    def close(self):
        if not self._closed and self.accumulator is not None:
            self.accumulator.reset()
        super().close()

    @property
    def refires_pending(self) -> bool:
        """Allowed lateness: records reached fired, kept windows since the last firing (they fire
        again at once, at the watermark in force: the driver cuts batches after such records)."""
        base = self.gen.late_base
        return base is not None and any(int(state[base + 1]) for state in self.states)

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        previous, self.previous_watermark = self.previous_watermark, watermark
        late = self._late_keys()
        acc = self.accumulator
        if acc is not None and (late is not None or acc.stale(self.states)):
            acc.reset()  # records reached panes it holds: the next window merges its panes afresh
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1 and late is None:
            return None
        panes = self.all_windows()
        merge_emit = self.function("state", "merge_emit", _I64, _P, _I64, _I64, _I64, _P, _I64)
        # every block's tables in one dense placement: merged index by index, in key order
        dense = self.placement[0] if all(p == self.placement[0] for p in self.placement) else None
        dense_cap = 0 if dense is None else dense[1]
        layout = (tuple(self._state_ptrs.tolist()), dense)
        windows = with_capacities(self._windows_to_fire(panes[:, 0], previous, watermark, late), panes[:, 0],
                                  panes[:, 3])
        out = _ResultBuffers(self, sum(capacity for *_, capacity in windows)) if windows else None
        spans, at = [], 0  # every window's rows, one after another in the same buffers
        for lo, hi, keys, capacity in windows:
            descriptor = out.descriptor_at(at)
            if acc is not None and keys is None:  # (a window fired again for late records: merged afresh)
                n = self._checked(acc.window(lo, hi, descriptor, capacity, layout, dense_cap))
            else:
                n = self._checked(merge_emit(self._state_ptrs.ctypes.data, len(self.states), lo, hi,
                                             descriptor, dense_cap))
            if n:
                spans.append((n, hi, keys))
                at += n
        fired = out.windows_table(spans) if spans else None
        drop_panes = self.function("state", "drop_panes", None, _P, _I64)
        for state in self.states:
            drop_panes(state.ctypes.data, self._cleanup_watermark(watermark))
        remaining = self.all_windows()[:, 0]
        self._note_held_keys(None if fired is None else out.last_window(fired), len(remaining) > 0)
        # the earliest end among windows not fired yet that hold a pane (a lower bound is enough:
        # each pane's end, and the first end on the grid past every window complete at the
        # watermark, all of which fired; the accumulator's floor is one too, and tells it at the
        # next firing whether a pane it holds took records: pane_accumulator.py). The tighter it
        # is, the more firings stop at the check above: with many concurrent windows a pane
        # lives long after its end.
        min_open_end = max(int(remaining.min()) + self.pane, self.geometry.next_end(watermark + 1)) \
            if len(remaining) else abi.INT64_MAX
        if acc is not None:
            min_open_end = max(min_open_end, acc.floor())
        for state in self.states:
            state[abi.STATE_MIN_OPEN_END] = min_open_end
        return None if fired is None else self._sorted(fired)

    def _cleanup_watermark(self, watermark: int) -> int:
        """The watermark a window's panes go at: its last window is cleaned when ``end - 1 +
        lateness <= watermark`` (``drop_panes`` frees the panes whose last window ``end - 1 <=``
        what it is given)."""
        return max(abi.INT64_MIN, watermark - self.lateness)

    def _late_keys(self) -> np.ndarray | None:
        """The late-key notes of every state block since the last firing, as rows (pane start,
        key null mask, key words), taken (the vectors are emptied); None when there are none."""
        base = self.gen.late_base
        if base is None:
            return None
        words, parts = 2 + len(self.keys), []
        for state in self.states:
            n = int(state[base + 1])
            if n:
                parts.append(native_words.copy(int(state[base]), n).reshape(-1, words))
                state[base + 1] = 0
        return np.concatenate(parts) if parts else None

    def _windows_to_fire(self, pane_starts: np.ndarray, previous: int | None, watermark: int,
                         late: np.ndarray | None) -> list[tuple[int, int, np.ndarray | None]]:
        """(start, end, keys) of the windows to emit: each window that became complete since
        ``previous`` (every key: ``keys`` None), and, with allowed lateness, each window that had
        fired and is kept and got records since (``late``: the keys noted by the fused loop):
        Flink fires it again for those keys. The records came under watermark ``previous``."""
        out = [(lo, hi, None) for lo, hi in self.geometry.ready_windows(pane_starts, previous, watermark)]
        if late is None or previous is None:
            return out
        again: dict[tuple[int, int], list] = {}
        for row in np.unique(late, axis=0):
            for lo, hi in self.geometry.windows_of(int(row[0])):
                if hi - 1 <= previous < hi - 1 + self.lateness:  # fired, and kept when the record came
                    again.setdefault((lo, hi), []).append(row[1:])
        return out + [(lo, hi, np.array(rows)) for (lo, hi), rows in again.items()]


def with_capacities(windows: list[tuple[int, int, np.ndarray | None]], pane_starts: np.ndarray,
                    pane_sizes: np.ndarray) -> list[tuple]:
    """(start, end, keys, capacity) of each of ``windows`` that holds an entry: ``capacity``
    bounds its rows (the entries of the panes that start inside it)."""
    out = []
    for lo, hi, keys in windows:
        capacity = int(pane_sizes[(pane_starts >= lo) & (pane_starts < hi)].sum())
        if capacity:
            out.append((lo, hi, keys, capacity))
    return out


class _OneWorker:
    """A window kernel whose records one worker takes in stream order (a key's windows depend on
    the order of its records): one state block, no idle blocks to restore into."""

    tumbling = False

    def _make_room(self, blocks: int) -> None:
        raise ValueError(f"pipeline {self.gen.pipeline.id}: the checkpoint has {blocks} state blocks of "
                         f"{self.gen.pipeline.terminal.assigner.kind.label} windows, the job {len(self.states)}")


class SessionWindowKernel(_OneWorker, WindowKernel):
    """Session windows (``codegen/session_window.py``): one key table whose entries point to the
    key's sessions (a list of nodes, merged as records arrive); the emit writes each session's
    end."""

    writes_window_ends = True
    state_kind = "WindowKernel"  # the name snapshots give its state (its layout is in their fingerprint)

    @functools.cached_property
    def table_shape(self) -> TableShape:
        return TableShape.of_sessions(self.gen)

    def _heap_bytes(self):
        return self.function("state", "heap_bytes", _I64, _P)


class CountWindowKernel(_OneWorker, WindowKernel):
    """Keyed count windows, tumbling and sliding (``codegen/count_window.py``): the kernel fires
    them as records arrive, so processing a batch returns the windows it completed, in the order
    they completed (at most one per record). One worker: a key's records count in stream order.
    A key's entry stays for good (its count goes on across its windows), and so do its interned
    strings."""

    emits_per_batch = True

    @functools.cached_property
    def table_shape(self) -> TableShape:
        return TableShape.of_count_windows(self.gen)

    def _heap_bytes(self):
        # sliding count windows keep pane rings; tumbling ones everything in the key table
        return self.function("state", "heap_bytes", _I64, _P) if self.table_shape.ring_word is not None else None

    def held_string_ids(self) -> np.ndarray | None:
        """Key strings stay for good (see ``string_release``); with aggregates of strings, their
        values go once no pane holds them."""
        if not self.table_shape.interns_values:
            return None
        return super().held_string_ids()

    def process(self, batch: pa.RecordBatch, watermark: int = abi.INT64_MIN) -> pa.RecordBatch:
        out = _ResultBuffers(self, batch.num_rows)
        n = self.run(batch, watermark, out.descriptor) if batch.num_rows else 0
        return out.table(n, window_columns=False).combine_chunks().to_batches(max_chunksize=None)[0] \
            if n else pa.RecordBatch.from_pylist([], schema=self.schema)

    def fire(self, watermark: int) -> None:
        return None  # count windows fire in the kernel, not on the watermark


class RunningAggregateKernel(CountWindowKernel):
    """Running aggregates (``codegen/running_aggregate.py``): each record writes its key's row
    before (``-U``) and after it (``+U``, or ``+I`` for a key's first record); processing a batch
    returns that changelog without the pairs whose rows are equal (an unchanged result emits
    nothing), in stream order. The key table keeps a key's entry for good, as count windows do.
    ``mini_batch`` (``mini_batch.py``; the engine sets it where only the final table is seen):
    per batch, each changed key's row before the batch and after it, not every record's."""

    mini_batch = False

    @functools.cached_property
    def table_shape(self) -> TableShape:
        return TableShape.of_key_table(self.gen)

    def _heap_bytes(self):
        return None  # everything in the key table

    def process(self, batch: pa.RecordBatch, watermark: int = abi.INT64_MIN) -> pa.RecordBatch:
        out = _ResultBuffers(self, 2 * batch.num_rows)
        n = self.run(batch, watermark, out.descriptor) if batch.num_rows else 0
        if not n:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        if self.mini_batch:
            rows, kinds = changed_rows(out.window_start[:n], out.keys)
            out.window_start[rows] = kinds  # (a key's first and last row: distinct rows)
            table = out.table(n, window_columns=False, picked=rows, row_kinds=True)
        else:
            table = out.table(n, window_columns=False, row_kinds=True)
        column = self.gen.pipeline.terminal.event_time_column
        if column is not None:
            table = table.append_column(self.schema.field(column), _record_times(table, batch.column(column)))
        table = _without_unchanged(table)
        if not table.num_rows:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        return table.combine_chunks().to_batches(max_chunksize=None)[0]


def _record_times(table: pa.Table, times: pa.Array) -> pa.Array:
    """Each changelog row's event time: that of the record that made it (``times``: the batch's,
    one per record). Every record of a batch makes its rows in order (the pipeline has no filters,
    ``physical/pipelines.py``): one row (``+I``, or ``-D``) or two (``-U`` then ``+U``)."""
    kinds = table.column(OP_COLUMN).to_numpy()
    record = np.cumsum(kinds != UPDATE_AFTER) - 1
    if record[-1] != len(times) - 1:
        raise RuntimeError(f"running aggregate: {len(times)} records made the changelog rows of "
                           f"{record[-1] + 1}: their event times cannot be paired up")
    return times.take(pa.array(record, pa.int64()))


def _without_unchanged(table: pa.Table) -> pa.Table:
    """A running aggregate's changelog without the (-U, +U) pairs whose rows are equal
    (``_same_values``): a record that leaves its key's row as it was emits nothing."""
    kinds = table.column(OP_COLUMN).to_numpy()
    before = np.flatnonzero(kinds == UPDATE_BEFORE)
    if not len(before):
        return table
    same = np.ones(len(before), dtype=bool)
    for name in table.column_names:
        if name == OP_COLUMN:
            continue
        column = table.column(name)
        same &= _same_values(column.take(before).combine_chunks(), column.take(before + 1).combine_chunks())
    if not same.any():
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    keep[before[same]] = False
    keep[before[same] + 1] = False
    return table.filter(pa.array(keep))


def _same_values(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Where the values of ``a`` and ``b`` are equal: both null, equal, or both NaN; -0.0 is not
    0.0, which the final table tells apart, so that a ``-U`` always names the row emitted before.
    Lists (``top_k``) are equal where their lengths and elements are."""
    if pa.types.is_list(a.type):
        lengths = pc.fill_null(pc.list_value_length(a), -1).to_numpy()
        same = lengths == pc.fill_null(pc.list_value_length(b), -1).to_numpy()
        both = pa.array(same)  # compare the elements of the rows whose lengths agree
        x, y = a.filter(both), b.filter(both)
        unequal = pc.list_parent_indices(x).to_numpy()[~_same_values(pc.list_flatten(x), pc.list_flatten(y))]
        same[np.flatnonzero(same)[unequal]] = False
        return same
    equal = pc.fill_null(pc.equal(a, b), False)
    equal = pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b)))
    same = np.ones(len(a), dtype=bool)
    if pa.types.is_floating(a.type):
        equal = pc.or_(equal, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
        x, y = (pc.fill_null(v, 0.0).to_numpy() for v in (a, b))
        same = (np.signbit(x) == np.signbit(y)) | (np.isnan(x) & np.isnan(y))
    return same & equal.to_numpy(zero_copy_only=False)


def _row_values(words: np.ndarray) -> np.ndarray:
    """Each row of an int64 matrix as one opaque value (rows compare equal when all words do)."""
    words = np.ascontiguousarray(words, dtype=np.int64)
    return words.view(np.dtype((np.void, 8 * words.shape[1]))).ravel()


class _ResultBuffers:
    """Output buffers of one firing: window starts, key words, aggregate values, validity."""

    def __init__(self, kernel: WindowKernel, rows: int):
        self.kernel = kernel
        size = max(rows, 1)
        self.window_start = np.empty(size, dtype=np.int64)
        ptrs, strides = [self.window_start.ctypes.data], [8]  # strides: bytes per row
        self.keys, self.aggs = [], []
        for _ in kernel.keys:
            b = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint8))
            self.keys.append(b)
            ptrs += [b[0].ctypes.data, b[1].ctypes.data]
            strides += [8, 1]
        for _, store in kernel.gen.aggregate_types:
            if _is_list(store):  # top_k, strings: an output vector {data, length, capacity} the
                # emit appends to (malloc'd there, freed here) and {first value, count} per row
                b = (np.zeros(3, dtype=np.int64), np.zeros(2 * size, dtype=np.int64))
                strides += [0, 16]  # (one vector for every window of a firing)
            else:
                b = (np.empty(size, dtype=NP_STORE[store]), np.empty(size, dtype=np.uint8))
                strides += [b[0].itemsize, 1]
            self.aggs.append(b)
            ptrs += [b[0].ctypes.data, b[1].ctypes.data]
        self.window_end = None  # session windows write their ends; other windows have a fixed size
        if kernel.writes_window_ends:
            self.window_end = np.empty(size, dtype=np.int64)
            ptrs.append(self.window_end.ctypes.data)
            strides.append(8)
        self._descriptor = np.array(ptrs, dtype=np.uint64)
        self.span_rows: list[int] = []  # windows_table: each window's rows in the table
        self._strides = np.array(strides, dtype=np.uint64)
        self._shifted = np.empty_like(self._descriptor)

    @property
    def descriptor(self) -> int:
        return self._descriptor.ctypes.data

    def descriptor_at(self, row: int) -> int:
        """The descriptor of the buffers from row ``row`` on: a firing emits its windows one
        after another into one set of buffers (``windows_table``). Valid until the next call."""
        np.add(self._descriptor, self._strides * np.uint64(row), out=self._shifted)
        return self._shifted.ctypes.data

    def windows_table(self, spans: list[tuple[int, int, np.ndarray | None]]) -> pa.Table:
        """The rows of windows emitted one after another from row 0 (``descriptor_at``):
        ``spans`` holds each window's (rows, end, keys); ``keys`` (rows of key null mask and key
        words: a window fired again for late records): only the rows of these keys."""
        counts = np.array([rows for rows, _, _ in spans], dtype=np.int64)
        n = int(counts.sum())
        ends = np.repeat(np.array([end for _, end, _ in spans], dtype=np.int64), counts)
        if all(keys is None for _, _, keys in spans):
            self.span_rows = counts.tolist()
            return self.table(n, end=ends)
        parts, at = [], 0
        for rows, _, keys in spans:
            part = np.arange(at, at + rows)
            parts.append(part if keys is None else part[self._of_keys(at, at + rows, keys)])
            at += rows
        self.span_rows = [len(part) for part in parts]
        return self.table(n, end=ends, picked=np.concatenate(parts))

    def last_window(self, table: pa.Table) -> pa.Table | None:
        """The rows of the last window of ``windows_table``'s ``table`` that has any."""
        last = next((rows for rows in reversed(self.span_rows) if rows), 0)
        return table.slice(table.num_rows - last) if last else None

    def table(self, n: int, window_columns: bool = True, end: np.ndarray | None = None,
              picked: np.ndarray | None = None, row_kinds: bool = False) -> pa.Table:
        """The first ``n`` rows; ``end``: each of the ``n`` rows' window end (windows merged
        from panes: their size need not be the kernel's, as for cumulative windows); ``picked``:
        only these of the rows (a window fired again for late records: its noted keys' rows);
        ``row_kinds``: a running aggregate's last column, each row's kind (written where other
        windows write their starts)."""

        def pick(a: np.ndarray) -> np.ndarray:
            return a[:n] if picked is None else a[:n][picked]

        def pick_pairs(pairs: np.ndarray) -> np.ndarray:  # a list aggregate's {first value, count} per row
            return pairs[:2 * n] if picked is None else pairs[:2 * n].reshape(n, 2)[picked].ravel()
        k = self.kernel
        arrays = [k.key_array(f, pick(w), pick(v)) for f, (w, v) in zip(k.keys, self.keys)]
        if window_columns:
            arrays.append(k.time_array(pick(self.window_start)))
            if end is not None:
                ends = pick(end)
            elif self.window_end is None:
                ends = pick(self.window_start) + k.window_size
            else:
                ends = pick(self.window_end)
            arrays.append(k.time_array(ends))
        for (name, store), (values, valid), a in zip(k.gen.aggregate_types, self.aggs, k.gen.grouping.aggregates):
            t = k.schema.field(name).type
            if store == "strings":  # each row's interned ids, finished by the function
                ids = self._list_array(name, "i64", values, pick_pairs(valid), pa.list_(pa.int64()))
                strings = k.interner.values(pc.list_flatten(ids).to_numpy(), np.ones(len(ids.values), np.uint8),
                                            pa.string())
                lists = pa.ListArray.from_arrays(ids.offsets, strings)
                arrays.append(a.spec.finish(lists).cast(t))
            elif store == "string":  # an interned id
                arrays.append(k.interner.values(pick(values), pick(valid), t))
            elif _is_list(store):
                arrays.append(self._list_array(name, store[len("list:"):], values, pick_pairs(valid), t))
            else:
                arrays.append(masked(pick(values), pick(valid), t))
        if row_kinds:
            arrays.append(pa.array(pick(self.window_start)))
        # (a running aggregate's record times, after the row kinds, come from its input batch)
        return pa.Table.from_arrays(arrays, schema=pa.schema(list(k.schema)[:len(arrays)]))

    def _of_keys(self, start: int, stop: int, keys: np.ndarray) -> np.ndarray:
        """Which of rows ``[start, stop)`` have one of ``keys`` (null mask, key words; a null
        key's word does not count)."""
        n = stop - start
        masks = np.zeros(n, dtype=np.int64)
        words = []
        for i, (w, v) in enumerate(self.keys):
            valid = v[start:stop].astype(bool)
            masks |= (~valid).astype(np.int64) << i
            words.append(np.where(valid, w[start:stop], 0))
        rows = np.column_stack([masks] + words) if n else np.zeros((0, 1 + len(words)), dtype=np.int64)
        wanted = keys.copy()
        for i in range(len(self.keys)):
            wanted[:, 1 + i] = np.where((wanted[:, 0] >> i) & 1, 0, wanted[:, 1 + i])
        return np.isin(_row_values(rows), _row_values(wanted))

    def _list_array(self, name: str, store: str, vec: np.ndarray, pairs: np.ndarray, t: pa.DataType) -> pa.Array:
        """The lists of a top_k output: row j's values are words [start, start + count) of the
        output vector ``vec`` (the rows need not have been emitted in order)."""
        words = self._take_words(vec)
        starts, counts = pairs[0::2], pairs[1::2]
        if (counts < 0).any():
            raise MemoryError(f"pipeline {self.kernel.gen.pipeline.id}: out of memory emitting aggregate {name!r}")
        if counts.sum() and (starts.min() < 0 or (starts + counts).max() > len(words)):
            raise RuntimeError(f"pipeline {self.kernel.gen.pipeline.id}: aggregate {name!r}: emitted lists "
                               f"outside the output vector")
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        index = np.arange(offsets[-1], dtype=np.int64) + np.repeat(starts - offsets[:-1], counts)
        values = words[index].view(NP_STORE[store])
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)),
                                        pa.array(values).cast(t.value_type))

    @staticmethod
    def _take_words(vec: np.ndarray) -> np.ndarray:
        """A copy of an output vector's words; frees its data (once)."""
        data, length = int(vec[0]), int(vec[1])
        if not data:
            return np.zeros(0, dtype=np.int64)
        words = native_words.copy(data, length)
        vec[:] = 0
        _libc_free(data)
        return words

    def __del__(self):  # a firing that failed before its table was built
        for (_, store), (values, _) in zip(self.kernel.gen.aggregate_types, self.aggs):
            if _is_list(store) and values[0]:
                self._take_words(values)


def free_late_notes(kernel: Kernel) -> None:
    """Free the vector of late-key notes (``window_late_key.ll.j2``) of every state block."""
    base = kernel.gen.late_base
    if base is not None:
        for state in kernel.states:
            _libc_free(int(state[base]))
            state[base:base + 3] = 0


def _is_list(store: str) -> bool:
    """Whether an aggregate's emit appends to an output vector (``AggregateSpec.result_store``)."""
    return store.startswith("list:") or store == "strings"


_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes, _LIBC.free.restype = [ctypes.c_void_p], None


def _libc_free(address: int) -> None:
    """``free`` of the C library the generated code's ``realloc`` comes from."""
    _LIBC.free(address)
