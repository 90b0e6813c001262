"""``agg.count_distinct(c)``: holistic; the number of distinct non-null values (``-0.0`` is
``0.0``, every NaN one value: ``value_order``)."""

from __future__ import annotations

from ...types import INT64
from ...value_order import sort_key
from ..spec import AggCall, AggregateSpec, argument, register
from .value_bag import ValueBag


class CountDistinct(AggregateSpec):
    name = "count_distinct"
    template = "aggregates/count_distinct.ll.j2"
    holistic = True
    reads = "key"

    def call(self, c) -> AggCall:
        """The number of distinct non-null values of ``c`` (0 when there are none)."""
        return AggCall("count_distinct", argument(c))

    def output_type(self, call, arg_type):
        return INT64

    def running(self, updating):
        """A value bag: its number of values, each kept with how many times it is in."""
        return ValueBag(self, "distinct")

    def result_store(self, kind):
        return "i64"

    def reference(self, call, arg_type, values, rows):
        return len({sort_key(v) for v in values})


COUNT_DISTINCT = register(CountDistinct())
