"""Partial window states: out of a task's kernel as Arrow rows, and back into compiled merges.

A window kernel keeps, per open window or pane, a hash table of entries
``[tag, key words..., aggregate state words...]`` (runtime/hashtable.ll, runtime/windows.ll; the
layout of one pipeline is ``GeneratedPipeline.grouping``). A *partial state* is one entry as an
Arrow row: the key values (decoded, so string ids and float normalization do not depend on the
process), the start of the window it belongs to (``WINDOW_START``), each decomposable aggregate's
state words as int64 columns (doubles as their bits) and each holistic aggregate's value vector
(order-preserving int64 keys) as a list column; a ``top_k`` vector ships only its k largest
values (the top k of a union is the top k of the parts' top k). An aggregate of strings ships
strings where its state holds interned ids (its value word, or its vector: ``string_column``),
and the merging kernel interns them again. Pane entries are written once per
window they belong to, so every row names exactly one window.

``export_windows`` reads partial states out of a kernel (no generated code is needed: the words
are copied as they are). ``merge_partials`` goes the other way: for each window it lays the rows
out as entries of a state block with one pane (the window's start) and calls the pipeline's
compiled ``merge_emit``, the function that merges panes and worker states in the embedded engine,
so partial states from different tasks merge with the aggregates' own merge macros and finish with
their own finalizers (holistic ones included): the results are the embedded engine's.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codegen import abi
from ..codegen.abi import EntryLayout
from ..codegen.module import GeneratedPipeline, window_geometry
from ..engine import native_words
from ..engine.kernels import (
    _ResultBuffers,
    new_state_block,
    output_arrow_schema,
    sort_indices_nulls_last,
)
from ..engine.window_rows import ranks
from ..plan import WINDOW_END
from ..window_rank import ARRIVAL, NULL_BITS, null_column, row_column
from ..window_geometry import PaneGeometry

WINDOW_START = "__gz_ws"   # the start (epoch ms) of the window a partial row belongs to
_P, _I64 = ctypes.c_void_p, ctypes.c_int64
_TAG_BIT = np.uint64(1 << 63)
_HASH_MASK = np.uint64((1 << 48) - 1)
_NAN_WORD = 9221120237041090560  # the one NaN key word (codegen/module.py _key_word)


def partial_schema(gen: GeneratedPipeline) -> pa.Schema:
    """Arrow schema of the partial-state rows of window pipeline ``gen``."""
    out = output_arrow_schema(gen)
    keys = [out.field(f.name) for f, _ in gen.pipeline.terminal.keys]
    fields = keys + [pa.field(WINDOW_START, pa.int64(), nullable=False)]
    layout = EntryLayout.of(gen)
    for name, word in layout.columns():
        value = pa.string() if string_column(layout, name, word) else pa.int64()
        fields.append(pa.field(name, pa.list_(value) if word is None else value, nullable=word is not None
                               and value == pa.string()))
    return pa.schema(fields)


def _aggregate_of(layout: EntryLayout, name: str):
    """The aggregate whose partial-state column is ``name`` (``__gz_a<i>_...``)."""
    return layout.aggregates[int(name[len("__gz_a"):].split("_")[0])]


def string_column(layout: EntryLayout, name: str, word: int | None) -> bool:
    """Whether partial-state column ``name`` (at entry ``word``; None: a vector) holds interned
    ids, shipped as strings: an aggregate of strings' vector, or its value word."""
    a = _aggregate_of(layout, name)
    return a.interned and (word is None or word == a.word)


# ----------------------------------------------------------------------------------------------
# export: kernel state -> partial rows
def read_panes(kernel) -> list[tuple[int, np.ndarray]]:
    """(pane start, live entries as an (n, entry words) int64 copy) of every pane of every state
    block of ``kernel``; each holistic aggregate's vector becomes (values array) in a side list."""
    layout = EntryLayout.of(kernel.gen)
    panes = []
    for state in kernel.states:
        for start, entries, capacity, _size in kernel.windows(state):
            if not capacity:
                continue
            rows = native_words.view(int(entries), int(capacity) * layout.entry_words).reshape(int(capacity), layout.entry_words)
            live = rows[rows[:, 0].view(np.uint64) > 1].copy()
            panes.append((int(start), live))
    return panes


