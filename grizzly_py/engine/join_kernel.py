"""The engine side of join pipelines: one compiled kernel per input, a shared join state, and the
input batches kept as Arrow data until no window or interval can pair their rows any more.

``JoinKernel`` is a join pipeline's kernel. ``process(side, batch, watermark)`` runs that side's
compiled kernel (``codegen/join.py``), which inserts the batch's records (as *refs*, row numbers
of the side) into the join state and probes the other side; the engine keeps the batch, so that
output rows can be gathered with ``take``. Window joins produce their pairs when their windows
fire (``fire``): the trigger writes (window start, window end, left ref, right ref) rows, the
engine sorts them by window end, key, left ref and right ref (docs/semantics.md, "Joins") and
gathers the columns. Interval joins pair records as they arrive: ``process`` returns the pairs
found, in the order the kernel found them; ``fire`` drops what the watermark expired.

A join runs in the driver thread whatever the parallelism (its inputs' projections may run as
morsel tasks): records are inserted in arrival order, which fixes the order of the pairs. With a
worker pool (``use_pool``) a firing's native work is shared with the workers: the gather of the
output columns (``join_gather``) and, in the sort-merge join, its sorts and merge.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np
import pyarrow as pa

from ..codegen import abi
from ..codegen.join import GeneratedJoin, generate_join
from ..jit import compile_ir, compile_ir_async
from ..physical.pipelines import JoinTerminal, Pipeline
from ..plan import WINDOW_START
from ..sources import TIMESTAMP_UNIT_DIVISOR
from . import native_words
from .join_gather import NativeGather
from .join_snapshot import export_join, restore_join
from .kernel_protocol import PipelineKernel
from .kernels import Kernel, output_arrow_schema, sort_indices_nulls_last
from .pair_counts import counted_rows, left_rows_of_pairs
from .state_memory import kept_batch_bytes, vector_bytes
from .string_release import concat_ids, string_key_positions, table_keys

_P, _I64 = ctypes.c_void_p, ctypes.c_int64

_SUMMED = (abi.STATE_ROWS_IN, abi.STATE_FILTERED, abi.STATE_LATE, abi.J_SIDE_PAIRS_FILTERED)


class JoinSideKernel(Kernel):
    """One input's compiled kernel; its own state block keeps its counters and points to the
    join's shared state."""

    def counter(self, index: int) -> int:
        """As ``Kernel.counter``; the side's rejected pairs too are summed over its workers' blocks."""
        if index == abi.J_SIDE_PAIRS_FILTERED:
            return int(sum(int(s[index]) for s in self.states))
        return super().counter(index)

    def __init__(self, gen, input_name: str, shared: np.ndarray):
        super().__init__(gen, input_name, 1)
        self.state[abi.J_SIDE_SHARED] = shared.ctypes.data

    def insert(self, batch: pa.RecordBatch, watermark: int, base: int) -> tuple[int, int]:
        """Insert ``batch`` (its first row has ref ``base``); returns (records inserted, pairs
        written to the output vector)."""
        self.state[abi.J_SIDE_BASE] = base
        if not batch.num_rows:
            return 0, 0
        pairs = self.run(batch, watermark, 0)
        return int(self.state[abi.J_SIDE_INSERTED]), pairs


