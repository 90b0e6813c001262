"""A task's parts in one native call: the table of parts and the runtime loop that runs them.

A task of the grouped window rounds (``local.QueryRun._flush_group``) covers several parts:
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

import numpy as np

from ..codegen import abi
from ..codegen.templates import runtime_declarations
from ..jit import compile_ir

_P, _I64 = ctypes.c_void_p, ctypes.c_int64

# keeps gz_run_parts (linkonce_odr, dropped when nothing calls it) in a module of its own
_WRAPPER_IR = """
define i64 @gz_task_run_parts(ptr %fn, ptr %state, ptr %parts, i64 %n, ptr %done, i64 %delay) {
entry:
  %rc = call i64 @gz_run_parts(ptr %fn, ptr %state, ptr %parts, i64 %n, ptr %done, i64 %delay)
  ret i64 %rc
}
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


@functools.lru_cache(maxsize=1)
def parts_runner():
    """The compiled ``gz_run_parts``: (kernel address, state, parts table, parts, done, watermark
    chain delay) -> code.
    (The compiled module is cached by ``jit`` and kept alive by this cache.)"""
    module = compile_ir(runtime_declarations() + _WRAPPER_IR)
    return module, module.function("gz_task_run_parts", _I64, _P, _P, _P, _I64, _P, _I64)


class PartsTable:
    """The column descriptors, parameters and (columns, rows, params) rows of ``n`` parts, each
    part a row range of a prepared batch under its own watermark; the arrays live as long as
    the table (the prepared batches keep the Arrow buffers alive)."""

    __slots__ = ("columns", "params", "table", "rows", "done", "_keep")

    def __init__(self, prepared: list, offsets: list[int], lengths: list[int], watermarks: list[int],
                 processing_time: int):
        n = len(prepared)
        self._keep = prepared
        self.columns = np.stack([p.columns for p in prepared])
        self.params = np.stack([p.params for p in prepared])
        self.rows = np.asarray(lengths, dtype=np.int64)
        self.columns[:, abi.SLOT_OFFSET::abi.COLUMN_SLOTS] += np.asarray(offsets, dtype=np.uint64)[:, None]
        self.columns[:, abi.SLOT_LENGTH::abi.COLUMN_SLOTS] = self.rows.astype(np.uint64)[:, None]
        self.params[:, abi.PARAM_WATERMARK] = watermarks
        self.params[:, abi.PARAM_PROCESSING_TIME] = processing_time
        self.table = np.empty((n, 3), dtype=np.int64)
        self.table[:, 0] = self.columns.ctypes.data + np.arange(n, dtype=np.int64) * self.columns.strides[0]
        self.table[:, 1] = self.rows
        self.table[:, 2] = self.params.ctypes.data + np.arange(n, dtype=np.int64) * self.params.strides[0]
        self.done = np.zeros(1, dtype=np.int64)

    def run(self, kernel_address: int, state: np.ndarray, chain_delay: int | None = None) -> tuple[int, int]:
        """Run the parts on ``state``: (code, index of the part that returned it; ``n`` and 0
        when every part ran). ``chain_delay``: chain the watermark through the parts
        (``chained_watermark``; each part then holds the watermark it ran under)."""
        _, runner = parts_runner()
        rc = runner(kernel_address, state.ctypes.data, self.table.ctypes.data, len(self.table),
                    self.done.ctypes.data, -1 if chain_delay is None else chain_delay)
        return int(rc), int(self.done[0])

    def watermark(self, index: int) -> int:
        return int(self.params[index, abi.PARAM_WATERMARK])


def chained_watermark(watermark: int, max_event_time: int, delay: int) -> int:
    """The watermark after a batch when the largest event time read so far is ``max_event_time``
    (``INT64_MIN``: none yet): what ``gz_run_parts`` computes between parts, and the driver's
    clock (``local.SourceClock``) after every batch."""
    if max_event_time == abi.INT64_MIN:
        return watermark
    return max(watermark, max(abi.INT64_MIN, max_event_time - delay))
