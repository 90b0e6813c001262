"""``agg.avg(c)``: the sum (kept as ``sum.py`` keeps it) over the count, as float64."""

from __future__ import annotations

from ...types import FLOAT64, SchemaError
from ..spec import AggCall, FrameMethod, argument, register
from .sum import Sum, checked_int64, compensated_sum


class Avg(Sum):
    name = "avg"
    frame = FrameMethod(sums=True, mean=True)
    template = "aggregates/avg.ll.j2"

    def call(self, c) -> AggCall:
        """The mean of the non-null values of ``c``, as float64 (null when there are none)."""
        return AggCall("avg", argument(c))

    def output_type(self, call, arg_type):
        if arg_type.is_string:
            raise SchemaError(f"agg.avg needs a numeric column, but {call.arg!r} is a string")
        if arg_type.is_bool:
            raise SchemaError(f"agg.avg needs a number, but {call.arg!r} is bool")
        return FLOAT64

    def result_store(self, kind):
        return "double"

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        total = compensated_sum(values) if arg_type.is_float else checked_int64(sum(values), repr(call))
        return total / len(values)


AVG = register(Avg())
