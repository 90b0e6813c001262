"""``agg.count()`` (rows) and ``agg.count(c)`` (non-null values of ``c``): one word per group."""

from __future__ import annotations

from ...types import INT64
from ..spec import AggCall, AggregateSpec, FrameMethod, argument, register


class Count(AggregateSpec):
    name = "count"
    frame = FrameMethod(counts=True)
    retractable = True  # over an updating input, a retraction subtracts
    template = "aggregates/count.ll.j2"
    reads = "validity"
    atomic = True

    def call(self, c=None) -> AggCall:
        """The number of records (``count()``) or of non-null values of ``c`` (``count(c)``)."""
        return AggCall("count", None if c is None else argument(c))

    def output_type(self, call, arg_type):
        return INT64

    def counts_records(self, call):
        return call.arg is None

    def result_store(self, kind):
        return "i64"

    def count_slot(self, kind):
        return 0

    def invertible(self, kind):
        return True

    def reference(self, call, arg_type, values, rows):
        return rows if call.arg is None else len(values)


COUNT = register(Count())