class SideStore:
    """The batches of one side that refs may still point to, each with the ref of its first row.
    Stored batches are contiguous in refs: a batch is stored only if some record of it went into
    the join state, and the next batch's refs start after it."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.batches: list[tuple[int, pa.RecordBatch]] = []
        self.next_base = 0

    def add(self, base: int, batch: pa.RecordBatch) -> None:
        self.batches.append((base, batch))
        self.next_base = base + batch.num_rows

    def drop_below(self, ref: int) -> None:
        """Forget the batches whose rows all lie below ``ref`` (no state points to them)."""
        keep = 0
        while keep < len(self.batches) and self.batches[keep][0] + self.batches[keep][1].num_rows <= ref:
            keep += 1
        if keep:
            del self.batches[:keep]

    @property
    def rows(self) -> int:
        return sum(b.num_rows for _, b in self.batches)

    def take(self, refs: np.ndarray, columns: list[str], native: NativeGather | None = None) -> list[pa.Array]:
        """The values of ``columns`` at ``refs``: consecutive ascending rows of one batch (a
        lookup join's probe rows, each matched once) are that batch's columns or a slice of them,
        zero-copy (Arrow buffers are immutable); else, with ``native``, the compiled gather reads
        a span of batches in place (``join_gather``); else, or for the columns it leaves, each
        batch gathers its own rows (work in proportion to the rows taken, not to the rows
        kept), then one permutation restores the order of ``refs``."""
        if not len(refs) or not self.batches:
            return [pa.array([], self.schema.field(c).type) for c in columns]
        starts = np.fromiter((b for b, _ in self.batches), dtype=np.int64, count=len(self.batches))
        # the batches are contiguous in refs: the smallest and largest ref bound the span
        smallest, largest = int(refs.min()), int(refs.max())
        lo, hi = (int(i) for i in np.searchsorted(starts, [smallest, largest], side="right") - 1)
        span = self.batches[lo:hi + 1]
        if len(span) == 1:
            rows = _contiguous_rows(refs - span[0][0], smallest - span[0][0], largest - span[0][0])
            if rows is not None:  # the batch's own values: its columns, or a slice of them
                batch = span[0][1]
                return [batch.column(c).slice(rows.start, len(rows)) if len(rows) < batch.num_rows
                        else batch.column(c) for c in columns]
        gathered = native.columns(span, refs, columns, (smallest, largest)) if native is not None \
            else [None] * len(columns)
        rest = [c for c, g in zip(columns, gathered) if g is None]
        if rest:
            taken = iter(self._take(refs, rest, span, starts))
            gathered = [next(taken) if g is None else g for g in gathered]
        return gathered

    def _take(self, refs: np.ndarray, columns: list[str], span: list, starts: np.ndarray) -> list[pa.Array]:
        """``take`` by Arrow, over the batches ``span`` that hold ``refs``."""
        if len(span) == 1:  # one batch (the usual case)
            base, batch = span[0]
            indices = pa.array(refs - base, pa.int64())
            return [batch.column(c).take(indices) for c in columns]
        if 4 * len(refs) >= sum(b.num_rows for _, b in span):  # dense: one gather over the span
            indices = pa.array(refs - span[0][0], pa.int64())
            return [pa.concat_arrays([b.column(c) for _, b in span]).take(indices) for c in columns]
        which = np.searchsorted(starts, refs, side="right") - 1
        if len(self.batches) < 1 << 15:
            which = which.astype(np.int16)  # numpy sorts small integers stably by radix
        order = np.argsort(which, kind="stable")
        grouped = which[order]
        bounds = np.flatnonzero(np.diff(grouped)) + 1
        groups = np.split(order, bounds)
        pieces = []
        for group in groups:
            base, batch = self.batches[which[group[0]]]
            pieces.append((batch, pa.array(refs[group] - base, pa.int64())))
        inverse = np.empty(len(refs), dtype=np.int64)
        inverse[order] = np.arange(len(refs), dtype=np.int64)
        inverse = pa.array(inverse)
        out = []
        for c in columns:
            gathered = pa.chunked_array([batch.column(c).take(indices) for batch, indices in pieces])
            out.append(gathered.take(inverse).combine_chunks())
        return out


class JoinKernel(PipelineKernel):
    """A join pipeline's kernel (see the module docstring)."""

    workers = 1
    grouping = "hash"
    contributing_means = "rows inserted into join tables"

    @property
    def pairs_filtered(self) -> int:
        return self.counter(abi.J_SIDE_PAIRS_FILTERED)

    def __init__(self, pipeline: Pipeline, input_name: str):
        start = time.perf_counter()
        self.gen: GeneratedJoin = self.generate(pipeline)
        self.codegen_ms = (time.perf_counter() - start) * 1000
        self.pipeline = pipeline
        t: JoinTerminal = pipeline.terminal
        self.terminal = t
        self.shared = np.zeros(abi.J_WORDS, dtype=np.int64)
        self.shared[abi.J_MIN_OPEN_END] = abi.INT64_MAX
        self.shared[abi.J_MIN_REF:abi.J_MIN_REF + 2] = abi.INT64_MAX
        names = ("left", "right")
        self.sides = [JoinSideKernel(g, f"{input_name} ({names[i]} input)", self.shared)
                      for i, g in enumerate(self.gen.sides)]
        interners = [k.interner for k in self.sides if k.interner is not None]
        if interners:  # string keys of both sides in one id space
            for k in self.sides:
                k.interner = interners[0]
        self.schema = output_arrow_schema(self.gen)
        self.stores = [SideStore(_side_arrow_schema(s)) for s in t.sides]
        self.key_columns = [e.name for _, e in t.sides[0].keys]  # the left side's: the output's key order
        self._closed = False
        self._trigger_started = False
        self._allocated = False
        self._state_ms = 0.0
        self.inserted_since_expire = 0
        # a lookup join's table goes in as its right side before the first record (restore: with the state)
        self.table_pending = t.table is not None
        self.counted_sides = self.sides[:1] if t.table is not None else self.sides  # a table is no input
        self.pool = None  # the job's worker pool, when it has one (use_pool)
        self.gather = NativeGather(self._function)

    def generate(self, pipeline: Pipeline) -> GeneratedJoin:
        return generate_join(pipeline)

    # --- the Kernel interface the driver uses ---------------------------------------------
    def counter(self, index: int) -> int:
        if index in _SUMMED:
            return sum(k.counter(index) for k in self.counted_sides)
        if index == abi.STATE_MIN_OPEN_END:
            return int(self.shared[abi.J_MIN_OPEN_END])
        return 0

    @property
    def compile_ms(self) -> float:
        return sum(k.compile_ms for k in self.sides) + self._state_ms

    def _function(self, name: str, restype, *argtypes):
        fns = self.__dict__.setdefault("_fns", {})
        fn = fns.get(name)
        if fn is None:
            start = time.perf_counter()
            module = compile_ir(self.gen.state.ir, self.gen.state.opt_level)
            self._state_ms += (time.perf_counter() - start) * 1000
            self.__dict__.setdefault("_modules", []).append(module)
            fn = fns[name] = module.function(f"{self.gen.prefix}_{name}", restype, *argtypes)
        return fn

    # --- inserting ----------------------------------------------------------------------
    def process(self, side: int, batch: pa.RecordBatch, watermark: int) -> pa.RecordBatch | None:
        """Insert a batch of input ``side``; a join that pairs on arrival returns the pairs it
        completes."""
        if self.table_pending:
            self.table_pending = False
            for batch_of_table in self.terminal.table.to_batches():
                self.process(1, batch_of_table, abi.INT64_MIN)
        store = self.stores[side]
        base = store.next_base
        self._allocated = self._allocated or batch.num_rows > 0  # (close frees what a failed call left)
        inserted, pairs = self.sides[side].insert(batch, watermark, base)
        if inserted:
            store.add(base, batch)
            self.inserted_since_expire += inserted
        if not self._trigger_started and batch.num_rows:
            self._trigger_started = True  # compile the trigger while the next batches run
            compile_ir_async(self.gen.state.ir, self.gen.state.opt_level, background=True)
        if self.terminal.is_window or not pairs:
            out = None
        else:
            out = self._interval_pairs(pairs)
        if self.terminal.table is not None and side == 0:
            store.drop_below(store.next_base)  # the stream side of a lookup join holds no record
        return out

    def _interval_pairs(self, pairs: int) -> pa.RecordBatch:
        vec = self.shared[abi.J_OUT:abi.J_OUT + 3]
        words = native_words.copy(int(vec[0]), 3 * pairs).reshape(pairs, 3)
        self.shared[abi.J_OUT + 1] = 0  # the vector is empty again (its memory is reused)
        return self._rows(None, None, words[:, 0], words[:, 1], words[:, 2])

    def use_pool(self, pool) -> None:
        """Share a firing's native work (the gather of the output columns; the sort-merge join's
        sorts) with ``pool``'s workers (the job's; None: the driver alone)."""
        self.pool = self.gather.pool = pool

    # --- firing -------------------------------------------------------------------------
    @property
    def max_event_time(self) -> int:
        return abi.INT64_MIN

    def fire(self, watermark: int) -> pa.RecordBatch | None:
        """Window joins: the pairs of every window with end - 1 <= watermark, ordered by window
        end, key, left arrival, right arrival. Interval joins: drop expired records."""
        if not self.terminal.is_window:
            self._expire(watermark)
            return None
        if watermark < int(self.shared[abi.J_MIN_OPEN_END]) - 1:
            return None
        count_ready = self._function("count_ready", _I64, _P, _I64)
        ready = count_ready(self.shared.ctypes.data, watermark)
        size = max(ready, 1)
        columns = [np.empty(size, dtype=np.int64) for _ in range(5)]  # starts, ends, left refs, right refs, groups
        out = np.array([c.ctypes.data for c in columns], dtype=np.uint64)
        emit = self._function("emit", _I64, _P, _I64, _P)
        n = emit(self.shared.ctypes.data, watermark, out.ctypes.data)
        if n != ready:
            raise RuntimeError(f"pipeline {self.pipeline.id}: the join emitted {n} pairs, expected {ready}")
        result = self._window_pairs(*(c[:n] for c in columns)) if n else None
        self._drop_batches()
        return result

    # whether the trigger writes a window's key groups in key order already (sort-merge: in
    # ascending key words, which is key order where ``key_words_in_order``)
    groups_in_key_order = False

    def _window_pairs(self, starts, ends, lrefs, rrefs, groups) -> pa.RecordBatch:
        """The pairs in semantic order. The trigger writes each (window, key) group's pairs
        together, in (left ref, right ref) order, so only the groups need sorting, by window end
        and key (the key values of one left record per group), unless the trigger wrote them in
        that order (windows by end, keys in order: ``groups_in_key_order``)."""
        if self.groups_in_key_order:
            return self._output_rows(starts, ends, lrefs, rrefs)
        n = len(groups)
        first = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
        counts = np.diff(np.append(first, n))
        keys = self.stores[0].take(lrefs[first], self.key_columns)
        sort = pa.table([pa.array(ends[first])] + [_sortable(k) for k in keys],
                        names=[f"c{i}" for i in range(len(keys) + 1)])
        order = sort_indices_nulls_last(sort, sort.column_names).to_numpy()
        if not (order[1:] > order[:-1]).all():  # groups out of order: permute the pairs
            counts = counts[order]
            offsets = first[order] - (np.cumsum(counts) - counts)
            perm = np.repeat(offsets, counts) + np.arange(n, dtype=np.int64)
            starts, ends, lrefs, rrefs = starts[perm], ends[perm], lrefs[perm], rrefs[perm]
        return self._output_rows(starts, ends, lrefs, rrefs)

    def _output_rows(self, starts, ends, lrefs, rrefs) -> pa.RecordBatch:
        """The output rows of a firing's pairs in semantic order: the pairs, or their counts
        where the join counts them (``pair_counts.py``)."""
        if self.terminal.pair_counts is not None:
            return counted_rows(self, *left_rows_of_pairs(starts, ends, lrefs))
        return self._rows(starts, ends, lrefs, rrefs, None)

    def _expire(self, watermark: int) -> None:
        """Compact the interval join's state once the watermark passed the earliest expiry and
        as many records came in as were held after the last compaction (amortized O(1))."""
        if watermark <= int(self.shared[abi.J_MIN_OPEN_END]):
            return
        if self.inserted_since_expire < int(self.shared[abi.J_LIVE]):
            return
        expire = self._function("expire", _I64, _P, _I64)
        expire(self.shared.ctypes.data, watermark)
        self.inserted_since_expire = 0
        self._drop_batches()

    def _drop_batches(self) -> None:
        for side, store in enumerate(self.stores):
            store.drop_below(int(self.shared[abi.J_MIN_REF + side]))

    # --- output rows --------------------------------------------------------------------
    def _rows(self, starts, ends, lrefs, rrefs, times) -> pa.RecordBatch:
        t = self.terminal
        arrays = []
        if t.is_window:
            arrays += [self._time_array(starts), self._time_array(ends)]
        # the compiled gather only where workers share it: on one thread, Arrow's take over the
        # concatenated batches costs as much, and its outputs reuse the concatenations' freed
        # memory (fewer page faults than fresh output buffers: join_gather)
        native = self.gather if self.gather.pool is not None else None
        for side, refs in ((0, lrefs), (1, rrefs)):
            columns = t.sides[side].columns
            arrays += self.stores[side].take(refs, [c for _, c in columns], native)
        if t.event_time_column is not None:
            arrays.append(pa.array(times, pa.int64()))
        arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
        arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _time_array(self, ms: np.ndarray) -> pa.Array:
        t = self.schema.field(WINDOW_START).type
        if pa.types.is_timestamp(t):
            factor = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
            scaled = ms // 1000 if factor is None else ms * factor
            return pa.array(scaled, type=pa.int64()).cast(t)
        return pa.array(ms, type=pa.int64())

    # --- state ------------------------------------------------------------------------------
    def state_rows(self) -> tuple[int, int]:
        """Rows of the batches each side keeps (for tests and metrics)."""
        return self.stores[0].rows, self.stores[1].rows

    @property
    def interner(self):
        """The interner of both sides' string keys (one id space)."""
        return self.sides[0].interner

    def export_state(self) -> dict:
        return export_join(self)

    def restore_state(self, saved: dict) -> None:
        restore_join(self, saved)

    def _tables(self) -> list[tuple[int, int]]:
        """(entries, capacity) of the join's hash tables: its key table (interval and session
        joins) and its window directory's tables (window joins)."""
        shared = self.shared
        tables = [(int(shared[abi.J_TABLE]), int(shared[abi.J_TABLE + 1]))]
        slots, length = int(shared[abi.J_DIR]), int(shared[abi.J_DIR + 1])
        if slots and length:
            words = native_words.view(slots, length * abi.J_SLOT_WORDS).reshape(length, abi.J_SLOT_WORDS)
            tables += [(int(a), int(c)) for a, c in words[:, 1:3]]
        return tables

    def structure_bytes(self) -> int:
        """The shared state's tables, window directory and ref vectors (a one-ref vector is
        inline: no bytes of its own), a session join's nodes (native walk), an interval join's
        output vector; and the batches the inputs keep."""
        shared, entry = self.shared, self.gen.entry_size
        tables = self._tables()  # the key table, then one per directory slot
        total = sum(c for _, c in tables) * entry + 8 * abi.J_SLOT_WORDS * (len(tables) - 1) + 8 * int(shared[abi.J_OUT + 2])
        if self.terminal.join_kind == "session":
            if self._allocated and int(shared[abi.J_TABLE + 1]):
                total += int(self._function("heap_bytes", _I64, _P)(shared.ctypes.data))
        else:
            refs = 1 + self.gen.key_words  # the first ref vector's entry word (windows, interval)
            total += sum(vector_bytes(a, c, entry // 8, [refs + 2, refs + 5]) for a, c in tables)
        return total + kept_batch_bytes(self.stores)

    def held_string_ids(self) -> np.ndarray:
        keys = string_key_positions(self.terminal.sides[0].keys)
        if not keys:
            return np.zeros(0, dtype=np.int64)
        entry_words = self.gen.entry_size // 8
        return concat_ids([table_keys(a, c, entry_words, keys, nullable=False) for a, c in self._tables()])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._allocated:  # else no record went in: nothing was allocated
                close = self._function("close", None, _P)
                close(self.shared.ctypes.data)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _contiguous_rows(rows: np.ndarray, smallest: int, largest: int) -> range | None:
    """``rows`` as a range when they are consecutive ascending row numbers (every probe row of a
    batch matched once, as in a lookup join: the gather would copy the batch's own values);
    else None. ``smallest``, ``largest``: the rows' bounds (known to the caller)."""
    n = len(rows)
    if largest - smallest + 1 != n or rows[0] != smallest or rows[-1] != largest:
        return None
    if n > 2 and not (rows[1:] > rows[:-1]).all():  # ascending without repeats: all of the range
        return None
    return range(smallest, largest + 1)


def _side_arrow_schema(side) -> pa.Schema:
    from ..types import to_arrow_type
    return pa.schema([pa.field(f.name, f.arrow_type if f.arrow_type is not None else to_arrow_type(f.dtype))
                      for f in side.schema])


def key_words_in_order(keys) -> bool:
    """Whether key words (``codegen.lowering.key_word``) compare, as signed integers, as the
    keys' values do: integers, bools and timestamps (epoch milliseconds), but not floats (their
    bits) or strings (interned ids)."""
    return all(f.dtype.is_integer or f.dtype.is_bool or f.dtype.is_timestamp for f, _ in keys)


def _sortable(column) -> pa.Array:
    """A key column as the join orders keys: timestamps by their milliseconds (the key's value),
    dictionaries by their values."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_timestamp(column.type):
        mul, div = TIMESTAMP_UNIT_DIVISOR[column.type.unit]
        raw = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
        column = pa.array(raw * mul // div, pa.int64())
    return column


__all__ = ["JoinKernel", "JoinSideKernel", "SideStore", "key_words_in_order"]
