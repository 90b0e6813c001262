"""Kernel objects of sort-based operators: window aggregates grouped by sorting key/pointer
arrays (``codegen/sort_grouping.py``) and the sort-merge window join (``codegen/sort_merge_join.py``).

Records go to key/pointer arrays per pane; the kernel sorts each batch's rows into a run before
it returns. Windows fire as sliding windows do (``SlidingWindowKernel``: ``merge_emit`` per
complete window over every worker's state block, then ``drop_panes``), so tumbling windows take
the same path (a window is its own pane). The only addition: sorting a run may run out of
memory after the batch's rows are in, which the kernel reports in the state's error word.
The sort-merge join keeps the hash join's engine side (kept batches, output order) and replaces
insertion and firing.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..codegen.module import window_geometry
from ..codegen.sort_merge_join import generate_sort_merge_join
from ..physical.pipelines import Pipeline
from . import native_words
from .join_kernel import JoinKernel
from .kernels import SlidingWindowKernel
from .sort_snapshot import export_kpa_block, export_sort_merge_join, restore_kpa_block, restore_sort_merge_join
from .state_memory import kept_batch_bytes, kpa_bytes
from .string_release import concat_ids, kpa_keys, string_key_positions

_P, _I64 = ctypes.c_void_p, ctypes.c_int64


class SortWindowKernel(SlidingWindowKernel):
    """Tumbling, sliding and cumulative windows grouped by sorting (thread-local state per worker)."""

    grouping = "sort"
    parts_in_one_call = False  # the epilogue's sort reports running out of memory in the state

    def process(self, batch: pa.RecordBatch, watermark: int, worker: int = 0,
                where: tuple[int, int] | None = None) -> None:
        super().process(batch, watermark, worker, where)
        state = self.states[worker]
        if state[abi.STATE_ERROR_CODE] == abi.ERROR_OUT_OF_MEMORY:  # the epilogue's sort failed
            self._raise(abi.ERROR_OUT_OF_MEMORY, batch, state, where)

    # --- its state: key/pointer arrays per pane (sort_snapshot.py) ------------------------------
    def _export_block(self, state: np.ndarray) -> dict:
        return export_kpa_block(state, self.gen.kpa_row_words)

    def _restore_block(self, state: np.ndarray, block: dict) -> None:
        restore_kpa_block(state, block, self.gen.kpa_row_words, f"pipeline {self.gen.pipeline.id}")

    def structure_bytes(self) -> int:
        return sum(kpa_bytes(state, self.gen.kpa_row_words) for state in self.states)

    def held_string_ids(self) -> np.ndarray:
        keys = string_key_positions(self.gen.pipeline.terminal.keys)  # rows: {key null mask, key words, ...}
        values = list(self.gen.kpa_string_words)  # (an aggregate's value word, null or not)
        return concat_ids([kpa_keys(s, self.gen.kpa_row_words, [1 + k for k in keys], keys) for s in self.states]
                          + [kpa_keys(s, self.gen.kpa_row_words, values, None) for s in self.states])


class SortMergeJoinKernel(JoinKernel):
    """A window join (tumbling, sliding) by sort-merge (``codegen/sort_merge_join.py``): each side
    keeps sorted {key words, ref} runs per pane in its own state block; a complete window merges
    each side's runs of its panes and the two sorted arrays are joined by merging them. Output
    rows and their order are the hash join's (``JoinKernel._window_pairs`` orders the groups)."""

    grouping = "sort"

    def __init__(self, pipeline: Pipeline, input_name: str):
        super().__init__(pipeline, input_name)
        self.geometry = window_geometry(self.terminal.assigner)
        self.slide, self.pane, self.window_size = self.geometry.slide, self.geometry.pane, self.geometry.size
        self.previous_watermark = None  # windows complete at it have fired
        self.row_words = self.gen.key_words + 1

    def generate(self, pipeline: Pipeline):
        return generate_sort_merge_join(pipeline)

    # --- its state: each side's key/pointer arrays, the kept batches (sort_snapshot.py) ----------
    def export_state(self) -> dict:
        return export_sort_merge_join(self)

    def restore_state(self, saved: dict) -> None:
        restore_sort_merge_join(self, saved)

    def structure_bytes(self) -> int:
        return sum(kpa_bytes(k.state, self.row_words) for k in self.sides) + kept_batch_bytes(self.stores)

    def held_string_ids(self) -> np.ndarray:
        words = string_key_positions(self.terminal.sides[0].keys)  # rows: {key words, ref}
        return concat_ids([kpa_keys(k.state, self.row_words, words, None) for k in self.sides])

    def counter(self, index: int) -> int:
        if index == abi.STATE_MIN_OPEN_END:
            return min(k.counter(index) for k in self.sides)
        return super().counter(index)

    def process(self, side: int, batch: pa.RecordBatch, watermark: int) -> None:
        super().process(side, batch, watermark)
        state = self.sides[side].state
        if state[abi.STATE_ERROR_CODE] == abi.ERROR_OUT_OF_MEMORY:  # the epilogue's sort failed
            self.sides[side]._raise(abi.ERROR_OUT_OF_MEMORY, batch, state, None)

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """The pairs of every window with end - 1 <= watermark, in the hash join's order."""
        previous, self.previous_watermark = self.previous_watermark, watermark
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1:
            return None
        panes = np.concatenate([_pane_starts(k.state) for k in self.sides])
        windows = self.geometry.ready_windows(panes, previous, watermark)
        pieces, groups_so_far = [], 0
        for lo, hi in windows:
            left, right = (self._window_rows(side, lo) for side in (0, 1))
            pairs = merge_join(left, right, self.gen.key_words)
            if pairs is None:
                continue
            lrefs, rrefs, groups = pairs
            ones = np.ones(len(lrefs), dtype=np.int64)
            pieces.append((ones * lo, ones * hi, lrefs, rrefs, groups + groups_so_far))
            groups_so_far += int(groups[-1]) + 1
        result = self._window_pairs(*(np.concatenate(column) for column in zip(*pieces))) if pieces else None
        drop = self._function("drop", None, _P, _I64)
        min_ref = self._function("min_ref", _I64, _P)
        for side, k in enumerate(self.sides):  # after gathering: the rows come from the kept batches
            drop(k.state.ctypes.data, watermark)
            remaining = _pane_starts(k.state)
            k.state[abi.STATE_MIN_OPEN_END] = int(remaining.min()) + self.pane if len(remaining) else abi.INT64_MAX
            self.stores[side].drop_below(min_ref(k.state.ctypes.data))
        return result

    def _window_rows(self, side: int, lo: int) -> np.ndarray:
        """Side ``side``'s rows {key words, ref} of window [lo, lo + size), sorted by key then ref."""
        window = self._function("window", _I64, _P, _I64, _P)
        free_rows = self._function("free_rows", None, _P)
        result = ctypes.c_void_p()
        states = np.array([self.sides[side].state.ctypes.data], dtype=np.uint64)
        n = window(states.ctypes.data, lo, ctypes.byref(result))
        if n < 0:
            raise MemoryError(f"pipeline {self.pipeline.id}: out of memory merging the join's sorted runs")
        if n == 0:
            return np.zeros((0, self.row_words), dtype=np.int64)
        words = n * self.row_words
        rows = native_words.copy(result.value, words).reshape(n, self.row_words)
        free_rows(result.value)
        return rows

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._allocated:
                close = self._function("close", None, _P)
                for k in self.sides:
                    close(k.state.ctypes.data)


