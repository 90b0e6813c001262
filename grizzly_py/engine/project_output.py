"""A projection kernel's output (``ProjectKernel``, ``codegen/project.py``) as an Arrow batch.

What this module owns: the output descriptor's buffers for one call, and turning what the kernel
wrote (the selection vector, the computed columns compacted at the output cursor) into Arrow
with as little Python and as few copies as the result allows:

- every row kept: the batch's own columns (zero copy); no row kept: an empty batch (cached);
- else each pass-through column is gathered column by column with the selection vector: a
  fixed-width column without nulls by numpy's ``take`` into a buffer of exactly the kept rows,
  which Arrow takes over without a copy (a fifth to a third of Arrow's ``take``'s time on
  64K-row batches, whose fixed cost dominates small outputs); strings, booleans and columns with
  nulls by Arrow's ``take``;
- computed columns are views of the kernel's buffers; a sparse result copies its kept prefix so
  that the output does not hold buffers sized for the whole batch.

The selection vector is a per-worker scratch buffer reused between batches: a fresh one per batch
cost a page fault per 512 rows, in the kernel, and its unmapping afterwards.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from ..arrow_numpy import from_numpy

# the numpy dtype of each IR store type: projection outputs here, window outputs in kernels.py
NP_STORE = {"i8": np.uint8, "i32": np.int32, "i64": np.int64, "double": np.float64, "string": np.int64}
# a computed column keeps the kernel's buffer when at least this share of its rows is kept
_KEEP_BUFFER_SHARE = 4


class SelectionScratch:
    """One selection vector per worker, grown to the largest batch seen (workers run at once)."""

    def __init__(self) -> None:
        self._vectors: dict[int, np.ndarray] = {}

    def vector(self, worker: int, rows: int) -> np.ndarray:
        v = self._vectors.get(worker)
        if v is None or len(v) < rows:
            v = self._vectors[worker] = np.empty(max(rows, 1), dtype=np.int64)
        return v


class OutputBuffers:
    """The output descriptor of one kernel call: the selection vector, then per computed column its
    values and validity bytes (a string column: int64 offsets, validity bytes, a growable data
    buffer ``{data, length, capacity}`` that ``free`` releases)."""

    def __init__(self, outputs: list, rows: int, selection: np.ndarray) -> None:
        self.outputs, self.selection = outputs, selection
        self.columns, ptrs = [], [selection.ctypes.data]
        for o in outputs:
            if o.store_type == "str":
                b = (np.zeros(rows + 1, dtype=np.int64), np.empty(max(rows, 1), dtype=np.uint8),
                     np.zeros(3, dtype=np.int64))
            else:
                b = (np.empty(max(rows, 1), dtype=NP_STORE[o.store_type]), np.empty(max(rows, 1), dtype=np.uint8))
            self.columns.append(b)
            ptrs += [a.ctypes.data for a in b]
        self.descriptor = np.array(ptrs, dtype=np.uint64)

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
        self.schema, self.computed = schema, computed
        self.columns = [(schema.field(f.name).type, index.get(f.name), e.name if f.name not in index else None)
                        for f, e in terminal_outputs]
        self.empty = pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)

    def batch(self, batch: pa.RecordBatch, buffers: OutputBuffers, count: int) -> pa.RecordBatch:
        """The Arrow batch of the ``count`` rows the kernel kept of ``batch``."""
        if count == 0:
            return self.empty
        n = batch.num_rows
        selection = None if count == n else buffers.selection[:count]
        arrays = []
        for arrow_type, computed, name in self.columns:
            if computed is not None:
                store = self.computed[computed].store_type
                arrays.append(_computed_column(store, buffers.columns[computed], count, n, arrow_type))
            else:
                column = batch.column(name)
                arrays.append(column if selection is None else gather(column, selection))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def gather(column: pa.Array, selection: np.ndarray) -> pa.Array:
    """The rows ``selection`` (ascending int64 positions) of ``column``."""
    width = _byte_width(column.type)
    if width is None or column.null_count:
        return column.take(pa.array(selection))
    dtype = np.dtype(f"u{width}") if width in (1, 2, 4, 8) else np.dtype((np.void, width))
    values = np.frombuffer(column.buffers()[1], dtype=dtype, count=len(column), offset=column.offset * width)
    taken = np.take(values, selection)
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


def _computed_column(store_type: str, buffers: tuple, count: int, rows: int, arrow_type: pa.DataType) -> pa.Array:
    if store_type == "str":
        return _text_column(buffers, count, arrow_type)
    values, valid = buffers[0][:count], buffers[1][:count]
    if count * _KEEP_BUFFER_SHARE < rows:
        values = values.copy()
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
