"""Incremental sliding and cumulative windows: the merged state of the window fired last, kept
to build the next one from.

A sliding window of ``c`` panes (``window_geometry.py``) merged afresh costs its keys times ``c``
when it fires; consecutive windows share all their panes but the ``size / slide`` panes at
either end. ``PaneAccumulator`` keeps one merged table (the state unit's ``acc_*`` functions,
``window_sliding_state.ll.j2``) that holds the panes of some ``[lo, hi)`` of every state block:

- a window ``[lo, hi')`` with ``hi' >= hi`` adds the panes of ``[hi, hi')`` and emits the table's
  entries (those that still hold a pane entry: a key whose records all left is not in the window);
- ``"invert"`` (sliding windows, every aggregate ``AggregateSpec.invertible``): right after it
  fired, the window's first slide of panes is subtracted, while those panes still exist
  (``drop_panes`` frees them after the firing), so that the table holds the next window less its
  new panes: a window costs the keys of the panes of one slide in and one slide out, and of its
  rows, whatever ``c``;
- ``"extend"`` (cumulative windows, every aggregate ``merge_exact``): a period's windows share
  their start, so panes only join; the table goes once the period's last window fired.

Any other window (the first, one after a gap, a window of another variant's placement or of
other state blocks) merges its panes into an emptied table, as the full merge does. The table is
derived state: it is never exported, and ``reset`` drops it wherever the panes under it may have
changed behind its back: a restore, late records fired again, and records written into a pane
it holds. The last is read from ``STATE_MIN_OPEN_END``, which every kernel call lowers to the end
of each pane it writes: after a firing the kernel raises it to ``hi + 1`` at least (``floor``,
still a lower bound of every window not fired: the next one ends past the watermark + 1), so a
block whose word is ``<= hi`` at the next firing took records into a pane below ``hi``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..codegen import abi

_P, _I64 = ctypes.c_void_p, ctypes.c_int64
_FIRST_CAPACITY = 1024  # runtime/hashtable.ll: a table's first allocation


class PaneAccumulator:
    """One window kernel's accumulator (see the module docstring); ``kernel`` is a
    ``kernels.SlidingWindowKernel`` whose state unit has the ``acc_*`` functions of ``mode``."""

    def __init__(self, kernel, mode: str):
        self.kernel, self.mode = kernel, mode
        self.block = np.zeros(abi.ACC_WORDS, dtype=np.int64)  # {entries, capacity, size}, live
        self.lo = self.hi = None   # the panes it holds: [lo, hi); None: it holds none
        self.layout = None         # the state blocks and dense placement it was built over
        self.entry_bytes = 8 * kernel.table_shape.entry_words + 8  # a pane entry, then its count

    def _fn(self, name: str, restype, *argtypes):
        return self.kernel.function("state", f"acc_{name}", restype, *argtypes)

    @property
    def held(self) -> bool:
        return self.lo is not None

    def stale(self, states) -> bool:
        """Whether a kernel call wrote into a pane it holds since the last firing."""
        return self.held and any(int(s[abi.STATE_MIN_OPEN_END]) <= self.hi for s in states)

    def floor(self) -> int:
        """What every block's ``STATE_MIN_OPEN_END`` is raised to (at least) after a firing."""
        return self.hi + 1 if self.held else abi.INT64_MIN

    def window(self, lo: int, hi: int, out_descriptor: int, rows: int, layout: tuple, dense_cap: int) -> int:
        """Emit window ``[lo, hi)`` (into at most ``rows`` rows of ``out_descriptor``) and make the
        table ready for the window after it; the rows written, or a kernel error code."""
        states, nstates = self.kernel._state_ptrs.ctypes.data, len(self.kernel.states)
        if not (self.held and self.lo == lo and self.hi <= hi and self.layout == layout):
            self.reset()
            self.lo = self.hi = lo
            self.layout = layout
        if hi > self.hi:
            rc = self._fn("add", _I64, _P, _P, _I64, _I64, _I64, _I64)(self.address, states, nstates, self.hi, hi,
                                                                         dense_cap)
            if rc:
                self.reset()
                return rc
            self.hi = hi
        if int(self.block[abi.ACC_LIVE]) > rows:
            self.reset()
            raise RuntimeError(f"pipeline {self.kernel.gen.pipeline.id}: the pane accumulator of window "
                               f"[{lo}, {hi}) holds more keys than its panes")
        n = self._fn("emit", _I64, _P, _P, _I64, _P)(self.address, states, lo, out_descriptor)
        if n < 0:
            self.reset()
            return n
        self._advance(lo, hi, states, nstates, dense_cap)
        return n

    def _advance(self, lo: int, hi: int, states: int, nstates: int, dense_cap: int) -> None:
        geometry = self.kernel.geometry
        if self.mode == "extend":  # a cumulative period's windows share their start
            if hi - lo >= geometry.size:
                self.reset()
            return
        slide = geometry.slide
        rc = self._fn("subtract", _I64, _P, _P, _I64, _I64, _I64, _I64)(self.address, states, nstates, lo,
                                                                          lo + slide, dense_cap)
        if rc:  # (out of memory cannot happen; a pane entry it does not hold would be a bug)
            self.reset()
            raise RuntimeError(f"pipeline {self.kernel.gen.pipeline.id}: the pane accumulator of window "
                               f"[{lo}, {hi}) does not hold a pane it merged")
        self.lo = lo + slide
        self._compact()

    def _compact(self) -> None:
        """Rehash a hashed table whose tombstones (keys that left) outnumber its live entries and
        take a quarter of it, into the capacity its live entries need: without, a stream of new
        keys would keep growing it (a table grows by its size, tombstones included). Amortized:
        a rehash costs the table, and the next one waits for as many keys to leave again."""
        capacity, size, live = (int(self.block[i]) for i in (1, 2, abi.ACC_LIVE))
        if self.layout[1] is not None or size - live < max(live, capacity // 4):
            return
        target = max(_FIRST_CAPACITY, 1 << (4 * live - 1).bit_length())
        if self._fn("compact", ctypes.c_int32, _P, _I64)(self.address, target):
            self.reset()  # (out of memory: the next window merges its panes afresh)

    def reset(self) -> None:
        """Drop the table: the next window merges its panes afresh."""
        if int(self.block[0]):
            self._fn("free", None, _P)(self.address)
        self.lo = self.hi = self.layout = None

    @property
    def address(self) -> int:
        return self.block.ctypes.data

    def table_bytes(self) -> int:
        """What its table takes (capacity x entry)."""
        return int(self.block[1]) * self.entry_bytes


__all__ = ["PaneAccumulator"]