def _vector_values(rows: np.ndarray, word: int, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(list offsets, values) of the value vectors at ``word`` of each row (copied); with ``k``,
    only each vector's k largest values (top_k; the keys order as the values do)."""
    lengths = rows[:, word + 1] if k is None else np.minimum(rows[:, word + 1], k)
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.empty(int(offsets[-1]), dtype=np.int64)
    for r in range(len(rows)):
        n = int(lengths[r])
        if not n:
            continue
        held = int(rows[r, word + 1])
        words = native_words.view(int(rows[r, word]), held)
        if n < held:
            words = np.partition(words, held - n)[held - n:]
        values[offsets[r]:offsets[r + 1]] = words
    return offsets, values


def window_starts(geometry: PaneGeometry, pane_starts, after: int | None, upto: int | None) -> np.ndarray:
    """Starts (ascending) of the windows that hold one of ``pane_starts`` and are complete at
    watermark ``upto`` (None: +infinity) but were not yet at ``after`` (None: -infinity)
    (``PaneGeometry.ready_windows``; a partial row names its window by its start, which only
    the kinds whose windows have one size do: ``WindowKind.spark == "partials"``)."""
    return np.array([lo for lo, _ in geometry.ready_windows(pane_starts, after, upto)], dtype=np.int64)


def partial_geometry(gen: GeneratedPipeline) -> PaneGeometry:
    """The geometry of a window pipeline whose windows ship as partial states."""
    geometry = window_geometry(gen.pipeline.terminal.assigner)
    if geometry.cumulative:  # (windows of a period share their start; the kind is "keyed" on Spark)
        raise ValueError("partial window states name a window by its start: cumulative windows cannot ship them")
    return geometry


def export_windows(kernel, starts: np.ndarray, panes=None) -> pa.RecordBatch | None:
    """Partial rows of the windows starting at ``starts`` (each pane's entries once per window
    holding it); None when they hold nothing."""
    gen = kernel.gen
    layout = EntryLayout.of(gen)
    size = partial_geometry(gen).size
    panes = read_panes(kernel) if panes is None else panes
    chunks, window_of = [], []
    for lo in starts:
        for ps, rows in panes:
            if lo <= ps < lo + size and len(rows):
                chunks.append(rows)
                window_of.append(np.full(len(rows), lo, dtype=np.int64))
    if not chunks:
        return None
    rows = np.concatenate(chunks)
    schema = partial_schema(gen)
    tags = rows[:, 0].view(np.uint64)
    arrays = []
    for i, (f, _) in enumerate(gen.pipeline.terminal.keys):
        valid = ((tags >> np.uint64(48 + i)) & np.uint64(1)) == 0
        arrays.append(kernel.key_array(f, rows[:, 1 + i].copy(), valid.astype(np.uint8)))
    arrays.append(pa.array(np.concatenate(window_of), pa.int64()))
    for name, word in layout.columns():
        strings = string_column(layout, name, word)
        if word is None:
            a = _aggregate_of(layout, name)
            offsets, values = _vector_values(rows, a.word, a.shipped_values)
            values = kernel.interner.values(values, np.ones(len(values), np.uint8), pa.string()) if strings \
                else pa.array(values, pa.int64())
            arrays.append(pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values))
        elif strings:  # (a state without a value holds id 0, which means nothing: shipped as null)
            a = _aggregate_of(layout, name)
            held = rows[:, a.word + a.words - 1] != 0  # first/last: the count is its last word
            arrays.append(kernel.interner.values(rows[:, word].copy(), held.astype(np.uint8), pa.string()))
        else:
            arrays.append(pa.array(rows[:, word].copy(), pa.int64()))
    return top_rows_only(gen, pa.RecordBatch.from_arrays(arrays, schema=schema))


