"""``SharedWindowKernel``: a tumbling or sliding window whose workers all update ONE state with
atomic instructions (``window_state="shared"``; the code is ``codegen/shared_window.py``).

Each worker keeps its own small state block (its record counters, maximum event time, the row
where it stopped), and every block points to the same ring of window slots, which this object
owns (a numpy array; the tables hang off its slots, allocated by the kernels). Workers never
wait for each other except for a few instructions (an entry or a slot being published).

Between tasks (the driver waits for a source batch's tasks anyway) this object:
- grows the state when a kernel stopped: every table past its fill limit is rehashed into a
  bigger one, later windows start at that size, and the ring doubles when half its slots are
  open (``grow``); the driver then runs the rest of the stopped morsels again;
- fires the windows that the watermark completed (``fire``): the trigger emits each ready window
  whose trigger counter is zero (every worker left it), exactly once (its emit claim), and frees
  its slot; the ring is then compacted, so that probes stay short. Sliding windows keep panes in
  the slots: a window fires by merging its panes (in order of window start, each window once,
  as ``SlidingWindowKernel`` decides), and a pane is freed once its last window fired.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..codegen.module import window_geometry
from .kernels import SlidingWindowKernel, WindowKernel, _ResultBuffers, free_late_notes, with_capacities
from .shared_snapshot import export_shared, restore_shared

_P, _I64 = ctypes.c_void_p, ctypes.c_int64

MAX_INITIAL_TABLE_CAPACITY = 1 << 22


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class SharedRing:
    """The ring of window slots: a 64-byte aligned block of int64 words (header, then slots)."""

    def __init__(self, slots: int, table_capacity: int):
        words = abi.RING_HEADER_WORDS + slots * abi.RING_SLOT_WORDS
        self._buffer = np.zeros(words + 8, dtype=np.int64)
        skip = (-self._buffer.ctypes.data % 64) // 8  # slots on cache lines of their own
        self.words = self._buffer[skip:skip + words]
        self.header = self.words[:abi.RING_HEADER_WORDS]
        self.header[abi.RING_SLOTS] = slots
        self.header[abi.RING_OPEN_LIMIT] = slots // 2
        self.header[abi.RING_TABLE_CAPACITY] = table_capacity

    @property
    def address(self) -> int:
        return self.words.ctypes.data

    @property
    def size(self) -> int:
        return int(self.header[abi.RING_SLOTS])

    def slots(self) -> np.ndarray:
        """The slots as rows of abi.RING_SLOT_WORDS words (a view: writes go to the ring)."""
        return self.words[abi.RING_HEADER_WORDS:].reshape(self.size, abi.RING_SLOT_WORDS)

    def slot_address(self, index: int) -> int:
        return self.address + 8 * (abi.RING_HEADER_WORDS + index * abi.RING_SLOT_WORDS)

    def rebuilt(self, slots: int, pane: int, pane_offset: int) -> "SharedRing":
        """A ring of ``slots`` slots holding this ring's open windows (panes), each in the first
        free slot from its home (its number on the pane grid, (start - pane_offset) / pane, mod
        slots, as window_shared.ll.j2 computes it), so that no probe chain has a hole."""
        ring = SharedRing(slots, int(self.header[abi.RING_TABLE_CAPACITY]))
        old = self.slots()
        new = ring.slots()
        held = np.nonzero(old[:, abi.RING_SLOT_STATUS] != abi.RING_SLOT_FREE)[0]
        if np.any(old[held, abi.RING_SLOT_STATUS] != abi.RING_SLOT_OPEN):
            raise RuntimeError("shared window state: a slot is still being opened between tasks")
        for index in held:
            pos = ((int(old[index, abi.RING_SLOT_START]) - pane_offset) // pane) & (slots - 1)
            while new[pos, abi.RING_SLOT_STATUS] != abi.RING_SLOT_FREE:
                pos = (pos + 1) & (slots - 1)
            new[pos] = old[index]
        ring.header[abi.RING_OPEN] = len(held)
        return ring


class SharedWindowKernel(WindowKernel):
    """A tumbling or sliding window over one shared state; ``process`` returns the row where
    the kernel stopped (the rest of the batch must run again after ``grow``), or None."""

    parts_in_one_call = False  # a part may stop for the state to grow: the caller resumes it

    window_state = "shared"
    initial_slots = 64            # ring slots (it doubles while half of them are open)
    initial_table_capacity = 1024  # entries of a new window's table, until a window needed more

    def __init__(self, gen, input_name, workers: int = 1):
        super().__init__(gen, input_name, workers)
        self.geometry = window_geometry(gen.pipeline.terminal.assigner)
        self.slide, self.pane = self.geometry.slide, self.geometry.pane
        self.previous_watermark = None  # panes: windows complete at it have fired (empty ones too)
        self.ring = SharedRing(_pow2_at_least(max(2, self.initial_slots)), _pow2_at_least(max(2, self.initial_table_capacity)))
        self._point_states()
        self._stops = [0] * self.workers  # kernel calls that stopped early, per worker (no race)
        self.table_grows = 0    # tables rehashed into bigger ones
        self.ring_grows = 0     # times the ring doubled

    @property
    def tumbling(self) -> bool:
        return self.pane == self.window_size and not self.lateness

    refires_pending = SlidingWindowKernel.refires_pending
    _late_keys = SlidingWindowKernel._late_keys
    _windows_to_fire = SlidingWindowKernel._windows_to_fire
    _cleanup_watermark = SlidingWindowKernel._cleanup_watermark

    def _point_states(self) -> None:
        for state in self.states:
            state[abi.STATE_WINDOWS] = self.ring.address

    # --- its state: one ring for every worker (shared_snapshot.py) ------------------------------
    def _window_blocks(self) -> list[np.ndarray]:
        return [self.state]  # (every block points to the one ring)

    def export_state(self) -> dict:
        return export_shared(self)

    def restore_state(self, saved: dict) -> None:
        ring = SharedRing(int(saved["ring_slots"]), 2)
        restore_shared(self, saved, ring)
        self.ring = ring
        self._point_states()

    def process(self, batch: pa.RecordBatch, watermark: int, worker: int = 0,
                where: tuple[int, int] | None = None) -> int | None:
        if not batch.num_rows:
            return None
        rc = self.run(batch, watermark, 0, worker, where)
        self._prepare_trigger()
        if rc == abi.KERNEL_STOPPED:
            self._stops[worker] += 1
            return int(self.states[worker][abi.STATE_ERROR_ROW])
        return None

    def grow(self) -> None:
        """Make room after kernels stopped (no task may be running): grow every table past its
        fill limit (to at least twice its capacity, at most half full), and double the ring
        while half or more of its slots are open."""
        slots = self.ring.slots()
        grow = self.function("state", "shared_grow", _I64, _P, _I64)
        over = np.nonzero((slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN) & (slots[:, abi.RING_SLOT_SIZE] > slots[:, abi.RING_SLOT_LIMIT]))[0]
        for index in over:
            size, capacity = int(slots[index, abi.RING_SLOT_SIZE]), int(slots[index, abi.RING_SLOT_CAPACITY])
            new = max(2 * capacity, _pow2_at_least(2 * size + 2))  # at most half full, as hashtable.ll
            if grow(self.ring.slot_address(int(index)), new) != 0:
                raise MemoryError(f"pipeline {self.gen.pipeline.id}: out of memory growing a window's table")
            self.table_grows += 1
            header = self.ring.header
            header[abi.RING_TABLE_CAPACITY] = min(max(int(header[abi.RING_TABLE_CAPACITY]), new), MAX_INITIAL_TABLE_CAPACITY)
        slots_now = self.ring.size
        while int(self.ring.header[abi.RING_OPEN]) >= slots_now // 2:
            slots_now *= 2
        if not len(over) and slots_now == self.ring.size:
            slots_now *= 2  # a kernel stopped, so something must grow (a probe found no slot)
        if slots_now != self.ring.size:
            self._replace_ring(slots_now)
            self.ring_grows += 1

    def _replace_ring(self, slots: int) -> None:
        self.ring = self.ring.rebuilt(slots, self.pane, self.geometry.pane_offset)
        self._point_states()

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """Emit every window with end - 1 <= watermark, sorted by (window_end, keys)."""
        if not self.tumbling:  # panes (sliding, cumulative), or windows kept for their lateness
            return self._fire_sliding(watermark)
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1:
            return None
        slots = self.ring.slots()
        open_ = slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN
        ready = open_ & (slots[:, abi.RING_SLOT_START] <= watermark - (self.window_size - 1))
        if not ready.any():
            return None
        self._check_left(slots[ready])
        rows = int(slots[ready, abi.RING_SLOT_SIZE].sum())
        out = _ResultBuffers(self, rows)
        emit = self.function("state", "shared_emit", _I64, _P, _I64, _P, _P)
        n = self._checked(emit(self.ring.address, watermark, out.descriptor, self.state_ptr))
        if n != rows:
            raise RuntimeError(f"pipeline {self.gen.pipeline.id}: emitted {n} window results, expected {rows}")
        self._compact()
        return self._sorted(out.table(n)) if n else None

    def _check_left(self, slots: np.ndarray) -> None:
        """Every worker has left these windows (panes): their trigger counters are zero."""
        if np.any(slots[:, abi.RING_SLOT_USERS] != 0):
            raise RuntimeError(f"pipeline {self.gen.pipeline.id}: a worker is still inside a complete window")

    def _compact(self) -> None:
        """After a firing: the ring without the freed slots' holes, and the earliest end of a
        window that holds an open pane (a lower bound) in every worker's state block."""
        self._replace_ring(self.ring.size)
        remaining = self.ring.slots()
        starts = remaining[remaining[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN, abi.RING_SLOT_START]
        min_open_end = int(starts.min()) + self.pane if len(starts) else abi.INT64_MAX
        for state in self.states:
            state[abi.STATE_MIN_OPEN_END] = min_open_end

    def _fire_sliding(self, watermark: int) -> pa.RecordBatch | None:
        """Sliding and cumulative windows: merge the panes of every window that became complete
        since the last firing; then free the panes whose last window has fired."""
        previous, self.previous_watermark = self.previous_watermark, watermark
        late = self._late_keys()
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1 and late is None:
            return None
        slots = self.ring.slots()
        panes = slots[slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN]
        self._check_left(panes)
        starts = panes[:, abi.RING_SLOT_START]
        windows = with_capacities(self._windows_to_fire(starts, previous, watermark, late), starts,
                                  panes[:, abi.RING_SLOT_SIZE])
        merge_emit = self.function("state", "shared_merge_emit", _I64, _P, _I64, _I64, _P, _P)
        out = _ResultBuffers(self, sum(capacity for *_, capacity in windows)) if windows else None
        spans, at = [], 0  # every window's rows, one after another in the same buffers
        for lo, hi, keys, _ in windows:
            n = self._checked(merge_emit(self.ring.address, lo, hi, out.descriptor_at(at), self.state_ptr))
            if n:
                spans.append((n, hi, keys))
                at += n
        drop = self.function("state", "shared_drop_panes", None, _P, _I64)
        drop(self.ring.address, self._cleanup_watermark(watermark))
        self._compact()
        return self._sorted(out.windows_table(spans)) if spans else None

    def windows(self, state: np.ndarray | None = None) -> np.ndarray:
        """The open windows as rows of (window start, entries, capacity, size), like the
        directory of the thread-local variant."""
        slots = self.ring.slots()
        held = slots[slots[:, abi.RING_SLOT_STATUS] == abi.RING_SLOT_OPEN]
        return held[:, [abi.RING_SLOT_START, 2, abi.RING_SLOT_CAPACITY, abi.RING_SLOT_SIZE]].copy()

    def all_windows(self) -> np.ndarray:
        return self.windows()

    def metrics(self) -> dict:
        return {"stops": sum(self._stops), "table_grows": self.table_grows, "ring_grows": self.ring_grows,
                "ring_slots": self.ring.size, "table_capacity": int(self.ring.header[abi.RING_TABLE_CAPACITY])}

    def close(self):
        if not self._closed:
            close = self.function("state", "shared_close", None, _P)
            close(self.ring.address)
            free_late_notes(self)
            self._closed = True
