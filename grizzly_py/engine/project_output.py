"""A projection kernel's output (``ProjectKernel``, ``codegen/project.py``) as an Arrow batch.

What this module owns: the output descriptor's buffers for one call, and turning what the kernel
wrote (the selection vector, the computed columns compacted at the output cursor) into Arrow
with as little Python and as few copies as the result allows:

- every row kept: the batch's own columns (zero copy); no row kept: an empty batch (cached);
- else each pass-through column is gathered column by column with the selection vector: a
  fixed-width column without nulls by numpy's ``take`` into a piece of its output arena that
  Arrow takes over without a copy (a fifth to a third of Arrow's ``take``'s time on 64K-row
  batches, whose fixed cost dominates small outputs); strings, booleans and columns with nulls
  by Arrow's ``take``;
- computed columns are written by the kernel into their output arena at its cursor, and the
  result is a view of the kept rows; the arena hands out only those, so a sparse result does
  not hold memory sized for the whole batch.

Output arenas (``output_arena.py``: one per worker and output column, chunks in huge pages that
only move forward) keep the output's memory mapped from batch to batch; fresh buffers cost a page
fault per 4 KiB. What the result never points into is per-worker scratch reused between batches
(``OutputMemory``): the selection vector, validity bytes and string offsets (workers run at once).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from ..arrow_numpy import from_numpy
from .output_arena import OutputArena

# the numpy dtype of each IR store type: projection outputs here, window outputs in kernels.py
NP_STORE = {"i8": np.uint8, "i32": np.int32, "i64": np.int64, "double": np.float64, "string": np.int64}


class OutputMemory:
    """A kernel's output memory per worker: scratch buffers reused between batches (nothing
    returned points into them) and one ``OutputArena`` per output column (by name)."""

    def __init__(self) -> None:
        self._scratch: dict[tuple, np.ndarray] = {}
        self._arenas: dict[tuple[int, str], OutputArena] = {}

    def scratch(self, worker: int, slot: object, rows: int, dtype) -> np.ndarray:
        """Worker ``worker``'s buffer ``slot`` of at least ``rows`` values, grown to the largest batch."""
        v = self._scratch.get((worker, slot))
        if v is None or len(v) < rows:
            v = self._scratch[(worker, slot)] = np.empty(max(rows, 1), dtype=dtype)
        return v

    def arena(self, worker: int, column: str) -> OutputArena:
        a = self._arenas.get((worker, column))
        if a is None:
            a = self._arenas[(worker, column)] = OutputArena()
        return a


class OutputBuffers:
    """The output descriptor of one kernel call: the selection vector, then per computed column its
    values (reserved in its arena) and validity bytes (a string column: int64 offsets, validity
    bytes, a growable data buffer ``{data, length, capacity}`` that ``free`` releases)."""

    def __init__(self, outputs: list, rows: int, memory: OutputMemory, worker: int) -> None:
        self.outputs, self.arenas = outputs, []
        self.selection = memory.scratch(worker, "selection", rows, np.int64)
        self.columns, ptrs = [], [self.selection.ctypes.data]
        for i, o in enumerate(outputs):
            valid = memory.scratch(worker, ("valid", i), rows, np.uint8)
            if o.store_type == "str":
                offsets = memory.scratch(worker, ("offsets", i), rows + 1, np.int64)
                offsets[0] = 0
                b = (offsets, valid, np.zeros(3, dtype=np.int64))
                self.arenas.append(None)
            else:
                dtype = np.dtype(NP_STORE[o.store_type])
                arena = memory.arena(worker, o.name)
                b = (arena.reserve(max(rows, 1) * dtype.itemsize).view(dtype), valid)
                self.arenas.append(arena)
            self.columns.append(b)
            ptrs += [a.ctypes.data for a in b]
        self.descriptor = np.array(ptrs, dtype=np.uint64)

    def kept(self, index: int, count: int) -> np.ndarray:
        """The first ``count`` values of computed column ``index`` (not a string column), handed
        out by its arena: later batches write after them."""
        values = self.columns[index][0]
        self.arenas[index].commit(count * values.itemsize)
        return values[:count]

    def free(self, libc_free) -> None:
        for o, b in zip(self.outputs, self.columns):
            if o.store_type == "str" and b[2][0]:
                libc_free(int(b[2][0]))


