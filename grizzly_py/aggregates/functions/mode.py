"""``agg.mode(c)``: holistic; the most frequent non-null value, ties broken toward the smallest
(in key order: ``value_order``)."""

from __future__ import annotations

from collections import Counter

from ...value_order import normalize_key, sort_key
from ..spec import AggCall, AggregateSpec, argument, register
from ..string_values import StringValues
from .value_bag import ValueBag

NAN = float("nan")


class Mode(AggregateSpec):
    name = "mode"
    template = "aggregates/mode.ll.j2"
    holistic = True
    reads = "key"

    def call(self, c) -> AggCall:
        """The most frequent non-null value of ``c`` (the smallest of equally frequent ones)."""
        return AggCall("mode", argument(c))

    def output_type(self, call, arg_type):
        return arg_type

    def for_argument(self, arg_type):
        """Strings: ties go to the smallest string, not id (``aggregates/string_values.py``)."""
        return StringValues(self, "mode") if arg_type is not None and arg_type.is_string else self

    def running(self, updating):
        """A value bag: the first value of the largest count."""
        return ValueBag(self, "mode")

    def reference(self, call, arg_type, values, rows):
        if not values:
            return None
        counts = Counter(sort_key(v) for v in values)
        best = min(counts, key=lambda k: (-counts[k], k))
        return NAN if best == (1,) else normalize_key(best[1])


MODE = register(Mode())