def _pane_starts(state: np.ndarray) -> np.ndarray:
    """The pane starts in a side's window directory (``WindowKernel.windows``' first column)."""
    slots, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
    if not length:
        return np.zeros(0, dtype=np.int64)
    return native_words.view(slots, 4 * length)[::4].copy()


def merge_join(left: np.ndarray, right: np.ndarray, key_words: int):
    """Join two arrays of rows {key words, ref} sorted by (key words, ref): (left refs, right refs,
    group numbers) with every pair of equal keys, per key in (left ref, right ref) order, keys in
    the arrays' order; None when no key matches."""
    if not len(left) or not len(right):
        return None
    lkeys, rkeys = (_key_records(rows, key_words) for rows in (left, right))
    lstart, lcount = _runs(lkeys)
    rstart, rcount = _runs(rkeys)
    _, li, ri = np.intersect1d(lkeys[lstart], rkeys[rstart], assume_unique=True, return_indices=True)
    if not len(li):
        return None
    order = np.argsort(li, kind="stable")  # keys in the left array's (sorted) order
    li, ri = li[order], ri[order]
    a, b = lcount[li], rcount[ri]
    sizes = a * b
    group = np.repeat(np.arange(len(li), dtype=np.int64), sizes)
    k = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    bb = b[group]
    lrows = lstart[li][group] + k // bb
    rrows = rstart[ri][group] + k % bb
    return left[lrows, key_words], right[rrows, key_words], group


def _key_records(rows: np.ndarray, key_words: int) -> np.ndarray:
    """The key words of each row as one structured record (compares and sorts field by field)."""
    keys = np.ascontiguousarray(rows[:, :key_words])
    return keys.view([(f"k{i}", "<i8") for i in range(key_words)]).ravel()


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of equal adjacent keys."""
    start = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return start, np.diff(np.append(start, len(keys)))