class ProjectOutput:
    """How a projection's output columns come about, resolved once per kernel: per output its Arrow
    type and either its computed column's index in the descriptor or the input column it passes
    through (``terminal_outputs``: the ``ProjectTerminal``'s (field, expression) pairs; computed
    columns are the ``GeneratedPipeline.outputs``)."""

    def __init__(self, terminal_outputs: list, computed: list, schema: pa.Schema) -> None:
        index = {o.name: i for i, o in enumerate(computed)}
        self.schema = schema
        # per output: (name, Arrow type, computed column's index or None, input column passed through)
        self.columns = [(f.name, schema.field(f.name).type, index.get(f.name), e.name if f.name not in index else None)
                        for f, e in terminal_outputs]
        self.empty = pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)

    def batch(self, batch: pa.RecordBatch, buffers: OutputBuffers, count: int, memory: OutputMemory,
              worker: int) -> pa.RecordBatch:
        """The Arrow batch of the ``count`` rows the kernel kept of ``batch`` (pass-through
        columns gathered into worker ``worker``'s arenas of ``memory``)."""
        if count == 0:
            return self.empty
        selection = None if count == batch.num_rows else buffers.selection[:count]
        arrays = []
        for output, arrow_type, computed, name in self.columns:
            if computed is not None:
                arrays.append(_computed_column(buffers, computed, count, arrow_type))
            else:
                column = batch.column(name)
                arrays.append(column if selection is None else
                              gather(column, selection, memory.arena(worker, output)))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def gather(column: pa.Array, selection: np.ndarray, arena: OutputArena | None = None) -> pa.Array:
    """The rows ``selection`` (ascending int64 positions) of ``column``; a fixed-width column
    without nulls is written into a piece of ``arena`` (None: a fresh buffer)."""
    width = _byte_width(column.type)
    if width is None or column.null_count:
        return column.take(pa.array(selection))
    dtype = np.dtype(f"u{width}") if width in (1, 2, 4, 8) else np.dtype((np.void, width))
    values = np.frombuffer(column.buffers()[1], dtype=dtype, count=len(column), offset=column.offset * width)
    if arena is None:
        taken = np.take(values, selection)
    else:  # mode "clip": numpy writes straight into ``out`` (positions are in range)
        taken = np.take(values, selection, out=arena.take(len(selection) * width).view(dtype), mode="clip")
    return pa.Array.from_buffers(column.type, len(selection), [None, pa.py_buffer(taken)])


def _byte_width(arrow_type: pa.DataType) -> int | None:
    """Bytes per value of a fixed-width type held in one data buffer, else None (booleans are bits)."""
    if pa.types.is_boolean(arrow_type) or pa.types.is_dictionary(arrow_type) or pa.types.is_nested(arrow_type):
        return None
    try:
        bits = arrow_type.bit_width
    except ValueError:
        return None
    return bits // 8 if bits % 8 == 0 and bits else None


def _computed_column(buffers: OutputBuffers, index: int, count: int, arrow_type: pa.DataType) -> pa.Array:
    store_type = buffers.outputs[index].store_type
    if store_type == "str":
        return _text_column(buffers.columns[index], count, arrow_type)
    values, valid = buffers.kept(index, count), buffers.columns[index][1][:count]
    if store_type == "i8":
        values = values.astype(bool)
    return masked(values, valid, arrow_type)


def masked(values: np.ndarray, valid: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """``values`` as Arrow, null where the validity byte is 0."""
    mask = None if valid.all() else (valid == 0)
    return from_numpy(values, arrow_type, mask)


def _text_column(buffers: tuple, count: int, arrow_type: pa.DataType) -> pa.Array:
    """A computed string column from its (offsets, validity bytes, data buffer {data, length,
    capacity}) as the kernel wrote them (``codegen/project.py``); the data is copied out (the
    caller frees the buffer)."""
    offsets, valid, data = buffers
    size = int(offsets[count])
    text = pa.py_buffer(ctypes.string_at(int(data[0]), size)) if size else pa.py_buffer(b"")
    mask = valid[:count].astype(bool)
    nulls = count - int(mask.sum())
    bitmap = pa.array(mask, pa.bool_()).buffers()[1] if nulls else None
    array = pa.LargeStringArray.from_buffers(count, pa.py_buffer(offsets[:count + 1].tobytes()), text, bitmap, nulls)
    return array.cast(arrow_type)
