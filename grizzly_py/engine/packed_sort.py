"""Sort indices of integer columns by one machine-word sort: the row order of a fired window's
result when its (window end, keys) columns are integers or timestamps without nulls.

Arrow's multi-column ``sort_indices`` compares rows column by column; for a hash table's groups
(1.5M rows of a window with many keys) it took ~8x the time of numpy sorting one ``uint64`` per
row (docs/benchmarks.md, "High-cardinality grouping"). When every column's range (max - min) and
the row index fit in 64 bits together, each row becomes one word, most significant column first,
the row's index in the low bits: sorting the words orders the rows as Arrow's stable ascending
sort does (ties keep their input order), and the low bits are the indices.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..arrow_numpy import as_numpy, from_numpy

# Below this many rows Arrow's sort is as fast and the packing is not worth its passes.
PACKED_MIN_ROWS = 4096


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
    if n < max(PACKED_MIN_ROWS, 1):
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
