"""The order and grouping of column values that every part of grizzly-py agrees on.

Keys group like SQL's ``GROUP BY`` (a null is its own group, ``-0.0`` is ``0.0``, every NaN is one
value) and sort numbers, bools and strings in their natural order, then NaN, then null. The
reference evaluator groups and sorts by ``sort_key``; holistic aggregates order their values the
same way (``top_k``, ``mode``'s ties, ``count_distinct``).
"""

from __future__ import annotations

import math

import numpy as np

_ALL_BUT_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def sort_key(value) -> tuple:
    """A total, hashable order on one column's values, used both to group and to sort keys.

    Numbers, bools and strings in their natural order (``-0.0`` equals ``0.0``), then NaN
    (all NaNs are one value), then null.
    """
    if value is None:
        return (2,)
    if isinstance(value, float) and math.isnan(value):
        return (1,)
    return (0, value)


def normalize_key(value):
    """The representative of a key value's group: ``-0.0`` becomes ``0.0``."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def ordered_float_bits(bits: np.ndarray) -> np.ndarray:
    """float64 values' bits (int64) as int64 keys that order as the numbers do (-0.0 just before
    0.0; a NaN by its bits: a positive one after +inf), and such keys back to the bits: negative
    values' bits but the sign flipped, which undoes itself."""
    return np.where(bits < 0, bits ^ _ALL_BUT_SIGN, bits)
