"""Order keys of strings: the virtual int64 columns (``GeneratedPipeline.order_columns``) that
let compiled code order strings it holds as interned ids (``interning.py``), whose ids do not
order as the strings do (a running aggregate's ``min``/``max`` of strings:
``aggregates/functions/value_bag.py``).

A string's order key is its first 8 UTF-8 bytes as a big-endian number (zero bytes after a
shorter string), its top bit flipped so that signed int64 comparison orders keys as unsigned
bytes compare: strings that order differently byte-wise have keys in the same order or equal
keys (a common 8-byte prefix, or a string that is another followed by zero bytes), never keys
in the opposite order. Computed per batch with numpy
over the Arrow buffers (no per-row Python); a null's key is 0 (its validity says it is null)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

KEY_BYTES = 8
_TOP_BIT = np.uint64(1 << 63)


def order_keys(strings: pa.Array) -> pa.Array:
    """The order key of each string of ``strings`` (plain, large or dictionary-encoded)."""
    if pa.types.is_dictionary(strings.type):
        return order_keys(strings.dictionary).take(strings.indices)
    values = strings.cast(pa.large_binary())
    n = len(values)
    offsets_buffer, data_buffer = values.buffers()[1], values.buffers()[2]
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[values.offset:values.offset + n + 1] if n else \
        np.zeros(1, dtype=np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, dtype=np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    keys = np.zeros(n, dtype=np.uint64)
    for b in range(KEY_BYTES):
        has = lengths > b
        byte = np.zeros(n, dtype=np.uint64)
        byte[has] = data[starts[has] + b]
        keys |= byte << np.uint64(8 * (KEY_BYTES - 1 - b))
    keys ^= _TOP_BIT
    return pa.array(keys.view(np.int64), mask=None if not strings.null_count else
                    np.asarray(strings.is_null().to_numpy(zero_copy_only=False)))


__all__ = ["order_keys"]
