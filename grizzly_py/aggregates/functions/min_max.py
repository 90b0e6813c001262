"""``agg.min(c)`` and ``agg.max(c)``: state ``[value, n]``. Float extremes ignore NaN unless every
value is NaN (LLVM's minnum/maxnum). Strings order byte-wise (UTF-8 bytes: code point order) and
run as a string variant (``aggregates/string_values.py``)."""

from __future__ import annotations

import math

from ..spec import AggCall, AggregateSpec, FrameMethod, argument, register
from ..string_values import StringValues
from .value_bag import ValueBag

NAN = float("nan")


class Extremum(AggregateSpec):
    template = "aggregates/min_max.ll.j2"
    atomic = True
    pick = staticmethod(min)
    frame = FrameMethod(extreme="low")

    def call(self, c) -> AggCall:
        return AggCall(self.name, argument(c))

    def output_type(self, call, arg_type):
        return arg_type

    def for_argument(self, arg_type):
        return StringValues(self, self.name) if arg_type is not None and arg_type.is_string else self

    def running(self, updating):
        """Over an updating input, a value bag (a retraction of the extreme finds the next one)."""
        return ValueBag(self, self.frame.extreme) if updating else self

    def state_words(self, kind):
        return 2

    def count_slot(self, kind):
        return 1

    def merge_exact(self, kind):
        """Over ints (not over floats: which of -0.0 and 0.0 minnum keeps depends on the order)."""
        return kind == "int"

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        if arg_type.is_float:
            numbers = [v for v in values if not math.isnan(v)]
            return self.pick(numbers) if numbers else NAN
        return self.pick(values)


class Min(Extremum):
    name = "min"

    def call(self, c) -> AggCall:
        """The smallest non-null value of ``c`` (null when there is none)."""
        return super().call(c)


class Max(Extremum):
    name = "max"
    pick = staticmethod(max)
    frame = FrameMethod(extreme="high")

    def call(self, c) -> AggCall:
        """The largest non-null value of ``c`` (null when there is none)."""
        return super().call(c)


MIN = register(Min())
MAX = register(Max())
