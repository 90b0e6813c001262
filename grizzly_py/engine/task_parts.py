"""A task's parts in one native call: the table of parts and the runtime loop that runs them.

A task of the grouped window rounds (``rounds.RoundPlanner.flush``) covers several parts:
row ranges of consecutive source batches, each under the watermark in force after the batch
before it. Run one by one, each part costs a Python round trip (variant choice, descriptors,
counters, a ctypes call) that holds the GIL; here the descriptors of every part are built in
one go and ``gz_run_parts`` (``runtime/tasks.ll``) calls the fused kernel once per part
without the GIL. ``Kernel.run_parts`` (``kernels.py``) handles what stops the loop early.
"""

from __future__ import annotations

import contextvars
import ctypes
import functools
import threading
from typing import NamedTuple

import numpy as np

from ..codegen import abi
from ..codegen.templates import runtime_declarations
from ..jit import compile_ir

_P, _I64 = ctypes.c_void_p, ctypes.c_int64

# keeps gz_run_parts (linkonce_odr, dropped when nothing calls it) in a module of its own; and
# the largest value of one int64 column over the parts of a table (PartsTable.column_max)
_WRAPPER_IR = f"""
define i64 @gz_task_run_parts(ptr %fn, ptr %state, ptr %parts, i64 %n, ptr %done, i64 %delay) {{
entry:
  %rc = call i64 @gz_run_parts(ptr %fn, ptr %state, ptr %parts, i64 %n, ptr %done, i64 %delay)
  ret i64 %rc
}}

define i64 @gz_task_parts_max(ptr %parts, i64 %n, i64 %slot) {{
entry:
  br label %part
part:
  %i = phi i64 [ 0, %entry ], [ %i.next, %rows.end ]
  %m = phi i64 [ {abi.INT64_MIN}, %entry ], [ %m.part, %rows.end ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %open, label %out
open:
  %row = mul i64 %i, 3
  %columns.p = getelementptr inbounds i64, ptr %parts, i64 %row
  %columns.i = load i64, ptr %columns.p
  %columns = inttoptr i64 %columns.i to ptr
  %rows.p = getelementptr inbounds i64, ptr %columns.p, i64 1
  %rows = load i64, ptr %rows.p
  %vals.s = add i64 %slot, {abi.SLOT_VALUES}
  %vals.p = getelementptr inbounds i64, ptr %columns, i64 %vals.s
  %vals.i = load i64, ptr %vals.p
  %vals = inttoptr i64 %vals.i to ptr
  %off.s = add i64 %slot, {abi.SLOT_OFFSET}
  %off.p = getelementptr inbounds i64, ptr %columns, i64 %off.s
  %off = load i64, ptr %off.p
  %first = getelementptr inbounds i64, ptr %vals, i64 %off
  br label %rows.loop
rows.loop:
  %r = phi i64 [ 0, %open ], [ %r.next, %rows.body ]
  %m.part = phi i64 [ %m, %open ], [ %m.row, %rows.body ]
  %in = icmp slt i64 %r, %rows
  br i1 %in, label %rows.body, label %rows.end
rows.body:
  %v.p = getelementptr inbounds i64, ptr %first, i64 %r
  %v = load i64, ptr %v.p
  %m.row = call i64 @llvm.smax.i64(i64 %m.part, i64 %v)
  %r.next = add i64 %r, 1
  br label %rows.loop
rows.end:
  %i.next = add i64 %i, 1
  br label %part
out:
  ret i64 %m
}}

declare i64 @llvm.smax.i64(i64, i64)
"""


# a task's "about to run native code" signal (``TaskStart``), for the kernel call to give
entering_native: contextvars.ContextVar = contextvars.ContextVar("grizzly_entering_native", default=None)


