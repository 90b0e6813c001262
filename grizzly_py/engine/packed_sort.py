"""Sort indices of integer columns by one machine-word sort: the row order of a fired window's
result when its (window end, keys) columns are integers or timestamps without nulls.

Arrow's multi-column ``sort_indices`` compares rows column by column; for a hash table's groups
(1.5M rows of a window with many keys) it took ~8x the time of numpy sorting one ``uint64`` per
row (docs/benchmarks.md, "High-cardinality grouping"). When every column's range (max - min) and
the row index fit in 64 bits together, each row becomes one word, most significant column first,
the row's index in the low bits: sorting the words orders the rows as Arrow's stable ascending
sort does (ties keep their input order), and the low bits are the indices.

Many firings need no comparison sort: a fired result comes window by window in order of
window end (each window's rows in its hash table's order) and no two rows share (window end,
keys). Where the first column never decreases, its runs are numbered and each row's (run, keys)
becomes a slot of a dense array; when the slots are few (at most ``DENSE_SLOTS_PER_ROW`` per
row), every row is written at its slot and the filled slots, read in order, are the sorted
indices: two linear passes instead of a sort (new keys that come and go, such as Nexmark's
auctions, keep a window's keys in a range not much wider than their number). Rows that share a
slot (never in a fired result) make it fall back to the word sort.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..arrow_numpy import as_numpy, from_numpy

# Below this many rows Arrow's sort is as fast and the packing is not worth its passes.
PACKED_MIN_ROWS = 4096
# Slots of the dense order per row, at most: its passes over the slots stay well below a sort,
# and its array (4 bytes a slot below 2**31 rows) near the packed words' 8 bytes a row.
DENSE_SLOTS_PER_ROW = 4


def _words(column) -> np.ndarray | None:
    """The column's values as int64 or uint64 (a copy only for narrower types or several
    chunks), or None when it is not an integer or timestamp column without nulls."""
    t = column.type
    if column.null_count or not (pa.types.is_integer(t) or pa.types.is_timestamp(t)):
        return None
    values = as_numpy(column)
    if pa.types.is_timestamp(t):
        return values.view(np.int64)
    return values.astype(np.uint64 if pa.types.is_unsigned_integer(t) else np.int64, copy=False)


def packed_sort_indices(columns: list) -> pa.Array | None:
    """Indices of a stable ascending sort of the rows of ``columns`` (Arrow arrays or chunked
    arrays of one length, most significant first), or None when they do not pack into one
    ``uint64`` per row (a column that is not an integer or timestamp, nulls, too few rows, or
    value ranges too wide): the caller then sorts with Arrow."""
    n = len(columns[0]) if columns else 0
    if n < PACKED_MIN_ROWS:
        return None
    index_bits = (n - 1).bit_length()
    fields, bits = [], index_bits
    for column in columns:
        values = _words(column)
        if values is None:
            return None
        lo = values.min()
        width = (int(values.max()) - int(lo)).bit_length()
        bits += width
        if bits > 64:
            return None
        fields.append((values, lo, width))
    dense = _dense_order(fields, n)
    if dense is not None:
        return from_numpy(dense)
    packed = np.arange(n, dtype=np.uint64)
    shift = index_bits
    for values, lo, width in reversed(fields):
        if width:
            # max - min < 2**63 here (at least one index bit), so the difference fits int64
            packed |= (values - lo).astype(np.uint64) << np.uint64(shift)
        shift += width
    packed.sort()
    packed &= np.uint64((1 << index_bits) - 1)
    return from_numpy(packed.view(np.int64))


def _dense_order(fields: list, n: int) -> np.ndarray | None:
    """The ascending order of rows with distinct ``fields`` whose first never decreases, by
    writing each row at its slot of a dense array (see the module docstring); None where the
    slots are too many, the first field decreases somewhere or two rows share a slot."""
    first = fields[0][0]
    step = first[1:] != first[:-1]
    if not np.all(first[1:] >= first[:-1]):
        return None
    slots = int(np.count_nonzero(step)) + 1  # runs of the first field, numbered in order
    for values, lo, _ in fields[1:]:
        slots *= int(values.max()) - int(lo) + 1
        if slots > DENSE_SLOTS_PER_ROW * n:
            return None
    slot = np.zeros(n, dtype=np.int64)
    np.cumsum(step, out=slot[1:])
    for values, lo, _ in fields[1:]:
        span = int(values.max()) - int(lo) + 1
        slot *= span
        slot += (values - lo).astype(np.int64)
    index = np.int32 if n < (1 << 31) else np.int64
    at = np.full(slots, -1, dtype=index)
    at[slot] = np.arange(n, dtype=index)
    order = at[at >= 0]
    return order if len(order) == n else None
