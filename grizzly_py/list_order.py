"""List values (a ``top_k`` result) as binary values that Arrow can group and sort by.

Arrow groups and sorts no list columns, yet a final table groups rows by every column and
sorts them (``changelog.final_table``), and a running aggregate's ``top_k`` puts lists into an
updating stream. ``order_bytes`` encodes each list so that equal lists get equal bytes and the
bytes sort as the lists do, element by element, a list before the longer ones it begins; -0.0
stays apart from 0.0 (as a final table tells them apart) and every NaN is one value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .value_order import ordered_float_bits

_SIGN = np.uint64(1 << 63)
_ELEMENT = 9  # bytes per element: 1 for a null element (nulls last), then an 8-byte order key


def order_bytes(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A list column of numbers, bools or timestamps as ``large_binary`` values (null lists
    stay null): per element, a byte that is 1 for a null element, then the element as a
    big-endian key whose unsigned order is the value's (floats: -0.0 just before 0.0, NaN after
    +inf)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy().astype(np.int64)
    values = pc.list_flatten(column)
    element_type = values.type
    if pa.types.is_timestamp(element_type) or pa.types.is_boolean(element_type):
        values = values.cast(pa.int64())
    if pa.types.is_floating(values.type):
        numbers = pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False)
        keys = ordered_float_bits(np.where(np.isnan(numbers), np.float64("nan"), numbers).view(np.int64))
    else:
        keys = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    words = (keys.view(np.uint64) ^ _SIGN).astype(">u8")
    data = np.empty((len(words), _ELEMENT), dtype=np.uint8)
    data[:, 0] = values.is_null().to_numpy(zero_copy_only=False)
    data[:, 1:] = words.view(np.uint8).reshape(-1, 8)
    offsets = np.concatenate([[0], np.cumsum(lengths) * _ELEMENT]).astype(np.int64)
    encoded = pa.Array.from_buffers(pa.large_binary(), len(column),
                                    [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())])
    return pc.if_else(column.is_valid(), encoded, pa.scalar(None, pa.large_binary()))


__all__ = ["order_bytes"]
