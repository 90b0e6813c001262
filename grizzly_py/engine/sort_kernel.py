"""Kernel objects of sort-based operators: window aggregates grouped by sorting key/pointer
arrays (``codegen/sort_grouping.py``) and the sort-merge window join (``codegen/sort_merge_join.py``).

Records go to key/pointer arrays per pane; the kernel sorts each batch's rows into a run before
it returns. Windows fire as sliding windows do (``SlidingWindowKernel``: ``merge_emit`` per
complete window over every worker's state block, then ``drop_panes``), so tumbling windows take
the same path (a window is its own pane). The only addition: sorting a run may run out of
memory after the batch's rows are in, which the kernel reports in the state's error word.
The sort-merge join keeps the hash join's engine side (kept batches, output order) and replaces
insertion and firing: its sides append unsorted rows, and a pane is sorted once, when the first
window holding it fires.
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
from .join_kernel import JoinKernel, key_words_in_order
from .kernels import SlidingWindowKernel
from .parallel import run_now, run_shared, wait_all
from .pair_counts import counted_rows
from .sort_snapshot import export_kpa_block, export_sort_merge_join, restore_kpa_block, restore_sort_merge_join
from .state_memory import kept_batch_bytes, kpa_bytes
from .string_release import concat_ids, kpa_keys, string_key_positions

_P, _I64 = ctypes.c_void_p, ctypes.c_int64
MERGE_SPLIT_ROWS = 1 << 16  # rows of both sides at least for a merge in key ranges on the pool


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
    keeps {key words, ref} rows per pane in its own state block; a complete window sorts each
    side's panes not yet sorted, merges the panes' runs, and the two sorted arrays are joined by
    merging them in compiled code. Output rows and their order are the hash join's: the merge
    writes the keys in ascending key words, which ``JoinKernel._window_pairs`` reorders only
    where key words do not compare as the keys do (floats, strings)."""

    grouping = "sort"

    def __init__(self, pipeline: Pipeline, input_name: str):
        super().__init__(pipeline, input_name)
        self.geometry = window_geometry(self.terminal.assigner)
        self.slide, self.pane, self.window_size = self.geometry.slide, self.geometry.pane, self.geometry.size
        self.previous_watermark = None  # windows complete at it have fired
        self.row_words = self.gen.key_words + 1
        # windows fire in order of their ends and the merge writes keys in ascending key words
        self.groups_in_key_order = key_words_in_order(self.terminal.sides[0].keys)

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

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """The pairs of every window with end - 1 <= watermark, in the hash join's order."""
        previous, self.previous_watermark = self.previous_watermark, watermark
        if watermark < self.counter(abi.STATE_MIN_OPEN_END) - 1:
            return None
        panes = np.concatenate([_pane_starts(k.state) for k in self.sides])
        windows = self.geometry.ready_windows(panes, previous, watermark)
        if self.terminal.pair_counts is not None and self.groups_in_key_order:
            result = self._counted_windows(windows)
        else:
            result = self._paired_windows(windows)
        drop = self._function("drop", None, _P, _I64)
        min_ref = self._function("min_ref", _I64, _P)
        for side, k in enumerate(self.sides):  # after gathering: the rows come from the kept batches
            drop(k.state.ctypes.data, watermark)
            remaining = _pane_starts(k.state)
            k.state[abi.STATE_MIN_OPEN_END] = int(remaining.min()) + self.pane if len(remaining) else abi.INT64_MAX
            self.stores[side].drop_below(min_ref(k.state.ctypes.data))
        return result

    def _paired_windows(self, windows) -> pa.RecordBatch | None:
        """The output rows of the pairs of ``windows`` (the ready windows' (start, end))."""
        pieces, bounds, groups_so_far = [], [], 0
        for lo, hi in windows:
            pairs = self._merge_window(lo)
            if pairs is None:
                continue
            lrefs, rrefs, groups = pairs
            if groups is not None:
                groups = groups + groups_so_far if groups_so_far else groups
                groups_so_far = int(groups[-1]) + 1
            pieces.append((lrefs, rrefs, groups))
            bounds.append((lo, hi, len(lrefs)))
        result = None
        if pieces:  # (one window: no copy)
            lrefs, rrefs, groups = (c[0] if len(c) == 1 or c[0] is None else np.concatenate(c) for c in zip(*pieces))
            los, his, counts = (np.array(b, dtype=np.int64) for b in zip(*bounds))
            result = self._window_pairs(np.repeat(los, counts), np.repeat(his, counts), lrefs, rrefs, groups)
        return result

    def _counted_windows(self, windows) -> pa.RecordBatch | None:
        """The count's rows of ``windows`` where the join counts its pairs (``pair_counts.py``):
        the merge counts each left row's pairs, in key order, without writing a pair."""
        pieces = []
        for lo, hi in windows:
            counted = self._merge_window(lo, counts=True)
            if counted is not None:
                lrefs, pairs, words = counted
                pieces.append((np.full(len(lrefs), lo, dtype=np.int64), np.full(len(lrefs), hi, dtype=np.int64),
                               lrefs, pairs, words))
        if not pieces:
            return None
        *rows, words = (c[0] if len(c) == 1 else np.concatenate(c) for c in zip(*pieces))
        return counted_rows(self, *rows, key_words=words)

    def _merge_window(self, lo: int, counts: bool = False):
        """The pairs of window [lo, lo + size): (left refs, right refs, key groups numbered from
        0, or None where the groups are in key order already: ``groups_in_key_order``), per key
        in (left ref, right ref) order, keys in ascending key words; ``counts``: (left refs, their
        numbers of pairs, their first key words) of the left rows that pair, in the same order.
        None when no key pairs. With a worker pool the two sides sort at once, and the pairs'
        merge runs in key ranges."""
        rows = [(0, 0), (0, 0)]
        self._function("window", _I64, _P, _I64, _P)  # (compiled before any worker asks)
        sorted_rows = [lambda: self._window_rows(0, lo), lambda: self._window_rows(1, lo)]
        try:
            if self.pool is None:
                rows = [call() for call in sorted_rows]
            else:  # each side's rows are freed below, whichever side failed
                futures = [self.pool.submit(lambda _worker: sorted_rows[0]()), run_now(sorted_rows[1])]
                for side, future in enumerate(futures):
                    if future.exception() is None:  # (waits for it)
                        rows[side] = future.result()
                wait_all(futures)  # the first error
            (left, nl), (right, nr) = rows
            if not nl or not nr:
                return None
            if counts:
                return self._merge("merge_count", left, nl, right, nr, "words")
            return self._merge("merge_join", left, nl, right, nr, None if self.groups_in_key_order else "groups")
        finally:
            free_rows = self._function("free_rows", None, _P)
            for address, _ in rows:
                if address:
                    free_rows(address)

    def _merge(self, name: str, left: int, nl: int, right: int, nr: int, third: str | None):
        """``_merge_window``'s result from the sorted rows at ``left`` and ``right`` by compiled
        ``name``: ``merge_join`` (left refs, right refs, key groups: ``third`` "groups", numbered
        from 0 per range and continued here, or None where it writes none) or ``merge_count``
        (left refs, numbers of pairs, first key words: ``third`` "words"). Each key range
        (``_key_ranges``) is counted, then written at its offset, one native call per range;
        None when no key pairs."""
        merge = self._function(name, _I64, _P, _I64, _P, _I64, _P, _P, _P)
        parts = self._key_ranges(left, nl, right, nr)
        counts = run_shared(self.pool, [lambda p=p: merge(p[0], p[1], p[2], p[3], None, None, None) for p in parts])
        n = sum(counts)
        if not n:
            return None
        outputs = [np.empty(n, dtype=np.int64) for _ in range(2 if third is None else 3)] + [None] * (third is None)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist()

        def fill(p, at):
            return merge(p[0], p[1], p[2], p[3], *(a.ctypes.data + 8 * at if a is not None else None for a in outputs))
        written = run_shared(self.pool, [lambda p=p, at=at: fill(p, at) for p, at in zip(parts, starts)])
        if written != counts:
            raise RuntimeError(f"pipeline {self.pipeline.id}: {name} wrote {written} rows, counted {counts}")
        if third == "groups":  # each range numbers its groups from 0: continue the ones before
            groups = outputs[2]
            for at, count in zip(starts[1:], counts[1:]):
                if at and count:
                    groups[at:at + count] += groups[at - 1] + 1
        return tuple(outputs)

    def _key_ranges(self, left: int, nl: int, right: int, nr: int) -> list[tuple[int, int, int, int]]:
        """The sorted rows cut into (left address, rows, right address, rows) parts at keys that
        split the left rows evenly, one part per worker (a key's rows stay in one part, so the
        parts' pairs, one after the other, are the whole merge's); one part without a pool or
        with fewer than ``MERGE_SPLIT_ROWS`` rows."""
        parts = self.pool.workers if self.pool is not None and nl + nr >= MERGE_SPLIT_ROWS else 1
        if parts < 2:
            return [(left, nl, right, nr)]
        rw, kw = self.row_words, self.gen.key_words
        lkeys = native_words.view(left, nl * rw).reshape(nl, rw)[:, :kw]
        rkeys = native_words.view(right, nr * rw).reshape(nr, rw)[:, :kw]
        cuts = [(0, 0)]
        for k in range(1, parts):
            key = tuple(lkeys[nl * k // parts].tolist())
            cuts.append((_lower_bound(lkeys, key), _lower_bound(rkeys, key)))
        cuts.append((nl, nr))
        rb = 8 * rw
        return [(left + rb * i, i2 - i, right + rb * j, j2 - j) for (i, j), (i2, j2) in zip(cuts, cuts[1:])]

    def _window_rows(self, side: int, lo: int) -> tuple[int, int]:
        """Side ``side``'s rows {key words, ref} of window [lo, lo + size), sorted by key then
        ref, as (address of a native array the caller frees, rows); (0, 0) when there are none."""
        window = self._function("window", _I64, _P, _I64, _P)
        result = ctypes.c_void_p()
        states = np.array([self.sides[side].state.ctypes.data], dtype=np.uint64)
        n = window(states.ctypes.data, lo, ctypes.byref(result))
        if n < 0:
            raise MemoryError(f"pipeline {self.pipeline.id}: out of memory merging the join's sorted runs")
        return (result.value or 0, n) if n else (0, 0)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._allocated:
                close = self._function("close", None, _P)
                for k in self.sides:
                    close(k.state.ctypes.data)


def _lower_bound(keys: np.ndarray, key: tuple) -> int:
    """The first row of ``keys`` (rows of key words, ascending as signed words compare, as
    ``gz_kpa_cmp`` orders them) not below ``key``."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) // 2
        if tuple(keys[mid].tolist()) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _pane_starts(state: np.ndarray) -> np.ndarray:
    """The pane starts in a side's window directory (``WindowKernel.windows``' first column)."""
    slots, length = int(state[abi.STATE_WINDOWS]), int(state[abi.STATE_WINDOWS + 1])
    if not length:
        return np.zeros(0, dtype=np.int64)
    return native_words.view(slots, 4 * length)[::4].copy()
