"""``agg.median(c)``: holistic (a vector of the group's values as order-preserving int64 keys,
whose middle value(s) are selected when the window fires: ``gz_vec_median``, runtime/vectors.ll);
the mean of the two middle values for an even count."""

from __future__ import annotations

import math

import numpy as np

from ...types import FLOAT64, SchemaError
from ..spec import AggCall, AggregateSpec, argument, register
from .value_bag import ValueBag

NAN = float("nan")


def median(values: list, is_float: bool) -> float:
    """``numpy.median`` (NaN if a value is NaN; an even count gives the mean of the two middle
    values), except that two finite middle values whose sum overflows (1e308, 1e308) are halved
    first, so their mean is not infinite (numpy gives inf there), and that ``-0.0`` counts as
    ``0.0`` (the compiled median reads values as their order keys: ``value_order``)."""
    ordered = np.sort(np.array(values, dtype=np.float64 if is_float else np.int64))
    if is_float and np.isnan(ordered).any():
        return NAN
    if is_float:
        ordered = ordered + 0.0  # -0.0 + 0.0 is 0.0
    half = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[half])
    lo, hi = float(ordered[half - 1]), float(ordered[half])
    mean = (lo + hi) * 0.5
    if math.isinf(mean) and math.isfinite(lo) and math.isfinite(hi):
        return lo * 0.5 + hi * 0.5
    return mean


class Median(AggregateSpec):
    name = "median"
    template = "aggregates/median.ll.j2"
    holistic = True
    reads = "key"

    def call(self, c) -> AggCall:
        """The median of the non-null values of ``c``, as float64 (null when there are none)."""
        return AggCall("median", argument(c))

    def output_type(self, call, arg_type):
        if arg_type.is_string:
            raise SchemaError(f"agg.median needs a numeric column, but {call.arg!r} is a string")
        if arg_type.is_bool:
            raise SchemaError(f"agg.median needs a number, but {call.arg!r} is bool")
        return FLOAT64

    def result_store(self, kind):
        return "double"

    def running(self, updating):
        """A value bag: the middle value(s) found by walking its counts."""
        return ValueBag(self, "median")

    def reference(self, call, arg_type, values, rows):
        return median(values, arg_type.is_float) if values else None


MEDIAN = register(Median())