def top_rows_only(gen: GeneratedPipeline, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Partial rows of a window Top-N (``window_rank.py``) with each row's vectors cut to its
    ``n`` first rows by the Top-N's order, ties by arrival (a group's first ``n`` are among each
    part's first ``n``); other windows' rows as they are. The i-th entries of a row's vectors
    belong to one record: every vector keeps the same entries, in the order they had."""
    ranked = gen.pipeline.terminal.rows
    if ranked is None or not ranked.order.ranked or not batch.num_rows:
        return batch
    layout = EntryLayout.of(gen)
    vector = {a.name: f"__gz_a{i}_values" for i, a in enumerate(layout.aggregates)}
    arrivals = batch.column(vector[ARRIVAL])
    if pc.max(pc.list_value_length(arrivals)).as_py() <= ranked.order.n:
        return batch
    group = pc.list_parent_indices(arrivals).to_numpy()
    values = {}
    for name, _descending in ranked.order.by:
        i = ranked.columns.index(name)
        column = pc.list_flatten(batch.column(vector[row_column(i)]))
        if ranked.schema.field(name).dtype.is_float:  # a float's word is its double's bits
            column = pa.array(column.to_numpy(zero_copy_only=False).view(np.float64))
        null = (pc.list_flatten(batch.column(vector[null_column(i // NULL_BITS)])).to_numpy(zero_copy_only=False)
                >> (i % NULL_BITS)) & 1
        values[name] = pc.if_else(pa.array(null == 0), column, pa.scalar(None, column.type))
    order, rank = ranks(ranked.order, values, group, pc.list_flatten(arrivals))
    keep = np.sort(order[rank <= ranked.order.n])
    offsets = np.zeros(batch.num_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(group[keep], minlength=batch.num_rows), out=offsets[1:])
    keep, offsets = pa.array(keep), pa.array(offsets)
    columns = [pa.ListArray.from_arrays(offsets, pc.list_flatten(c).take(keep)) if pa.types.is_list(c.type) else c
               for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


# ----------------------------------------------------------------------------------------------
# import: partial rows -> merged, finished window results
def _key_words(kernel, f, column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 key words, validity) of key column ``column``, as the kernel's fused loop makes them."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    valid = np.ones(len(column), dtype=bool) if column.null_count == 0 else \
        column.is_valid().to_numpy(zero_copy_only=False)
    if f.dtype.is_string:
        ids = kernel.interner.ids(column)
        words = ids.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        return words, valid
    if f.dtype.is_float:
        x = column.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False).astype(np.float64)
        x = np.where(x == 0.0, 0.0, x)  # -0.0 is 0.0
        words = x.view(np.int64).copy()
        words[np.isnan(x)] = _NAN_WORD
    elif f.dtype.is_bool:
        words = column.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64)
    else:  # integers and millisecond timestamps
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp("ms", column.type.tz)).cast(pa.int64())
        words = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(valid, words, 0), valid


def _mix(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A 64-bit hash step (splitmix64 finalizer over h ^ w)."""
    z = (h ^ w.view(np.uint64)) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _entries(kernel, layout: EntryLayout, table: pa.Table) -> tuple[np.ndarray, list]:
    """The rows of ``table`` laid out as hash-table entries: equal keys get equal tags (any hash
    will do: the merge only groups by tag and key words), key null flags in bits 48..62."""
    n = table.num_rows
    rows = np.zeros((n, layout.entry_words), dtype=np.int64)
    keep = []
    h = np.zeros(n, dtype=np.uint64)
    mask = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i, (f, _) in enumerate(kernel.gen.pipeline.terminal.keys):
            words, valid = _key_words(kernel, f, table.column(f.name).combine_chunks())
            rows[:, 1 + i] = words
            mask |= (~valid).astype(np.uint64) << np.uint64(i)
            h = _mix(h, words)
    tags = (h & _HASH_MASK) | (mask << np.uint64(48)) | _TAG_BIT
    rows[:, 0] = tags.view(np.int64)
    for name, word in layout.columns():
        column = table.column(name).combine_chunks()
        strings = string_column(layout, name, word)
        if word is not None:
            if strings:
                column = kernel.interner.ids(column).fill_null(0)
            rows[:, word] = column.to_numpy(zero_copy_only=False)
            continue
        agg_word = _aggregate_of(layout, name).word
        offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        flat = column.flatten()
        if strings:  # (a null: a window row's null value, which its null flags mark; any id will do)
            flat = kernel.interner.ids(flat).fill_null(0)
        values = np.ascontiguousarray(flat.to_numpy(zero_copy_only=False), dtype=np.int64)
        if not len(values):
            values = np.zeros(1, dtype=np.int64)
        keep.append(values)
        lengths = offsets[1:] - offsets[:-1]
        rows[:, agg_word] = values.ctypes.data + 8 * offsets[:-1]
        rows[:, agg_word + 1] = lengths
        rows[:, agg_word + 2] = lengths
    return rows, keep


def merge_window(kernel, start: int, table: pa.Table) -> pa.Table | None:
    """Merge the partial rows ``table`` (all of the window starting at ``start``) with the
    compiled ``merge_emit``; the finished results of that window, in no particular order."""
    layout = EntryLayout.of(kernel.gen)
    n = table.num_rows
    if not n:
        return None
    rows, keep = _entries(kernel, layout, table)
    slots = np.array([[start, rows.ctypes.data, n, n]], dtype=np.int64)
    state = new_state_block(kernel.gen.state_words)
    state[abi.STATE_WINDOWS], state[abi.STATE_WINDOWS + 1], state[abi.STATE_WINDOWS + 2] = slots.ctypes.data, 1, 1
    states = np.array([state.ctypes.data], dtype=np.uint64)
    out = _ResultBuffers(kernel, n)
    merge_emit = kernel.function("state", "merge_emit", _I64, _P, _I64, _I64, _I64, _P, _I64)
    end = int(start) + partial_geometry(kernel.gen).size
    count = merge_emit(states.ctypes.data, 1, int(start), end, out.descriptor, 0)  # (hash placement)
    del keep, slots  # alive until here
    kernel._checked(count, None, state)
    return out.table(count) if count else None


def merge_partials(kernel, table: pa.Table) -> pa.Table:
    """Finished window results of the partial rows ``table`` (any windows, any keys), sorted by
    (window_end, keys) with nulls last, as the embedded engine fires them."""
    schema = output_arrow_schema(kernel.gen)
    if not table.num_rows:
        return schema.empty_table()
    starts = table.column(WINDOW_START).to_numpy()
    order = np.argsort(starts, kind="stable")
    table, starts = table.take(pa.array(order)), starts[order]
    bounds = np.flatnonzero(np.diff(starts)) + 1
    results = []
    for lo, hi in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [len(starts)]])):
        merged = merge_window(kernel, int(starts[lo]), table.slice(int(lo), int(hi - lo)))
        if merged is not None:
            results.append(merged)
    if not results:
        return schema.empty_table()
    out = pa.concat_tables(results)
    names = [WINDOW_END] + [f.name for f, _ in kernel.gen.pipeline.terminal.keys]
    return out.take(sort_indices_nulls_last(out, names))


__all__ = ["WINDOW_START", "EntryLayout", "export_windows", "merge_partials", "merge_window", "partial_schema",
           "partial_geometry", "read_panes", "top_rows_only", "window_starts"]
