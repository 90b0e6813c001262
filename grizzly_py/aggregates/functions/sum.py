"""``agg.sum(c)``: exact int64 sums (a carry word counts wrap-arounds, so an intermediate overflow
that comes back is exact and a final one is an error) and compensated float sums (TwoSum: the
exact rounding error of every addition is added back once, at the end).

State: ints ``[sum, carry, n]``, floats ``[sum, n, compensation]``. ``avg`` keeps the same state
(``avg.py``)."""

from __future__ import annotations

import math

from ...types import FLOAT64, INT64, SchemaError
from ..spec import AggCall, AggregateOverflowError, AggregateSpec, FrameMethod, argument, register

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def checked_int64(total: int, what: str) -> int:
    """``total``, or ``AggregateOverflowError`` where it does not fit in int64."""
    if not INT64_MIN <= total <= INT64_MAX:
        raise AggregateOverflowError(f"{what}: the sum {total} does not fit in int64")
    return total


def compensated_sum(values: list[float]) -> float:
    """The values added in arrival order with compensation, as the compiled code adds them
    (``aggregates/sum.ll.j2``: ``two_sum_error``, ``float_total``): the exact rounding error of
    each addition (Knuth's TwoSum) is added up on the side and added back at the end, unless the
    sum or the compensation is not finite (an infinite or NaN sum: plain addition's result)."""
    total = compensation = 0.0
    for v in values:
        t = total + v
        bp = t - total
        compensation += (total - (t - bp)) + (v - bp)
        total = t
    if math.isfinite(total) and math.isfinite(compensation):
        return total + compensation
    return total


class Sum(AggregateSpec):
    name = "sum"
    frame = FrameMethod(sums=True)
    retractable = True  # over an updating input, a retraction subtracts
    template = "aggregates/sum.ll.j2"
    atomic = True

    def call(self, c) -> AggCall:
        """The sum of the non-null values of ``c`` (null when there are none)."""
        return AggCall("sum", argument(c))

    def output_type(self, call, arg_type):
        if arg_type.is_string:
            raise SchemaError(f"agg.sum needs a numeric column, but {call.arg!r} is a string")
        if arg_type.is_bool:
            raise SchemaError(f"agg.sum needs a number, but {call.arg!r} is bool")
        return FLOAT64 if arg_type.is_float else INT64

    def state_words(self, kind):
        return 3

    def count_slot(self, kind):
        return 2 if kind == "int" else 1

    def order_sensitive(self, kind):
        return kind == "float"

    def invertible(self, kind):
        """An int sum (and ``avg``'s): its carry word keeps the difference exact."""
        return kind == "int"

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        return compensated_sum(values) if arg_type.is_float else checked_int64(sum(values), repr(call))


SUM = register(Sum())