class TaskStart:
    """Tells the driver, once, that a task reached its native call (or ended): the driver waits
    for it after handing out a round's tasks, so that its own Python work on the next batches
    does not hold the GIL while the tasks' Python prologue needs it (the interpreter would hand
    the GIL over only after its switch interval, ~5 ms, per contended acquisition)."""

    __slots__ = ("_release", "_done", "_lock")

    def __init__(self, semaphore: threading.Semaphore):
        self._release, self._done, self._lock = semaphore.release, False, threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        self._release()


def signal_entering_native() -> None:
    hook = entering_native.get()
    if hook is not None:
        hook()


class PartsFunctions(NamedTuple):
    """The compiled functions over parts tables, and the module that holds them."""

    module: object
    # gz_run_parts: (kernel address, state, parts table, parts, done, watermark chain delay) -> code
    run: object
    # gz_task_parts_max: (parts table, parts, column slot) -> the column's largest value (INT64_MIN: no rows)
    column_max: object


@functools.lru_cache(maxsize=1)
def parts_runner() -> PartsFunctions:
    """The compiled functions over parts tables (``PartsFunctions``).
    (The compiled module is cached by ``jit`` and kept alive by this cache.)"""
    module = compile_ir(runtime_declarations() + _WRAPPER_IR)
    return PartsFunctions(module, module.function("gz_task_run_parts", _I64, _P, _P, _P, _I64, _P, _I64),
                          module.function("gz_task_parts_max", _I64, _P, _I64, _I64))


def row_positions(numbers, first_rows):
    """The arrival position of a call's first row (``abi.PARAM_ROW_POSITION``): its input batch's
    number above bit 32, its row within that batch below (a batch holds fewer than 2^32 rows)."""
    return (numbers << 32) + first_rows


class PartsTable:
    """The column descriptors, parameters and (columns, rows, params) rows of ``n`` parts, each
    part a row range of a prepared batch under its own watermark; the arrays live as long as
    the table (the prepared batches keep the Arrow buffers alive)."""

    __slots__ = ("columns", "params", "table", "rows", "done", "_keep")

    def __init__(self, prepared: list, numbers: list[int], offsets: list[int], lengths: list[int],
                 watermarks: list[int], processing_time: int):
        self._fill(np.stack([p.columns for p in prepared]), np.stack([p.params for p in prepared]),
                   numbers, offsets, lengths, watermarks, processing_time, prepared)

    @classmethod
    def of_rows(cls, columns: np.ndarray, params: np.ndarray, numbers: list[int], offsets: list[int],
                lengths: list[int], watermarks: list[int], processing_time: int, keep) -> "PartsTable":
        """A table from the parts' whole-batch descriptors and parameters as rows of two arrays
        (copies: the table writes its parts' offsets, lengths and watermarks into them);
        ``numbers``: each part's source batch number; ``keep``: what holds their buffers alive."""
        table = cls.__new__(cls)
        table._fill(columns, params, numbers, offsets, lengths, watermarks, processing_time, keep)
        return table

    def _fill(self, columns: np.ndarray, params: np.ndarray, numbers, offsets, lengths, watermarks,
              processing_time: int, keep) -> None:
        n = len(columns)
        self._keep = keep
        self.columns, self.params = columns, params
        self.rows = np.asarray(lengths, dtype=np.int64)
        self.columns[:, abi.SLOT_OFFSET::abi.COLUMN_SLOTS] += np.asarray(offsets, dtype=np.uint64)[:, None]
        self.columns[:, abi.SLOT_LENGTH::abi.COLUMN_SLOTS] = self.rows.astype(np.uint64)[:, None]
        self.params[:, abi.PARAM_WATERMARK] = watermarks
        self.params[:, abi.PARAM_PROCESSING_TIME] = processing_time
        self.params[:, abi.PARAM_ROW_POSITION] = row_positions(np.asarray(numbers, dtype=np.int64),
                                                               np.asarray(offsets, dtype=np.int64))
        self.table = np.empty((n, 3), dtype=np.int64)
        self.table[:, 0] = self.columns.ctypes.data + np.arange(n, dtype=np.int64) * self.columns.strides[0]
        self.table[:, 1] = self.rows
        self.table[:, 2] = self.params.ctypes.data + np.arange(n, dtype=np.int64) * self.params.strides[0]
        self.done = np.zeros(1, dtype=np.int64)

    def run(self, kernel_address: int, state: np.ndarray, chain_delay: int | None = None) -> tuple[int, int]:
        """Run the parts on ``state``: (code, index of the part that returned it; ``n`` and 0
        when every part ran). ``chain_delay``: chain the watermark through the parts
        (``chained_watermark``; each part then holds the watermark it ran under)."""
        rc = parts_runner().run(kernel_address, state.ctypes.data, self.table.ctypes.data, len(self.table),
                                self.done.ctypes.data, -1 if chain_delay is None else chain_delay)
        return int(rc), int(self.done[0])

    def watermark(self, index: int) -> int:
        return int(self.params[index, abi.PARAM_WATERMARK])

    def column_max(self, slot_base: int) -> int | None:
        """The largest value of the int64 column at descriptor slot ``slot_base`` over every
        part's rows (its validity is not read: the caller's column has no nulls); None without
        rows. One native call, without the GIL."""
        found = parts_runner().column_max(self.table.ctypes.data, len(self.table), slot_base)
        return None if found == abi.INT64_MIN and not self.rows.any() else int(found)


def chained_watermark(watermark: int, max_event_time: int, delay: int) -> int:
    """The watermark after a batch when the largest event time read so far is ``max_event_time``
    (``INT64_MIN``: none yet): what ``gz_run_parts`` computes between parts, and the driver's
    clock (``watermarks.SourceClock``) after every batch."""
    if max_event_time == abi.INT64_MIN:
        return watermark
    return max(watermark, max(abi.INT64_MIN, max_event_time - delay))


class RoundBases:
    """The largest event time of a chained round's rows before each of its tasks (the base of
    its watermarks, ``chained_watermark``), worked out by the tasks themselves
    (``rounds.RoundPlanner.flush``): task ``k`` reads the event times of task ``k - 1``'s parts
    (``PartsTable.column_max``: native, without the GIL) and takes the largest of what tasks
    ``1..k`` found, so that each row before the round's last task is read once, by one task, and
    the tasks read in parallel. (The driver used to read them, one batch at a time with numpy,
    ~45 us a 64K-row batch, while the workers waited for its next round.)

    ``plans``: the round's planned tasks, in round order; ``slot_base``: the event-time column's
    descriptor slot; ``to_ms``: a raw value to epoch ms. Task ``k`` runs after task ``j < k``
    started (the pool's queue is first in, first out, and the driver's own task, the first,
    waits for nobody), so no wait is on a task that has not started."""

    def __init__(self, plans: list, slot_base: int, to_ms):
        self.plans, self.slot_base, self.to_ms = plans, slot_base, to_ms
        self.found: list[int | None] = [None] * len(plans)  # found[j]: the largest of task j's rows
        self.ready = [threading.Event() for _ in plans]
        self.errors: list[BaseException | None] = [None] * len(plans)  # errors[j]: reading task j's

    def base(self, task: int) -> int | None:
        """The largest event time of the round's rows before task ``task`` (>= 1); None: none."""
        j = task - 1
        try:
            raw = self.plans[j].table.column_max(self.slot_base)
            self.found[j] = None if raw is None else self.to_ms(raw)
        except BaseException as e:
            self.errors[j] = e
            raise
        finally:
            self.ready[j].set()
        for ready in self.ready[:j]:
            ready.wait()
        failed = next((e for e in self.errors[:j] if e is not None), None)
        if failed is not None:
            raise RuntimeError("another task of this round failed to read the event times before it") from failed
        found = [m for m in self.found[:task] if m is not None]
        return max(found) if found else None
